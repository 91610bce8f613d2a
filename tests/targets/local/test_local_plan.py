"""The local target's pure parts: the LocalPlan compile, FrameworkController's retry and completion rules, ports.

Running plans (real processes, signals, the CLI) is tested in test_local_run.py.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from conftest import ROOT, corpus_files, needs_corpus
from paictl.compiler.exit_rules import load_rule_set
from paictl.compiler.profiles import load_profile
from paictl.compiler.render import render_entrypoint
from paictl.protocol import load_job
from paictl.targets.local.target import FC_UIDS, compile_local
from paictl.targets.local.policy import CompletionTally, RetryPolicy, attempt_completion, decide_retry
from paictl.targets.local.runtime import allocate_ports, attempt_env, peer_env, task_argv, task_env
from paictl.targets.output_check import check_objects, object_errors

EXAMPLES = ROOT / "examples"
RULES = load_rule_set()


def plan_of(path: Path, **options) -> dict:
    return compile_local(load_job(str(path)), load_profile("default"), **options)[0]


def test_compile_prints_the_plan(run_cli, snapshot):
    code, out, err = run_cli("compile", str(EXAMPLES / "local-ping-pong.yaml"), "--target", "local")
    assert code == 0, err
    assert out == snapshot


def test_plan_records_images_ports_env_and_completion():
    spec = plan_of(EXAMPLES / "local-ping-pong.yaml")["spec"]
    assert spec["notes"] == [] and "runtime" not in spec  # chosen at submit, not by a pure compile
    server, client = spec["taskRoles"]
    assert server["image"] == client["image"] == "python:3.11-slim"
    assert server["resources"] == {"cpu": 1, "memoryMB": 256, "gpu": 0, "shmMB": 512}
    assert server["ports"] == {"msg": 1, "ssh": 1, "http": 1} and client["ports"] == {"ssh": 1, "http": 1}
    assert server["completion"] == {"minFailedTaskCount": 1, "minSucceededTaskCount": -1}
    assert spec["env"]["PAI_JOB_NAME"] == "paictl~local-ping-pong"
    assert spec["env"]["PAI_TASK_ROLE_LIST"] == "server,client"
    assert "PAI_server_0_msg_PORT" in spec["envAtStart"] and "PAI_HOST_IP_client_0" in spec["envAtStart"]
    assert server["tasks"][0]["env"]["PAI_CURRENT_TASK_ROLE_NAME"] == "server"
    assert server["command"][:8] == ["bash", "-o", "errexit", "-o", "nounset", "-o", "pipefail", "-c"]


@pytest.mark.parametrize("profile", ["default", "openpai"])
def test_fc_framework_name_is_the_framework_targets_name(profile):
    """FC_FRAMEWORK_NAME is the Framework's metadata.name, which the profile's naming decides (the md5 of
    `<user>~<job>` for `openpai`), not the job name reduced to [a-z0-9]; every task of the run sees the same."""
    from paictl.targets.framework.target import compile_framework

    job = load_job(str(EXAMPLES / "local-ping-pong.yaml"))
    framework = next(o for o in compile_framework(job, load_profile(profile)) if o["kind"] == "Framework")
    plan = compile_local(job, load_profile(profile))[0]
    assert plan["spec"]["env"]["FC_FRAMEWORK_NAME"] == framework["metadata"]["name"] != "localpingpong"
    role = plan["spec"]["taskRoles"][0]
    env = task_env(plan, role, 0, peers={}, own_ports={"http": [1]}, work_dir="/w", job_attempt=0, task_attempt=0,
                   run_id="r")
    assert env["FC_FRAMEWORK_NAME"] == framework["metadata"]["name"]


def test_task_retry_is_honoured_only_without_gang_allocation():
    retry = plan_of(EXAMPLES / "retry-without-gang.yaml")["spec"]["taskRoles"][0]["taskRetry"]
    assert retry == {"fancyRetryPolicy": True, "maxRetryCount": 2}
    gang = plan_of(EXAMPLES / "hello-world.yaml")["spec"]["taskRoles"][0]["taskRetry"]
    assert gang == {"fancyRetryPolicy": False, "maxRetryCount": 0}


def test_parameters_are_rendered_and_overridable():
    role = plan_of(EXAMPLES / "local-syntax-error-without-gang.yaml", parameters={"learningRate": 0.5})["spec"]["taskRoles"][0]
    assert "training with learning rate 0.5" in role["command"][-2]


def test_deployment_commands_wrap_the_role_commands(tmp_path):
    job = tmp_path / "d.yaml"
    job.write_text("protocolVersion: 2\nname: d\ntype: job\n"
                   "prerequisites: [{name: i, type: dockerimage, uri: busybox}]\n"
                   "taskRoles:\n  t:\n    dockerImage: i\n    resourcePerInstance: {cpu: 1, memoryMB: 1, gpu: 0}\n"
                   "    commands: [main]\n"
                   "deployments: [{name: dep, taskRoles: {t: {preCommands: [pre], postCommands: [post]}}}]\n"
                   "defaults: {deployment: dep}\n")
    assert plan_of(job)["spec"]["taskRoles"][0]["command"][-2] == "pre\nmain\npost"


def test_secrets_from_is_refused_locally(run_cli):
    code, out, err = run_cli("compile", str(EXAMPLES / "hello-world.yaml"), "--target", "local",
                             "--secrets-from", "mine")
    assert code == 2 and "--secrets-from" in err and out == ""


def test_plan_keeps_secret_tags_and_argv_gets_values_off_the_command_line(tmp_path):
    job = tmp_path / "s.yaml"
    job.write_text("protocolVersion: 2\nname: s\ntype: job\nsecrets: {token: 'a<b&c-canary'}\n"
                   "prerequisites: [{name: i, type: dockerimage, uri: busybox}]\n"
                   "taskRoles:\n  t:\n    dockerImage: i\n    resourcePerInstance: {cpu: 1, memoryMB: 1, gpu: 0}\n"
                   "    commands: ['echo <% $secrets.token %> <% $secrets.missing %> <% $parameters.none %>']\n")
    plan = plan_of(job)
    text = json.dumps(plan)
    assert "canary" not in text
    role = plan["spec"]["taskRoles"][0]
    assert role["secretTags"] == [{"tag": "<% $secrets.token %>", "key": "secret.token"},
                                  {"tag": "<% $secrets.missing %>", "key": "secret.missing"}]
    argv, env = task_argv(role, {"secret.token": "a<b&c-canary"})
    assert "canary" not in " ".join(argv)
    # pystache's escaping; an unknown secret and (with secrets) every other leftover tag become empty.
    assert env["PAICTL_TASK_COMMANDS"] == "echo a&lt;b&amp;c-canary  "


@needs_corpus
@pytest.mark.parametrize("path", corpus_files("valid"), ids=lambda p: p.name)
def test_every_valid_corpus_job_compiles_to_a_checked_plan(path):
    job = load_job(str(path))
    objects = compile_local(job, load_profile("default"))
    check_objects(objects)
    roles = objects[0]["spec"]["taskRoles"]
    assert [(r["name"], r["instances"]) for r in roles] == [(r.name, r.instances) for r in job.task_roles]
    for role in roles:
        assert [t["index"] for t in role["tasks"]] == list(range(role["instances"]))
        if not job.secrets:  # the entrypoint rest-server would hand to the runtime, unchanged
            assert role["command"][-2] == render_entrypoint(job, role["name"])


def test_output_check_rejects_a_broken_plan():
    plan = plan_of(EXAMPLES / "hello-world.yaml")
    plan["spec"]["taskRoles"][0]["instances"] = 0
    del plan["spec"]["gracePeriodSec"]
    problems = dict(object_errors(plan))
    assert "/spec/taskRoles/0/instances" in problems and "/spec" in problems


# -- ports and environment ------------------------------------------------------------------------------------------

def test_ports_are_distinct_free_and_in_the_environment():
    plan = plan_of(EXAMPLES / "local-ping-pong.yaml")
    ports = allocate_ports(plan)
    numbers = [p for role in ports.values() for labels in role for ps in labels.values() for p in ps]
    assert len(numbers) == len(set(numbers)) == 5
    for number in numbers:  # really free: each can be bound right away
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", number))
    peers = peer_env(plan, ports)
    server_msg = str(ports["server"][0]["msg"][0])
    assert peers["PAI_server_0_msg_PORT"] == peers["PAI_PORT_LIST_server_0_msg"] == server_msg
    assert peers["PAI_HOST_IP_server_0"] == "127.0.0.1"
    assert peers["PAI_TASK_ROLE_client_HOST_LIST"] == f"127.0.0.1:{ports['client'][0]['http'][0]}"
    assert peers["PAI_TASK_ROLE_INSTANCES"] == "server:0,client:0"
    role = plan["spec"]["taskRoles"][0]
    env = task_env(plan, role, 0, peers=peers, own_ports=ports["server"][0], work_dir="/w", job_attempt=1,
                   task_attempt=2, run_id="r")
    assert env["PAI_CONTAINER_HOST_msg_PORT_LIST"] == server_msg
    assert env["PAI_CONTAINER_HOST_PORT_LIST"].startswith(f"msg:{server_msg};ssh:")
    assert (env["FC_FRAMEWORK_ATTEMPT_ID"], env["FC_TASK_ATTEMPT_ID"], env["PAI_WORK_DIR"]) == ("1", "2", "/w")
    # The runner adds FrameworkController's UIDs (test_local_run checks them); task_env gives every other one.
    assert (set(role["envAtStart"]) - set(FC_UIDS)) | set(plan["spec"]["envAtStart"]) <= set(env)
    # The runner builds the shared part once per attempt; every task still gets the same variables and values.
    shared = attempt_env(plan, peers)
    for role in plan["spec"]["taskRoles"]:
        own = ports[role["name"]][0]
        arguments = dict(peers=peers, own_ports=own, work_dir="/w", job_attempt=1, task_attempt=0, run_id="r")
        assert task_env(plan, role, 0, shared=shared, **arguments) == task_env(plan, role, 0, **arguments)


# -- FrameworkController's rules ------------------------------------------------------------------------------------

FANCY = RetryPolicy(fancy=True, max_retry_count=2)


@pytest.mark.parametrize("policy, code, accountable, expected", [
    (FANCY, 231, 0, (False, False)),                                  # permanent: never, whatever the count
    (FANCY, 137, 5, (True, False)),                                   # transient: always, not counted
    (FANCY, 255, 1, (True, True)),                                    # RETRY_TO_MAX: counted
    (FANCY, 255, 2, (False, False)),                                  # ... up to maxRetryCount
    (RetryPolicy(fancy=False, max_retry_count=0), 137, 0, (False, False)),  # gang: no task retry at all
    (RetryPolicy(fancy=False, max_retry_count=1), 231, 0, (True, True)),    # plain policy ignores the reaction
    (RetryPolicy(fancy=True, max_retry_count=-1), 255, 99, (True, True)),   # -1: unlimited
])
def test_retry_decisions(policy, code, accountable, expected):
    decision = decide_retry(policy, succeeded=False, rule=RULES.by_code(code), accountable_retries=accountable)
    assert (decision.retry, decision.accountable) == expected


def test_success_is_retried_only_under_always():
    assert not decide_retry(FANCY, succeeded=True, rule=None, accountable_retries=0).retry
    assert decide_retry(RetryPolicy(fancy=True, max_retry_count=-2), succeeded=True, rule=None,
                        accountable_retries=0).retry


def test_completion_policy():
    policies = {"ps": (1, 1), "worker": (-1, 2)}
    outcomes = {"ps": [None], "worker": ["failed", "failed", None]}
    assert attempt_completion("worker", 1, outcomes, policies) is None  # -1: failures never fail the attempt
    outcomes["worker"][2] = "succeeded"
    assert attempt_completion("worker", 2, outcomes, policies) is None  # 1 of minSucceeded 2
    outcomes["ps"][0] = "failed"
    done = attempt_completion("ps", 0, outcomes, policies)
    assert (done.outcome, done.trigger) == ("failed", ("ps", 0))
    everything = attempt_completion("worker", 0, {"worker": ["failed", "succeeded"]}, {"worker": (-1, -1)})
    assert (everything.outcome, everything.trigger) == ("succeeded", None)


@pytest.mark.parametrize("seed", range(20))
def test_completion_counted_as_tasks_complete_decides_as_counting_them_all(seed):
    """The runner counts completions as they come (CompletionTally.complete); at every completion its verdict is
    the one counted from every task's outcome (attempt_completion), whatever the order and the policies."""
    import random

    chance = random.Random(seed)
    roles = {"a": chance.randint(1, 6), "b": chance.randint(1, 6)}
    policies = {role: (chance.choice([-1, 1, 2, 3]), chance.choice([-1, 1, 2, 3])) for role in roles}
    outcomes: dict = {role: [None] * count for role, count in roles.items()}
    tally = CompletionTally(outcomes)
    order = [(role, index) for role, count in roles.items() for index in range(count)]
    chance.shuffle(order)
    for role, index in order:
        outcome = chance.choice(["failed", "succeeded"])
        outcomes[role][index] = outcome
        counted = tally.complete(role, index, outcome, policies[role])
        assert counted == attempt_completion(role, index, outcomes, policies)
        if counted is not None:
            break
    else:
        raise AssertionError("every task completed without a verdict")
