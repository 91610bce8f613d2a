"""Failing fast and retrying as client-go does, against the emulator and against nothing at all.

Upstream rules (k8s.io/client-go/rest/with_retry.go `IsNextRetry`/`checkWait`, request.go's retryable errors;
k8s.io/apiserver/pkg/server/filters/maxinflight.go `tooManyRequests`):
- a refused connection or an unknown host is never retried: kubectl answers at once;
- a 429 is sent before the server acts (max-in-flight / priority and fairness), with `Retry-After: 1`: any request
  may be sent again after that long;
- a 5xx, a dropped connection or a lost answer is retried only for a request that gives the same result however
  often it is sent (GET, server-side apply): the server may have acted on it.
"""

from __future__ import annotations

import socket
import time

import pytest

from test_kube_cli import FC, HELLO, paictl, submit

pytest.importorskip("kubernetes")


def _refused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again: nothing listens there


def _config(tmp_path, server: str):
    path = tmp_path / "config"
    path.write_text(f"apiVersion: v1\nkind: Config\ncurrent-context: team\nclusters: [{{name: c, cluster: "
                    f"{{server: '{server}'}}}}]\nusers: [{{name: u, user: {{}}}}]\ncontexts: [{{name: team, "
                    f"context: {{cluster: c, user: u}}}}]\n")
    return path


@pytest.fixture
def sleeps(monkeypatch):
    """Every pause the client takes between attempts (time.sleep is what Cluster.request waits with)."""
    taken: list[float] = []
    real = time.sleep
    monkeypatch.setattr(time, "sleep", lambda seconds: (taken.append(seconds), real(seconds))[1])
    return taken


@pytest.mark.parametrize("server, reason", [
    ("http://127.0.0.1:{port}", "connection refused"),
    ("https://no-such-host.invalid:6443", "unknown host no-such-host.invalid"),
])
def test_an_unreachable_cluster_is_one_line_without_a_retry(tmp_path, sleeps, server, reason):
    from paictl.errors import ClusterError
    from paictl.targets.kube.backend import KubeBackend
    from paictl.targets.backend import BackendOptions

    url = server.format(port=_refused_port())
    notices: list[str] = []
    backend = KubeBackend(BackendOptions(kubeconfig=str(_config(tmp_path, url)), target="framework",
                                         extra={"notice": notices.append}))
    with pytest.raises(ClusterError) as raised:
        backend.describe("demo")
    assert str(raised.value) == f"cannot reach the cluster at {url} (context team): {reason}"
    assert sleeps == [] and notices == []


def test_a_throttled_request_waits_as_the_server_asks_and_says_so_after_a_second(emulator):
    """429 + Retry-After: 1 (maxinflight.go): any request, even the merge patch of a stop, is sent again after 1 s,
    and the wait is shown (it lasts a second)."""
    emulator.scenario("Framework", "*", "running", seconds=100000)
    done, name = submit(emulator, HELLO)
    assert done.returncode == 0, done.stderr
    emulator.throttle_next(1, method="PATCH", path_contains=f"/frameworks/{name}")
    stopped = paictl(emulator, "stop", name)
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stderr == "paictl: the cluster answered 429; retrying PATCH in 1s (attempt 2 of 5)\n"
    patches = [r for r in emulator.requests if r.method == "PATCH" and r.path.endswith(f"/frameworks/{name}")
               and r.query.get("fieldManager") == "paictl-stop"]
    assert [r.status for r in patches] == [429, 200]
    assert patches[1].started - patches[0].started >= 1.0
    assert emulator.get_object(FC, "Framework", "default", name)["spec"]["executionType"] == "Stop"


def test_a_short_retry_is_silent(emulator):
    emulator.scenario("Framework", "*", "running", seconds=100000)
    done, name = submit(emulator, HELLO)
    emulator.fail_next(1, status=503, method="GET", path_contains=f"/frameworks/{name}")
    shown = paictl(emulator, "status", name, "--target", "framework")
    assert shown.returncode == 0 and shown.stderr == "", shown.stderr


def test_a_lost_answer_to_a_read_is_asked_again(emulator):
    emulator.scenario("Framework", "*", "running", seconds=100000)
    done, name = submit(emulator, HELLO)
    emulator.lose_next(1, method="GET", path_contains=f"/frameworks/{name}")
    shown = paictl(emulator, "status", name, "--target", "framework", "-o", "json")
    assert shown.returncode == 0, shown.stderr
    reads = [r.status for r in emulator.requests if r.method == "GET" and r.path.endswith(f"/frameworks/{name}")]
    assert reads[-3:] == [0, 200, 200]  # lost, asked again; then the snapshot's read


def test_a_lost_answer_to_a_stop_is_not_sent_again_and_says_it_may_have_happened(emulator):
    """A merge patch is not idempotent in general: the server acted (the Framework is stopping), the answer was
    lost; paictl does not send it again and tells the user to look."""
    emulator.scenario("Framework", "*", "running", seconds=100000)
    done, name = submit(emulator, HELLO)
    emulator.lose_next(1, method="PATCH", path_contains=f"/frameworks/{name}")
    stopped = paictl(emulator, "stop", name)
    assert stopped.returncode == 3 and stopped.stderr.count("\n") == 1, stopped.stderr
    assert "dropped before the cluster answered, so it may have been done: `paictl status` shows the job" \
        in stopped.stderr
    patches = [r for r in emulator.requests if r.method == "PATCH" and r.path.endswith(f"/frameworks/{name}")
               and r.query.get("fieldManager") == "paictl-stop"]
    assert [r.status for r in patches] == [0]
    assert emulator.get_object(FC, "Framework", "default", name)["spec"]["executionType"] == "Stop"


def test_server_errors_on_reads_are_retried_and_shown_once_they_last(emulator):
    emulator.scenario("Framework", "*", "running", seconds=100000)
    done, name = submit(emulator, HELLO)
    emulator.fail_next(3, status=503, method="GET", path_contains=f"/frameworks/{name}")
    shown = paictl(emulator, "status", name, "--target", "framework")
    assert shown.returncode == 0, shown.stderr
    # 0.25 + 0.5 s are quiet; the third wait brings the total past a second, so it is announced
    assert shown.stderr == "paictl: the cluster answered 503 ServiceUnavailable; retrying GET in 1s (attempt 4 of 5)\n"


def test_a_403_from_admission_is_not_called_rbac(emulator):
    """kubernetes plugin/pkg/admission/resourcequota/controller.go: an object-count quota refuses the create with a
    403 whose message says which quota (admission.NewForbidden: `<kind> "<name>" is forbidden: exceeded quota:
    ...`); RBAC's own denial reads `User "..." cannot <verb> resource ...` (apiserver responsewriters
    forbiddenMessage). Each is worded as what it is."""
    count = "count/frameworks.frameworkcontroller.microsoft.com"
    emulator.fail_next(1, status=403, method="PATCH", path_contains="/frameworks/", message=(
        f'frameworks.frameworkcontroller.microsoft.com "x" is forbidden: exceeded quota: object-counts, requested: '
        f"{count}=1, used: {count}=10, limited: {count}=10"))
    done, _ = submit(emulator, HELLO)
    assert done.returncode == 3
    error = done.stderr.splitlines()[-1]
    assert "(RBAC)" not in error and "you may not" not in error
    assert error.startswith("paictl: error: the cluster refused to apply frameworks.frameworkcontroller.microsoft.com ")
    assert f"in namespace default: exceeded quota: object-counts, requested: {count}=1" in error, error
    emulator.forbid("patch", "frameworks")
    denied, _ = submit(emulator, HELLO)
    assert "forbidden: you may not patch (server-side apply) frameworks.frameworkcontroller.microsoft.com in " \
           "namespace default (RBAC)" in denied.stderr


@pytest.mark.parametrize("command", [["status", "demo"], ["status", "demo", "--target", "jobset", "-o", "json"],
                                     ["stop", "demo"], ["logs", "demo", "-n", "team"]])
def test_an_unreachable_cluster_is_answered_before_typer_is_loaded(tmp_path, command):
    """The answer to a stale kubeconfig must cost about what kubectl's does (benchmarks/unreachable_cluster.py):
    `status|stop|logs NAME` that would ask the cluster probe it before typer (a third of the time) is imported; the
    line and the exit code are the typer path's."""
    import os
    import subprocess
    import sys

    from conftest import ROOT

    config = _config(tmp_path, f"http://127.0.0.1:{_refused_port()}")
    argv = [sys.executable, "-X", "importtime", "-m", "paictl", *command, "--kubeconfig", str(config),
            "--run-dir", str(tmp_path / "runs")]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=60,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    lines = done.stderr.splitlines()
    errors = [line for line in lines if not line.startswith("import time:")]
    assert done.returncode == 3 and errors == [
        f"paictl: error: cannot reach the cluster at {config.read_text().split(chr(39))[1]} (context team): "
        "connection refused"], done.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in lines if line.startswith("import time:")}
    assert "typer" not in imported and "kubernetes" not in imported


def test_a_lost_answer_to_an_apply_is_applied_again_and_reads_as_created(emulator):
    """The server stored the Framework, the answer was lost: a server-side apply gives the same result when sent
    again, so it is; the object is there once, and the submit says what this submit did (created)."""
    emulator.scenario("Framework", "*", "running", seconds=100000)
    emulator.lose_next(1, method="PATCH", path_contains="/frameworks/")
    done, name = submit(emulator, HELLO)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"framework.frameworkcontroller.microsoft.com/{name} created\n")
    applies = [r.status for r in emulator.requests if r.method == "PATCH" and r.path.endswith(f"/frameworks/{name}")]
    assert applies == [0, 200]
    assert len(emulator.list_objects(FC, "Framework", "default")) == 1


@pytest.mark.parametrize("command", [["status", "{name}", "--target", "framework"], ["status", "{name}"],
                                     ["status", "--target", "framework"], ["stop", "{name}", "-o", "json"],
                                     ["logs", "{name}"]])
def test_a_reachable_cluster_is_probed_once_per_invocation(emulator, tmp_path, command):
    """The early answer (cli/entry.py) probes the cluster before typer loads; when it answers, the command's own
    connection must not probe it again. A probe is a connection that sends nothing: counted at the wire."""
    from urllib.parse import urlsplit

    from tcp_counter import CountingForwarder

    emulator.scenario("Framework", "*", "running", seconds=100000)
    done, name = submit(emulator, HELLO)
    assert done.returncode == 0, done.stderr
    upstream = urlsplit(emulator.url)
    forwarder = CountingForwarder((upstream.hostname, upstream.port))
    try:
        config = emulator.write_kubeconfig(tmp_path / "through-the-counter")  # what paictl() passes from now on
        config.write_text(config.read_text().replace(emulator.url, f"http://127.0.0.1:{forwarder.port}"))
        args = [part.format(name=name) for part in command]
        answered = paictl(emulator, *args, "--run-dir", str(tmp_path / "runs"))
        assert answered.returncode == 0 and "Traceback" not in answered.stderr, answered.stderr
        assert forwarder.bare_connections() == 1
    finally:
        forwarder.close()
