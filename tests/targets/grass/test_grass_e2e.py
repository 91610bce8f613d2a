"""End to end on a real Grass cluster on loopback: redis-server, `paictl grass master`, two `paictl grass node`s.

Jobs go in through the backend (`--target grass`: MARO's records in Redis) and every verdict comes from the agents'
own processes. Deadlines are generous (the box is shared); no test depends on how fast anything is.
"""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from grass_cluster_harness import leftover_containers, needs_redis, running_cluster, wait_for
from paictl.errors import NotFoundError
from paictl.targets.compiled import compile_job
from paictl.targets.states import JobState

pytestmark = needs_redis

JOB = """\
protocolVersion: 2
name: {name}
type: job
prerequisites: [{{name: img, type: dockerimage, uri: "busybox"}}]
taskRoles:
{roles}
"""


def role(name: str, command: str, *, instances: int = 1, cpu: int = 1, all_complete: bool = False) -> str:
    """A task role; `all_complete`: the job succeeds only once every task completed (minSucceededInstances -1),
    not when this role's instances all succeeded (OpenPAI's default)."""
    return (f"  {name}:\n    instances: {instances}\n    dockerImage: img\n"
            f"    resourcePerInstance: {{cpu: {cpu}, memoryMB: 512, gpu: 0}}\n"
            + ("    completion: {minSucceededInstances: -1}\n" if all_complete else "")
            + f"    commands: [{json.dumps(command)}]\n")


@pytest.fixture
def grass(tmp_path):
    with running_cluster(tmp_path) as cluster:
        yield cluster


def submit(grass, name: str, *roles: str):
    compiled = compile_job(JOB.format(name=name, roles="".join(roles)).encode(), target="grass", name=f"{name}.yaml")
    return grass.backend.submit(compiled)


def final(grass, name: str, uid=None):
    views = list(grass.backend.watch(name, uid=uid))
    assert views[-1].state.is_final, views[-1]
    return views[-1]


def running(grass, name: str, count: int):
    return wait_for(lambda: (lambda v: v if sum(t.state == "running" for t in v.tasks) == count else None)(
        grass.backend.describe(name)), what=f"{count} running containers of {name}",
        explain=lambda: f"{grass.backend.describe(name)}\n{grass.logs()}")


def test_two_roles_run_across_both_nodes_to_finish(grass):
    submission = submit(grass, "two", role("ping", 'echo "ping $PAI_TASK_INDEX on $NODE_NAME, peer $PAI_HOST_IP_pong_0"',
                                           cpu=2, all_complete=True),
                        role("pong", 'echo "pong on $NODE_NAME: $PAI_TASK_ROLE_LIST $COMPONENT_TYPE"', cpu=2,
                             all_complete=True))
    view = final(grass, "two", submission.uid)
    assert view.state is JobState.SUCCEEDED and view.completion_code == 0
    # each node has 2 cores and each container wants 2: one per node
    assert sorted(t.node for t in view.tasks) == ["n1", "n2"]
    assert [(t.role, t.index, t.state, t.exit_code) for t in view.tasks] == [("ping", 0, "exited", 0),
                                                                             ("pong", 0, "exited", 0)]
    lines = {(line.role, line.text) for line in grass.backend.logs("two").lines}
    ping_node = next(t.node for t in view.tasks if t.role == "ping")
    pong_node = next(t.node for t in view.tasks if t.role == "pong")
    assert lines == {("ping", f"ping 0 on {ping_node}, peer 127.0.0.1"), ("pong", f"pong on {pong_node}: ping,pong pong")}
    record = wait_for(lambda: (lambda r: r if r["status"] == "finish" else None)(
        json.loads(grass.client().hget("name_to_job_details", "two"))), what="the master's finish")
    assert (record["id"], len(record["containers"])) == (submission.uid, 2)
    assert grass.client().lrange("pending_job_tickets", 0, -1) == []
    assert grass.backend.has_job("two") and not grass.backend.has_job("three")
    assert [(v.name, v.state) for v in grass.backend.list()] == [("two", JobState.SUCCEEDED)]


def test_a_failing_job_fails_with_the_diagnosed_phrase(grass):
    submit(grass, "broken", role("main", "echo starting; no-such-program-xyz --now"))
    view = final(grass, "broken")
    assert view.state is JobState.FAILED and view.completion_code == 127
    (task,) = view.tasks
    assert (task.exit_code, task.diagnosis) == (127, "220 UserCommandExitWithError")
    assert view.message.startswith("main-0 (container ") and "exited 127; FailedTaskCount 1 has reached " \
        "MinFailedTaskCount 1 in TaskRole main (220 UserCommandExitWithError)" in view.message
    assert view.triggered_by == ("main", 0)
    excerpt = grass.backend.failure_excerpt(view)
    assert excerpt is not None and any("no-such-program-xyz" in line for line in excerpt.lines)


def test_exit_65_stops_the_whole_job(grass):
    submit(grass, "kill-all", role("quitter", "sleep 1; exit 65"), role("worker", "sleep 300"))
    view = final(grass, "kill-all")
    assert view.state is JobState.FAILED
    assert "quitter-0 (container " in view.message and "exited 65; FailedTaskCount 1" in view.message
    view = wait_for(lambda: (lambda v: v if all(t.state == "exited" for t in v.tasks) else None)(
        grass.backend.describe("kill-all")), what="every container stopped")
    assert view.state is JobState.FAILED
    states = {t.role: (t.state, t.exit_code) for t in view.tasks}
    assert states["quitter"] == ("exited", 65)
    assert states["worker"][0] == "exited" and states["worker"][1] in (143, 137)  # SIGTERM, or SIGKILL after grace


REJOIN = ('redis-cli -h "$MASTER_HOSTNAME" -p "$MASTER_REDIS_PORT" hset "job:$JOB_ID:runtime_details" '
          'rejoin:enable 1 rejoin:max_restart_times 2 >/dev/null; '
          'redis-cli -h "$MASTER_HOSTNAME" -p "$MASTER_REDIS_PORT" hset '
          '"job:$JOB_ID:rejoin_component_name_to_container_name" "${COMPONENT_NAME:-main_proxy}" "$CONTAINER_NAME" '
          '>/dev/null; ')


def test_exit_64_is_never_restarted_while_other_codes_are(grass):
    # Both jobs ask for restarts as MARO's Proxy does (job:<id>:runtime_details), allowing 2.
    submit(grass, "restarts", role("main", REJOIN + 'echo "run at $(date +%s%N)"; exit 3'))
    submit(grass, "never", role("main", REJOIN + "exit 64"))
    restarted, never = final(grass, "restarts"), final(grass, "never")
    assert restarted.state is JobState.FAILED and restarted.tasks[0].attempt == 2  # the first run and 2 restarts
    assert never.state is JobState.FAILED and never.tasks[0].attempt == 0 and never.tasks[0].exit_code == 64
    client = grass.client()
    jobs = {name: json.loads(client.hget("name_to_job_details", name)) for name in ("restarts", "never")}
    assert len(jobs["restarts"]["containers"]) == 3 and len(jobs["never"]["containers"]) == 1
    assert client.hget(f"job:{jobs['restarts']['id']}:component_id_to_restart_times",
                       jobs["restarts"]["components"]["main"]["id"]) == "2"
    # each restart is a task attempt of its own: --task-attempt N, and --previous the one before the latest
    runs = [[line.text for line in grass.backend.logs("restarts", task_attempt=n).lines if line.stream == "out"]
            for n in (0, 1, 2)]
    assert all(len(run) == 1 and run[0].startswith("run at ") for run in runs) and len(set(map(tuple, runs))) == 3
    previous = [line.text for line in grass.backend.logs("restarts", previous=True).lines if line.stream == "out"]
    assert previous == runs[1]
    for name, options in (("never", {"previous": True}), ("restarts", {"task_attempt": 3})):
        with pytest.raises(NotFoundError):
            grass.backend.logs(name, **options)


def test_a_node_agent_killed_mid_job_is_reported(grass):
    submit(grass, "lost", role("kept", "sleep 300", cpu=2), role("long", "sleep 300", cpu=2))
    view = running(grass, "lost", 2)
    victim = next(t.node for t in view.tasks if t.role == "long")
    grass.kill_agent(victim)
    final_view = final(grass, "lost")
    assert final_view.state is JobState.FAILED
    long_task = next(t for t in final_view.tasks if t.role == "long")
    assert (long_task.state, long_task.node) == ("lost", victim)
    assert f"long-0 (container " in final_view.message and f"on node {victim}) was lost: its node stopped " \
        "reporting; FailedTaskCount 1" in final_view.message
    # OpenPAI ends a failed job's other tasks: the master stops the survivor on the live node
    kept = wait_for(lambda: (lambda t: t if t.state == "exited" else None)(
        next(t for t in grass.backend.describe("lost").tasks if t.role == "kept")), what="the other task stopped")
    assert kept.exit_code in (143, 137)
    assert grass.backend.describe("lost").state is JobState.FAILED  # the verdict stays
    node = json.loads(grass.client().hget("name_to_node_details", victim))
    assert node["state"]["status"] == "Lost"


def test_a_redis_restart_mid_job_loses_nothing(grass):
    submission = submit(grass, "survivor", role("a", "sleep 4; echo done-a", cpu=2), role("b", "sleep 4; echo done-b",
                                                                                          cpu=2))
    running(grass, "survivor", 2)
    before = json.loads(grass.client().hget("name_to_job_details", "survivor"))
    grass.stop_redis()
    time.sleep(1.5)
    grass.start_redis()
    view = final(grass, "survivor", submission.uid)
    assert view.state is JobState.SUCCEEDED
    after = json.loads(grass.client().hget("name_to_job_details", "survivor"))
    assert (after["id"], after["components"]) == (before["id"], before["components"])
    assert {line.text for line in grass.backend.logs("survivor").lines} == {"done-a", "done-b"}
    for name in ("n1", "n2"):
        assert json.loads(grass.client().hget("name_to_node_details", name))["state"]["status"] == "Running"


def test_stop_kills_the_containers(grass):
    submit(grass, "endless", role("main", "sleep 300", instances=2))
    view = running(grass, "endless", 2)
    result = grass.backend.stop("endless")
    assert result.data == {"name": "endless", "status": "running", "stopped": True}
    stopped = final(grass, "endless")
    assert stopped.state is JobState.STOPPED
    assert all(t.state == "exited" and t.exit_code in (143, 137) for t in stopped.tasks)
    assert [t.node for t in view.tasks] != [None, None]
    # The job's record follows its containers to their end, as MARO's JobTrackingAgent keeps them.
    record = wait_for(lambda: (lambda r: r if all(not c["state"]["Running"] for c in r["containers"].values())
                               else None)(json.loads(grass.client().hget("name_to_job_details", "endless"))),
                      what="the job record's containers to end")
    assert record["status"] == "killed" and len(record["containers"]) == 2
    assert grass.client().lrange("killed_job_tickets", 0, -1) == []


def test_resubmitting_a_running_job_is_refused_and_a_job_too_big_stays_pending(grass):
    from paictl.errors import ClusterError

    submit(grass, "busy", role("main", "sleep 300", cpu=2, instances=2))  # both 2-core nodes full
    with pytest.raises(ClusterError, match="already pending|already running"):
        submit(grass, "busy", role("main", "sleep 300"))
    submit(grass, "waiting", role("main", "true", cpu=1))
    view = wait_for(lambda: (lambda v: v if v.message.startswith("pending: component 'main'") else None)(
        grass.backend.describe("waiting")), what="the misfit message")
    assert view.state is JobState.PENDING
    assert "cpu short by 1 cores (free 0, needs 1)" in view.message
    grass.backend.stop("busy")
    grass.backend.stop("waiting")
    assert final(grass, "waiting").state is JobState.STOPPED


def test_a_job_no_node_could_ever_hold_is_refused_at_submit_and_nothing_is_queued(grass):
    from paictl.errors import ClusterError

    client = grass.client()
    with pytest.raises(ClusterError) as refused:
        submit(grass, "huge", role("main", "true", cpu=3))
    message = str(refused.value)
    assert "can never run" in message and "even with every node idle" in message
    assert "cpu short by 1 cores (capacity 2, needs 3)" in message and "nothing was queued" in message
    assert refused.value.exit_code == 3
    assert client.hget("name_to_job_details", "huge") is None and client.lrange("pending_job_tickets", 0, -1) == []
    # a job that fits an idle node is admitted even while the cluster is full
    submit(grass, "busy", role("main", "sleep 300", cpu=2, instances=2))
    submit(grass, "fits-later", role("main", "true", cpu=2))
    assert grass.backend.describe("fits-later").state is JobState.PENDING
    grass.backend.stop("busy")
    grass.backend.stop("fits-later")


def test_submit_refuses_a_never_fitting_job_in_one_line_with_exit_3(grass, run_cli, tmp_path):
    job = tmp_path / "huge.yaml"
    job.write_text(JOB.format(name="huge", roles=role("main", "true", cpu=64)))
    code, out, err = run_cli("submit", str(job), "--target", "grass", "--cluster", str(grass.cluster_file))
    assert code == 3 and out == ""
    assert err.count("\n") == 1 and "can never run" in err and "cpu short by 62 cores" in err


def test_the_node_api_needs_the_token(grass):
    import urllib.error
    import urllib.request

    url = f"http://127.0.0.1:{grass.ports['n1']}/v1/status"
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(url, timeout=10)
    assert caught.value.code == 401
    request = urllib.request.Request(url, headers={"Authorization": "Bearer test-token-0123456789abcdef"})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert json.loads(response.read())["status"] == "OK"


def test_sigterm_marks_the_node_stopped(grass):
    grass.agents["n2"].send_signal(signal.SIGTERM)
    assert grass.agents["n2"].wait(timeout=60) == 0
    node = json.loads(grass.client().hget("name_to_node_details", "n2"))
    assert node["state"]["status"] == "Stopped"
    assert os.path.exists(grass.cluster_file)


def test_sigterm_the_moment_a_node_is_up_still_closes_it(grass):
    """A supervisor may stop a node it has just launched: SIGTERM the instant its record first says Running, before
    the agent has got any further, must still close it (exit 0, the node Stopped), not end it with 130 and leave
    its record saying Running. Repeated, since the signal lands at a slightly different point each time."""
    client = grass.client()
    for attempt in range(5):
        grass.kill_agent("n2")
        client.hdel("name_to_node_details", "n2")
        grass.start_agent("n2", "node", "--name", "n2", "--work-dir", str(grass.root / "n2"))
        deadline = time.monotonic() + 60
        while not (client.hget("name_to_node_details", "n2") or "").count('"Running"'):
            assert time.monotonic() < deadline and grass.agents["n2"].poll() is None, grass.logs()
            time.sleep(0.001)
        grass.agents["n2"].send_signal(signal.SIGTERM)
        assert grass.agents["n2"].wait(timeout=60) == 0, f"attempt {attempt}\n{grass.logs()}"
        assert _node(grass, "n2")["state"]["status"] == "Stopped"


def test_the_commands_submit_follow_status_logs_and_stop(grass, run_cli, tmp_path):
    job = tmp_path / "cli.yaml"
    job.write_text(JOB.format(name="cli", roles=role("main", 'echo "hello from $NODE_NAME"', instances=2)))
    cluster = ["--target", "grass", "--cluster", str(grass.cluster_file)]
    code, out, err = run_cli("submit", str(job), *cluster, "--follow", "--format", "json")
    assert code == 0, err
    last = json.loads(out.splitlines()[-1])
    assert last["state"] == "succeeded" and {t["node"] for t in last["tasks"]} == {"n1", "n2"}
    code, out, err = run_cli("status", "cli", *cluster, "--format", "json")
    assert code == 0 and json.loads(out)["state"] == "succeeded"
    nodes = {t["index"]: t["node"] for t in last["tasks"]}
    code, out, err = run_cli("logs", "cli", *cluster)
    assert code == 0
    assert sorted(out.splitlines()) == [f"[main-0] hello from {nodes[0]}", f"[main-1] hello from {nodes[1]}"]
    code, out, err = run_cli("status", *cluster)
    assert code == 0 and "cli" in out
    code, out, err = run_cli("stop", "cli", *cluster)
    assert (code, out) == (0, "grass-job/cli already succeeded\n")
    code, out, err = run_cli("status", "nope", *cluster)
    assert code == 3 and "no job 'nope' on grass cluster test" in err
    code, out, err = run_cli("submit", str(job), "--target", "grass")
    assert code == 2 and "--target grass needs --cluster FILE" in err


def _node(grass, name: str) -> dict:
    return json.loads(grass.client().hget("name_to_node_details", name))


def test_a_node_agent_restarted_mid_job_adopts_its_containers(grass):
    submission = submit(grass, "adopted", role("main", "sleep 6; echo finished", cpu=2))
    view = running(grass, "adopted", 1)
    victim = view.tasks[0].node
    grass.kill_agent(victim)  # SIGKILL: its container goes on, as a docker container outlives its node agent
    grass.start_agent(victim, "node", "--name", victim, "--work-dir", str(grass.root / victim))
    # back before lost_after: it reports the container as running, and its CPUs as taken
    wait_for(lambda: grass.agents[victim].poll() is None and _node(grass, victim)["resources"]["target_free_cpu"] == 0
             and any(c["state"]["Running"] for c in _node(grass, victim)["containers"].values()),
             what="the restarted node reporting its container", explain=grass.logs)
    done = final(grass, "adopted", submission.uid)
    assert (done.state, done.tasks[0].exit_code) == (JobState.SUCCEEDED, 0)
    assert [line.text for line in grass.backend.logs("adopted").lines] == ["finished"]


def test_a_node_lost_and_back_stops_what_it_no_longer_owns(grass):
    submit(grass, "gone", role("main", "sleep 300", cpu=2))
    victim = running(grass, "gone", 1).tasks[0].node
    grass.kill_agent(victim)
    view = final(grass, "gone")
    assert view.state is JobState.FAILED and view.tasks[0].state == "lost"
    grass.start_agent(victim, "node", "--name", victim, "--work-dir", str(grass.root / victim))
    # the master stops the container of the failed job; the node reports all its CPUs free again
    wait_for(lambda: _node(grass, victim)["state"]["status"] == "Running"
             and _node(grass, victim)["resources"]["target_free_cpu"] == 2, what="the orphan stopped",
             explain=grass.logs)
    assert leftover_containers(grass.root) == []
    assert grass.backend.describe("gone").state is JobState.FAILED  # the verdict stays


def test_redis_down_longer_than_lost_after_fails_nothing(grass):
    from grass_cluster_harness import LOST_AFTER

    submission = submit(grass, "patient", role("a", f"sleep {LOST_AFTER + 8:.0f}; echo a-done", cpu=2,
                                               all_complete=True),
                        role("b", f"sleep {LOST_AFTER + 8:.0f}; echo b-done", cpu=2, all_complete=True))
    running(grass, "patient", 2)
    grass.stop_redis()
    time.sleep(LOST_AFTER + 3)
    grass.start_redis()
    view = final(grass, "patient", submission.uid)
    assert view.state is JobState.SUCCEEDED, view
    for name in ("n1", "n2"):
        assert _node(grass, name)["state"]["status"] == "Running"


def test_the_master_restarted_mid_job_takes_it_to_its_verdict(grass):
    submission = submit(grass, "steady", role("main", "sleep 4; exit 3"))
    running(grass, "steady", 1)
    grass.kill_agent("master")
    time.sleep(1)
    grass.start_agent("master", "master")
    view = final(grass, "steady", submission.uid)
    assert (view.state, view.completion_code) == (JobState.FAILED, 3)


def test_malformed_records_are_skipped_and_named(grass, run_cli):
    client = grass.client()
    client.hset("name_to_job_details", "not-json", "{oops")
    client.hset("name_to_job_details", "bad-shape", json.dumps({"name": "bad-shape", "id": "job00000000",
                                                                "components": {"main": {"num": "many"}}}))
    client.rpush("pending_job_tickets", "not-json", "bad-shape")
    client.hset("name_to_node_details", "ghost", json.dumps({"hostname": 7}))
    node = _node(grass, "n1")
    client.hset("name_to_container_details", "weird", json.dumps({"state": "running"}))
    submission = submit(grass, "healthy", role("main", "echo fine"))
    view = final(grass, "healthy", submission.uid)
    assert view.state is JobState.SUCCEEDED  # the master's passes went on
    assert node["state"]["status"] == "Running"
    cluster = ["--target", "grass", "--cluster", str(grass.cluster_file)]
    code, out, err = run_cli("status", *cluster)
    assert code == 0 and "healthy" in out and "Traceback" not in out + err
    # the list counts what it skipped, on standard error, in one line (it skipped them silently)
    assert err.startswith("paictl: skipped 3 malformed record(s) the list could not show: ") and err.count("\n") == 1
    assert all(key in err for key in ("['bad-shape']", "['not-json']: not JSON", "['ghost']"))
    code, out, err = run_cli("status", "bad-shape", *cluster)
    assert code == 3 and "name_to_job_details['bad-shape']" in err and "'components.main.id'" in err
    assert len(err.strip().splitlines()) == 1
    master_log = (grass.root / "master.log").read_text()
    assert "skipped the malformed record name_to_job_details['not-json']: not JSON" in master_log
    assert "name_to_node_details['ghost']: 'hostname' is not a non-empty string" in master_log
