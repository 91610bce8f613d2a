"""Re-submitting a running job on the real control plane (issue 36, R1 and R2): what the emulator could not show.

- R1: JobSet's mutating webhook stores `cpu: 1` as "1" and adds defaults (`protocol: TCP`, `startupPolicy`,
  template `metadata: {}`); a raw comparison read the unchanged job as edited (exit 3).
- R2: FrameworkController writes the whole Framework back in its own form and becomes a manager of
  `.spec.taskRoles`; every re-submit was a raw 409 conflict naming it.
kwok runs the pods (tests/kube_real/stages.yaml): a task whose commands say `sleep infinity` runs until deleted.
"""

from __future__ import annotations

import re

import pytest

from conftest import JOBS, ROOT
from kube_cli import paictl, wait_for
from kube_real.jobs import with_commands

pytest.importorskip("kubernetes")

FC = "frameworkcontroller.microsoft.com/v1"
JOBSET = "jobset.x-k8s.io/v1alpha2"


def _running_job(tmp_path, source):
    """`source` with every task running until it is deleted."""
    return with_commands(source, "sleep infinity", tmp_path / "job.yaml")


def _edited(path, tmp_path):
    text = path.read_text()
    image = next(line.split("uri:", 1)[1].strip() for line in text.splitlines() if "uri:" in line)
    edited = tmp_path / "edited.yaml"
    edited.write_text(text.replace(image, image + "-edited"))
    return edited


def _submitted(cluster, job, target: str, api: str, kind: str) -> dict:
    """Submit `job` and return the workload as the cluster stored it."""
    done = paictl(cluster, "submit", str(job), "--target", target)
    assert done.returncode == 0, done.stderr
    (workload,) = cluster.list_objects(api, kind)
    return workload


def _status(cluster, name: str, target: str) -> str:
    done = paictl(cluster, "status", name, "--target", target, "--format", "json")
    return done.stdout if done.returncode == 0 else ""


def test_an_unchanged_jobset_resubmitted_while_it_runs_is_already_submitted(real_cluster, tmp_path):
    real_cluster.require("jobset")
    job = _running_job(tmp_path, JOBS / "kube" / "jobset-job.yaml")
    jobset = _submitted(real_cluster, job, "jobset", JOBSET, "JobSet")
    name = jobset["metadata"]["name"]
    containers = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"]
    assert containers[0]["resources"]["limits"]["cpu"] == "1"  # the webhook's canonical form, not paictl's 1
    wait_for(lambda: '"running"' in _status(real_cluster, name, "jobset"), seconds=60)
    before = real_cluster.get_object(JOBSET, "JobSet", name)["spec"]
    again = paictl(real_cluster, "submit", str(job), "--target", "jobset")
    assert again.returncode == 0, again.stderr
    assert again.stdout.endswith("nothing changed, the job is already submitted\n"), again.stdout
    assert real_cluster.get_object(JOBSET, "JobSet", name)["spec"] == before
    edited = paictl(real_cluster, "submit", str(_edited(job, tmp_path)), "--target", "jobset")
    assert edited.returncode == 3, edited.stdout
    (line,) = edited.stderr.splitlines()
    # the state word is the status view's at that moment (a pod of the other role may still be starting)
    assert re.match(rf"paictl: error: jobset\.jobset\.x-k8s\.io/{name} is (running|pending) with another version of "
                    r"the job \(spec\.replicatedJobs changed\)", line), line
    assert "JobSet's webhook keeps spec.replicatedJobs immutable" in line
    replaced = paictl(real_cluster, "submit", str(_edited(job, tmp_path)), "--target", "jobset", "--replace")
    assert replaced.returncode == 0, replaced.stderr
    assert "-edited" in str(real_cluster.get_object(JOBSET, "JobSet", name)["spec"])


def test_a_framework_resubmitted_after_frameworkcontroller_rewrote_it(real_cluster, tmp_path):
    real_cluster.require("frameworkcontroller")
    job = _running_job(tmp_path, ROOT / "examples" / "hello-world.yaml")
    name = _submitted(real_cluster, job, "framework", FC, "Framework")["metadata"]["name"]

    def rewritten():
        current = real_cluster.get_object(FC, "Framework", name)
        managers = {entry["manager"] for entry in current["metadata"].get("managedFields") or []}
        return "frameworkcontroller" in managers and '"running"' in _status(real_cluster, name, "framework")

    wait_for(rewritten, seconds=60)
    again = paictl(real_cluster, "submit", str(job), "--target", "framework")
    assert again.returncode == 0, again.stderr
    assert again.stdout.endswith("nothing changed, the job is already submitted\n"), again.stdout
    edited = paictl(real_cluster, "submit", str(_edited(job, tmp_path)), "--target", "framework")
    assert edited.returncode == 3, edited.stdout
    (line,) = edited.stderr.splitlines()
    assert re.match(rf"paictl: error: framework\.frameworkcontroller\.microsoft\.com/{name} is (running|pending) "
                    r"with another version of the job \(spec\.taskRoles", line), line
    assert "conflict" not in line
    assert "-edited" not in str(real_cluster.get_object(FC, "Framework", name)["spec"])


def test_a_conflict_with_frameworkcontroller_says_the_job_is_already_submitted(real_cluster, tmp_path):
    """An apply that reaches the server anyway (another paictl raced this one) meets FrameworkController's
    ownership of .spec.taskRoles: one line saying the job is there and what --replace does, not the raw 409."""
    real_cluster.require("frameworkcontroller")
    from paictl.errors import ClusterError
    from paictl.targets.compiled import compile_job
    from paictl.targets.kube.apply import apply_objects
    from paictl.targets.kube.connection import connect

    job = _running_job(tmp_path, ROOT / "examples" / "hello-world.yaml")
    objects = compile_job(str(job), target="framework", namespace=real_cluster.namespace).objects
    cluster = connect(kubeconfig=str(real_cluster.kubeconfig))
    apply_objects(cluster, objects, dry_run=False)
    name = next(o for o in objects if o["kind"] == "Framework")["metadata"]["name"]
    wait_for(lambda: "frameworkcontroller" in {e["manager"] for e in real_cluster.get_object(
        FC, "Framework", name)["metadata"].get("managedFields") or []}, seconds=60)
    with pytest.raises(ClusterError) as raised:
        apply_objects(cluster, objects, dry_run=False)
    message = str(raised.value)
    assert "managed by 'frameworkcontroller'" in message
    assert ("(the job is already submitted and FrameworkController owns its spec, so it cannot be applied again: "
            "`paictl status` shows it; to run an edited job, `paictl submit --replace` deletes it and runs the job "
            "anew)") in message, message
