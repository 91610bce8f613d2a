"""`paictl compile --target mars`: the KubeDL MarsJob, golden per documented option, checked against the upstream CRD.

Every MarsJob a test here compiles goes through `compiled()`, which also validates it against the upstream MarsJob
CRD's openAPIV3Schema read from ../shared/corpus/kubedl (of the API group compiled for), made strict the way the API
server's pruning is: a field the CRD does not declare would be dropped, so here it is an error.
"""

from __future__ import annotations

import copy
import dataclasses
import functools

import pytest
import yaml

from conftest import CORPUS, ROOT
from crd_schema import strict_validator
from paictl.compiler.profiles import load_profile, profile_from_text
from paictl.errors import InvalidJobError
from paictl.protocol import load_job_text
from paictl.protocol.loading import load_located
from paictl.targets import get_target
from paictl.targets.mars.target import marsjob_name
from paictl.targets.output_check import check_objects, object_errors

KUBEDL = CORPUS / "kubedl"
CRDS = {"training.kubedl.io/v1alpha1": KUBEDL / "kubedl-io__kubedl__config__crd__bases__training.kubedl.io_marsjobs.yaml",
        "kubedl.io/v1alpha1": KUBEDL / "alibaba__kubedl__config__crd__bases__kubedl.io_marsjobs.yaml"}
EXAMPLE = ROOT / "examples" / "mars-dataframe.yaml"

BASE = """\
protocolVersion: 2
name: mars-demo
type: job
prerequisites:
  - {name: mars, type: dockerimage, uri: "marsproject/mars:v0.6.11"}
taskRoles:
  scheduler:
    dockerImage: mars
    resourcePerInstance: {cpu: 1, memoryMB: 2048, gpu: 0}
    commands: [python -m mars.deploy.kubernetes.scheduler]
  worker:
    instances: 2
    dockerImage: mars
    resourcePerInstance: {cpu: 2, memoryMB: 4096, gpu: 0}
    commands: [python -m mars.deploy.kubernetes.worker]
"""
WEB = """\
  WebService:
    dockerImage: mars
    resourcePerInstance: {cpu: 1, memoryMB: 1024, gpu: 0}
    commands: [python -m mars.deploy.kubernetes.web]
"""


@functools.lru_cache(maxsize=None)
def crd_validator(api_version: str):
    return strict_validator(CRDS[api_version])


def crd_errors(marsjob: dict) -> list[str]:
    """Violations of the upstream CRD (of the MarsJob's own API group); [] without the corpus."""
    path = CRDS.get(marsjob["apiVersion"])
    if path is None or not path.is_file():
        return [] if not KUBEDL.is_dir() else [f"no CRD for {marsjob['apiVersion']}"]
    return [f"{list(e.absolute_path)}: {e.message[:200]}" for e in crd_validator(marsjob["apiVersion"]).iter_errors(
        marsjob)]


def compiled(text: str, profile=None, **options) -> list[dict]:
    """Compile `text` for Mars, check every object (paictl's own check and the upstream CRD), return the objects."""
    job = load_job_text(text, "job.yaml")
    objects = get_target("mars").compile(job, profile or load_profile("default"),
                                         document=load_located(text, "job.yaml"), **options)
    check_objects(objects)
    marsjob = objects[-1]
    assert marsjob["kind"] == "MarsJob"
    assert crd_errors(marsjob) == []
    return objects


def errors_of(text: str, profile=None) -> list[str]:
    with pytest.raises(InvalidJobError) as caught:
        compiled(text, profile)
    return [f"{d.line}:{d.column} {d.code} {d.message}" for d in caught.value.diagnostics]


def summary(marsjob: dict) -> dict:
    """What an option changes: the run policy and, per replica type, replicas, restart policy, resources, volumes."""
    spec = dict(marsjob["spec"])
    replicas = spec.pop("marsReplicaSpecs")
    out = {"apiVersion": marsjob["apiVersion"], **spec}
    for replica_type, replica in replicas.items():
        pod = replica["template"]["spec"]
        container = pod["containers"][0]
        out[replica_type] = {"replicas": replica["replicas"], "restartPolicy": replica["restartPolicy"],
                             "resources": container["resources"], "volumeMounts": container.get("volumeMounts"),
                             "volumes": pod.get("volumes")}
    return out


def with_extras(extras: str, base: str = BASE) -> str:
    return base + "extras:\n  marsJob:\n" + "".join(f"    {line}\n" for line in extras.splitlines())


# --- the example, through the CLI -----------------------------------------------------------------------------------

@pytest.mark.parametrize("profile", ["default", "openpai"])
def test_example_compiles_through_the_cli(profile, run_cli, snapshot, monkeypatch):
    monkeypatch.chdir(ROOT)
    code, out, err = run_cli("compile", "examples/mars-dataframe.yaml", "--target", "mars", "--profile", profile)
    assert code == 0, err
    assert err == ""
    objects = list(yaml.safe_load_all(out))
    assert [o["kind"] for o in objects] == ["MarsJob"]
    assert crd_errors(objects[0]) == []
    replicas = objects[0]["spec"]["marsReplicaSpecs"]
    assert {t: r["replicas"] for t, r in replicas.items()} == {"Scheduler": 1, "WebService": 1, "Worker": 2}
    assert objects[0]["spec"]["webHost"] == "mars.example.com"
    assert out == snapshot


def test_example_is_valid_for_paictl_validate(run_cli):
    code, out, _ = run_cli("validate", "--strict", str(EXAMPLE))
    assert (code, out.strip()) == (0, "1 file valid")


def test_json_output_is_a_list_the_crd_accepts(run_cli):
    import json

    code, out, _ = run_cli("compile", str(EXAMPLE), "--target", "mars", "--format", "json")
    assert code == 0
    items = json.loads(out)["items"]
    assert [crd_errors(i) for i in items if i["kind"] == "MarsJob"] == [[]]


# --- one golden per documented option -------------------------------------------------------------------------------

OPTIONS = {
    "defaults": "",
    "webHost": "webHost: mars.example.com",
    "workerCacheSize-above-memory": "workerMemoryTuningPolicy: {workerCacheSize: 6Gi}",
    "workerCachePercentage": "workerMemoryTuningPolicy: {workerCachePercentage: 50, lockFreeFileIO: false}",
    "plasmaStore-and-spillDirs": ("workerMemoryTuningPolicy:\n  plasmaStore: /mnt/plasma\n  workerCacheSize: 1Gi\n"
                                  "  spillDirs: [/mnt/spill1, /mnt/spill2]"),
    "cleanPodPolicy": "cleanPodPolicy: All",
    "ttlSecondsAfterFinished": "ttlSecondsAfterFinished: 600",
    "activeDeadlineSeconds": "activeDeadlineSeconds: 7200",
    "backoffLimit": "backoffLimit: 5",
    "schedulingPolicy": "schedulingPolicy: {minAvailable: 4, priority: 10, priorityClassName: high, queue: q1}",
    "restartPolicy": "restartPolicy: {Scheduler: OnFailure, worker: Never, webservice: OnFailure}",
}


@pytest.mark.parametrize("option", OPTIONS, ids=str)
def test_option(option, snapshot):
    text = with_extras(OPTIONS[option], BASE + WEB) if OPTIONS[option] else BASE + WEB
    assert summary(compiled(text)[-1]) == snapshot


def test_job_retry_count_is_the_backoff_limit_and_task_retry_count_restarts_in_place(snapshot):
    text = BASE.replace("name: mars-demo\n", "name: mars-demo\njobRetryCount: 3\n") + WEB
    text = text.replace("  worker:\n", "  worker:\n    taskRetryCount: 2\n")
    gang = summary(compiled(text)[-1])
    assert gang["backoffLimit"] == 3
    assert gang["Worker"]["restartPolicy"] == "ExitCode"  # gang allocation (the default): taskRetryCount ignored
    free = summary(compiled(text + "extras: {gangAllocation: false}\n")[-1])
    assert free["Worker"]["restartPolicy"] == "OnFailure"
    assert free == snapshot


def test_backoff_limit_is_left_unset_for_the_default_job_retry_count():
    # backoffLimit 0 would fail the job at the WebService's first restart (restartPolicy Always).
    assert "backoffLimit" not in compiled(BASE + WEB)[-1]["spec"]


def test_older_api_group_from_the_profile():
    profile = dataclasses.replace(load_profile("default"), mars_api_version="kubedl.io/v1alpha1")
    marsjob = compiled(with_extras("schedulingPolicy: {minAvailable: 3}"), profile)[-1]
    assert marsjob["apiVersion"] == "kubedl.io/v1alpha1"
    text = (ROOT / "compiler" / "profiles" / "default.yaml").read_text()
    from_file = profile_from_text(text.replace("apiVersion: training.kubedl.io/v1alpha1",
                                               "apiVersion: kubedl.io/v1alpha1"))
    assert from_file.mars_api_version == "kubedl.io/v1alpha1"
    with pytest.raises(InvalidJobError) as caught:
        profile_from_text(text.replace("apiVersion: training.kubedl.io/v1alpha1", "apiVersion: kubedl.io/v1"))
    assert [d.code for d in caught.value.diagnostics] == ["E204"]


def test_memory_limit_leaves_room_for_the_cache():
    def worker(extras):
        return summary(compiled(with_extras(extras) if extras else BASE)[-1])["Worker"]["resources"]

    assert worker("") == {"requests": {"cpu": 2, "memory": "4096Mi"},
                          "limits": {"cpu": 2, "memory": "8192Mi", "nvidia.com/gpu": 0}}
    assert worker("workerMemoryTuningPolicy: {workerCacheSize: 6Gi}")["limits"]["memory"] == "10240Mi"
    assert worker("workerMemoryTuningPolicy: {workerCacheSize: 6442450945}")["limits"]["memory"] == "10241Mi"
    assert worker("workerMemoryTuningPolicy: {workerCacheSize: 5G}")["limits"]["memory"] == "8865Mi"
    assert worker("workerMemoryTuningPolicy: {workerCachePercentage: 100}")["limits"]["memory"] == "8192Mi"


def test_the_worker_cache_replaces_our_dev_shm():
    # KubeDL mounts its cache volume at plasmaStore (default /dev/shm); a second volume there would fail the pod.
    def mounts(extras):
        return summary(compiled(with_extras(extras))[-1])["Worker"]["volumeMounts"]

    assert mounts("workerMemoryTuningPolicy: {workerCacheSize: 1Gi}") is None
    assert mounts("workerMemoryTuningPolicy: {spillDirs: [/mnt/s]}") == [{"name": "dshm", "mountPath": "/dev/shm"}]
    assert mounts("workerMemoryTuningPolicy: {plasmaStore: /mnt/p, workerCachePercentage: 10}") == [
        {"name": "dshm", "mountPath": "/dev/shm"}]
    # a cache of 0 bytes is none: KubeDL mounts it only when `cacheSize > 0`, so /dev/shm stays the job's own size
    assert mounts("workerMemoryTuningPolicy: {workerCacheSize: '0'}") == [{"name": "dshm", "mountPath": "/dev/shm"}]


def test_secrets_stay_in_the_secret_and_are_filled_in_at_start():
    text = BASE.replace("type: job\n", "type: job\nsecrets: {token: tok-123456789}\n").replace(
        "commands: [python -m mars.deploy.kubernetes.worker]",
        "commands: ['python -m mars.deploy.kubernetes.worker --token <% $secrets.token %>']")
    secret, marsjob = compiled(text)
    assert secret["kind"] == "Secret" and secret["metadata"]["name"] == marsjob["metadata"]["name"] + "-configcred"
    assert "secret.token" in secret["data"] and "tok-123456789" not in str(marsjob)
    worker = marsjob["spec"]["marsReplicaSpecs"]["Worker"]["template"]["spec"]
    assert worker["containers"][0]["args"] == ["python -m mars.deploy.kubernetes.worker --token <% $secrets.token %>"]
    assert "secret '<% $secrets.token %>' secret.token" in worker["containers"][0]["command"][-2]
    assert {"name": "job-secrets", "secret": {"secretName": secret["metadata"]["name"]}} in worker["volumes"]
    only_job, = [o for o in compiled(text, secrets_from="team-secrets")]
    volumes = only_job["spec"]["marsReplicaSpecs"]["Scheduler"]["template"]["spec"]["volumes"]
    assert {"name": "job-secrets", "secret": {"secretName": "team-secrets"}} in volumes


def test_container_is_named_mars_with_the_mars_port():
    for replica in compiled(BASE + WEB)[-1]["spec"]["marsReplicaSpecs"].values():
        container, = replica["template"]["spec"]["containers"]
        assert container["name"] == "mars"
        assert container["ports"][0] == {"name": "mars-port", "containerPort": 11111}


@pytest.mark.parametrize("job_name,expected", [("mars-demo", "mars-demo-"), ("2024_Run", "mars-2024-run-"),
                                               ("x" * 100, "x" * 41 + "-")])
def test_names_are_dns_labels_with_room_for_the_pod_suffix(job_name, expected):
    job = load_job_text(BASE.replace("name: mars-demo", f"name: {job_name}"), "job.yaml")
    name = marsjob_name(job, load_profile("default"))
    assert name.startswith(expected) and len(name) == len(expected) + 8
    assert len(f"{name}-webservice-1") <= 63


def test_compile_is_deterministic():
    assert compiled(EXAMPLE.read_text()) == compiled(EXAMPLE.read_text())


# --- the project's own output check ---------------------------------------------------------------------------------

def test_output_check_knows_marsjobs():
    marsjob = compiled(BASE + WEB)[-1]
    assert object_errors(marsjob) == []
    renamed = copy.deepcopy(marsjob)
    renamed["spec"]["marsReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["name"] = "main"
    assert [p for p, _ in object_errors(renamed)] == ["/spec/marsReplicaSpecs/Worker/template/spec/containers"]
    tutorial = copy.deepcopy(marsjob)
    tutorial["spec"]["memoryTuningPolicy"] = {}
    assert [p for p, _ in object_errors(tutorial)] == ["/spec"]
    no_worker = copy.deepcopy(marsjob)
    del no_worker["spec"]["marsReplicaSpecs"]["Worker"]
    assert [p for p, _ in object_errors(no_worker)] == ["/spec/marsReplicaSpecs"]
    bad_pod = copy.deepcopy(marsjob)
    bad_pod["spec"]["marsReplicaSpecs"]["Scheduler"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = 3
    assert [p for p, _ in object_errors(bad_pod)] == [
        "/spec/marsReplicaSpecs/Scheduler/template/spec/containers/0/imagePullPolicy"]


@pytest.mark.skipif(not KUBEDL.is_dir(), reason="../shared/corpus is not beside this checkout")
def test_the_crd_check_can_fail():
    marsjob = compiled(BASE)[-1]
    pruned = copy.deepcopy(marsjob)
    pruned["spec"]["memoryTuningPolicy"] = {"workerCacheSize": "1Gi"}
    assert crd_errors(pruned) and crd_errors(pruned)[0].startswith("['spec']:")
    typed = copy.deepcopy(marsjob)
    typed["spec"]["marsReplicaSpecs"]["Worker"]["replicas"] = "2"
    assert crd_errors(typed)
    older = {**copy.deepcopy(marsjob), "apiVersion": "kubedl.io/v1alpha1"}
    older["spec"]["schedulingPolicy"] = {"queue": "q1"}
    assert crd_errors(older)


def test_storages_are_mounted_as_for_the_framework():
    profile = load_profile("openpai")
    text = with_extras("{}").replace("  marsJob:\n    {}\n", "  storages: [{name: confignfs-data, mountPath: /data}]\n")
    worker = compiled(text, profile)[-1]["spec"]["marsReplicaSpecs"]["Worker"]["template"]["spec"]
    assert {"name": "confignfs-data-volume", "mountPath": "/data", "subPath": "alice"} in \
        worker["containers"][0]["volumeMounts"]
    assert {"name": "confignfs-data-volume", "persistentVolumeClaim": {"claimName": "confignfs-data",
                                                                       "readOnly": True}} in worker["volumes"]
    errors = errors_of(text.replace("confignfs-data", "scratch"), profile)
    assert errors == ["17:14 E601 Storage scratch is not found."]


def test_the_container_command_runs_the_commands_under_bash(tmp_path):
    """A real bash runs the `mars` container's command line: OpenPAI's shell options, a missing secret file reported
    and its tag left empty (as pystache renders it), the exit status of the commands kept."""
    import subprocess

    text = BASE.replace("type: job\n", "type: job\nsecrets: {token: t0k3n-value}\n").replace(
        "commands: [python -m mars.deploy.kubernetes.worker]",
        "commands: ['echo \"token=<% $secrets.token %> index=${PAI_TASK_INDEX:-unset}\"', 'false', 'echo not reached']")
    container = compiled(text)[-1]["spec"]["marsReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    done = subprocess.run([*container["command"], *container["args"]], cwd=tmp_path, capture_output=True, text=True,
                          timeout=30)
    assert (done.returncode, done.stdout) == (1, "token= index=unset\n")
    assert "paictl: the mounted Secret has no key secret.token" in done.stderr
