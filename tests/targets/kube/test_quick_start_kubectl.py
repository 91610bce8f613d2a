"""The quick start on a plain cluster, and `paictl status` as `kubectl get`, checked with the real kubectl against
the emulator: the objects `compile --barrier-rbac` pipes into `kubectl apply` are the ones FrameworkController's
example asks for, and the listing's AGE, -A and -l agree with kubectl's.

Without kubectl these tests skip, except in CI (env CI set), where kubectl is required and its absence fails.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT
from kube_cli import paictl, start

KUBECTL = shutil.which("kubectl") or ("/usr/bin/kubectl" if os.path.exists("/usr/bin/kubectl") else None)

if KUBECTL is None:
    if os.environ.get("CI"):
        pytest.fail("kubectl is required in CI for the emulator cross-check", pytrace=False)
    pytest.skip("kubectl is not installed", allow_module_level=True)

PS = ROOT / "examples" / "parameter-server.yaml"


@pytest.fixture
def kubectl(emulator, tmp_path):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path),
           "KUBECONFIG": str(emulator.kubeconfig)}

    def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([KUBECTL, *args], input=stdin, capture_output=True, text=True, env=env, timeout=60)

    return run


def compiled(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "paictl", "compile", *args], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def readme_pipe() -> tuple[str, list[str]]:
    """The README's quick-start line into `kubectl apply`, and the output it shows."""
    lines = (ROOT / "README.md").read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if line.startswith("$ paictl compile") and "kubectl apply" in line)
    shown = []
    for line in lines[index + 1:]:
        if line.startswith(("$ ", "```")):
            break
        shown.append(line)
    return lines[index][2:], shown


def test_the_quick_start_pipe_applied_server_side_applies_what_the_pods_need(kubectl, emulator, tmp_path):
    """The README's pipe with `kubectl apply --server-side` (the README's own line, client-side, runs on the real
    control plane: test_real_flows.py::test_the_readme_quick_start_runs_to_success_with_kubectl)."""
    command = readme_pipe()[0].replace("kubectl apply", "kubectl apply --server-side")
    env = {"PATH": f"{os.path.dirname(sys.executable)}:{os.path.dirname(KUBECTL)}:/usr/bin:/bin",
           "HOME": str(tmp_path), "KUBECONFIG": str(emulator.kubeconfig)}
    done = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert [line.split()[0] for line in done.stdout.splitlines()][:3] == [
        "serviceaccount/frameworkbarrier", "role.rbac.authorization.k8s.io/frameworkbarrier",
        "rolebinding.rbac.authorization.k8s.io/frameworkbarrier"]
    framework = json.loads(kubectl("get", "frameworks", "-o", "json").stdout)["items"][0]
    accounts = {role["task"]["pod"]["spec"].get("serviceAccountName") for role in framework["spec"]["taskRoles"]}
    assert accounts == {"frameworkbarrier"}  # every pod runs as the account the output created
    binding = json.loads(kubectl("get", "rolebinding", "frameworkbarrier", "-o", "json").stdout)
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "frameworkbarrier", "namespace": "default"}]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "frameworkbarrier"}
    # FrameworkController's example ([PREREQUISITE] in example/framework/extension/frameworkbarrier.yaml) grants
    # `kubectl create clusterrole frameworkbarrier --verb=get,list,watch --resource=frameworks`: kubectl itself
    # says which rules that is; the Role grants the same, in the job's namespace.
    upstream = kubectl("create", "clusterrole", "frameworkbarrier", "--verb=get,list,watch", "--resource=frameworks",
                       "--dry-run=client", "-o", "json")
    assert upstream.returncode == 0, upstream.stderr
    role = json.loads(kubectl("get", "role", "frameworkbarrier", "-o", "json").stdout)
    assert role["rules"] == json.loads(upstream.stdout)["rules"]


def test_without_the_option_or_gang_allocation_nothing_more_is_emitted():
    kinds = [line.split()[1] for line in compiled(str(PS)).splitlines() if line.startswith("kind: ")]
    assert kinds == ["Secret", "Framework"]
    no_gang = compiled(str(ROOT / "examples" / "retry-without-gang.yaml"), "--barrier-rbac")
    assert "kind: ServiceAccount" not in no_gang and "serviceAccountName" not in no_gang
    openpai = compiled(str(PS), "--barrier-rbac", "--profile", "openpai")  # its runtime has no barrier
    assert "kind: Role" not in openpai


def _columns(text: str) -> list[dict[str, str]]:
    lines = text.splitlines()
    starts = [m.start() for m in re.finditer(r"\S+", lines[0])]
    names = lines[0].split()
    return [{name: line[a:b].strip() for name, a, b in zip(names, starts, starts[1:] + [None])} for line in lines[1:]]


def test_status_lists_as_kubectl_get(kubectl, emulator, tmp_path):
    # (`kubectl create namespace` sends protobuf, which the emulator does not read; apply sends JSON)
    assert kubectl("apply", "-f", "-", stdin="apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}\n"
                   ).returncode == 0
    for namespace in ("default", "team-a"):
        text = compiled(str(PS), "-n", namespace, "--barrier-rbac")
        assert kubectl("apply", "-f", "-", stdin=text).returncode == 0
    labelled = compiled(str(ROOT / "examples" / "hello-world.yaml"), "--user", "alice")
    assert kubectl("apply", "-f", "-", stdin=labelled).returncode == 0
    runs = ["--run-dir", str(tmp_path / "no-runs"), "--target", "framework"]

    listed = paictl(emulator, "status", *runs)
    assert listed.returncode == 0, listed.stderr
    ours = {row["NAME"]: row["AGE"] for row in _columns(listed.stdout)}
    theirs = {row["NAME"]: row["AGE"] for row in _columns(kubectl("get", "frameworks").stdout)}
    assert ours == theirs and len(ours) == 2  # the same AGE as kubectl's, in the current namespace only

    every = _columns(paictl(emulator, "status", "-A", *runs).stdout)
    assert sorted(row["WHERE"].split()[-1] for row in every) == sorted(
        f"{row['NAMESPACE']}/{row['NAME']}" for row in _columns(kubectl("get", "frameworks", "-A").stdout))
    assert len(every) == 3

    selected = paictl(emulator, "status", "-l", "userName=alice", "-o", "name", *runs)
    kubectl_selected = kubectl("get", "frameworks", "-l", "userName=alice", "-o", "name").stdout
    assert selected.stdout.split() == [line.split("/")[-1] for line in kubectl_selected.split()] != []
    assert paictl(emulator, "status", "-l", "userName=nobody", "-o", "json", *runs).stdout.strip() == "[]"
    local = paictl(emulator, "status", "-l", "userName=alice", "--target", "local")
    assert local.returncode == 2 and "no labels" in local.stderr


def test_status_watch_without_a_name_prints_changed_rows_until_ctrl_c(emulator, tmp_path):
    import queue
    import threading

    submitted = paictl(emulator, "submit", str(ROOT / "examples" / "hello-world.yaml"), "--target", "framework")
    assert submitted.returncode == 0, submitted.stderr
    name = submitted.stdout.split()[-2].split("/")[-1]
    watcher = start(emulator, "status", "-w", "--target", "framework", "-o", "name")
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line.strip()) for line in watcher.stdout], daemon=True).start()
    try:
        assert lines.get(timeout=60) == name  # the first listing
        stopped = paictl(emulator, "stop", name)
        assert stopped.returncode == 0, stopped.stderr
        assert lines.get(timeout=60) == name  # printed again: its row changed
    finally:
        watcher.send_signal(signal.SIGINT)
        _, err = watcher.communicate(timeout=30)
    assert watcher.returncode == 130, err


def test_the_namespace_goes_to_paictl_not_to_kubectl(kubectl):
    """The README and the Kubernetes how-to: the objects carry their namespace, so `kubectl apply -n team-a` refuses
    what `compile` made for `default`, and `compile -n team-a | kubectl apply -f -` puts them in team-a."""
    assert kubectl("apply", "-f", "-", stdin="apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}\n"
                   ).returncode == 0
    refused = kubectl("apply", "-n", "team-a", "-f", "-", stdin=compiled(str(PS), "--barrier-rbac"))
    assert refused.returncode != 0 and 'does not match the namespace "team-a"' in refused.stderr, refused.stderr
    applied = kubectl("apply", "-f", "-", stdin=compiled(str(PS), "--barrier-rbac", "-n", "team-a"))
    assert applied.returncode == 0, applied.stderr
    names = kubectl("get", "frameworks", "-n", "team-a", "-o", "name").stdout.split()
    assert len(names) == 1 and names[0].startswith("framework.frameworkcontroller.microsoft.com/pstraining")
