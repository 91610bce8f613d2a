"""A sweep on this machine with the docker runtime (a real dockerd on a private socket: tests/docker_engine.py):
each trial's task runs in a container of its image, and its metric comes back through the run's logs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

from docker_engine import docker_engine, no_docker_engine  # noqa: F401 - fixtures

JOB = """\
protocolVersion: 2
name: dsweep
type: job
parameters:
  x: 1
prerequisites: [{name: img, type: dockerimage, uri: "paictl-test/sweep:1"}]
taskRoles:
  main:
    instances: 1
    dockerImage: img
    resourcePerInstance: {cpu: 1, memoryMB: 128, gpu: 0}
    commands: ["cat /opt/sweep/where && echo loss=<% $parameters.x %>"]
"""


@pytest.fixture
def engine(docker_engine, monkeypatch):
    docker_engine.image("paictl-test/sweep:1", {"/opt/sweep/where": "in the image\n"})
    monkeypatch.setenv("DOCKER_HOST", docker_engine.host)
    yield docker_engine
    assert docker_engine.containers("label=paictl.run") == []


def test_a_sweep_runs_each_trial_in_a_container(engine, tmp_path: Path, state_home):
    job = tmp_path / "dsweep.yaml"
    job.write_text(JOB)
    done = subprocess.run([sys.executable, "-m", "paictl", "sweep", str(job), "--space", "x=5,2,7", "--target",
                           "local", "--runtime", "docker", "--parallel", "2", "--metric", "loss", "--goal", "min",
                           "-o", "json"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    final = json.loads(done.stdout.splitlines()[-1])
    assert final["best"] == 1
    assert sorted((t["trial"], t["state"], t["metric"]) for t in final["trials"]) == [
        (0, "succeeded", 5.0), (1, "succeeded", 2.0), (2, "succeeded", 7.0)]
    logs = subprocess.run([sys.executable, "-m", "paictl", "logs", "--sweep", final["sweep"], "--trial", "2"],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert "in the image" in logs.stdout and "loss=7" in logs.stdout
