"""A master pass against a real redis-server, with a submission or a stop landing in the middle of the pass.

A pass reads every job first and the tickets later (master.py); a job submitted in between once lost its pending
ticket and stayed pending forever (CI saw it under load: `waiting for the master to place it` for 150 s). These
tests put the write exactly in that window, so they do not depend on timing.
"""

from __future__ import annotations

import json

import pytest

from grass_cluster_harness import GrassCluster, needs_redis
from paictl.targets.compiled import compile_job
from paictl.targets.grass.cluster import load_cluster
from paictl.targets.grass.master import MasterAgent
from paictl.targets.grass.redis_records import JOBS, KILLED, NODES, PENDING, standardise
from paictl.targets.grass.target import compile_grass

pytestmark = needs_redis

JOB = """\
protocolVersion: 2
name: {name}
type: job
prerequisites: [{{name: img, type: dockerimage, uri: busybox}}]
taskRoles:
  main: {{instances: 1, dockerImage: img, resourcePerInstance: {{cpu: 1, memoryMB: 256, gpu: 0}}, commands: [exit 0]}}
"""


@pytest.fixture
def master(tmp_path):
    cluster = GrassCluster(tmp_path)
    cluster.start_redis()  # no node agents: every placement misfits, so a ticket that is kept stays queued
    try:
        yield MasterAgent(load_cluster(str(cluster.cluster_file)), client=cluster.client())
    finally:
        cluster.close()


def job_record(master: MasterAgent, name: str, seed: str = "1") -> dict:
    compiled = compile_job(JOB.format(name=name).encode(), target="grass", name=f"{name}.yaml")
    (job_file,) = compile_grass(compiled.job, compiled.profile, redis=master.cluster.redis_address)
    return standardise(job_file, seed=seed)


def after_the_pass_read_every_job(master: MasterAgent, write) -> None:
    """Runs `write` right after the pass's one read of every job."""
    read_all = master.records.jobs

    def then_write():
        snapshot = read_all()
        write()
        return snapshot

    master.records.jobs = then_write


def test_a_job_submitted_while_a_pass_runs_keeps_its_ticket(master):
    record = job_record(master, "late")
    after_the_pass_read_every_job(master, lambda: master.records.submit(record))
    master.run_pass()
    redis = master.records.redis
    assert redis.lrange(PENDING, 0, -1) == ["late"]
    assert json.loads(redis.hget(JOBS, "late"))["message"].startswith("pending: ")  # the master tried to place it


def test_a_job_submitted_again_while_a_pass_runs_keeps_its_ticket(master):
    old = {**job_record(master, "again", seed="1"), "status": "finish"}
    master.records.redis.hset(JOBS, "again", json.dumps(old))
    new = job_record(master, "again", seed="2")
    assert new["id"] != old["id"]
    after_the_pass_read_every_job(master, lambda: master.records.submit(new))
    master.run_pass()
    assert master.records.redis.lrange(PENDING, 0, -1) == ["again"]
    assert json.loads(master.records.redis.hget(JOBS, "again"))["id"] == new["id"]


def test_a_job_submitted_and_stopped_while_a_pass_runs_is_killed(master):
    record = job_record(master, "brief")

    def submit_then_stop():
        master.records.submit(record)
        master.records.kill(record)

    after_the_pass_read_every_job(master, submit_then_stop)
    master.run_pass()
    redis = master.records.redis
    assert json.loads(redis.hget(JOBS, "brief"))["status"] == "killed"
    assert redis.lrange(PENDING, 0, -1) == [] and redis.lrange(KILLED, 0, -1) == []


def test_a_ticket_without_a_job_is_dropped(master):
    master.records.redis.rpush(PENDING, "ghost")
    master.run_pass()
    assert master.records.redis.lrange(PENDING, 0, -1) == []


def failed_once(master: MasterAgent, name: str) -> tuple[dict, str]:
    """A running job whose one container exited 3 on a Running node, its Proxy having enabled rejoin."""
    from paictl.targets.grass.redis_records import container_name

    record = {**job_record(master, name), "status": "running"}
    container = container_name(record, "main", 0)
    labels = {"job_id": record["id"], "job_name": name, "component_id": record["components"]["main"]["id"],
              "component_type": "main", "component_index": "0", "container_name": container, "cpu": 1,
              "memory": "256m"}
    node = {"id": "n1", "name": "n1", "hostname": "127.0.0.1", "api_server": {"port": 1},
            "resources": {"cpu": 2, "memory": 4096, "gpu": 0, "target_free_cpu": 2, "target_free_memory": 4096,
                          "target_free_gpu": 0},
            "state": {"status": "Running", "check_time": master.records.time()},
            "containers": {container: {**labels, "state": {"Status": "exited", "Running": False, "ExitCode": 3,
                                                           "StartedAt": "2026-01-01T00:00:00Z",
                                                           "FinishedAt": "2026-01-01T00:00:01Z"}}}}
    redis = master.records.redis
    redis.hset(NODES, "n1", json.dumps(node))
    redis.hset(JOBS, name, json.dumps(record))
    redis.hset(f"job:{record['id']}:runtime_details", mapping={"rejoin:enable": "1", "rejoin:max_restart_times": "5",
                                                              "is_remove_failed_container": "0"})
    return record, container


@pytest.mark.parametrize("registered", [False, True])
def test_only_a_container_its_proxy_registered_is_restarted(master, monkeypatch, registered):
    # MARO's ContainerRuntimeAgent restarts an exited container only if it is a value of
    # job:<id>:rejoin_component_name_to_container_name, and gives the restart COMPONENT_NAME (env and label).
    from paictl.targets.grass import node_api

    record, container = failed_once(master, "flaky")
    if registered:
        master.records.redis.hset(f"job:{record['id']}:rejoin_component_name_to_container_name", "main_proxy",
                                  container)
    configs = []
    def create(node, config, token=None):  # the node runs it and reports it, as its agent would
        configs.append(config)
        state = {"Status": "running", "Running": True, "StartedAt": "2026-01-01T00:00:02Z"}
        record = json.loads(master.records.redis.hget(NODES, "n1"))
        record["containers"][config["container_name"]] = {**config["labels"], "state": state}
        master.records.redis.hset(NODES, "n1", json.dumps(record))
        return {"State": state}

    monkeypatch.setattr(node_api, "create", create)
    master.run_pass()
    job = json.loads(master.records.redis.hget(JOBS, "flaky"))
    restarts = master.records.redis.hget(f"job:{record['id']}:component_id_to_restart_times",
                                         record["components"]["main"]["id"])
    if not registered:
        assert configs == [] and restarts is None and job["status"] == "failed"
        return
    (config,) = configs
    assert config["environments"]["COMPONENT_NAME"] == config["labels"]["component_name"] == "main_proxy"
    assert config["container_name"] != container and config["container_name"].startswith(f"{record['id']}-")
    assert restarts == "1" and job["status"] == "running", job.get("message")
    assert isinstance(job["check_time"], int)  # MARO's JobTrackingAgent: Redis TIME in whole seconds
