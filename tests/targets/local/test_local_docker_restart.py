"""A docker engine stopped and restarted in the middle of a local run (issue 38): the engine stops the run's
containers (they end with 143) and keeps them; paictl cannot remove them while it is down, records them in the
run folder, and the next command that touches the run removes them, `status` saying what it removed.

The engine is the test's own (tests/docker_engine.py `private_docker_engine`): it is stopped as `systemctl stop
docker` stops it (SIGTERM), with its data kept, and started again.
"""

from __future__ import annotations

import time

from docker_engine import no_docker_engine, private_docker_engine  # noqa: F401 - fixtures
from test_local_run import job_file, paictl, state, wait_for, wait_running


def halted_mid_run(engine, tmp_path, monkeypatch, name: str) -> None:
    """A one-task run in the engine, then the engine stopped under it, and the run ended."""
    engine.docker("tag", engine.base_image(), "ubuntu:22.04")
    monkeypatch.setenv("DOCKER_HOST", engine.host)
    job = job_file(tmp_path, name, ["echo up", "sleep 600"], instances=1)
    paictl("submit", str(job), "--target", "local", "--runtime", "docker", cwd=tmp_path, check_code=0)
    wait_running(tmp_path, name, 1)
    wait_for(lambda: engine.containers(f"label=paictl.job={name}", "status=running"), "the task's container")
    engine.halt()  # mid-run: the task's container is stopped (143) and kept
    wait_for(lambda: state(tmp_path, name)["view"]["state"] in ("failed", "stopped"), "the run to end",
             timeout=120)


def test_containers_an_engine_kept_across_a_restart_are_removed_and_reported(private_docker_engine, tmp_path,
                                                                               monkeypatch):
    engine = private_docker_engine
    halted_mid_run(engine, tmp_path, monkeypatch, "restarted")
    engine.start()
    kept = engine.containers("label=paictl.job=restarted")
    assert kept and all("Exited (143)" in c["Status"] for c in kept), kept  # what the engine brings back

    status = paictl("status", "restarted", cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    assert "removed 1 container the docker engine kept after it stopped mid-run" in status.stdout, status.stdout
    assert engine.containers("label=paictl.job=restarted") == []
    again = paictl("status", "restarted", cwd=tmp_path)  # said again, removed once
    assert "removed 1 container" in again.stdout


def test_while_the_engine_is_still_down_status_says_so(private_docker_engine, tmp_path, monkeypatch):
    engine = private_docker_engine
    halted_mid_run(engine, tmp_path, monkeypatch, "down")
    status = paictl("status", "down", cwd=tmp_path)
    assert "does not" in status.stdout and "removed once it answers" in status.stdout, status.stdout
    engine.start()
    logs = paictl("logs", "down", cwd=tmp_path)  # any command that touches the run removes them
    assert logs.returncode == 0, logs.stderr
    deadline = time.monotonic() + 30
    while engine.containers("label=paictl.job=down") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert engine.containers("label=paictl.job=down") == []
