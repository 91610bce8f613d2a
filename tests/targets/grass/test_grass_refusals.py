"""A node that cannot create a container records why, where every `status` reads it, and the job fails with that
reason while its other containers are stopped. MARO's master drops the node's 400 and would leave such a job
`running` forever with the task pending (issue 40); the record is the node's, so it holds under either master.

Here on a real cluster on loopback (redis-server, `paictl grass master`, two `paictl grass node`s): a job runs, and
the node that holds it is asked to create one of its containers again, which it refuses ("already exists"), as a
docker engine refuses a container asking for more cores than it has."""

from __future__ import annotations

import json

import pytest

from grass_cluster_harness import TOKEN, needs_redis, running_cluster, wait_for
from paictl.targets.compiled import compile_job
from paictl.targets.grass import node_api
from paictl.targets.states import JobState

pytestmark = needs_redis

JOB = """\
protocolVersion: 2
name: refused
type: job
prerequisites: [{name: img, type: dockerimage, uri: "busybox"}]
taskRoles:
  main:
    instances: 2
    dockerImage: img
    resourcePerInstance: {cpu: 1, memoryMB: 256, gpu: 0}
    commands: ["sleep 300"]
"""


@pytest.fixture
def grass(tmp_path):
    with running_cluster(tmp_path) as cluster:
        yield cluster


def test_a_container_a_node_refuses_fails_the_job_with_the_reason_and_stops_the_others(grass):
    grass.backend.submit(compile_job(JOB.encode(), target="grass", name="refused.yaml"))
    view = wait_for(lambda: (lambda v: v if sum(t.state == "running" for t in v.tasks) == 2 else None)(
        grass.backend.describe("refused")), what="two running containers", explain=grass.logs)
    assert view.state is JobState.RUNNING
    client = grass.client()
    job = json.loads(client.hget("name_to_job_details", "refused"))
    nodes = {name: json.loads(text) for name, text in client.hgetall("name_to_node_details").items()}
    node, container, labels = next((node, name, details) for node in nodes.values()
                                   for name, details in node["containers"].items()
                                   if details.get("job_id") == job["id"] and details.get("component_index") == "1")
    config = {"container_name": container, "image_name": "busybox", "command": "sleep 300",
              "labels": {k: v for k, v in labels.items() if k != "state"}}
    with pytest.raises(node_api.NodeApiError, match="already exists"):
        node_api.create(node, config, token=TOKEN)

    refusals = client.hgetall(f"paictl:job:{job['id']}:refusals")
    assert list(refusals) == [container]
    assert json.loads(refusals[container])["reason"].endswith(f"container {container} already exists")
    final = wait_for(lambda: (lambda v: v if v.state is JobState.FAILED and not any(
        t.state == "running" for t in v.tasks) else None)(grass.backend.describe("refused")),
        what="the job failed and its containers stopped", explain=grass.logs)
    assert final.triggered_by == ("main", 1)
    assert f"main-1 (container {container}) could not be created on node {node['name']}" in final.message
    assert "already exists" in final.message
    assert next(t for t in final.tasks if t.index == 1).diagnosis.endswith("already exists")


def test_the_node_warns_when_the_cluster_file_gives_it_more_than_its_engine_has(tmp_path):
    from paictl.targets.grass.cluster import load_cluster
    from paictl.targets.grass.node import NodeAgent

    cluster_file = tmp_path / "cluster.yaml"
    cluster_file.write_text("name: t\nmaster: {hostname: 127.0.0.1, redis: {port: 1}}\nnodes:\n"
                            "  - {name: n1, hostname: 127.0.0.1, resources: {cpu: 64, memory: 1048576, gpu: 0}}\n")

    class Engine:
        kind = "docker"

        @staticmethod
        def engine_info():
            return {"NCPU": 2, "MemTotal": 8 * 1024 ** 3}

    agent = NodeAgent(load_cluster([str(cluster_file)]), "n1", work_dir=tmp_path, runtime=Engine(), client=object())
    warning = agent.engine_shortfall()
    assert warning == ("node n1: the cluster file gives it cpu 64 but the engine has 2 cores; memory 1048576 MB but "
                       "the engine has 8192 MB: a container asking for more than the engine has will be refused (its "
                       "job then fails)")
    Engine.engine_info = staticmethod(lambda: {"NCPU": 64, "MemTotal": 2 * 1024 ** 4})
    assert agent.engine_shortfall() is None


def test_the_list_shows_each_jobs_age_from_its_submission(grass):
    import datetime

    grass.backend.submit(compile_job(JOB.replace("name: refused", "name: aged").encode(), target="grass",
                                     name="aged.yaml"))
    (view,) = [v for v in grass.backend.list() if v.name == "aged"]
    created = datetime.datetime.strptime(view.created, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
    assert abs((datetime.datetime.now(datetime.timezone.utc) - created).total_seconds()) < 120
    assert grass.backend.describe("aged").created is None  # a followed job's records stay as they were
    grass.backend.stop("aged")
