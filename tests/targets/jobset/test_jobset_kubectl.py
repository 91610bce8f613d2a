"""Real kubectl against the emulator's JobSet kind: `paictl compile --target jobset | kubectl apply --server-side`
works, `kubectl get jobsets` and `kubectl get pods -l jobset.sigs.k8s.io/jobset-name=...` see what the scripted
controller made, and `kubectl delete` takes the JobSet with its Jobs and pods. Skipped without kubectl (as
tests/targets/kube/test_kubectl_crosscheck.py, which fails in CI instead)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT
from kube_cli import wait_for

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None and not os.environ.get("CI"), reason="kubectl is not installed")


def test_kubectl_applies_gets_and_deletes_a_compiled_jobset(emulator, tmp_path):
    assert KUBECTL is not None, "kubectl is required in CI"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path),
           "KUBECONFIG": str(emulator.kubeconfig)}

    def kubectl(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([KUBECTL, *args], input=stdin, capture_output=True, text=True, env=env, timeout=60)

    emulator.scenario("JobSet", "*", "running")
    compiled = subprocess.run([sys.executable, "-m", "paictl", "compile", "tests/jobs/kube/jobset-job.yaml",
                               "--target", "jobset"], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert compiled.returncode == 0, compiled.stderr
    applied = kubectl("apply", "--server-side", "-f", "-", stdin=compiled.stdout)
    assert applied.returncode == 0, applied.stderr
    name = applied.stdout.split("/", 1)[1].split()[0]
    assert applied.stdout == f"jobset.jobset.x-k8s.io/{name} serverside-applied\n"
    listed = json.loads(kubectl("get", "jobsets", "-o", "json").stdout)
    assert [item["metadata"]["name"] for item in listed["items"]] == [name]
    def three_pods() -> list[dict]:
        found = json.loads(kubectl("get", "pods", "-l", f"jobset.sigs.k8s.io/jobset-name={name}", "-o",
                                   "json").stdout)["items"]
        return found if len(found) == 3 else []  # one param_server, two workers

    pods = wait_for(three_pods)
    assert sorted(p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] for p in pods) == ["0", "0", "1"]
    deleted = kubectl("delete", "jobset", name, "--cascade=foreground", "--wait=false")
    assert deleted.returncode == 0, deleted.stderr
    wait_for(lambda: not emulator.list_objects("v1", "Pod", "default")
             and emulator.get_object("jobset.x-k8s.io/v1alpha2", "JobSet", "default", name) is None)
