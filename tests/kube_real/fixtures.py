"""The pytest side of the real control plane: one per session (`running_control_plane`), and per test a namespace
of its own with a kubeconfig whose context names it (`RealCluster`), so that tests never see each other's jobs.

Without the built binaries (or when a part fails to start) the tests skip; under CI (env CI set), where
.ci/provision-kube.sh has built them, they fail instead.
"""

from __future__ import annotations

import itertools
import os
import re
import subprocess
from pathlib import Path
from typing import Iterator, Optional

import pytest

from .control_plane import DEFAULT_CONTROLLERS, ControlPlane, ControlPlaneUnavailable, api_path, missing

_COUNTER = itertools.count(1)
KUEUE_API = "kueue.x-k8s.io/v1beta2"


def unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"CI provisions the real control plane (.ci/provision-kube.sh), yet {reason}", pytrace=False)
    pytest.skip(reason)


def running_control_plane(workdir: Path,
                          controllers: tuple[str, ...] = DEFAULT_CONTROLLERS) -> Iterator[ControlPlane]:
    reason = missing()
    if reason is not None:
        unavailable(reason)
    plane = ControlPlane(workdir, controllers=controllers)
    try:
        plane.start()
    except (ControlPlaneUnavailable, OSError, subprocess.CalledProcessError) as error:  # e.g. no openssl
        plane.stop()
        unavailable(f"the real control plane did not start: {error}")
    try:
        yield plane
    finally:
        plane.stop()


class RealCluster:
    """What a test holds: the session's control plane, its own namespace, a kubeconfig naming that namespace
    (`kubeconfig`, as the emulator's fixture has it), and the plane's helpers."""

    def __init__(self, plane: ControlPlane, test_name: str, tmp_path: Path):
        self.plane = plane
        slug = re.sub(r"[^a-z0-9]+", "-", test_name.lower()).strip("-")[:40].rstrip("-")
        self.namespace = plane.namespace(f"t{next(_COUNTER)}-{slug}")
        self.kubeconfig = plane.write_kubeconfig(tmp_path / "kubeconfig", namespace=self.namespace)
        self.server = plane.server
        self._barrier = False
        self.cluster_scoped: list[str] = []  # what cleanup deletes beside the namespace (API paths)

    def require(self, *parts: str) -> None:
        """Skip (fail under CI) unless every controller in `parts` runs. With FrameworkController, the namespace
        gets the FrameworkBarrier's service account and its Role (what `compile --barrier-rbac` emits, as the
        README's quick start applies it): the pods of a gang-allocated job run as that account."""
        for part in parts:
            why = self.plane.installed.get(part, "not started")
            if why is not None:
                unavailable(f"{part} is not running on the real control plane: {why}")
        if "frameworkcontroller" in parts and not self._barrier:
            from paictl.targets.compiled import compile_job

            hello = Path(__file__).resolve().parents[2] / "examples" / "hello-world.yaml"
            for obj in compile_job(str(hello), namespace=self.namespace, barrier_rbac=True).objects:
                if obj["kind"] in ("ServiceAccount", "Role", "RoleBinding"):
                    self.plane.apply(obj)
            self._barrier = True

    def user_kubeconfig(self, path: Path, user: str) -> Path:
        """A kubeconfig for `user`, who may do nothing until a test's RBAC says so."""
        return self.plane.write_kubeconfig(path, namespace=self.namespace, user=user)

    def get_object(self, api_version: str, kind: str, name: str, namespace: Optional[str] = None) -> Optional[dict]:
        return self.plane.get_object(api_version, kind, namespace or self.namespace, name)

    def list_objects(self, api_version: str, kind: str, namespace: Optional[str] = None) -> list[dict]:
        return self.plane.list_objects(api_version, kind, namespace or self.namespace)

    def cleanup(self) -> None:
        """Delete the namespace (the namespace controller removes what is in it, in the background), and the
        cluster-scoped objects the test made."""
        self.plane.raw("DELETE", f"/api/v1/namespaces/{self.namespace}")
        for path in self.cluster_scoped:
            self.plane.raw("DELETE", path)


def kueue_queue(cluster: RealCluster, name: str, quota: dict[str, str], *,
                preemption: Optional[dict] = None) -> str:
    """A LocalQueue `name` in the test's namespace, into a ClusterQueue of its own with `quota` (resource ->
    nominal quota, one ResourceFlavor) that admits from that namespace only: no test uses another's quota. The
    ClusterQueue is deleted with the test (`cleanup`). `preemption`: the ClusterQueue's (e.g. {"withinClusterQueue":
    "LowerPriority"}); by default Kueue preempts nothing."""
    plane = cluster.plane
    plane.apply({"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": "default-flavor"}})
    cluster_queue = f"{cluster.namespace}-{name}"
    plane.apply({"apiVersion": KUEUE_API, "kind": "ClusterQueue", "metadata": {"name": cluster_queue}, "spec": {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": cluster.namespace}},
        **({"preemption": preemption} if preemption else {}),
        "resourceGroups": [{"coveredResources": list(quota), "flavors": [{"name": "default-flavor", "resources": [
            {"name": resource, "nominalQuota": amount} for resource, amount in quota.items()]}]}]}})
    cluster.cluster_scoped.append(api_path(KUEUE_API, "ClusterQueue", None, cluster_queue))
    plane.apply({"apiVersion": KUEUE_API, "kind": "LocalQueue",
                 "metadata": {"name": name, "namespace": cluster.namespace}, "spec": {"clusterQueue": cluster_queue}})
    return name
