"""The Kubernetes API the rest-server and database-controller talk to: tests/kube_emulator, used as it is, with the
kinds and objects a cluster running OpenPAI has and paictl's own tests never needed.

Added from outside (no change to the emulator): the kinds Node, PersistentVolume and PersistentVolumeClaim (the
rest-server reads nodes for the default virtual cluster's capacity and PVCs for storages); the namespaces OpenPAI
keeps users, groups and tokens in; one Ready node; the `pai-version` ConfigMap; one bound PVC and its NFS volume per
storage. Status is written through the `/status` subresource after each create, as a kubelet or controller would.
"""

from __future__ import annotations

from typing import Any, Iterable

import httpx


def start_kube(storages: Iterable[str]) -> Any:
    from kube_emulator import Emulator
    from kube_emulator.resources import ResourceType

    emu = Emulator()
    # kinds the rest-server reads that the emulator does not serve by default (added, not changed)
    for rt in (ResourceType(group="", version="v1", kind="Node", plural="nodes", namespaced=False,
                            short_names=("no",), status_subresource=True),
               ResourceType(group="", version="v1", kind="PersistentVolume", plural="persistentvolumes",
                            namespaced=False, short_names=("pv",), status_subresource=True),
               ResourceType(group="", version="v1", kind="PersistentVolumeClaim",
                            plural="persistentvolumeclaims", short_names=("pvc",), status_subresource=True)):
        emu.registry.install(rt)
    emu.start()
    seeds: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
        for ns in ("pai-user-v2", "pai-group", "pai-user-token", "pai-storage")]
    seeds.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-0", "labels": {
        "pai-worker": "true"}}, "status": {
        "capacity": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "4", "pods": "110"},
        "allocatable": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "4", "pods": "110"},
        "conditions": [{"type": "Ready", "status": "True"}],
        "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}]}})
    seeds.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pai-version",
                                                                      "namespace": "default"},
                  "data": {"PAI.VERSION": "v1.8.0"}})
    for name in storages:
        seeds.append({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"{name}-pv"},
                      "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteMany"],
                               "nfs": {"server": "10.0.0.1", "path": f"/data/{name}"}},
                      "status": {"phase": "Bound"}})
        seeds.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                      "metadata": {"name": name, "namespace": "default", "labels": {"share": "false"}},
                      "spec": {"accessModes": ["ReadWriteMany"], "volumeName": f"{name}-pv",
                               "resources": {"requests": {"storage": "10Gi"}}},
                      "status": {"phase": "Bound"}})
    for obj in seeds:
        status = obj.pop("status", None)
        created = emu.create_object(obj)
        if status is not None:  # status is the subresource's: written after the create, as kubelets do
            meta = created["metadata"]
            where = f"namespaces/{meta['namespace']}/" if meta.get("namespace") else ""
            reply = httpx.put(f"{emu.url}/api/v1/{where}{obj['kind'].lower()}s/{meta['name']}/status",
                              json={**created, "status": status}, timeout=10)
            if reply.status_code != 200:
                raise RuntimeError(f"status of {obj['kind']} {meta['name']}: {reply.status_code} {reply.text}")
    return emu
