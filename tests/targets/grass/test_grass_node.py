"""A node agent driven the way a stock MARO master drives one: MARO's create config over HTTP, no token.

The agent runs in this process against a real redis-server; the containers are real host processes.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request

import pytest

from grass_cluster_harness import GrassCluster, needs_redis, wait_for
from paictl.targets.grass.cluster import load_cluster
from paictl.targets.grass.node import NodeAgent

pytestmark = needs_redis


@pytest.fixture
def node(tmp_path):
    harness = GrassCluster(tmp_path, token=False, cpu=4, memory=8192)
    harness.start_redis()
    agent = NodeAgent(load_cluster(str(harness.cluster_file)), "n1", work_dir=tmp_path / "n1", interval=0.2)
    agent.start()
    agent.harness = harness
    try:
        yield agent
    finally:
        agent.close()
        harness.close()


def maro_create_config(name: str, command: str) -> dict:
    """What MARO's PendingJobAgent sends (maro.md A.8): note PYTHONUNBUFFERED is a number, and no gpu key at 0."""
    labels = {"cluster_id": "maro1234abcd", "cluster_name": "test", "node_id": "n1", "node_name": "n1",
              "job_id": "job0000aaaa", "job_name": "demo", "component_id": "component0000bbbb",
              "component_type": "actor", "component_index": "0", "container_name": name, "cpu": 2,
              "memory": "3072m"}
    return {"cpu": 2, "memory": "3072m", "command": command, "image_name": "maro_runtime_cpu",
            "volumes": ["~/.maro-shared/clusters/test/data/:/mnt/maro"], "container_name": name,
            "fluentd_address": "127.0.0.1:24224", "fluentd_tag": f"maro.job_id.job0000aaaa.container_name.{name}",
            "environments": {"JOB_NAME": "demo", "COMPONENT_INDEX": "0", "PYTHONUNBUFFERED": 0},
            "labels": labels}


def call(agent, method: str, path: str, body=None) -> tuple[int, bytes]:
    host, port = agent.address
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"http://{host}:{port}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def record(agent) -> dict:
    return json.loads(agent.harness.client().hget("name_to_node_details", "n1"))


def test_the_api_listens_on_the_node_address_only(node):
    assert node.address[0] == "127.0.0.1"


def test_a_maro_create_config_runs_and_is_recorded_like_maros_agent_records_it(node):
    name = "job0000aaaa-component0000bbbb-0-abcdef"
    status, body = call(node, "POST", "/v1/containers", maro_create_config(name, "echo hi $JOB_NAME; sleep 300"))
    assert status == 200 and json.loads(body)["State"]["Status"] == "running"
    details = record(node)
    assert (details["name"], details["hostname"], details["api_server"], details["state"]["status"]) == (
        "n1", "127.0.0.1", {"port": node.node.api_port}, "Running")
    assert details["resources"]["cpu"] == 4 and details["resources"]["target_free_cpu"] == 2
    # the JSON is MARO's agent's: declared amounts as declared, check_time whole seconds (Redis TIME's first part)
    text = node.harness.client().hget("name_to_node_details", "n1")
    assert '"cpu": 4,' in text and '"memory": 8192,' in text and isinstance(details["state"]["check_time"], int)
    assert details["resources"]["target_free_memory"] == 8192 - 3072
    container = details["containers"][name]
    assert container["job_id"] == "job0000aaaa" and container["state"]["Running"] is True
    # its shell has run the echo (a loaded machine may not have got that far yet) before it is stopped
    wait_for(lambda: call(node, "GET", f"/v1/containers/{name}/logs")[1], what="the container's first line")
    status, _ = call(node, "POST", f"/v1/containers/{name}:stop")
    assert status == 200
    details = record(node)
    assert details["containers"][name]["state"]["Status"] == "exited"
    assert details["containers"][name]["state"]["ExitCode"] in (143, 137)
    assert details["resources"]["target_free_cpu"] == 4  # an exited container holds nothing
    status, text = call(node, "GET", f"/v1/containers/{name}/logs")
    assert (status, text) == (200, b"hi demo\n")
    status, _ = call(node, "DELETE", f"/v1/containers/{name}")
    assert status == 200 and name not in record(node)["containers"]


def test_failures_answer_400_as_maros_api_does(node):
    assert call(node, "POST", "/v1/containers/no-such:stop")[0] == 400
    assert call(node, "DELETE", "/v1/containers/no-such")[0] == 400
    assert call(node, "POST", "/v1/containers", {"container_name": "../evil"})[0] == 400
    assert call(node, "GET", "/v1/nothing")[0] == 404
    status, body = call(node, "GET", "/v1/status")
    assert status == 200 and json.loads(body)["status"] == "OK"


def test_a_redis_outage_is_survived(node):
    harness = node.harness
    harness.stop_redis()
    assert node.publish() is False
    harness.start_redis()
    wait_for(lambda: node.publish(), what="publishing again")
    assert record(node)["state"]["status"] == "Running"


def _raw(agent, payload: bytes, *, wait: float = 15.0) -> bytes:
    """Send raw bytes to the API; what comes back before the server closes or `wait` passes."""
    import socket

    with socket.create_connection(agent.address, timeout=wait) as conn:
        conn.sendall(payload)
        chunks = []
        try:
            while True:
                data = conn.recv(65536)
                if not data:
                    break
                chunks.append(data)
        except socket.timeout:
            pass
    return b"".join(chunks)


def escaped(root, prefix: str) -> list[str]:
    """Files named `prefix...` anywhere below `root`, which other test sessions share: a folder their clean-up
    removes while this walks is passed over (os.walk's errors are ignored), not an error of this test."""
    return [os.path.join(folder, name) for folder, dirs, files in os.walk(root)
            for name in dirs + files if name.startswith(prefix)]


@pytest.mark.parametrize("change, status", [
    ({"labels": "not a map"}, 400),
    ({"environments": ["A=1"]}, 400),
    ({"environments": {"A": {"nested": 1}}}, 400),
    ({"container_name": "x" * 10_000}, 400),
    ({"labels": {"job_id": "../../../escaped-by-job-id-27"}}, 400),
    ({"cpu": "lots"}, 400),
])
def test_every_malformed_create_config_gets_an_http_answer(node, change, status, tmp_path):
    name = "job0000aaaa-component0000bbbb-0-badbad"
    config = maro_create_config(name, "true")
    for key, value in change.items():
        if key == "labels" and isinstance(value, dict):
            config["labels"] = {**config["labels"], **value}
        else:
            config[key] = value
    code, body = call(node, "POST", "/v1/containers", config)
    assert code == status and "create config" in json.loads(body)["error"]
    assert record(node)["containers"] == {}
    assert not escaped(tmp_path.parent.parent, "escaped-by-job-id-27")


def test_deep_big_and_slow_requests_are_answered_and_bounded(node):
    from paictl.targets.grass import node as node_module

    deep = b"[" * 100_000 + b"]" * 100_000
    head = b"POST /v1/containers HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    answer = _raw(node, head + b"Content-Length: %d\r\n\r\n" % len(deep) + deep)
    assert answer.startswith(b"HTTP/1.1 400") and b"nests deeper" in answer
    answer = _raw(node, head + b"Content-Length: 99999999\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 413")
    answer = _raw(node, head + b"Content-Length: 50\r\n\r\n{\"short\":", wait=30)  # then silence
    assert answer.startswith(b"HTTP/1.1 408") and b"did not arrive" in answer
    # idle connections are closed after the idle timeout, so they cannot hold the server's threads
    import socket
    import time

    started = time.monotonic()
    with socket.create_connection(node.address, timeout=node_module.IDLE_SECONDS * 3) as idle:
        assert idle.recv(100) == b""
    assert time.monotonic() - started < node_module.IDLE_SECONDS * 2


def test_a_cluster_file_diagnostic_never_shows_the_password_or_the_token(tmp_path, run_cli):
    cluster = tmp_path / "bad.yaml"
    cluster.write_text("name: c\ntoken: s3cr3t-token-value\nmaster: {hostname: 10.0.0.4, redis: {port: 6379, "
                       "password: hunter2-pass, tls: maybe}}\nnodes: []\n")
    job = tmp_path / "job.yaml"
    job.write_text("protocolVersion: 2\nname: j\ntype: job\nprerequisites: [{name: i, type: dockerimage, uri: x}]\n"
                   "taskRoles:\n  main: {dockerImage: i, resourcePerInstance: {cpu: 1, memoryMB: 1, gpu: 0}, "
                   "commands: [x]}\n")
    code, out, err = run_cli("compile", str(job), "--target", "grass", "--cluster", str(cluster))
    assert code == 2 and "tls" in err
    assert "hunter2" not in out + err and "s3cr3t" not in out + err


def test_all_is_measured_as_maros_agent_measures_it():
    # MARO's _init_resources: psutil.cpu_count() (an int), total memory / 1024**2 (unrounded MB), a GPU count.
    from paictl.targets.grass.cluster import Node
    from paictl.targets.grass.node import detect_resources

    found = detect_resources(Node(name="n", hostname="h", cpu="all", memory="all", gpu=0))
    assert found["cpu"] == os.cpu_count() and isinstance(found["cpu"], int)
    assert found["memory"] == os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1024 ** 2
    assert json.dumps(detect_resources(Node(name="n", hostname="h", cpu=2, memory=3072, gpu=1))) == (
        '{"cpu": 2, "memory": 3072, "gpu": 1}')
