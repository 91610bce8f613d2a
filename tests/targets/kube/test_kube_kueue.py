"""`paictl stop --suspend` of a JobSet Kueue manages (issue 28, D2), against the emulator's Kueue (kueue_sim.py).

kubernetes-sigs/kueue pkg/controller/jobframework/reconciler.go ReconcileGenericJob, step 7: a suspended job whose
Workload is admitted is started again ("Job admitted, unsuspending"), so `spec.suspend: true` alone is undone and
the pods come back. Kueue's stop is the Workload's `spec.active: false` (apis/kueue/v1beta1/workload_types.go:
"Changing active from true to false will evict any running workloads"): evicted, the job suspended, kept so.
"""

from __future__ import annotations

import json
import time

import pytest

from conftest import JOBS, ROOT
from kube_cli import paictl, wait_for

pytest.importorskip("kubernetes")

API = "jobset.x-k8s.io/v1alpha2"
JOB = str(JOBS / "kube" / "jobset-job.yaml")


def _running_pods(emu) -> list:
    return [p for p in emu.list_objects("v1", "Pod", "default")
            if (p.get("status") or {}).get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")]


def test_suspending_a_queued_jobset_deactivates_its_workload_and_it_stays_stopped(emulator, tmp_path):
    kueue = emulator.install_kueue()
    profile = tmp_path / "queued.yaml"
    profile.write_text((ROOT / "compiler" / "profiles" / "default.yaml").read_text()
                       + "jobset:\n  queueName: team-queue\n")
    emulator.scenario("JobSet", "*", "running")
    done = paictl(emulator, "submit", JOB, "--target", "jobset", "--profile", str(profile))
    assert done.returncode == 0, done.stderr
    (jobset,) = emulator.list_objects(API, "JobSet", "default")
    name = jobset["metadata"]["name"]
    assert jobset["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-queue"
    wait_for(lambda: len(_running_pods(emulator)) == 3, seconds=30)  # admitted and unsuspended by Kueue
    (workload,) = emulator.list_objects("kueue.x-k8s.io/v1beta1", "Workload", "default")
    stopped = paictl(emulator, "stop", name, "--suspend")
    assert stopped.returncode == 0, stopped.stderr
    wait_for(lambda: not emulator.list_objects("v1", "Pod", "default"), seconds=30)
    time.sleep(2.0)  # 400 simulated seconds: Kueue would have unsuspended it by now
    assert not emulator.list_objects("v1", "Pod", "default")
    assert stopped.stdout == (f"jobset.jobset.x-k8s.io/{name} suspended (Kueue workload "
                              f"{workload['metadata']['name']} deactivated)\n")
    assert emulator.get_object(API, "JobSet", "default", name)["spec"]["suspend"] is True
    workload = emulator.get_object("kueue.x-k8s.io/v1beta1", "Workload", "default", workload["metadata"]["name"])
    assert workload["spec"]["active"] is False
    shown = paictl(emulator, "status", name, "-o", "json")
    assert shown.returncode == 0 and json.loads(shown.stdout)["state"] == "stopped", shown.stdout
    assert kueue is emulator.kueue
