"""The "why it waits" event belongs to the pod shown, not to an earlier pod of the same name (issue 28, D6).

FrameworkController names a task's pod `<framework>-<role>-<index>` in every attempt (frameworkcontroller
pkg/apis/frameworkcontroller/v1/funcs.go GetPodName), KubeDL likewise; an Event names its pod by kind, name and
uid (kubernetes staging/src/k8s.io/api/core/v1/types.go Event.involvedObject), is field-selectable by
involvedObject.uid (pkg/apis/core/v1/conversion.go), and outlives its pod (kube-apiserver --event-ttl, 1 h).
"""

from __future__ import annotations

import json

import pytest

from conftest import ROOT
from kube_cli import paictl, wait_for

pytest.importorskip("kubernetes")

FC = "frameworkcontroller.microsoft.com/v1"


def test_an_earlier_pods_event_is_not_shown_for_the_current_pod(emulator):
    emulator.scenario("Framework", "*", "running", preparing_seconds=100000)  # the pod stays Pending
    done = paictl(emulator, "submit", str(ROOT / "examples" / "hello-world.yaml"), "--target", "framework")
    assert done.returncode == 0, done.stderr
    (pod,) = wait_for(lambda: emulator.list_objects("v1", "Pod", "default"))
    meta = pod["metadata"]
    stamp = emulator.clock.stamp()
    emulator.create_object({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": f"{meta['name']}.earlier", "namespace": "default"},
        "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "namespace": "default",
                           "uid": "0d5e2c3a-0000-4000-8000-000000000001"},  # the previous attempt's pod
        "reason": "FailedMount", "type": "Warning", "count": 1, "firstTimestamp": stamp, "lastTimestamp": stamp,
        "message": 'MountVolume.SetUp failed for volume "data" : secret "gone" not found',
        "source": {"component": "kubelet", "host": "node-0"}}, manager="kubelet")
    shown = paictl(emulator, "status", meta["name"].rsplit("-", 2)[0], "-o", "json")
    assert shown.returncode == 0, shown.stderr
    assert "FailedMount" not in json.loads(shown.stdout)["message"]
    events = [r for r in emulator.requests if r.path.endswith("/events")]
    assert events and all(f"involvedObject.uid={meta['uid']}" in r.query["fieldSelector"] for r in events)
