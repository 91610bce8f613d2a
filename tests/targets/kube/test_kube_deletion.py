"""Deletion takes time on a real cluster: pods terminate within their grace period, and the garbage collector
deletes what a workload owned on its own schedule. A submit must not race either (issue 28, D1 and D7).

Upstream rules the emulator models and these tests rely on:
- pkg/registry/core/pod/strategy.go `CheckGracefulDelete`: a pod bound to a node and not yet terminated is deleted
  gracefully (deletionTimestamp set, removed by the kubelet once its containers exit, within
  terminationGracePeriodSeconds, 30 by default);
- pkg/controller/garbagecollector/garbagecollector.go `processDeletingDependentsItem` / graph.go
  `blockingDependents`: a foreground deletion waits only for dependents whose owner reference has
  `blockOwnerDeletion: true`; the others are deleted by `attemptToDeleteItem` whenever the collector gets to them,
  possibly after the owner is gone, with a uid precondition only.
"""

from __future__ import annotations

import threading
import time

import pytest

from conftest import JOBS, ROOT
from kube_cli import paictl, wait_for

pytest.importorskip("kubernetes")

FC = "frameworkcontroller.microsoft.com/v1"
KINDS = {
    "mars": ("training.kubedl.io/v1alpha1", "MarsJob", str(JOBS / "kube" / "mars-job.yaml")),
    "jobset": ("jobset.x-k8s.io/v1alpha2", "JobSet", str(JOBS / "kube" / "jobset-job.yaml")),
}


@pytest.fixture
def slow_emulator(tmp_path):
    """Speed 10: a pod's 30 s grace period lasts 3 real seconds, long enough for a second command to run in it."""
    from kube_emulator import Emulator

    with Emulator(speed=10, bookmark_interval=0.5) as emu:
        emu.write_kubeconfig(tmp_path / "kubeconfig")
        yield emu


def _hold(emu, pods: list, hold: bool = True) -> None:
    """A finalizer of the test's on each pod keeps it (terminating) until released: the window a slow kubelet, a
    long grace period or another controller's finalizer opens on a real cluster, here as long as the test needs."""
    rt = emu.registry.by_kind("v1", "Pod")
    for pod in pods:
        def change(obj: dict) -> None:
            obj["metadata"]["finalizers"] = ["test.paictl.dev/hold"] if hold else []
        emu.store.mutate(rt, "default", pod["metadata"]["name"], change, "test")


def _the(emu, api: str, kind: str) -> dict:
    (obj,) = emu.list_objects(api, kind, "default")
    return obj


@pytest.mark.parametrize("target", sorted(KINDS))
def test_a_submit_while_a_stop_still_deletes_the_job_waits_and_runs_it(slow_emulator, target):
    """D1: `stop` deletes a MarsJob or JobSet in the foreground; until its pods have terminated, the object is still
    there with a deletionTimestamp. An apply then "changes nothing" and the object goes away with the run the user
    just asked for. The submit must wait until it is gone and create it anew."""
    emu = slow_emulator
    api, kind, job = KINDS[target]
    emu.scenario(kind, "*", "running")
    done = paictl(emu, "submit", job, "--target", target)
    assert done.returncode == 0, done.stderr
    wait_for(lambda: [p for p in emu.list_objects("v1", "Pod", "default")
                      if (p.get("status") or {}).get("phase") == "Running"], seconds=30)
    old = _the(emu, api, kind)
    name = old["metadata"]["name"]
    held = emu.list_objects("v1", "Pod", "default")
    _hold(emu, held)
    stopped = paictl(emu, "stop", name)
    assert stopped.returncode == 0, stopped.stderr
    assert _the(emu, api, kind)["metadata"].get("deletionTimestamp")  # still there: its pods are terminating
    seen = emu.count("GET", f"/{name}")

    def release_once_the_submit_looked() -> None:  # they terminate while the submit waits
        wait_for(lambda: emu.count("GET", f"/{name}") > seen, seconds=60)
        time.sleep(0.5)
        _hold(emu, held, False)

    threading.Thread(target=release_once_the_submit_looked, daemon=True).start()
    again = paictl(emu, "submit", job, "--target", target)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[0].endswith(f"/{name} was still being deleted; waited until it was gone"), \
        again.stdout
    assert "nothing changed" not in again.stdout
    time.sleep(1.0)  # the old object's deletion would have completed by now
    new = emu.get_object(api, kind, "default", name)
    assert new is not None and new["metadata"]["uid"] != old["metadata"]["uid"]
    assert not new["metadata"].get("deletionTimestamp")


def test_replace_waits_for_the_collector_to_let_go_of_the_companions(emulator):
    """D7: the Secrets paictl applies are owned by the Framework with blockOwnerDeletion: false, so the Framework's
    foreground deletion does not wait for them. Here the collector reaches them a simulated 200 s (1 s) after the
    Framework is gone: a --replace that re-applied them meanwhile would lose them to it."""
    emulator.store.gc_lag_seconds = 200
    emulator.scenario("Framework", "*", "running", seconds=100000)
    job = str(JOBS / "kube" / "secret-job.yaml")
    first = paictl(emulator, "submit", job, "--target", "framework")
    assert first.returncode == 0, first.stderr
    wait_for(lambda: [p for p in emulator.list_objects("v1", "Pod", "default")
                      if (p.get("status") or {}).get("phase") == "Running"])
    old_uid = _the(emulator, FC, "Framework")["metadata"]["uid"]
    replaced = paictl(emulator, "submit", job, "--target", "framework", "--replace")
    assert replaced.returncode == 0, replaced.stderr
    new_uid = _the(emulator, FC, "Framework")["metadata"]["uid"]
    assert new_uid != old_uid
    time.sleep(1.5)  # longer than the collector's lag: what it was going to delete, it has deleted
    secrets = emulator.list_objects("v1", "Secret", "default")
    assert len(secrets) == 2, [s["metadata"]["name"] for s in secrets]
    for secret in secrets:
        assert [ref["uid"] for ref in secret["metadata"]["ownerReferences"]] == [new_uid]


def test_a_framework_still_stopping_points_at_replace(slow_emulator):
    """FrameworkController completes a stopped attempt only once its pods are gone (frameworkcontroller.md d:
    AttemptDeletionRequested -> AttemptDeleting -> AttemptCompleted), which lasts their grace period. A submit
    meanwhile conflicts with `paictl-stop`'s executionType; what to do is --replace, which then runs it."""
    emu = slow_emulator
    emu.scenario("Framework", "*", "running", seconds=100000, preparing_seconds=1)
    hello = str(ROOT / "examples" / "hello-world.yaml")
    done = paictl(emu, "submit", hello, "--target", "framework")
    assert done.returncode == 0, done.stderr
    wait_for(lambda: [p for p in emu.list_objects("v1", "Pod", "default")
                      if (p.get("status") or {}).get("phase") == "Running"], seconds=30)
    name = _the(emu, FC, "Framework")["metadata"]["name"]
    held = emu.list_objects("v1", "Pod", "default")
    _hold(emu, held)
    stopped = paictl(emu, "stop", name)
    assert stopped.returncode == 0, stopped.stderr
    again = paictl(emu, "submit", hello, "--target", "framework")
    _hold(emu, held, False)
    assert again.returncode == 3
    assert again.stderr.count("\n") == 1, again.stderr
    assert ("managed by 'paictl-stop' (the job was stopped by `paictl stop`: `paictl submit --replace` deletes it "
            "and runs the job anew)") in again.stderr, again.stderr
    replaced = paictl(emu, "submit", hello, "--target", "framework", "--replace")
    assert replaced.returncode == 0, replaced.stderr
    assert _the(emu, FC, "Framework")["spec"]["executionType"] == "Start"
