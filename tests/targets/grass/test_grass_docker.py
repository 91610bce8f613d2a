"""A Grass node's docker runtime (targets/grass/containers.py `DockerRuntime`) on a real engine (tests/docker_engine):
MARO's create config in, containers reported as MARO's node agent reports them, failures as `RuntimeFailure` (the
node API's 400/404). MARO's own services drive it end to end in test_grass_maro.py."""

from __future__ import annotations

import time

import pytest

from docker_engine import docker_engine  # noqa: F401 - the session's engine

from paictl.targets.grass.containers import DockerRuntime
from paictl.targets.grass.create_config import RuntimeFailure, checked_config


def config(name: str, command: str, *, job: str = "j1", node: str = "node-a") -> dict:
    """A create config as MARO's master sends it (maro.md A.8)."""
    return {"container_name": name, "image_name": IMAGE[0], "command": command, "cpu": 0.5, "memory": "64m",
            "volumes": ["/mnt/shared:/data, with a comma"], "environments": {"PAI_TASK_INDEX": 0, "GREETING": "hi"},
            "labels": {"container_name": name, "job_id": job, "node_name": node}}


IMAGE = [""]


@pytest.fixture
def runtime(docker_engine, tmp_path, monkeypatch):  # noqa: F811 - the fixture imported above
    monkeypatch.setenv("DOCKER_HOST", docker_engine.host)
    IMAGE[0] = docker_engine.base_image()
    made: list[str] = []
    runtime = DockerRuntime(tmp_path / "data", grace=1, node="node-a")
    yield runtime, made
    for name in made:
        docker_engine.docker("rm", "-f", name, check=False)


def test_a_container_runs_as_maro_would_and_is_reported_as_its_agent_does(runtime, docker_engine):  # noqa: F811
    runtime, made = runtime
    assert DockerRuntime.available()
    made.append("grass-a")
    (runtime.data_dir).mkdir(parents=True, exist_ok=True)
    (runtime.data_dir / "input").write_text("shared\n")
    created = runtime.create(checked_config(config(
        "grass-a", "bash -c 'cat \"/data, with a comma/input\"; echo $GREETING $PAI_TASK_INDEX; echo err >&2; "
                   "exec sleep 600'")))
    assert created["Name"] == "grass-a" and created["Config"]["Labels"]["job_id"] == "j1"
    assert created["State"]["Status"] in ("running", "exited") and "ExitCode" in created["State"]
    assert "grass-a" in runtime.names()
    assert [c["Name"] for c in runtime.inspect_all()] == ["grass-a"]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and b"err" not in runtime.logs("grass-a"):
        time.sleep(0.1)
    assert sorted(runtime.logs("grass-a").splitlines()) == [b"err", b"hi 0", b"shared"]
    details = docker_engine.docker("inspect", "--format", "{{.HostConfig.NanoCpus}} {{.HostConfig.Memory}} "
                                   "{{.HostConfig.NetworkMode}} {{.HostConfig.LogConfig.Type}}", "grass-a").stdout
    assert details.split() == [str(5 * 10 ** 8), str(64 * 2 ** 20), "host", "json-file"]
    runtime.stop("grass-a")
    stopped = runtime.inspect("grass-a")["State"]
    assert not stopped["Running"] and stopped["ExitCode"] == 137  # sleep is killed after the 1 s grace
    runtime.remove("grass-a")
    assert "grass-a" not in runtime.names()


def test_only_this_nodes_containers_are_its_own(runtime):
    runtime, made = runtime
    made.append("grass-other")
    runtime.create(checked_config(config("grass-other", "true", node="node-b")))
    assert "grass-other" not in runtime.names() and runtime.inspect_all() == []


@pytest.mark.parametrize("call", ["inspect", "stop", "logs"])
def test_a_container_that_is_not_there_is_a_runtime_failure(runtime, call):
    """The node API answers 400 (404 for logs) with the reason, as for a host-process container."""
    runtime, _ = runtime
    with pytest.raises(RuntimeFailure) as raised:
        getattr(runtime, call)("grass-never-made")
    assert "grass-never-made" in str(raised.value) or "No such container" in str(raised.value), raised.value


def test_removing_a_container_that_is_not_there_is_done(runtime):
    """As `docker rm -f`: the container is gone either way."""
    runtime, _ = runtime
    runtime.remove("grass-never-made")


def test_an_image_that_cannot_be_had_is_a_runtime_failure(runtime):
    runtime, made = runtime
    made.append("grass-no-image")
    with pytest.raises(RuntimeFailure) as raised:
        runtime.create(checked_config({**config("grass-no-image", "true"), "image_name": "127.0.0.1:9/none:1"}))
    assert str(raised.value).startswith("docker run: ")
