"""`paictl status|stop|logs` against a cluster, answered by the console script before typer loads
(cli/entry.py `unreachable_cluster`, the backends' `check_reachable`): an unreachable cluster is one line at once,
as the typer command says it, and a reachable one is probed once per invocation, not again by the command.

Both paths run as real processes (test_cli_entry.py's `run`); probes are counted at the wire (tcp_counter.py).
"""

from __future__ import annotations

import pytest

from conftest import ROOT
from test_cli_entry import FAST, TYPER, run

CANARY = "canary-token-5f0e1d"
# the early answer must load neither typer nor httpx nor ruamel: each marker is written by an atexit handler
LIGHT = FAST.replace("'typer imported: %s' % ('typer' in sys.modules)",
                     "'typer imported: %s' % sorted({'typer', 'httpx', 'ruamel.yaml'} & set(sys.modules))")


def _refused_port() -> int:
    import socket

    with socket.socket() as probe:  # bound, never listening: a connect is refused
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def openpai_env(tmp_path):
    """A clusters file (written by paictl's own writer) naming a refused port and a host that cannot exist."""
    import os

    from paictl.targets.openpai.clusters import ClusterEntry, save_clusters

    config = tmp_path / "config"
    save_clusters({alias: ClusterEntry(alias=alias, url=url, user="alice", token_env="PAICTL_TEST_TOKEN")
                   for alias, url in (("refused", f"http://127.0.0.1:{_refused_port()}"),
                                      ("unknown", "http://paictl-test.invalid/rest-server"),
                                      ("tokenless", "http://paictl-test.invalid"))},
                  config / "paictl" / "openpai-clusters.yaml")
    env = {**os.environ, "XDG_CONFIG_HOME": str(config), "PAICTL_TEST_TOKEN": CANARY}
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        env.pop(name, None)
    return env


@pytest.mark.parametrize("alias", ["refused", "unknown"])
@pytest.mark.parametrize("command", [["status", "job"], ["stop", "alice~job"], ["logs", "job"],
                                     ["status", "job", "-o", "json"], ["logs", "job", "--output", "json"],
                                     ["status"], ["status", "-o", "wide"], ["status", "job", "-f"],
                                     ["status", "job", "--watch", "-o", "yaml"], ["logs", "job", "--follow"]])
def test_an_unreachable_openpai_cluster_is_answered_before_typer(openpai_env, command, alias):
    args = [*command, "--target", "openpai", "--cluster", alias]
    code, out, err = run(TYPER, args, b"", openpai_env)
    fast_code, fast_out, fast_err = run(LIGHT, args, b"", openpai_env)
    fast_err, _, imported = fast_err.rpartition(b"typer imported: ")
    assert imported == b"[]", (args, imported)
    assert (fast_code, fast_out, fast_err) == (code, out, err), args
    url = "http://paictl-test.invalid/rest-server" if alias == "unknown" else "http://127.0.0.1:"
    assert code == 3 and out == b"" and err.count(b"\n") == 1, err
    assert err.startswith(f"paictl: error: cannot reach the OpenPAI REST server {alias} ({url}".encode()), err
    assert CANARY.encode() not in err


@pytest.mark.parametrize("args", [
    ["status", "job", "--target", "openpai", "--cluster", "nowhere"],         # no such alias: exit 2
    ["status", "job", "--target", "openpai"],                                 # several aliases: choose one
    ["stop", "job", "--target", "openpai", "--cluster", "refused", "-o", "wide"],  # a format stop refuses
    ["logs", "job", "--target", "openpai", "--cluster", "refused", "-o", "yaml"],
    ["logs", "job", "worker", "0", "--target", "openpai", "--cluster", "refused"],  # not a plain form: typer's
    ["status", "job", "--target", "openpai", "--cluster", "refused", "--cluster", "unknown"],
    ["status", "--target", "openpai", "--cluster", "refused", "-o", "json"],  # a listing prints [] first
    ["status", "--cluster", "refused"],                       # a listing without --target starts with local runs
    ["status", "--target", "openpai", "--cluster", "refused", "-w"],          # watching a listing: typer's
    ["stop", "job", "--target", "openpai", "--cluster", "refused", "-f"],     # stop takes no --follow
    ["status", "job", "--target", "openpai", "--cluster"],                    # an option without its value
])
def test_what_the_early_answer_does_not_claim_is_typers(openpai_env, args):
    code, out, err = run(TYPER, args, b"", openpai_env)
    fast_code, fast_out, fast_err = run(FAST, args, b"", openpai_env)
    fast_err, _, imported = fast_err.rpartition(b"typer imported: ")
    assert imported == b"True", args
    assert (fast_code, fast_out, fast_err) == (code, out, err), args
    assert CANARY.encode() not in err + out


def test_a_missing_token_is_said_before_the_cluster_is_asked(openpai_env):
    """The token is looked up before any connection, on both paths: no token is exit 2 even when the server is
    unreachable too."""
    env = {key: value for key, value in openpai_env.items() if key != "PAICTL_TEST_TOKEN"}
    args = ["status", "job", "--target", "openpai", "--cluster", "tokenless"]
    code, out, err = run(TYPER, args, b"", env)
    assert (code, out) == (2, b"") and b"takes its token from $PAICTL_TEST_TOKEN, which is not set" in err
    assert run(FAST, args, b"", env)[:2] == (code, out)


@pytest.mark.parametrize("alias", ["refused", "unknown"])
@pytest.mark.parametrize("extra", [[], ["--dry-run", "-o", "json"], ["--follow", "--virtual-cluster", "vc"]])
@pytest.mark.parametrize("job", ["examples/hello-world.yaml", "no/such/job.yaml", "tests/cases/semantic"])
def test_submit_to_an_unreachable_openpai_cluster_is_one_line_at_once(openpai_env, alias, extra, job):
    """`submit --target openpai` asks the cluster before it reads the job (submit_run.ensure_reachable): the line
    is the one status gives, whatever the job (a missing or an invalid one too), never retried (no "tried N times"),
    and the early answer gives it without typer (nor the job's reading, nor the compiler)."""
    if job.endswith("semantic"):
        job = str(sorted((ROOT / job).glob("*.yaml"))[0].relative_to(ROOT))
    args = ["submit", job, "--target", "openpai", "--cluster", alias, *extra]
    code, out, err = run(TYPER, args, b"", openpai_env)
    fast_code, fast_out, fast_err = run(LIGHT, args, b"", openpai_env)
    fast_err, _, imported = fast_err.rpartition(b"typer imported: ")
    assert imported == b"[]"
    assert (fast_code, fast_out, fast_err) == (code, out, err)
    status = run(TYPER, ["status", "job", "--target", "openpai", "--cluster", alias], b"", openpai_env)
    assert code == 3 and out == b"" and err == status[2] and b"tried" not in err, err
    assert CANARY.encode() not in err


#: What the early answer may load beyond a bare interpreter: itself, how it exits, the targets registry and
#: OpenPAI's probe.
#: (Not the idna codec: a host name given to the resolver as a string loads it, with stringprep, unicodedata and re.)
EARLY_MODULES = {"paictl", "paictl.cli", "paictl.cli.entry", "paictl.cli.errors", "paictl.cli.process_exit",
                 "paictl.targets",
                 "paictl.targets.openpai", "paictl.targets.openpai.reach", "_socket", "stat", "_stat", "atexit"}
LOADED = FAST.replace("'typer imported: %s' % ('typer' in sys.modules)",
                      "'typer imported: %s' % ' '.join(sorted(sys.modules))")


@pytest.mark.parametrize("alias", ["refused", "unknown"])
@pytest.mark.parametrize("args", [["status", "job"], ["stop", "job"], ["logs", "job", "-f"],
                                  ["submit", "examples/hello-world.yaml", "-o", "yaml"]])
def test_the_early_openpai_answer_loads_only_what_it_uses(openpai_env, args, alias):
    """Python's start-up is most of the answer's time: nothing else of paictl (no typing, pathlib, dataclasses,
    YAML reader or HTTP client) may be imported for it."""
    bare = run("import atexit, sys; print(' '.join(sorted(sys.modules)))", [], b"", openpai_env)[1].split()
    code, _, err = run(LOADED, [*args, "--target", "openpai", "--cluster", alias], b"", openpai_env)
    loaded = set(err.rpartition(b"typer imported: ")[2].decode().split())
    assert code == 3 and loaded - {name.decode() for name in bare} <= EARLY_MODULES, sorted(
        loaded - {name.decode() for name in bare} - EARLY_MODULES)


@pytest.mark.parametrize("command", [["status", "--target", "framework"], ["status", "--target", "jobset", "-o", "name"],
                                     ["status", "demo", "--target", "mars"]])
def test_an_unreachable_kubernetes_listing_is_answered_before_typer(tmp_path, command):
    """The same mechanism for `status --target KIND` without NAME: the probe's line is the listing's."""
    config = tmp_path / "kubeconfig"
    config.write_text(f"apiVersion: v1\nkind: Config\ncurrent-context: team\nclusters: [{{name: c, cluster: "
                      f"{{server: 'http://127.0.0.1:{_refused_port()}'}}}}]\nusers: [{{name: u, user: {{}}}}]\n"
                      f"contexts: [{{name: team, context: {{cluster: c, user: u}}}}]\n")
    args = [*command, "--kubeconfig", str(config)]
    code, out, err = run(TYPER, args, b"")
    fast_code, fast_out, fast_err = run(FAST, args, b"")
    fast_err, _, imported = fast_err.rpartition(b"typer imported: ")
    assert imported == b"False", args
    assert (fast_code, fast_out, fast_err) == (code, out, err) and code == 3, (args, err)


@pytest.mark.parametrize("command", [["status", "job"], ["stop", "alice~job"], ["logs", "job"], ["status"],
                                     ["submit", "examples/hello-world.yaml"]])
def test_a_reachable_openpai_cluster_is_probed_once_per_invocation(openpai_env, tmp_path, command):
    """The early check (entry.unreachable_cluster) connects to the REST server before typer loads; when it
    answers, the command's client must not connect once more to check. A check is a connection that sends nothing:
    counted at the wire, in front of a server that knows no job."""
    import http.server
    import threading

    from tcp_counter import CountingForwarder

    from paictl.targets.openpai.clusters import ClusterEntry, save_clusters

    class NoJobs(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            body = b'[]' if self.path.startswith("/api/v2/jobs?") else \
                b'{"code": "NoJobError", "message": "Job alice~job is not found."}'
            self.send_response(200 if body == b"[]" else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_PUT = do_GET

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NoJobs)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    forwarder = CountingForwarder(("127.0.0.1", server.server_address[1]))
    try:
        config = tmp_path / "reachable"
        save_clusters({"here": ClusterEntry(alias="here", url=f"http://127.0.0.1:{forwarder.port}", user="alice",
                                            token_env="PAICTL_TEST_TOKEN")}, config / "paictl" / "openpai-clusters.yaml")
        code, out, err = run(FAST, [*command, "--target", "openpai", "--cluster", "here"], b"",
                             {**openpai_env, "XDG_CONFIG_HOME": str(config)})
        assert b"Traceback" not in err and b"cannot reach" not in err, err
        assert forwarder.bare_connections() == 1, (code, out, err)
    finally:
        forwarder.close()
        server.shutdown()
        server.server_close()
