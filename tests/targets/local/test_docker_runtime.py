"""targets/docker_runtime.py against a real engine: the calls the local runtime and a Grass node make."""

from __future__ import annotations

import subprocess

import pytest

from docker_engine import docker_engine, docker_registry  # noqa: F401 - the fixtures

from paictl.targets.docker_runtime import ContainerSpec, Engine, EngineError, engine_address, run_argv, \
    split_reference


def test_addresses_as_the_docker_cli_reads_them(tmp_path):
    assert engine_address({}).socket_path == "/var/run/docker.sock"
    assert engine_address({"DOCKER_HOST": "unix:///tmp/x.sock"}).socket_path == "/tmp/x.sock"
    tcp = engine_address({"DOCKER_HOST": "tcp://10.0.0.5:2375"})
    assert (tcp.host, tcp.port, tcp.tls) == ("10.0.0.5", 2375, None)
    tls = engine_address({"DOCKER_HOST": "tcp://h", "DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": "/c"})
    assert (tls.port, tls.tls) == (2376, ("/c/ca.pem", "/c/cert.pem", "/c/key.pem"))
    with pytest.raises(EngineError, match="unix:// or tcp://"):
        engine_address({"DOCKER_HOST": "ssh://me@host"})
    assert Engine(engine_address({"DOCKER_HOST": f"unix://{tmp_path}/none.sock"})).ping() is False


def test_references():
    assert split_reference("python") == ("python", "latest")
    assert split_reference("127.0.0.1:5000/a/b:1") == ("127.0.0.1:5000/a/b", "1")
    assert split_reference("127.0.0.1:5000/a/b") == ("127.0.0.1:5000/a/b", "latest")
    assert split_reference("a@sha256:00") == ("a", "sha256:00")


def test_a_detached_container_as_a_grass_node_runs_it(docker_engine, tmp_path):
    engine = Engine(engine_address({"DOCKER_HOST": docker_engine.host}))
    assert engine.ping() and engine.info()["NCPU"] >= 1
    assert engine.image(docker_engine.base_image())["Id"].startswith("sha256:")
    assert engine.image("paictl-test/never-made:1") is None
    argv = run_argv(ContainerSpec(image=docker_engine.base_image(), name="grass-like", detach=True, remove=False,
                                  init=False, command=["bash", "-c", "echo out; echo err >&2; exec sleep 600"],
                                  cpus=0.5, memory_mb=32, labels={"container_name": "grass-like", "job_id": "j1"},
                                  env={"A": "1"}, mounts=[(str(tmp_path), "/data", False)], log_driver="json-file"))
    subprocess.run(argv, check=True, capture_output=True, env=docker_engine.env(), timeout=120)
    try:
        # the engine is the session's: other tests' containers may carry the label too, so this one is asked by value
        (listed,) = engine.containers({"container_name": "grass-like"})
        assert listed["Labels"]["job_id"] == "j1" and engine.containers({"job_id": "j2"}) == []
        assert any(c["Labels"].get("container_name") == "grass-like" for c in engine.containers({"container_name": None}))
        details = engine.inspect("grass-like")
        assert details["State"]["Running"] and details["HostConfig"]["NanoCpus"] == 5 * 10 ** 8
        assert "A=1" in details["Config"]["Env"]
        engine.stop("grass-like", grace=1)
        assert engine.inspect("grass-like")["State"]["ExitCode"] == 137  # sleep ignores nothing: killed after 1 s
        assert sorted(engine.logs("grass-like").splitlines()) == [b"err", b"out"]
    finally:
        assert engine.remove("grass-like") is True
    assert engine.remove("grass-like") is False and engine.inspect("grass-like") is None


def test_a_path_with_a_comma_or_a_quote_is_one_mount(docker_engine, tmp_path):
    """`--mount` is a CSV record: a comma in a path must not end the field (and so add a mount option)."""
    host = tmp_path / 'in,put "x"'
    host.mkdir()
    (host / "seen").write_text("mounted\n")
    argv = run_argv(ContainerSpec(image=docker_engine.base_image(), name="comma-mount",
                                  command=["cat", "/in,readonly/seen"], mounts=[(str(host), "/in,readonly", False)]))
    done = subprocess.run(argv, capture_output=True, env=docker_engine.env(), timeout=120)
    assert (done.returncode, done.stdout) == (0, b"mounted\n"), done.stderr


def test_a_pull_from_nowhere_says_why(docker_engine):
    engine = Engine(engine_address({"DOCKER_HOST": docker_engine.host}))
    with pytest.raises(EngineError) as raised:
        engine.pull("127.0.0.1:9/nothing/here:1")
    assert "127.0.0.1:9" in str(raised.value)


def test_a_pull_reports_its_progress(docker_engine, docker_registry):
    from paictl.targets.local.images import PullProgress

    import os

    # a layer of its own (the base image's layer is on the engine already: a pull would skip it silently)
    local = docker_engine.image("paictl-test/progress-source:1", {"/opt/random.bin": os.urandom(3 * 2 ** 20)})
    remote = docker_registry.push(docker_engine, local, "paictl-test/progress:1")
    docker_engine.docker("rmi", local)
    docker_engine._images.pop(local)
    engine = Engine(engine_address({"DOCKER_HOST": docker_engine.host}))
    assert engine.image(remote) is None
    shown: list[tuple[str, bool]] = []
    progress = PullProgress(remote, lambda line, transient: shown.append((line, transient)))
    records: list[dict] = []
    engine.pull(remote, lambda record: (records.append(record), progress(record)))
    assert engine.image(remote) is not None
    statuses = {record.get("status", "") for record in records}
    assert "Pull complete" in statuses and any(s.startswith("Status: Downloaded newer image") for s in statuses)
    assert shown and all(transient for _, transient in shown)
    assert shown[-1][0].startswith(f"pulling {remote}: ") and "2 layer(s) done" in shown[-1][0]  # one existed
    assert progress.summary().endswith(" MB)")
