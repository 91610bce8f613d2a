"""The test harness's docker engine (tests/docker_engine.py) does what the docker tests rely on: a private engine
that runs the images it makes, and leaves nothing behind when stopped."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from docker_engine import DockerEngine, _missing, docker_engine  # noqa: F401 - the fixture


def test_the_engine_runs_its_images_on_the_host_network(docker_engine):
    image = docker_engine.image("paictl-test/harness:1", {"/opt/only/here.txt": "in the image\n"},
                                workdir="/srv/work")
    done = docker_engine.docker("run", "--rm", "--network", "host", image, "bash", "-c",
                                "cat /opt/only/here.txt; pwd; python3 -c 'import json; print(json.dumps([1]))'; "
                                "cat /proc/1/net/dev | grep -c :")
    lines = done.stdout.splitlines()
    assert lines[:3] == ["in the image", "/srv/work", "[1]"]
    host_interfaces = sum(1 for line in Path("/proc/net/dev").read_text().splitlines() if ":" in line)
    assert int(lines[3]) == host_interfaces  # the host's interfaces: no network namespace of its own
    assert not Path("/opt/only/here.txt").exists()


MARK = f"600.{os.getpid()}"


def test_a_stopped_engine_leaves_no_container_process_mount_or_folder():
    if _missing() is not None:
        import pytest

        pytest.skip(_missing())
    engine = DockerEngine(Path(tempfile.mkdtemp(prefix="pdk-", dir="/tmp")))
    engine.start()
    try:
        engine.base_image()
        # a duration no other test uses: another test's `sleep 600` (a task, a MARO container) is not this one's
        engine.docker("run", "-d", "--name", "sleeper", "paictl-test/base:1", "sleep", MARK)
        assert [c["Names"] for c in engine.containers()] == ["sleeper"]
        assert engine.leftovers()["processes"]  # dockerd and containerd at least
    finally:
        engine.stop()
    assert not engine.root.exists()
    assert engine._own_processes() == []
    assert engine._own_mounts() == []
    # the sleeper's own process is gone too (it ran in a shim under the engine's folder)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                assert f"sleep\x00{MARK}".encode() not in Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                pass
