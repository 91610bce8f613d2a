"""`paictl stop` of a job that already finished keeps it, whatever its kind (issue 28, D4).

A finished JobSet or MarsJob keeps its verdict only in the object: JobSet's status.terminalState and conditions
(kubernetes-sigs/jobset api/jobset/v1alpha2/jobset_types.go; the object stays until ttlSecondsAfterFinished),
KubeDL's status.conditions (alibaba/kubedl apis/training/v1alpha1 marsjob_types.go, JobStatus; cleaned up only by
ttlSecondsAfterFinished). Deleting it, as a stop of a running one does, would turn `status` into "not found" and
lose the exit codes. FrameworkController ignores a Stop of a completed Framework (reference frameworkcontroller.md).
"""

from __future__ import annotations

import json

import pytest

from conftest import JOBS
from kube_cli import paictl

pytest.importorskip("kubernetes")

KINDS = {
    "mars": ("training.kubedl.io/v1alpha1", "MarsJob", str(JOBS / "kube" / "mars-job.yaml"),
             "marsjob.training.kubedl.io"),
    "jobset": ("jobset.x-k8s.io/v1alpha2", "JobSet", str(JOBS / "kube" / "jobset-job.yaml"), "jobset.jobset.x-k8s.io"),
}


@pytest.mark.parametrize("target", sorted(KINDS))
def test_stopping_a_finished_job_keeps_it_and_its_verdict(emulator, target):
    api, kind, job, label = KINDS[target]
    emulator.scenario(kind, "*", "succeeded", run_seconds=1)
    done = paictl(emulator, "submit", job, "--target", target, "--follow")
    assert done.returncode == 0, done.stderr
    (obj,) = emulator.list_objects(api, kind, "default")
    name = obj["metadata"]["name"]
    stopped = paictl(emulator, "stop", name)
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stdout == f"{label}/{name} already finished\n"
    assert not [r for r in emulator.requests if r.method == "DELETE"]
    assert emulator.get_object(api, kind, "default", name) is not None
    shown = paictl(emulator, "status", name, "-o", "json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["state"] == "succeeded"
