"""Logs of a JobSet task whose index was retried (issue 28, D5).

kubernetes pkg/controller/job (indexed_job_utils.go, backoffLimitPerIndex): a failed pod of an Indexed Job's
index is kept, and a new pod for the same index is created beside it (same hostname `<job>-<index>`, a new random
suffix, annotation `batch.kubernetes.io/job-index-failure-count` one higher). The compiled JobSet retries tasks
this way (targets/jobset/target.py: taskRetryCount -> backoffLimitPerIndex). `logs` must show the current pod's
output, not every attempt's under one prefix in pod-name order.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from conftest import JOBS
from kube_cli import paictl, wait_for

pytest.importorskip("kubernetes")

JOB = str(JOBS / "kube" / "jobset-job.yaml")


def test_logs_of_a_retried_index_are_its_newest_pods(emulator, tmp_path):
    emulator.scenario("JobSet", "*", "running", task_role="worker", task_index=1, index_retries=2)
    done = paictl(emulator, "submit", JOB, "--target", "jobset")
    assert done.returncode == 0, done.stderr
    name = done.stdout.split("/", 1)[1].split(" ", 1)[0]
    worker_1 = f"{name}-worker-0-1"

    def pods_of_worker_1() -> list:
        return [p for p in emulator.list_objects("v1", "Pod", "default") if p["spec"].get("hostname") == worker_1]

    wait_for(lambda: len(pods_of_worker_1()) == 3
             and sum(p["status"].get("phase") == "Running" for p in pods_of_worker_1()) == 1, seconds=30)
    shown = paictl(emulator, "logs", name, "worker", "1")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == f"[{worker_1}] started\n"
    assert "Traceback" not in shown.stdout
    current = next(p for p in pods_of_worker_1() if p["status"].get("phase") == "Running")["metadata"]["name"]
    earlier = [p["metadata"]["name"] for p in sorted(pods_of_worker_1(), key=lambda p: p["metadata"][
        "creationTimestamp"]) if p["metadata"]["name"] != current]
    commands = [f"kubectl --kubeconfig {emulator.kubeconfig} logs -n default -c app {pod}" for pod in earlier]
    assert shown.stderr == (f"paictl: worker-1: the log of its newest pod {current}; 2 earlier pod(s) of this task "
                            f"are not shown ({'; '.join(commands)})\n")
    if shutil.which("kubectl") is not None:  # what the note tells the user to run, runs (each earlier attempt's log)
        for attempt, command in enumerate(commands, 1):
            ran = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=60,
                                 env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)})
            assert ran.returncode == 0, ran.stderr
            assert ran.stdout == f"[{worker_1}] Traceback (most recent call last): failure {attempt}\n"
    every = paictl(emulator, "logs", name)
    assert every.returncode == 0, every.stderr
    assert "Traceback" not in every.stdout
    assert [line for line in every.stdout.splitlines() if line.startswith("[worker-1]")] == [
        f"[worker-1] [{worker_1}] started"]
