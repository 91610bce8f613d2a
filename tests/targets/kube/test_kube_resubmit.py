"""Re-submitting an edited job while it runs (issue 28, D3).

FrameworkController builds every pod it creates from the Framework's current spec (frameworkcontroller
pkg/controller/controller.go syncTaskState -> createTaskAttempt -> ExtractTaskPod from f.Spec), and so does
KubeDL (alibaba/kubedl pkg/job_controller ReconcilePods from the job's current replica specs): an apply that
changes the spec of a running job reaches only the pods made from then on, retries, so the run mixes versions.
JobSet's webhook refuses the change outright (kubernetes-sigs/jobset pkg/webhooks/jobset_webhook.go
ValidateUpdate: spec.replicatedJobs immutable unless suspended; a 422 that quotes every replicatedJob).
"""

from __future__ import annotations

import pytest

from conftest import JOBS, ROOT
from kube_cli import paictl

pytest.importorskip("kubernetes")

KINDS = {
    "framework": ("frameworkcontroller.microsoft.com/v1", "Framework", str(ROOT / "examples" / "hello-world.yaml"),
                  "framework.frameworkcontroller.microsoft.com", "FrameworkController builds each new pod"),
    "mars": ("training.kubedl.io/v1alpha1", "MarsJob", str(JOBS / "kube" / "mars-job.yaml"),
             "marsjob.training.kubedl.io", "KubeDL builds each new pod"),
    "jobset": ("jobset.x-k8s.io/v1alpha2", "JobSet", str(JOBS / "kube" / "jobset-job.yaml"),
               "jobset.jobset.x-k8s.io", "be refused: JobSet's webhook keeps spec.replicatedJobs immutable"),
}


@pytest.mark.parametrize("target", sorted(KINDS))
def test_an_edited_job_is_not_applied_over_the_running_one(emulator, tmp_path, target):
    api, kind, job, label, consequence = KINDS[target]
    emulator.scenario(kind, "*", "running", seconds=100000)
    done = paictl(emulator, "submit", job, "--target", target)
    assert done.returncode == 0, done.stderr
    (before,) = emulator.list_objects(api, kind, "default")
    name = before["metadata"]["name"]
    same = paictl(emulator, "submit", job, "--target", target)  # unchanged: nothing to refuse
    assert same.returncode == 0 and same.stdout.endswith("nothing changed, the job is already submitted\n"), same
    edited = tmp_path / "edited.yaml"
    text = open(job).read()
    image = next(line.split("uri:", 1)[1].strip() for line in text.splitlines() if "uri:" in line)
    edited.write_text(text.replace(image, image + "-edited"))
    again = paictl(emulator, "submit", str(edited), "--target", target)
    assert again.returncode == 3, again.stdout
    (line,) = again.stderr.splitlines()
    assert line.startswith(f"paictl: error: {label}/{name} is running with another version of the job (spec.")
    assert consequence in line and line.endswith("`paictl submit --replace` deletes it and runs the edited job")
    assert len(line) < 600  # not the webhook's dump of every replicatedJob
    after = emulator.get_object(api, kind, "default", name)
    assert after["spec"] == before["spec"] and after["metadata"]["uid"] == before["metadata"]["uid"]
    replaced = paictl(emulator, "submit", str(edited), "--target", target, "--replace")
    assert replaced.returncode == 0, replaced.stderr
    assert image + "-edited" in str(emulator.get_object(api, kind, "default", name)["spec"])


def test_a_jobset_webhook_denial_is_one_short_line(emulator):
    """Whatever triggers it, the webhook's 422 is shortened to who denied it and `field: reason`."""
    from paictl.targets.kube.client import ApiFailure, JOBSET, describe_failure

    import json

    body = {"kind": "Status", "code": 422, "reason": "Invalid", "message": 'admission webhook "vjobset.kb.io" denied '
            'the request: JobSet.jobset.x-k8s.io "x" is invalid: spec.replicatedJobs: Invalid value: '
            + "[]v1alpha2.ReplicatedJob{" + "x" * 5000 + "}: field is immutable",
            "details": {"causes": [{"reason": "FieldValueInvalid", "field": "spec.replicatedJobs",
                                    "message": "Invalid value: []v1alpha2.ReplicatedJob{" + "x" * 5000
                                    + "}: field is immutable"}]}}

    class Cluster:  # describe_failure reads only these
        server, context, namespace = "https://k", "c", "default"

    error = describe_failure(Cluster(), ApiFailure(422, json.dumps(body)), verb="apply", resource=JOBSET, name="x")
    assert str(error) == ('the cluster rejected jobsets.jobset.x-k8s.io \'x\': admission webhook "vjobset.kb.io" '
                          "denied the request: spec.replicatedJobs: field is immutable")


def test_the_stored_form_of_an_unchanged_job_reads_as_unchanged():
    """What JobSet's webhook and FrameworkController store for what paictl sent (issue 36, R1/R2; seen on the real
    control plane in test_real_resubmit.py): the same job, however written; a real edit is still one."""
    from paictl.targets.kube.resubmit import edited_fields, same_value

    sent = {"metadata": {"labels": {"userName": "paictl"}, "annotations": {"jobName": "x"}},
            "spec": {"replicatedJobs": [{"name": "w", "template": {"spec": {"template": {"spec": {"containers": [
                {"name": "app", "resources": {"limits": {"cpu": 1, "memory": "512Mi", "nvidia.com/gpu": 0}},
                 "env": [{"name": "A", "value": ""}], "ports": [{"containerPort": 80}]}]}}}}}]}}
    stored = {"metadata": {"labels": {"userName": "paictl", "jobset.sigs.k8s.io/jobset-name": "x"},
                           "annotations": {"jobName": "x"}, "managedFields": []},
              "spec": {"startupPolicy": {"startupPolicyOrder": "AnyOrder"}, "replicatedJobs": [{
                  "name": "w", "groupName": "default", "template": {"metadata": {}, "spec": {"template": {
                      "metadata": {"creationTimestamp": None}, "spec": {"containers": [{
                          "name": "app", "resources": {"limits": {"cpu": "1", "memory": "536870912",
                                                                  "nvidia.com/gpu": "0"}},
                          "env": [{"name": "A"}], "ports": [{"containerPort": 80, "protocol": "TCP"}]}]}}}}}]}}
    assert edited_fields(sent, stored) == []
    assert same_value("1000m", 1) and same_value("1.5Gi", "1536Mi") and same_value(2, "2e0")
    assert not same_value("1", "2") and not same_value("a", "b") and not same_value(True, 1)
    stored["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]["resources"][
        "limits"]["cpu"] = "2"
    assert edited_fields(sent, stored) == ["spec.replicatedJobs"]
    sent["metadata"]["annotations"]["jobName"] = "y"
    assert edited_fields(sent, stored) == ["spec.replicatedJobs", "metadata.annotations.jobName"]
