"""Sweeps on Kubernetes, against the API-server emulator (tests/kube_emulator): `compile --space` is a stream the
real kubectl applies, and `paictl sweep --target framework|jobset` submits every trial there, labelled with the sweep,
and follows them to their verdicts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from conftest import ROOT
from kube_cli import paictl

pytest.importorskip("kubernetes")

PS = str(ROOT / "examples" / "parameter-server.yaml")
GRID = str(ROOT / "examples" / "sweep-grid.json")
KUBECTL = shutil.which("kubectl")


@pytest.mark.skipif(KUBECTL is None and not os.environ.get("CI"), reason="kubectl is not installed")
def test_compile_space_is_a_stream_kubectl_applies(emulator, tmp_path):
    done = subprocess.run([os.sys.executable, "-m", "paictl", "compile", PS, "--space", GRID], capture_output=True,
                          text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    sweep_id = done.stderr.split("paictl: sweep ", 1)[1].split(":", 1)[0]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path),
           "KUBECONFIG": str(emulator.kubeconfig)}
    applied = subprocess.run([KUBECTL, "apply", "-f", "-"], input=done.stdout, capture_output=True, text=True,
                             env=env, timeout=60)
    assert applied.returncode == 0, applied.stderr
    assert applied.stdout.count("framework.frameworkcontroller.microsoft.com/") == 9
    listed = subprocess.run([KUBECTL, "get", "frameworks", "-l", f"paictl.io/sweep={sweep_id}", "-o", "json"],
                            capture_output=True, text=True, env=env, timeout=60)
    items = json.loads(listed.stdout)["items"]
    assert sorted(int(item["metadata"]["labels"]["paictl.io/trial"]) for item in items) == list(range(9))
    assert sorted(item["metadata"]["annotations"]["jobName"] for item in items) == \
        sorted(f"ps-training-{sweep_id}-{n}" for n in range(9))
    # the same command gives the same stream: the sweep id is derived from the job and the trials
    again = subprocess.run([os.sys.executable, "-m", "paictl", "compile", PS, "--space", GRID], capture_output=True,
                           text=True, cwd=ROOT, timeout=60)
    assert again.stdout == done.stdout


def mars_job(folder) -> str:
    """The Mars example with a parameter its workers read (a Mars job has one scheduler and workers)."""
    text = (ROOT / "examples" / "mars-dataframe.yaml").read_text()
    text = text.replace("type: job\n", "type: job\nparameters:\n  cache: 1\n", 1)
    text = text.replace("python -m mars.deploy.kubernetes.worker",
                        "python -m mars.deploy.kubernetes.worker --cache-mem <% $parameters.cache %>g")
    path = folder / "mars.yaml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("target, kind", [("framework", "Framework"), ("jobset", "JobSet"), ("mars", "MarsJob")])
def test_sweep_submits_every_trial_labelled_and_follows_them(emulator, target, kind, tmp_path):
    emulator.scenario(kind, "*", "succeeded")
    job, space = (PS, GRID) if target != "mars" else (mars_job(tmp_path), "cache=1,2,4,6,8,10,12,14,16")
    done = paictl(emulator, "sweep", job, "--space", space, "--target", target, "--parallel", "4", "-o", "json",
                  timeout=240)
    assert done.returncode == 0, done.stderr
    final = json.loads(done.stdout.splitlines()[-1])
    assert final["kind"] == "sweep" and final["done"] and len(final["trials"]) == 9
    assert all(trial["state"] == "succeeded" for trial in final["trials"])
    sweep_id = final["sweep"]
    api = {"Framework": "frameworkcontroller.microsoft.com/v1", "JobSet": "jobset.x-k8s.io/v1alpha2",
           "MarsJob": "training.kubedl.io/v1alpha1"}[kind]
    objects = [obj for obj in emulator.list_objects(api, kind, "default")
               if (obj["metadata"].get("labels") or {}).get("paictl.io/sweep") == sweep_id]
    assert len(objects) == 9
    assert {trial["job"] for trial in final["trials"]} == {obj["metadata"]["name"] for obj in objects}
    listed = paictl(emulator, "status", "--target", target, "-l", f"paictl.io/sweep={sweep_id}", "-o", "name")
    assert len(listed.stdout.split()) == 9
    status = paictl(emulator, "status", "--sweep", sweep_id, "-o", "json")
    assert json.loads(status.stdout)["done"] is True
