"""`paictl compile --target jobset`: goldens for the bundled examples, the mapping rule by rule, names, the prelude.

Every JobSet compiled here goes through `jobset_checks.compiled`, which checks it with paictl's own output check and
against the upstream JobSet CRD (from ../shared/corpus/jobset).
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
import yaml

from conftest import ROOT, needs_corpus
from jobset_checks import JOBSET_CORPUS, compiled, crd_errors, rjob_specs
from paictl.compiler.profiles import load_profile, profile_from_text
from paictl.errors import InvalidJobError
from paictl.protocol import load_job_text
from paictl.protocol.loading import load_located
from paictl.targets import get_target
from paictl.targets.jobset.names import dns_label, jobset_name

EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))

BASE = """\
protocolVersion: 2
name: demo
type: job
prerequisites:
  - {name: img, type: dockerimage, uri: "python:3.11-slim"}
taskRoles:
  master:
    instances: 1
    dockerImage: img
    resourcePerInstance: {cpu: 1, memoryMB: 1024, gpu: 0}
    commands: [python master.py]
  worker:
    instances: 4
    dockerImage: img
    resourcePerInstance: {cpu: 2, memoryMB: 2048, gpu: 1}
    commands: [python worker.py]
"""


def role(name: str, extra: str = "", instances: int = 2) -> str:
    lines = [f"  {name}:", f"    instances: {instances}", "    dockerImage: img",
             "    resourcePerInstance: {cpu: 1, memoryMB: 512, gpu: 0}", "    commands: [run]"]
    lines += [f"    {line}" for line in extra.splitlines()]
    return "\n".join(lines) + "\n"


def job(*roles: str, top: str = "", extras: str = "") -> str:
    head = "protocolVersion: 2\nname: demo\ntype: job\n" + top + \
        'prerequisites:\n  - {name: img, type: dockerimage, uri: "python:3.11-slim"}\ntaskRoles:\n'
    return head + "".join(roles) + (f"extras:\n{extras}" if extras else "")


# --- the examples, through the CLI: goldens ---------------------------------------------------------------------

@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_example_golden(example, run_cli, snapshot, monkeypatch):
    monkeypatch.chdir(ROOT)
    code, out, err = run_cli("compile", f"examples/{example.name}", "--target", "jobset")
    assert code == 0, err
    objects = list(yaml.safe_load_all(out))
    assert objects[-1]["kind"] == "JobSet"
    assert crd_errors(objects[-1]) == []
    assert out == snapshot


def test_json_output_is_a_list_the_crd_accepts(run_cli):
    code, out, _ = run_cli("compile", str(ROOT / "examples" / "hello-world.yaml"), "--target", "jobset",
                           "--format", "json")
    assert code == 0
    listed = json.loads(out)
    assert listed["kind"] == "List" and [i["kind"] for i in listed["items"]] == ["JobSet"]
    assert crd_errors(listed["items"][0]) == []


# --- the mapping ------------------------------------------------------------------------------------------------

def test_one_indexed_job_per_task_role_with_openpai_defaults():
    jobset = compiled(BASE)[-1]
    assert jobset["apiVersion"] == "jobset.x-k8s.io/v1alpha2"
    assert [(r["name"], r["replicas"]) for r in jobset["spec"]["replicatedJobs"]] == [("master", 1), ("worker", 1)]
    ignored = {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]}
    assert rjob_specs(jobset) == {
        "master": {"completionMode": "Indexed", "completions": 1, "parallelism": 1, "backoffLimitPerIndex": 0,
                   "maxFailedIndexes": 0, "podFailurePolicy": ignored},
        "worker": {"completionMode": "Indexed", "completions": 4, "parallelism": 4, "backoffLimitPerIndex": 0,
                   "maxFailedIndexes": 0, "podFailurePolicy": ignored},
    }
    # OpenPAI's default: the first role whose instances all succeed ends the job succeeded (an OR across roles).
    assert jobset["spec"]["successPolicy"] == {"operator": "Any", "targetReplicatedJobs": ["master", "worker"]}
    assert "failurePolicy" not in jobset["spec"]  # jobRetryCount 0: the first failed Job fails the JobSet
    name = jobset["metadata"]["name"]
    assert jobset["spec"]["network"] == {"enableDNSHostnames": True, "subdomain": name,
                                         "publishNotReadyAddresses": True}
    for rjob in jobset["spec"]["replicatedJobs"]:
        assert rjob["template"]["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    assert jobset["metadata"]["annotations"] == {"jobName": "demo"}


def test_task_retry_count_is_the_per_index_backoff_limit_without_gang_allocation():
    text = job(role("a", "taskRetryCount: 3"), extras="  gangAllocation: false\n")
    assert rjob_specs(compiled(text)[-1])["a"]["backoffLimitPerIndex"] == 3
    # under gang allocation OpenPAI ignores it (W405), and so does the JobSet
    assert rjob_specs(compiled(job(role("a", "taskRetryCount: 3")))[-1])["a"]["backoffLimitPerIndex"] == 0


@pytest.mark.parametrize("extras", ["", "  gangAllocation: false\n"])
def test_a_pod_the_cluster_took_away_is_replaced_without_failing_its_index(extras):
    """FrameworkController calls an evicted, preempted or node-lost pod a transient failure, which OpenPAI's
    fancyRetryPolicy retries without counting (reference frameworkcontroller.md: -1000 PodEvicted, -1001
    PodNodeLost, -1003 PodPreemptedForCriticalPod, all Transient); a Job counts such a pod against its index's
    backoffLimitPerIndex unless a podFailurePolicy ignores the DisruptionTarget condition the cluster puts on it.
    Without the rule one preemption failed a task with taskRetryCount 0, its Job and the JobSet. The rule is what
    Kubernetes validates when the JobSet controller creates the Job (pkg/apis/batch/validation): restartPolicy Never,
    a condition status, no podReplacementPolicy other than Failed."""
    text = job(role("a", "taskRetryCount: 2"), role("b", instances=3), extras=extras)
    for rjob in compiled(text)[-1]["spec"]["replicatedJobs"]:
        spec = rjob["template"]["spec"]
        assert spec["podFailurePolicy"] == {"rules": [{"action": "Ignore", "onPodConditions": [
            {"type": "DisruptionTarget", "status": "True"}]}]}
        assert spec["template"]["spec"]["restartPolicy"] == "Never" and "podReplacementPolicy" not in spec


@pytest.mark.parametrize("min_failed, expected", [(1, 0), (2, 1), (3, 2), (5, 3), (-1, None)])
def test_min_failed_instances_is_max_failed_indexes(min_failed, expected):
    text = job(role("a", f"completion: {{minFailedInstances: {min_failed}}}", instances=3))
    assert rjob_specs(compiled(text)[-1])["a"].get("maxFailedIndexes") == expected


@pytest.mark.parametrize("min_succeeded, policy, targets", [
    (1, {"rules": [{"succeededCount": 1}]}, ["a", "b"]),
    (2, {"rules": [{"succeededCount": 2}]}, ["a", "b"]),
    (3, None, ["a", "b"]),          # = instances: the Job's natural completion
    (4, None, ["b"]),               # above instances: never triggers in FrameworkController either
    (-1, None, ["b"]),
])
def test_min_succeeded_instances_is_the_job_success_policy(min_succeeded, policy, targets):
    text = job(role("a", f"completion: {{minSucceededInstances: {min_succeeded}}}", instances=3), role("b"))
    jobset = compiled(text)[-1]
    assert rjob_specs(jobset)["a"].get("successPolicy") == policy
    assert jobset["spec"]["successPolicy"] == {"operator": "Any", "targetReplicatedJobs": targets}


def test_no_role_can_trigger_success_gives_operator_all():
    text = job(role("a", "completion: {minSucceededInstances: -1}"),
               role("b", "completion: {minSucceededInstances: -1}"))
    assert compiled(text)[-1]["spec"]["successPolicy"] == {"operator": "All"}


def test_job_retry_count_is_max_restarts_recreating_the_whole_attempt():
    jobset = compiled(job(role("a"), top="jobRetryCount: 2\n"))[-1]
    assert jobset["spec"]["failurePolicy"] == {"maxRestarts": 2, "restartStrategy": "BlockingRecreate"}


def test_kueue_queue_name_from_the_profile():
    base = (ROOT / "compiler" / "profiles" / "default.yaml").read_text()
    profile = profile_from_text(base + "jobset:\n  queueName: team-a\n", "p.yaml")
    jobset = compiled(BASE, profile)[-1]
    assert jobset["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-a"
    assert "kueue.x-k8s.io/queue-name" not in compiled(BASE)[-1]["metadata"]["labels"]


def test_profile_queue_name_must_be_a_label_value():
    base = (ROOT / "compiler" / "profiles" / "default.yaml").read_text()
    with pytest.raises(InvalidJobError) as caught:
        profile_from_text(base + "jobset:\n  queueName: Team A\n", "p.yaml")
    assert caught.value.diagnostics[0].pointer == "/jobset/queueName"


def test_secrets_go_to_a_secret_and_are_filled_in_at_start():
    text = BASE.replace("commands: [python master.py]", "commands: ['python master.py --key <% $secrets.key %>']")
    objects = compiled(text + "secrets:\n  key: s3cr3t-value\n")
    assert [o["kind"] for o in objects] == ["Secret", "JobSet"]
    assert "s3cr3t-value" not in json.dumps(objects[-1])
    master = objects[-1]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert {"name": "job-secrets", "secret": {"secretName": objects[0]["metadata"]["name"]}} in master["volumes"]
    assert "secret.key" in objects[0]["data"]


# --- names ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, label", [("ps_server", "ps-server"), ("Worker", "worker"), ("_ps", "ps"),
                                         ("_1st", "r-1st"), ("A__b_", "a--b"), ("__", "")])
def test_dns_label(name, label):
    assert dns_label(name) == label


def test_role_names_are_converted_and_the_originals_kept_for_pai_variables():
    jobset = compiled(job(role("PS_server"), role("worker")))[-1]
    rjob = jobset["spec"]["replicatedJobs"][0]
    assert rjob["name"] == "ps-server"
    pod = rjob["template"]["spec"]["template"]
    assert pod["metadata"]["annotations"] == {"paictl.dev/task-role": "PS_server"}
    env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
    assert env["PAI_CURRENT_TASK_ROLE_NAME"] == "PS_server" and env["PAI_TASK_ROLE_LIST"] == "PS_server,worker"
    assert jobset["spec"]["successPolicy"]["targetReplicatedJobs"] == ["ps-server", "worker"]


def test_long_job_name_is_cut_so_every_pod_name_fits():
    long = "x" * 60
    text = job(role("averyveryverylongtaskrolename", instances=1000)).replace("name: demo", f"name: {long}")
    jobset = compiled(text)[-1]
    name = jobset["metadata"]["name"]
    pod_name = f"{name}-averyveryverylongtaskrolename-0-999-abcde"
    assert len(pod_name) == 63
    assert name.startswith("xxx") and name == jobset_name(load_job_text(text, "j"), load_profile("default"))


def test_two_users_get_two_jobsets():
    job_model = load_job_text(BASE, "j")
    alice, bob = (load_profile("default").with_user(u) for u in ("alice", "bob"))
    assert jobset_name(job_model, alice) != jobset_name(job_model, bob)


def errors_of(text: str) -> list[str]:
    with pytest.raises(InvalidJobError) as caught:
        compiled(text)
    return [f"{d.line}:{d.column} {d.code} {d.message}" for d in caught.value.diagnostics]


def test_a_role_too_long_for_a_pod_name_is_a_located_error():
    long = "r" * 45
    assert errors_of(job(role("ok"), role(long, instances=10))) == [
        f"12:3 E901 task role '{long}' becomes replicatedJob '{long}' (45 characters): its pod names "
        f"`<jobset>-{long}-0-9-xxxxx` would be 66 characters even with the shortest JobSet name, and JobSet allows 63"]


def test_roles_that_clash_or_vanish_are_located_errors():
    errors = errors_of(job(role("ps"), role("PS"), role("__")))
    assert errors == [
        "12:3 E901 task roles 'ps' and 'PS' both become replicatedJob 'ps'",
        "17:3 E901 task role '__' has no letter or digit, so its replicatedJob name would be empty",
    ]


def test_the_longest_role_that_fits_compiles():
    fits = "r" * (63 - 10 - 10 - 1)  # shortest JobSet name (10), the pod name's overhead (10), index "9"
    compiled(job(role(fits, instances=10)))
    with pytest.raises(InvalidJobError):
        compiled(job(role(fits + "r", instances=10)))


# --- the prelude, run by bash: the PAI_* contract -----------------------------------------------------------------

def run_prelude(jobset: dict, rjob: int, index: int) -> dict[str, str]:
    """Run the app container's command with `env` as the task's commands, as the pod would (JOB_COMPLETION_INDEX
    set by the Job controller, podIP from the downward API); returns the environment the commands see."""
    container = jobset["spec"]["replicatedJobs"][rjob]["template"]["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    env.update(JOB_COMPLETION_INDEX=str(index), PAI_CURRENT_CONTAINER_IP="10.0.0.5", PAI_CONTAINER_HOST_IP="10.0.0.5",
               PATH=os.environ["PATH"])
    done = subprocess.run([*container["command"], "env -0"], env=env, capture_output=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return dict(item.split("=", 1) for item in done.stdout.decode().split("\0") if "=" in item)


def test_the_pai_contract_in_the_pod():
    jobset = compiled(BASE)[-1]
    name = jobset["metadata"]["name"]
    seen = run_prelude(jobset, 1, 2)
    assert seen["PAI_TASK_INDEX"] == seen["PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX"] == "2"
    assert seen["PAI_CURRENT_TASK_ROLE_NAME"] == "worker"
    assert seen["PAI_HOST_IP_master_0"] == f"{name}-master-0-0.{name}"
    assert seen["PAI_HOST_IP_worker_3"] == f"{name}-worker-0-3.{name}"
    http = seen["PAI_worker_0_http_PORT"]
    assert seen["PAI_TASK_ROLE_worker_HOST_LIST"] == ",".join(f"{name}-worker-0-{i}.{name}:{http}" for i in range(4))
    assert seen["PAI_TASK_ROLE_TASK_COUNT_worker"] == "4"
    assert seen["PAI_TASK_ROLE_INSTANCES"] == "master:0,worker:0,worker:1,worker:2,worker:3"


# --- the CRD check itself ---------------------------------------------------------------------------------------

@needs_corpus
def test_the_crd_check_accepts_upstream_examples_and_refuses_a_stray_field():
    for path in sorted((JOBSET_CORPUS / "examples").glob("*.yaml")):
        for jobset in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            # the webhook names unnamed failure-policy rules before the schema is checked
            for index, rule in enumerate(((jobset["spec"].get("failurePolicy") or {}).get("rules") or [])):
                rule.setdefault("name", f"failurePolicyRule{index}")
            assert crd_errors(jobset) == [], path.name
    jobset = compiled(BASE)[-1]
    jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["backoffLimitPerTask"] = 1
    assert crd_errors(jobset) != []


def test_compile_is_deterministic():
    job_model = load_job_text(BASE, "j")
    document = load_located(BASE, "j")
    first = get_target("jobset").compile(job_model, load_profile("default"), document=document)
    assert first == get_target("jobset").compile(job_model, load_profile("default"), document=document)


# --- paictl's own output check (schemas/jobset.schema.json + Kubernetes' JobTemplateSpec) ----------------------

def test_the_output_check_refuses_what_paictl_never_emits():
    from paictl.targets.output_check import object_errors

    jobset = compiled(BASE)[-1]
    assert object_errors(jobset) == []
    broken = json.loads(json.dumps(jobset))
    rjob = broken["spec"]["replicatedJobs"][1]
    rjob["replicas"] = 2                                                     # paictl: one Job per role
    rjob["template"]["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"  # breaks backoffLimitPerIndex
    rjob["template"]["spec"]["backoffLimitPerTask"] = 1                      # not a JobSpec field
    broken["metadata"]["name"] = "Demo_1"                                    # not a DNS label
    paths = sorted({path for path, _ in object_errors(broken)})
    assert paths == ["/metadata/name", "/spec/replicatedJobs/1/replicas", "/spec/replicatedJobs/1/template/spec",
                     "/spec/replicatedJobs/1/template/spec/template/spec/restartPolicy"]
