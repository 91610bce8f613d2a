"""A sweep on the unchanged OpenPAI rest-server (tests/openpai_peer, skipped without ../shared/peers): every trial is
a job of its own on the server, with its own parameters, followed to its verdict; its metric comes from the
log-manager, as `paictl logs` reads it."""

from __future__ import annotations

import json
import uuid


def test_a_sweep_on_the_real_openpai_rest_server(pai_user):
    stack, fc = pai_user.stack, pai_user.stack.fc
    job = pai_user.name("sw")
    path = pai_user.write_job(job, instances=1)
    sweep_id = "t" + uuid.uuid4().hex[:5]
    names = [f"{job}-{sweep_id}-{n}" for n in range(3)]

    def controller():  # FrameworkController's part: each trial's Framework runs, prints its loss and succeeds
        for n, name in enumerate(names):
            fw = pai_user.framework(name)
            fc.start(fw, logs={("worker", 0): f"epoch 1 loss=9\nloss={3 - n}\n"}, user="alice")
            fc.succeed(fw)

    background = pai_user.in_background(controller)
    result = pai_user.paictl("sweep", str(path), "--space", "epochs=1,2,3", "--target", "openpai", "--cluster",
                             "lab", "--id", sweep_id, "--parallel", "3", "--metric", "loss", "--goal", "min", "-o",
                             "json", timeout=240)
    background.result(120)
    assert result.returncode == 0, result.stderr + result.stdout
    final = json.loads(result.stdout.splitlines()[-1])
    assert final["done"] and final["best"] == 2
    assert sorted((t["trial"], t["state"], t["metric"]) for t in final["trials"]) == [
        (0, "succeeded", 3.0), (1, "succeeded", 2.0), (2, "succeeded", 1.0)]
    for n, name in enumerate(names):  # the server holds each trial with its own parameters
        reply = stack.rest("GET", f"/api/v2/jobs/alice~{name}/config", user="alice")
        assert reply.status_code == 200 and reply.json()["parameters"] == {"epochs": n + 1}
    assert pai_user.token not in result.stdout + result.stderr
