"""A sweep on an OpenPAI cluster, against the OpenPAI double (tests/openpai_server, held to the real server's
recordings): every trial is a job of its own on the server, with its own parameters, followed to its verdict; its
metric comes from the log-manager, as `paictl logs` reads it. FrameworkController's part is scripted per trial."""

from __future__ import annotations

import json
import uuid

import httpx
from openpai_server.jobs import Step


def test_a_sweep_on_an_openpai_cluster(pai_user):
    job = pai_user.name("sw")
    path = pai_user.write_job(job, instances=1)
    sweep_id = "t" + uuid.uuid4().hex[:5]
    names = [f"{job}-{sweep_id}-{n}" for n in range(3)]
    for n, name in enumerate(names):  # each trial's Framework runs, prints its loss and succeeds
        pai_user.server.scenarios[name] = [
            Step(lambda j, n=n: j.fc_run(log=f"epoch 1 loss=9\nloss={3 - n}\n"), 2),
            Step(lambda j: j.fc_succeed())]
    result = pai_user.paictl("sweep", str(path), "--space", "epochs=1,2,3", "--target", "openpai", "--cluster",
                             "lab", "--id", sweep_id, "--parallel", "3", "--metric", "loss", "--goal", "min", "-o",
                             "json", timeout=240)
    assert result.returncode == 0, result.stderr + result.stdout
    final = json.loads(result.stdout.splitlines()[-1])
    assert final["done"] and final["best"] == 2
    assert sorted((t["trial"], t["state"], t["metric"]) for t in final["trials"]) == [
        (0, "succeeded", 3.0), (1, "succeeded", 2.0), (2, "succeeded", 1.0)]
    for n, name in enumerate(names):  # the server holds each trial with its own parameters
        reply = httpx.get(f"{pai_user.server.url}/api/v2/jobs/alice~{name}/config",
                          headers={"Authorization": f"Bearer {pai_user.token}"})
        assert reply.status_code == 200 and json.loads(reply.text)["parameters"] == {"epochs": n + 1}
    assert pai_user.token not in result.stdout + result.stderr
