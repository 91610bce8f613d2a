"""A sweep on a real Grass cluster on loopback (redis-server, `paictl grass master` and two `paictl grass node`
processes: tests/targets/grass/grass_cluster_harness.py): every trial runs as a Grass job of its own and its
metric comes back through the nodes' logs."""

from __future__ import annotations

import json
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tests" / "targets" / "grass"))
from grass_cluster_harness import needs_redis, running_cluster  # noqa: E402

pytestmark = needs_redis

JOB = """\
protocolVersion: 2
name: gsweep
type: job
parameters:
  x: 1
prerequisites: [{name: img, type: dockerimage, uri: "busybox"}]
taskRoles:
  main:
    instances: 1
    dockerImage: img
    resourcePerInstance: {cpu: 1, memoryMB: 512, gpu: 0}
    commands: ["echo loss=<% $parameters.x %>"]
"""


@pytest.fixture
def grass(tmp_path):
    with running_cluster(tmp_path) as cluster:
        yield cluster


def test_a_sweep_runs_each_trial_as_a_grass_job(grass, run_cli, tmp_path):
    job = tmp_path / "gsweep.yaml"
    job.write_text(JOB)
    code, out, err = run_cli("sweep", str(job), "--space", "x=3,1,2", "--target", "grass", "--cluster",
                             str(grass.cluster_file), "--parallel", "2", "--metric", "loss", "--goal", "min",
                             "-o", "json")
    assert code == 0, err + grass.logs()
    final = json.loads(out.splitlines()[-1])
    assert final["done"] and final["best"] == 1
    assert sorted((t["trial"], t["state"], t["metric"]) for t in final["trials"]) == [
        (0, "succeeded", 3.0), (1, "succeeded", 1.0), (2, "succeeded", 2.0)]
    code, out, err = run_cli("logs", "--sweep", final["sweep"], "--trial", "2")
    assert code == 0 and out.strip() == "loss=2", err
