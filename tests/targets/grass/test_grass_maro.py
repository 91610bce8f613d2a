"""paictl against MARO's unchanged Grass services, with real docker containers (tests/maro_peer/stack.py).

One stack for the module: redis-server, MARO's master agent, MARO node m1 (its node API server and node agent, on
the session's docker engine) and paictl node p1 (`paictl grass node --containers docker`, on an engine of its own:
MARO's agent reports every container of its engine as its own). Jobs go in with `--target grass`; every verdict
is checked against what the containers really did. MARO's agents wake every 5 s, so the scenarios run side by side
where they can. The last tests replace MARO's master with paictl's, on the same nodes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from docker_engine import DockerEngine, docker_engine  # noqa: F401 - the session's engine
from maro_peer.stack import MaroStack, free_port, missing
from paictl.targets.backend import BackendOptions
from paictl.targets.compiled import compile_job
from paictl.targets.grass.backend import GrassBackend
from paictl.targets.states import JobState

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
IMAGE = "paictl-test/base:1"

JOB = """\
protocolVersion: 2
name: {name}
type: job
prerequisites: [{{name: img, type: dockerimage, uri: "{image}"}}]
taskRoles:
{roles}
"""


def role(name: str, command: str, *, instances: int = 1, all_complete: bool = False) -> str:
    return (f"  {name}:\n    instances: {instances}\n    dockerImage: img\n"
            f"    resourcePerInstance: {{cpu: 1, memoryMB: 256, gpu: 0}}\n"
            + ("    completion: {minSucceededInstances: -1}\n" if all_complete else "")
            + f"    commands: [{json.dumps(command)}]\n")


@pytest.fixture(scope="module")
def maro(docker_engine, tmp_path_factory):  # noqa: F811 - the fixture imported above
    found = missing()
    if found is not None:
        reason, installed = found
        if installed and os.environ.get("CI"):
            pytest.fail(f"CI runs MARO's services, but {reason}", pytrace=False)
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("maro")
    other = DockerEngine(Path(tempfile.mkdtemp(prefix="pdk-", dir="/tmp")))
    stack = MaroStack(root)
    agents: dict[str, subprocess.Popen] = {}
    try:
        other.start()
        docker_engine.base_image()
        other.base_image()
        stack.start_redis()
        stack.start_master()
        stack.start_api()
        stack.add_node("m1", docker_engine.host, cpu=8, memory=16384)
        p1 = free_port()
        cluster_file = stack.cluster_file({"m1": stack.node_ports["m1"], "p1": p1}, root / "cluster.yaml")
        env = {**other.env(), "PYTHONUNBUFFERED": "1"}
        def start_p1() -> subprocess.Popen:
            return subprocess.Popen(
                [sys.executable, "-m", "paictl", "grass", "node", "--cluster", str(cluster_file), "--name", "p1",
                 "--containers", "docker", "--work-dir", str(root / "p1")],
                env=env, stdout=open(root / "paictl-p1.log", "ab"), stderr=subprocess.STDOUT)

        agents["p1"] = start_p1()
        stack.start_p1 = start_p1
        stack.wait(lambda: _running(stack, "p1"), "paictl node p1 Running")
        stack.paictl_agents = agents
        stack.cluster_path = cluster_file
        stack.engines = (docker_engine, other)
        stack.backend = GrassBackend(BackendOptions(cluster=str(cluster_file)))
        yield stack
    except BaseException:
        print(stack.logs())
        raise
    finally:
        for process in agents.values():
            if process.poll() is None:
                process.terminate()
                process.wait(timeout=60)
        stack.close()
        other.stop()
        # MARO's node m1 ran its containers on the session's engine and never removes them: leave it as found
        leftover = [c["ID"] for c in docker_engine.containers("label=container_name")]
        if leftover:
            docker_engine.docker("rm", "-f", *leftover, check=False)


def _running(stack, name: str) -> bool:
    text = stack.client().hget("name_to_node_details", name)
    return bool(text) and json.loads(text).get("state", {}).get("status") == "Running"


def submit(stack, name: str, *roles: str, text: str | None = None):
    text = text or JOB.format(name=name, image=IMAGE, roles="".join(roles))
    return stack.backend.submit(compile_job(text.encode(), target="grass", name=f"{name}.yaml"))


def final(stack, name: str, timeout: float = 120.0):
    deadline = time.monotonic() + timeout
    while True:
        view = stack.backend.describe(name)
        if view.state.is_final:
            return view
        if time.monotonic() > deadline:
            raise AssertionError(f"{name} not final: {view}\n{stack.logs()}")
        time.sleep(0.5)


def record(stack, name: str) -> dict:
    return json.loads(stack.client().hget("name_to_job_details", name))


CODES = {"zero": 0, "one": 1, "three": 3, "sixtyfour": 64, "sixtyfive": 65, "killed": 137}


def test_verdicts_are_the_containers_real_exit_codes_under_maros_master(maro):
    for name, code in CODES.items():
        command = "kill -9 $$" if code == 137 else f"sleep 1; exit {code}"
        submit(maro, name, role("main", command))
    nodes = set()
    for name, code in CODES.items():
        view = final(maro, name)
        nodes.add(view.tasks[0].node)
        assert (view.state, view.completion_code) == (
            (JobState.SUCCEEDED, 0) if code == 0 else (JobState.FAILED, code)), (name, view)
        assert view.tasks[0].exit_code == code and view.tasks[0].node in ("m1", "p1")
        if code:
            assert view.triggered_by == ("main", 0) and f"exited {code}; FailedTaskCount 1" in view.message
    assert nodes == {"m1", "p1"}  # balanced on cpu over two idle nodes: MARO's docker node and paictl's
    # MARO's tracker took every one of them (what MARO was shown: 0, or 65 for a failure) and is still alive:
    # it alone writes `finish` and `failed` into the records.
    maro.wait(lambda: all(record(maro, n)["status"] == ("finish" if c == 0 else "failed") for n, c in CODES.items()),
              "MARO's own statuses")
    exits = maro.client().hgetall(f"paictl:job:{record(maro, 'three')['id']}:exits")
    assert list(exits.values()) == ["3"]


def test_the_example_runs_under_maros_master_with_its_peers(maro):
    text = (EXAMPLES / "grass-actor-learner.yaml").read_text().replace("python:3.11-slim", IMAGE)
    text = text.replace("cpu: 4, memoryMB: 8192", "cpu: 1, memoryMB: 512").replace("cpu: 2, memoryMB: 4096",
                                                                                    "cpu: 1, memoryMB: 256")
    submit(maro, "grass-actor-learner", text=text)
    checks = ('test "$PAI_TASK_ROLE_a_HOST_LIST" = 127.0.0.1,127.0.0.1 && test "$PAI_HOST_IP_b_0" = 127.0.0.1 '
              '&& test "$PAI_TASK_ROLE_LIST" = a,b && test "$PAI_CURRENT_CONTAINER_IP" = 127.0.0.1 '
              '&& test "$PAI_RESOURCE_b" = 0,1,256,0 && test "$PAI_TASK_ROLE_INSTANCES" = a:0,a:1,b:0 '
              '&& test "$PAI_TASK_INDEX" = "$COMPONENT_INDEX"')
    submit(maro, "peers", role("a", checks, instances=2, all_complete=True), role("b", checks, all_complete=True))
    example, peers = final(maro, "grass-actor-learner"), final(maro, "peers")
    assert example.state is JobState.SUCCEEDED, example
    assert peers.state is JobState.SUCCEEDED and all(t.exit_code == 0 for t in peers.tasks), peers
    assert {t.node for t in peers.tasks} <= {"m1", "p1"}
    hosts = maro.client().hgetall(f"paictl:job:{record(maro, 'peers')['id']}:hosts")
    assert hosts == {"a:0": "127.0.0.1", "a:1": "127.0.0.1", "b:0": "127.0.0.1"}


def test_stops_hold_under_maros_master(maro, run_cli):
    cluster = ["--target", "grass", "--cluster", str(maro.cluster_path)]
    # pending: a whole node's cpu while `endless` holds a core of each (a job no idle node could hold is refused
    # at submit); a stop drops its ticket, so it never runs, even once it would fit
    submit(maro, "endless", role("main", "sleep 600", instances=2))
    maro.wait(lambda: sum(t.state == "running" for t in maro.backend.describe("endless").tasks) == 2,
              "endless running")
    huge = JOB.format(name="huge", image=IMAGE, roles=role("main", "exit 0")).replace("cpu: 1,", "cpu: 8,")
    submit(maro, "huge", text=huge)
    assert maro.backend.describe("huge").state is JobState.PENDING
    assert maro.backend.stop("huge").data["stopped"] is True
    assert maro.backend.stop("endless").data["stopped"] is True
    assert "huge" not in maro.client().lrange("pending_job_tickets", 0, -1)
    assert final(maro, "huge").state is JobState.STOPPED
    assert final(maro, "endless").state is JobState.STOPPED
    time.sleep(12)  # MARO may flip a killed job back to running from stale records 4-8 s after the stop
    for name in ("huge", "endless"):
        assert maro.backend.describe(name).state is JobState.STOPPED
    assert all(not c["State"] == "running" for engine in maro.engines
               for c in engine.containers(f"label=job_id={record(maro, 'endless')['id']}"))
    code, out, err = run_cli("stop", "endless", *cluster)
    assert (code, out) == (0, "grass-job/endless already stopped\n")
    submit(maro, "quick", role("main", "exit 0"))
    assert final(maro, "quick").state is JobState.SUCCEEDED
    code, out, err = run_cli("stop", "quick", *cluster)
    assert (code, out) == (0, "grass-job/quick already succeeded\n")


def test_logs_of_a_maro_node_say_where_they_are(maro, run_cli):
    submit(maro, "talk", role("main", "echo hello; exit 0", instances=2))
    view = final(maro, "talk")
    assert view.state is JobState.SUCCEEDED
    code, out, err = run_cli("logs", "talk", "--target", "grass", "--cluster", str(maro.cluster_path))
    if any(t.node == "m1" for t in view.tasks):
        assert code == 3 and "<html" not in (out + err).lower()
        assert "runs MARO's node API, which serves no logs" in err and "/logs/job" in err
        assert len(err.strip().splitlines()) == 1


def test_a_job_file_submitted_with_maros_own_client(maro):
    """`compile --cluster` output, through MARO's executor and encrypted master API, verdict by paictl."""
    from paictl.targets.grass.cluster import load_cluster
    from paictl.targets.grass.target import compile_grass

    text = JOB.format(name="via-maro", image=IMAGE, roles=role("main", 'test "$PAI_TASK_ROLE_LIST" = main; exit 3'))
    compiled = compile_job(text.encode(), target="grass", name="via-maro.yaml")
    (job_file,) = compile_grass(compiled.job, compiled.profile, redis=load_cluster(str(maro.cluster_path))
                                .redis_address)
    job_id = maro.submit_with_maro(job_file)
    view = final(maro, "via-maro")
    assert record(maro, "via-maro")["id"] == job_id and record(maro, "via-maro")["tags"] == job_file["tags"]
    assert (view.state, view.completion_code) == (JobState.FAILED, 3), view


def test_a_container_docker_has_created_and_not_started_is_no_exit(maro):
    """MARO's node agent records every container of its engine with `docker inspect`'s State, a container between
    `docker run`'s create and its start too: `created`, not running, exit code 0. That is no exit. Here the newest
    container of main-0 (a restart's, as MARO's rejoin makes) is created on MARO's node m1 and held there."""
    submit(maro, "held", role("main", "sleep 600"))
    maro.wait(lambda: maro.backend.describe("held").state is JobState.RUNNING, "held running")
    job_id = record(maro, "held")["id"]
    engine, first = next((engine, found[0]) for engine in maro.engines
                         if (found := engine.containers(f"label=job_id={job_id}")))
    labels = json.loads(engine.docker("inspect", "-f", "{{json .Config.Labels}}", first["ID"]).stdout)
    name = f"{labels['container_name']}-r1"
    labels.update(container_name=name, restart_index="1", node_name="m1")
    m1 = maro.engines[0]
    m1.docker("create", "--name", name, *(f"--label={k}={v}" for k, v in labels.items()), IMAGE, "bash", "-c",
              "exit 3")
    containers = lambda: json.loads(maro.client().hget("name_to_node_details", "m1"))["containers"]  # noqa: E731
    maro.wait(lambda: (containers().get(name) or {}).get("state", {}).get("Status") == "created",
              "MARO's node agent to record the created container")
    view = maro.backend.describe("held")
    assert (view.state, view.completion_code) == (JobState.PENDING, None), view
    assert view.message == "starting: the engine has created main-0 and not started it yet", view
    assert [(t.state, t.attempt, t.node) for t in view.tasks] == [("pending", 1, "m1")], view
    # once it starts, its exit decides
    m1.docker("start", name)
    maro.wait(lambda: (containers().get(name) or {}).get("state", {}).get("Status") == "exited",
              "MARO's node agent to record the exit")
    view = maro.backend.describe("held")
    assert (view.state, view.completion_code, view.triggered_by) == (JobState.FAILED, 3, ("main", 0)), view
    # the first container, which a real restart would have followed only once it ended, is the test's to remove
    engine.docker("rm", "-f", first["ID"])


def test_paictls_master_drives_maros_node_and_a_docker_node(maro):
    maro.stop("maro-master")
    master = subprocess.Popen([sys.executable, "-m", "paictl", "grass", "master", "--cluster",
                               str(maro.cluster_path)], stdout=open(maro.root / "paictl-master.log", "ab"),
                              stderr=subprocess.STDOUT)
    maro.paictl_agents["master"] = master
    checks = 'test "$PAI_HOST_IP_b_0" = 127.0.0.1 && test "$PAI_TASK_ROLE_a_HOST_LIST" = 127.0.0.1,127.0.0.1'
    submit(maro, "under-paictl", role("a", checks, instances=2, all_complete=True),
           role("b", checks, all_complete=True))
    submit(maro, "fails-3", role("main", "sleep 1; exit 3"), role("other", "sleep 600"))
    good, bad = final(maro, "under-paictl"), final(maro, "fails-3")
    assert good.state is JobState.SUCCEEDED and {t.node for t in good.tasks} <= {"m1", "p1"}, good
    assert (bad.state, bad.completion_code, bad.triggered_by) == (JobState.FAILED, 3, ("main", 0)), bad
    # OpenPAI ends a failed job's other tasks: paictl's master stops the survivor
    maro.wait(lambda: all(t.state != "running" for t in maro.backend.describe("fails-3").tasks), "survivor stopped")
    assert maro.backend.describe("fails-3").state is JobState.FAILED
    assert record(maro, "under-paictl")["status"] == "finish"


def test_a_docker_node_agent_killed_and_restarted_loses_nothing(maro):
    """paictl's master (from the test above) and paictl's docker node p1: the node's agent dies with SIGKILL while
    its container runs; docker keeps the container, the restarted agent reports it, and the job succeeds."""
    assert "master" in maro.paictl_agents, "runs after paictl's master took over"
    submit(maro, "docker-survivor", role("main", "sleep 45; echo done", instances=2, all_complete=True))
    seen = []

    def p1_running():
        # the kill needs p1's container running; m1's may start later or be over already (MARO's agent publishes
        # every 5 s, slower on a loaded machine): the verdict below still needs both to exit 0
        seen[:] = [maro.backend.describe("docker-survivor")]
        return any(t.node == "p1" and t.state == "running" for t in seen[0].tasks)

    try:
        maro.wait(p1_running, "p1's container running", timeout=150)
    except AssertionError as exc:
        raise AssertionError(f"{seen}\n{exc}") from None
    agent = maro.paictl_agents["p1"]
    agent.kill()
    agent.wait(timeout=30)
    maro.paictl_agents["p1"] = maro.start_p1()
    done = final(maro, "docker-survivor")
    assert done.state is JobState.SUCCEEDED and [t.exit_code for t in done.tasks] == [0, 0], done
    assert _running(maro, "p1")


def big_role(name: str, cpu: int, instances: int) -> str:
    return (f"  {name}:\n    instances: {instances}\n    dockerImage: img\n"
            f"    resourcePerInstance: {{cpu: {cpu}, memoryMB: 256, gpu: 0}}\n    commands: [\"sleep 300\"]\n")


def test_a_job_no_node_could_ever_hold_is_refused_at_submit(maro):
    from paictl.errors import ClusterError

    with pytest.raises(ClusterError, match="can never run") as refused:
        submit(maro, "never-fits", big_role("main", 64, 1))
    assert "cpu short by 56 cores (capacity 8, needs 64)" in str(refused.value)
    assert maro.client().hget("name_to_job_details", "never-fits") is None
    assert "never-fits" not in maro.client().lrange("pending_job_tickets", 0, -1)


def test_a_container_the_engine_refuses_fails_the_job_under_maros_master(maro):
    """The cluster file gives each node 8 cores; the engines have what this machine has. Two containers of 5 cores
    go one to each node, and each engine refuses `--cpus 5`: MARO's node answers 400 and MARO's master ignores it;
    paictl's node p1 records docker's reason, so the job fails with it and nothing is left running."""
    cores = os.cpu_count() or 1
    if cores >= 5:
        pytest.skip(f"this machine has {cores} cores: an engine would run a 5-core container")
    submit(maro, "too-wide", big_role("main", 5, 2))
    view = final(maro, "too-wide", timeout=180)
    assert view.state is JobState.FAILED, view
    assert "could not be created on node p1" in view.message and "docker run" in view.message, view.message
    assert "cpu" in view.message.lower()
    refused = next(t for t in view.tasks if t.node in ("", None) or t.diagnosis)
    assert refused.diagnosis and "docker run" in refused.diagnosis
    job_id = record(maro, "too-wide")["id"]
    for engine in maro.engines:
        assert not engine.containers(f"label=job_id={job_id}", "status=running")
