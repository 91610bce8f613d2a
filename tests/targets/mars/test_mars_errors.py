"""`paictl compile --target mars` refusals and warnings, located at file:line:col of the offending task role or
`extras.marsJob` key (the positions are those of the jobs built from test_mars.BASE)."""

from __future__ import annotations

import dataclasses

import pytest

from paictl.compiler.profiles import load_profile
from paictl.protocol import load_job_text
from paictl.protocol.loading import load_located
from paictl.targets.mars.target import compile_warnings
from test_mars import BASE, WEB, compiled, errors_of, with_extras


# --- refusals, located ----------------------------------------------------------------------------------------------

def test_unknown_task_role():
    text = BASE + "  ps:\n    dockerImage: mars\n    resourcePerInstance: {cpu: 1, memoryMB: 1, gpu: 0}\n" \
                  "    commands: [x]\n"
    assert errors_of(text) == ["16:3 E701 task role 'ps' is not a Mars role: a MarsJob has only scheduler, "
                               "webservice and worker replicas (KubeDL ignores any other)"]
    web = errors_of(text.replace("  ps:", "  web_service:"))
    assert web[0].endswith("did you mean 'webservice'?")


def test_two_roles_of_one_type():
    text = BASE + WEB.replace("WebService", "Worker")
    assert errors_of(text) == ["16:3 E701 task roles 'worker' and 'Worker' are both the Worker (role names are "
                               "matched case-insensitively)"]


@pytest.mark.parametrize("missing", ["scheduler", "worker"])
def test_missing_scheduler_or_worker(missing):
    lines = BASE.splitlines(keepends=True)
    start = lines.index(f"  {missing}:\n")
    end = start + (4 if missing == "scheduler" else 5)
    errors = errors_of("".join(lines[:start] + lines[end:]) + WEB)
    assert len(errors) == 1 and errors[0].startswith(f"6:1 E702 a Mars job needs a {missing} task role: ")
    if missing == "scheduler":
        assert "only the scheduler decides whether a MarsJob succeeded or failed" in errors[0]


def test_more_than_one_scheduler():
    errors = errors_of(BASE.replace("  scheduler:\n", "  scheduler:\n    instances: 2\n"))
    assert errors == ["8:16 E703 the scheduler has 2 instances; Mars runs exactly one (it holds the cluster state in "
                      "memory, and only the scheduler decides success)"]


def test_web_host_without_web_service():
    errors = errors_of(with_extras("webHost: mars.example.com"))
    assert errors == ["18:5 E704 webHost is set but the job has no webservice task role: KubeDL creates the Ingress "
                      "for WebService pods only"]


@pytest.mark.parametrize("extras,expected", [
    ("webhost: a.b", "18:5 E705 unknown key 'webhost' in extras.marsJob; did you mean 'webHost'?"),
    ("workerMemoryTuningPolicy: {workerCachePercentage: 101}",
     "18:55 E705 extras.marsJob.workerMemoryTuningPolicy.workerCachePercentage: 101 is greater than the maximum of 100"),
    ("workerMemoryTuningPolicy: {workerCacheSize: 2GB}", "18:49 E705 extras.marsJob.workerMemoryTuningPolicy."
                                                          "workerCacheSize: '2GB' is not a Kubernetes quantity"),
    ("workerMemoryTuningPolicy: {workerCacheSize: '1e40'}", "18:49 E705 workerCacheSize 1e40 is more than a "
                                                           "Kubernetes quantity holds"),
    ("workerMemoryTuningPolicy: {spillDir: [/x]}",
     "18:32 E705 unknown key 'spillDir' in extras.marsJob.workerMemoryTuningPolicy; did you mean 'spillDirs'?"),
    ("webHost: http://mars.example.com", "18:14 E705 extras.marsJob.webHost: \"http://mars.example.com\" does not "
                                         "match \"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$\""),
    ("cleanPodPolicy: Never", "18:21 E705 extras.marsJob.cleanPodPolicy: \"Never\" is not one of \"None\", \"Running\" or "
                              "\"All\""),
    ("restartPolicy: {worker: Sometimes}", "18:29 E705 extras.marsJob.restartPolicy.worker: \"Sometimes\" is not one "
                                           "of \"Always\", \"OnFailure\" or 2 other candidates"),
    ("restartPolicy: {ps: Never}", "18:21 E705 restartPolicy names task role 'ps', which the job does not have"),
    ("schedulingPolicy: {minAvailable: 4}", "18:38 E705 minAvailable 4 is more than the job's 3 pods, so a gang "
                                            "scheduler never starts it"),
    ("backoffLimit: -1", "18:19 E705 extras.marsJob.backoffLimit: -1 is less than the minimum of 0"),
    ("[]", "17:12 E705 extras.marsJob must be a mapping of MarsJob settings"),
])
def test_invalid_extras(extras, expected):
    text = with_extras(extras) if extras != "[]" else BASE + "extras:\n  marsJob: []\n"
    assert errors_of(text) == [expected]


def test_scheduling_policy_of_the_older_api_group():
    profile = dataclasses.replace(load_profile("default"), mars_api_version="kubedl.io/v1alpha1")
    errors = errors_of(with_extras("schedulingPolicy: {minAvailable: 3, queue: q1}"), profile)
    assert errors == ["18:41 E705 schedulingPolicy.queue does not exist in kubedl.io/v1alpha1 (that operator knows "
                      "minAvailable only; the API server drops it)"]


def test_a_port_range_that_hands_out_the_mars_port():
    profile = dataclasses.replace(load_profile("default"), port_range=(11110, 12000))
    errors = errors_of(BASE, profile)
    assert errors == ["9:5 E706 task role 'scheduler' would get port 11111 for its 'http' ports, and Mars binds that "
                      "port itself"]


@pytest.mark.parametrize("extras, expected", [
    ("workerMemoryTuningPolicy: {spillDirs: [/mnt/a, /dev/shm]}",
     "18:52 E705 spill directory /dev/shm is also the container's mount of dshm; KubeDL mounts a volume there as it "
     "creates each worker pod, and the API server refuses a container with two mounts at one path, so no worker "
     "would ever start"),
    ("memoryTuningPolicy: {spillDirs: [/usr/local/pai/secrets]}",
     "18:38 E705 spill directory /usr/local/pai/secrets is also the container's mount of job-secrets; KubeDL mounts "
     "a volume there as it creates each worker pod, and the API server refuses a container with two mounts at one "
     "path, so no worker would ever start"),
    ("workerMemoryTuningPolicy: {spillDirs: [/mnt/p], plasmaStore: /mnt/p, workerCachePercentage: 10}",
     "18:66 E705 the worker cache (plasmaStore) /mnt/p is also a spill directory; KubeDL mounts a volume there as "
     "it creates each worker pod, and the API server refuses a container with two mounts at one path, so no worker "
     "would ever start"),
])
def test_a_kubedl_volume_where_the_worker_already_mounts_one(extras, expected):
    """KubeDL adds `mars-empty-dir-<i>` at each spill directory and its cache volume at plasmaStore when it creates
    a worker pod (controllers/mars/mars.go injectSpillDirsByGivenPaths, mountSharedCacheToPath); the API server
    refuses a container with two mounts at one path (pkg/apis/core/validation: mountPath "must be unique"), and
    KubeDL only records the refusal as an event: the MarsJob would wait forever with no worker."""
    text = with_extras(extras, BASE.replace("type: job\n", "type: job\nsecrets: {token: t}\n"))
    assert [e for e in errors_of(text) if "E705" in e] == [expected.replace("18:", "19:", 1)]


def test_errors_are_reported_together():
    text = with_extras("webHost: mars.example.com\ncleanPodPolicy: never",
                       BASE.replace("  scheduler:\n", "  scheduler:\n    instances: 3\n"))
    assert [e.split()[1] for e in errors_of(text)] == ["E703", "E705"]


# --- warnings -------------------------------------------------------------------------------------------------------

def test_the_tutorial_field_name_is_accepted_with_a_warning(run_cli, tmp_path, snapshot):
    text = with_extras("memoryTuningPolicy: {workerCacheSize: 1Gi}")
    marsjob = compiled(text)[-1]
    assert marsjob["spec"]["workerMemoryTuningPolicy"] == {"workerCacheSize": "1Gi"}
    assert "memoryTuningPolicy" not in marsjob["spec"]
    job = load_job_text(text, "job.yaml")
    warning, = compile_warnings(job, load_profile("default"), load_located(text, "job.yaml"))
    assert (warning.code, warning.line, warning.column) == ("W701", 18, 5)
    assert "workerMemoryTuningPolicy" in warning.message
    path = tmp_path / "job.yaml"
    path.write_text(text)
    code, out, err = run_cli("compile", str(path), "--target", "mars")
    assert code == 0 and "workerMemoryTuningPolicy:" in out
    assert err.replace(str(path), "job.yaml") == snapshot
    assert "both memoryTuningPolicy and workerMemoryTuningPolicy" in errors_of(
        with_extras("memoryTuningPolicy: {workerCacheSize: 1Gi}\nworkerMemoryTuningPolicy: {}"))[0]


def test_task_retry_count_of_the_scheduler_is_not_applied():
    text = BASE.replace("  scheduler:\n", "  scheduler:\n    taskRetryCount: 2\n") + "extras: {gangAllocation: false}\n"
    job = load_job_text(text, "job.yaml")
    warning, = compile_warnings(job, load_profile("default"), load_located(text, "job.yaml"))
    assert (warning.code, warning.line) == ("W702", 8)
    assert compiled(text)[-1]["spec"]["marsReplicaSpecs"]["Scheduler"]["restartPolicy"] == "Never"


@pytest.mark.parametrize("bound, warned", [
    ("", True),                                                   # nothing bounds the OnFailure restarts
    ("jobRetryCount: 1\n", False),                                # backoffLimit 1
    ("extras: {gangAllocation: false, marsJob: {backoffLimit: 5}}\n", False),
    ("extras: {gangAllocation: false, marsJob: {restartPolicy: {worker: ExitCode}}}\n", False),  # not OnFailure
])
def test_task_retries_of_a_worker_without_a_backoff_limit_are_no_bound(bound, warned):
    """OpenPAI gives up on a task after taskRetryCount retries; a MarsJob role with it restarts OnFailure, which
    KubeDL limits only with the job-wide backoffLimit: without one a failing worker restarts for ever."""
    text = BASE.replace("    instances: 2\n", "    instances: 2\n    taskRetryCount: 3\n") + (
        bound if bound.startswith("extras") else bound + "extras: {gangAllocation: false}\n")
    job = load_job_text(text, "job.yaml")
    warnings = compile_warnings(job, load_profile("default"), load_located(text, "job.yaml"))
    assert [(w.code, w.line) for w in warnings] == ([("W703", 13)] if warned else [])
    spec = compiled(text)[-1]["spec"]
    if warned:
        assert spec["marsReplicaSpecs"]["Worker"]["restartPolicy"] == "OnFailure" and "backoffLimit" not in spec
