"""Verdicts from facts (targets/grass/verdict.py): the rules on records shaped as MARO's agents write them, and the
backend's stop of a decided job whose containers still run (real redis-server, no agents)."""

from __future__ import annotations

import json

import pytest

from grass_cluster_harness import GrassCluster, needs_redis
from paictl.targets.grass.verdict import decide, facts, rejoin
from paictl.targets.states import JobState

JOB = {"name": "j", "id": "job00000001", "status": "running",
       "tags": {"paictl_env": "PAI_MIN_FAILED_TASK_COUNT_a=1 PAI_MIN_SUCCEEDED_TASK_COUNT_a=2 "
                              "PAI_MIN_FAILED_TASK_COUNT_b=2 PAI_MIN_SUCCEEDED_TASK_COUNT_b=1"},
       "components": {"a": {"id": "component0000000a", "num": 2}, "b": {"id": "component0000000b", "num": 2}}}


def container(role: str, index: int, *, running: bool = False, code: int = 0, finished: str = "", restart=None):
    labels = {"job_id": JOB["id"], "component_id": JOB["components"][role]["id"], "component_type": role,
              "component_index": str(index), "node_name": "n1"}
    if restart is not None:
        labels["restart_index"] = str(restart)
    state = {"Status": "running" if running else "exited", "Running": running, "ExitCode": 0 if running else code,
             "StartedAt": f"2026-01-01T00:00:0{index}Z", "FinishedAt": finished or "0001-01-01T00:00:00Z"}
    return {**labels, "state": state}


def node(**containers) -> dict:
    return {"n1": {"hostname": "h", "api_server": {"port": 1}, "state": {"status": "Running"},
                   "containers": containers}}


def test_the_first_failure_to_reach_min_failed_decides_in_finishing_order():
    nodes = node(a0=container("a", 0, code=3, finished="2026-01-01T00:00:05Z"),
                 a1=container("a", 1, running=True),
                 b0=container("b", 0, code=1, finished="2026-01-01T00:00:04Z"),
                 b1=container("b", 1, running=True))
    decision = decide(JOB, facts(JOB, nodes, [], {}))
    # b0 failed first, but b tolerates one failure (minFailedInstances 2); a0 then fails a (minFailed 1)
    assert (decision.state, decision.trigger, decision.code) == (JobState.FAILED, ("a", 0), 3)
    assert decision.message.startswith("a-0 (container a0 on node n1) exited 3; FailedTaskCount 1 has reached")
    assert {f.name for f in decision.live} == {"a1", "b1"}


def test_the_wrappers_record_wins_over_what_maro_was_shown():
    nodes = node(a0=container("a", 0, code=65), a1=container("a", 1, running=True))
    found = facts(JOB, nodes, [], {"a0": "137", "a1": "0"})  # a1 recorded 0: its commands ended, docker lags
    by_name = {f.name: f for f in found}
    assert (by_name["a0"].exit_code, by_name["a0"].engine_code) == (137, 65)
    assert (by_name["a1"].status, by_name["a1"].exit_code) == ("exited", 0)


def test_a_role_whose_instances_all_succeeded_succeeds_the_job():
    nodes = node(b0=container("b", 0, code=0, finished="2026-01-01T00:00:01Z"), a0=container("a", 0, running=True))
    decision = decide(JOB, facts(JOB, nodes, [], {}))
    assert decision.state is JobState.SUCCEEDED and decision.code == 0 and "MinSucceededTaskCount 1" in decision.message


def test_a_container_no_node_reports_failed_unless_the_job_was_stopped():
    gone = container("a", 0, running=True)  # remembered (name_to_container_details) as running, on no node now
    found = facts(JOB, node(), [("a0", gone)], {})
    assert [f.status for f in found] == ["removed"]
    assert decide(JOB, found).state is JobState.FAILED
    assert decide(JOB, found, stopped_at=1.0).state is JobState.STOPPED


def test_a_stop_is_no_failure_and_running_containers_make_it_stopping():
    nodes = node(a0=container("a", 0, code=143, finished="2026-01-01T00:01:00Z"), a1=container("a", 1, running=True))
    stop = 1767225600.0  # 2026-01-01T00:00:00Z: a0 ended after it
    assert decide(JOB, facts(JOB, nodes, [], {}), stopped_at=stop).state is JobState.STOPPING
    nodes["n1"]["containers"]["a1"] = container("a", 1, code=143, finished="2026-01-01T00:01:01Z")
    assert decide(JOB, facts(JOB, nodes, [], {}), stopped_at=stop).state is JobState.STOPPED
    # a failure before the stop still decides
    nodes["n1"]["containers"]["a0"] = container("a", 0, code=2, finished="2025-12-31T23:59:00Z")
    assert decide(JOB, facts(JOB, nodes, [], {}), stopped_at=stop).state is JobState.FAILED


def test_a_container_maro_will_restart_has_not_completed():
    nodes = node(a0=container("a", 0, code=3), a1=container("a", 1, running=True))
    found = facts(JOB, nodes, [], {})
    runtime = {"rejoin:enable": "1", "rejoin:max_restart_times": "2"}
    registered = {"a_proxy0": "a0"}  # the Proxy's component name -> its container (MARO restarts only these)
    assert decide(JOB, found, restartable=rejoin(JOB, runtime, {"component0000000a": "1"},
                                                 registered=registered)).state is JobState.RUNNING
    assert decide(JOB, found, restartable=rejoin(JOB, runtime, {"component0000000a": "2"},
                                                 registered=registered)).state is JobState.FAILED
    # a container its Proxy never registered (it failed before joining) is not restarted by MARO's master
    assert decide(JOB, found, restartable=rejoin(JOB, runtime, {"component0000000a": "1"},
                                                 registered={"a_proxy1": "a1"})).state is JobState.FAILED
    # the newest restart is the task
    nodes["n1"]["containers"]["a0-r1"] = container("a", 0, running=True, restart=1)
    assert decide(JOB, facts(JOB, nodes, [], {})).tasks[0].attempt == 1


def created(role: str, index: int, **extra) -> dict:
    """A container `docker run` has created and not started yet, as `docker inspect` shows it."""
    record = container(role, index)
    record["state"] = {**record["state"], "Status": "created", "ExitCode": 0, "StartedAt": "0001-01-01T00:00:00Z",
                       **extra}
    return record


@pytest.mark.parametrize("engine", ["created", "paused", "restarting"])
def test_a_container_not_yet_started_or_held_by_the_engine_has_not_exited(engine):
    # every instance of b "succeeded" would decide the job (minSucceeded 1) if the engine's 0 were read as an exit
    nodes = node(b0=created("b", 0) if engine == "created" else
                 {**container("b", 0), "state": {**container("b", 0)["state"], "Status": engine}},
                 a0=container("a", 0, running=True))
    decision = decide(JOB, facts(JOB, nodes, [], {}))
    assert decision.state is JobState.RUNNING and decision.code is None
    assert decision.tasks[2].state == ("pending" if engine == "created" else "running")
    assert {f.name for f in decision.live} == {"a0", "b0"}  # a stop ends it too
    alone = decide(JOB, facts(JOB, node(b0=nodes["n1"]["containers"]["b0"]), [], {}), stopped_at=1.0)
    assert alone.state is JobState.STOPPING


def test_a_created_container_whose_start_failed_or_whose_commands_ended_has_exited():
    # docker leaves a container whose start failed `created`, with an Error and a non-zero code
    # (docker 28.2's words, read from a real engine)
    failed = created("a", 0, ExitCode=127, Error="failed to create shim task: OCI runtime create failed: runc create "
                     "failed: unable to start container process: exec: \"/nonexistent\": stat /nonexistent: no such "
                     "file or directory: unknown")
    decision = decide(JOB, facts(JOB, node(a0=failed, a1=container("a", 1, running=True)), [], {}))
    assert (decision.state, decision.code) == (JobState.FAILED, 127)
    # the node's record is 5 s old; the wrapper's record says the commands ran and ended
    (found,) = facts(JOB, node(b0=created("b", 0)), [], {"b0": "3"})
    assert (found.status, found.exit_code) == ("exited", 3)


@needs_redis
def test_a_failed_job_whose_containers_still_run_can_be_stopped(tmp_path):
    from paictl.targets.backend import BackendOptions
    from paictl.targets.grass.backend import GrassBackend

    cluster = GrassCluster(tmp_path)
    cluster.start_redis()
    try:
        client = cluster.client()
        client.hset("name_to_job_details", "j", json.dumps({**JOB, "mount": {}, "components": {
            role: {**details, "resources": {"cpu": 1, "memory": "1m", "gpu": 0}, "command": "x", "image": "i",
                   "mount": {"target": "/m"}} for role, details in JOB["components"].items()}}))
        client.hset("name_to_node_details", "n1", json.dumps(node(
            a0=container("a", 0, code=3, finished="2026-01-01T00:00:05Z"), a1=container("a", 1, running=True))["n1"]))
        backend = GrassBackend(BackendOptions(cluster=str(cluster.cluster_file)))
        assert backend.describe("j").state is JobState.FAILED
        result = backend.stop("j")
        assert result.data == {"name": "j", "status": "failed", "stopped": True}
        assert client.lrange("killed_job_tickets", 0, -1) == ["j"]
        assert client.hget("paictl:stops", JOB["id"]) is not None
        assert backend.describe("j").state is JobState.FAILED  # the verdict stays
        backend.close()
    finally:
        cluster.close()


@pytest.mark.parametrize("record, problem", [
    ("{", "not JSON"),
    (json.dumps({"name": "x", "id": "job1", "components": {"m": {"id": "c", "num": -1}}}), "'components.m.num'"),
    (json.dumps([1, 2]), "not a JSON object"),
])
def test_a_malformed_job_record_is_named(record, problem):
    from paictl.targets.grass.redis_records import JOBS, Records, job_problem

    records = Records.__new__(Records)
    records.problems = {}
    assert records._decode(JOBS, "x", record, job_problem) is None
    assert problem in records.problems[f"{JOBS}['x']"]
