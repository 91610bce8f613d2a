"""Putting compiled objects on a cluster with server-side apply, and taking a job down again.

Server-side apply (field manager `paictl`) makes submit idempotent: applying the same job twice changes nothing,
and a field that someone else manages is a conflict the server reports instead of a silent overwrite. Companions
(Secrets, ConfigMaps, a PriorityClass) go first, because the workload's pods refer to them the moment they exist.
If the workload then fails, the companions this submit created are deleted again: a half-submitted job must not
leave the job's secrets behind in the namespace.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Mapping, Optional, Sequence

from paictl.errors import ClusterError
from paictl.targets.kube.client import (APPLY_PATCH, 
    FIELD_MANAGER,
    FRAMEWORK,
    MARSJOB,
    STOP_FIELD_MANAGER,
    ApiFailure,
    Cluster,
    Resource,
    describe_failure,
    resource_for,
)

WORKLOAD_KINDS = frozenset({"Framework", "MarsJob", "JobSet"})
#: Fields that change on every write (or are the server's): compared away to tell "configured" from "unchanged"
#: in a dry run, where the resourceVersion does not move.
_VOLATILE = ("resourceVersion", "managedFields", "generation")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Applied:
    """One object's outcome, as kubectl prints it: created, configured or unchanged. Never holds the object."""

    kind: str
    name: str
    namespace: Optional[str]
    label: str                  # kubectl's `kind.group/name`
    result: str
    uid: Optional[str] = None   # the object's uid after the apply (a dry run's is not the real one)


def apply_order(objects: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Companions before the workload (a stable sort: the compiler's order otherwise)."""
    return sorted(objects, key=lambda obj: obj.get("kind") in WORKLOAD_KINDS)


def apply_objects(cluster: Cluster, objects: Sequence[Mapping[str, Any]], *, dry_run: bool,
                  owner_uid: Optional[str] = None, keep_workload: bool = False) -> list[Applied]:
    """Apply every object, then give the namespaced companions an owner reference to the workload (its uid is known
    only now), so that Kubernetes deletes them with it, as OpenPAI's controller arranges.

    On a failure, what this call created is removed, but only once the workload is known not to exist: a
    connection that dropped after the server stored the workload must not take away the Secrets it mounts.
    `owner_uid`: the uid of the workload as it exists already (a re-submit), so that the companions are applied
    with the same owner reference at once and an unchanged job stays "unchanged". `keep_workload`: the workload on
    the cluster is this job already (resubmit.edited_fields found no change), so it is not applied again: the
    stored form differs from paictl's (webhook defaults, a controller's rewrite), and an apply would at best change
    nothing and at worst conflict with the controller that owns the spec."""
    for obj in objects:  # before anything is written: a job too big to store must not be half-submitted
        check_size(obj)
    done: list[Applied] = []
    ordered = apply_order(objects)
    workload = next((o for o in ordered if o.get("kind") in WORKLOAD_KINDS), None)
    for obj in ordered:
        resource = resource_for(obj)
        if owner_uid and workload is not None and obj is not workload and resource.namespaced:
            obj = _owned(obj, workload, owner_uid)
        if keep_workload and owner_uid and obj is workload:
            name = str(obj["metadata"]["name"])
            done.append(Applied(kind=resource.kind, name=name, namespace=obj["metadata"].get("namespace"),
                                label=resource.label(name), result="unchanged", uid=owner_uid))
            continue
        try:
            done.append(_apply_one(cluster, resource, obj, dry_run=dry_run))
        except ClusterError as error:
            if not dry_run:
                exists = _workload_exists(cluster, workload) if workload is not None else False
                if exists is not False:
                    kept = ", ".join(a.label for a in done) or "nothing"
                    why = ("the workload exists" if exists else "whether the workload exists could not be checked")
                    raise ClusterError(f"{error} ({why}: kept {kept}; `paictl status` shows it)") from None
                leftovers = _remove_created(cluster, done)
                if leftovers:
                    raise ClusterError(f"{error}; could not remove {', '.join(leftovers)} created by this submit: "
                                       f"delete them by hand") from None
                if done and any(a.result == "created" for a in done):
                    raise ClusterError(f"{error} (removed what this submit had created: "
                                       f"{', '.join(a.label for a in done if a.result == 'created')})") from None
            raise
    owner = next((a for a in done if a.kind in WORKLOAD_KINDS and a.uid), None)
    if not dry_run and owner is not None and workload is not None and owner.uid != owner_uid:
        for obj in ordered:
            resource = resource_for(obj)
            if obj is not workload and resource.namespaced:  # a cluster-scoped PriorityClass cannot be owned
                _apply_one(cluster, resource, _owned(obj, workload, str(owner.uid)), dry_run=False)
    return done


def check_size(obj: Mapping[str, Any]) -> None:
    """Refuse, with the sizes only (never a value: it may be a secret), an object the cluster could not store
    (targets/kube/limits.py; `compile` has refused such a job already, located, unless the objects were built
    another way)."""
    from paictl.targets.kube.limits import oversize

    problem = oversize(obj)
    if problem is not None:
        label = resource_for(obj).label(str((obj.get("metadata") or {}).get("name")))
        raise ClusterError(f"{label}: {problem}: move large inline content (commands, files) into the image or a "
                           f"volume")


def _owned(obj: Mapping[str, Any], workload: Mapping[str, Any], uid: str) -> dict[str, Any]:
    """`obj` with an owner reference to the workload: deleted with it by Kubernetes' garbage collector."""
    reference = {"apiVersion": workload["apiVersion"], "kind": workload["kind"],
                 "name": workload["metadata"]["name"], "uid": uid, "controller": False, "blockOwnerDeletion": False}
    return {**obj, "metadata": {**obj["metadata"], "ownerReferences": [reference]}}


def _workload_exists(cluster: Cluster, workload: Mapping[str, Any]) -> Optional[bool]:
    """Re-read the workload: True/False, or None when the server cannot say (then nothing is deleted)."""
    resource = resource_for(workload)
    metadata = workload.get("metadata") or {}
    try:
        cluster.json("GET", resource.item(str(metadata.get("name")), metadata.get("namespace")))
        return True
    except ApiFailure as failure:
        return False if failure.status == 404 else None  # no such object, or not even such a resource
    except Exception:  # noqa: BLE001
        return None


def _apply_one(cluster: Cluster, resource: Resource, obj: Mapping[str, Any], *, dry_run: bool) -> Applied:
    metadata = obj.get("metadata") or {}
    name = str(metadata.get("name"))
    namespace = metadata.get("namespace") if resource.namespaced else None
    path = resource.item(name, namespace)
    before = _get(cluster, resource, path, name, namespace)
    query = [("fieldManager", FIELD_MANAGER), ("force", "false")]
    if dry_run:
        query.append(("dryRun", "All"))
    try:
        after = cluster.json("PATCH", path, query=query, body=json.dumps(obj),
                             content_type=APPLY_PATCH)
    except Exception as exc:  # noqa: BLE001 - every failure becomes one line
        raise describe_failure(cluster, exc, verb="apply", resource=resource, name=name,
                               namespace=namespace) from None
    if before is None:
        result = "created"
    elif dry_run:
        result = "unchanged" if _stable(before) == _stable(after) else "configured"
    else:
        same = (before.get("metadata") or {}).get("resourceVersion") == (after.get("metadata") or {}).get(
            "resourceVersion")
        result = "unchanged" if same else "configured"
    return Applied(kind=resource.kind, name=name, namespace=namespace, label=resource.label(name), result=result,
                   uid=(after.get("metadata") or {}).get("uid"))


def _get(cluster: Cluster, resource: Resource, path: str, name: str,
         namespace: Optional[str]) -> Optional[dict[str, Any]]:
    try:
        return cluster.json("GET", path)
    except Exception as exc:  # noqa: BLE001
        # 404 naming the object: it does not exist yet. A 404 without it (no such resource type) is explained.
        if isinstance(exc, ApiFailure) and exc.status == 404 and (
                (exc.body.get("details") or {}).get("name") == name or resource.plural not in ("frameworks",
                                                                                               "marsjobs", "jobsets")):
            return None
        raise describe_failure(cluster, exc, verb="get", resource=resource, name=name,
                               namespace=namespace) from None


def _stable(obj: Mapping[str, Any]) -> Any:
    metadata = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _VOLATILE}
    return {**obj, "metadata": metadata}


def _remove_created(cluster: Cluster, done: list[Applied]) -> list[str]:
    """Delete what `done` created; return the labels that could not be deleted."""
    leftovers = []
    for applied in reversed(done):
        if applied.result != "created":
            continue
        resource = resource_for({"kind": applied.kind, "apiVersion": _api_version(applied.kind)})
        try:
            cluster.json("DELETE", resource.item(applied.name, applied.namespace))
        except ApiFailure as failure:
            if failure.status != 404:
                leftovers.append(applied.label)
        except Exception:  # noqa: BLE001
            leftovers.append(applied.label)
    return leftovers


def _api_version(kind: str) -> str:
    from paictl.targets.kube.client import KNOWN_RESOURCES

    return next(r.api_version for r in KNOWN_RESOURCES if r.kind == kind)


def stop_framework(cluster: Cluster, name: str, namespace: str) -> dict[str, Any]:
    """`spec.executionType: Stop`, as OpenPAI stops a job: a merge patch under its own field manager.

    Not an apply under `paictl`: an apply holding only this field would drop paictl's ownership of the rest of
    the spec. Not a forced apply either. The separate manager owns executionType afterwards, so re-submitting the
    stopped job is a conflict naming `paictl-stop` (FrameworkController cannot restart a stopped Framework anyway).
    """
    try:
        return cluster.json("PATCH", FRAMEWORK.item(name, namespace), query=[("fieldManager", STOP_FIELD_MANAGER)],
                            body={"spec": {"executionType": "Stop"}}, content_type="application/merge-patch+json")
    except Exception as exc:  # noqa: BLE001
        raise describe_failure(cluster, exc, verb="patch", resource=FRAMEWORK, name=name,
                               namespace=namespace) from None


def delete_marsjob(cluster: Cluster, name: str, namespace: str, resource: Resource = MARSJOB) -> None:
    """A MarsJob stops by being deleted; Foreground keeps it visible until its pods are gone."""
    try:
        cluster.json("DELETE", resource.item(name, namespace),
                     body={"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground"},
                     content_type="application/json")
    except Exception as exc:  # noqa: BLE001
        raise describe_failure(cluster, exc, verb="delete", resource=resource, name=name,
                               namespace=namespace) from None


def delete_and_wait(cluster: Cluster, resource: Resource, name: str, namespace: str, *,
                    timeout: float = 120.0) -> None:
    """Delete a workload (its pods and owned companions go with it) and wait until the server no longer has it."""
    try:
        cluster.json("DELETE", resource.item(name, namespace),
                     body={"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground"},
                     content_type="application/json")
    except ApiFailure as failure:
        if failure.status != 404:
            raise describe_failure(cluster, failure, verb="delete", resource=resource, name=name,
                                   namespace=namespace) from None
    except Exception as exc:  # noqa: BLE001
        raise describe_failure(cluster, exc, verb="delete", resource=resource, name=name,
                               namespace=namespace) from None
    wait_gone(cluster, resource, name, namespace, timeout=timeout)


def wait_gone(cluster: Cluster, resource: Resource, name: str, namespace: Optional[str], *,
              timeout: float = 120.0, owner_uid: Optional[str] = None) -> None:
    """Wait until the object is gone (404) or, with `owner_uid`, no longer refers to that owner (the garbage
    collector has let it go, or someone re-owned it)."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            current = cluster.json("GET", resource.item(name, namespace))
        except ApiFailure as failure:
            if failure.status == 404:
                return
            raise describe_failure(cluster, failure, verb="get", resource=resource, name=name,
                                   namespace=namespace) from None
        except Exception as exc:  # noqa: BLE001
            raise describe_failure(cluster, exc, verb="get", resource=resource, name=name,
                                   namespace=namespace) from None
        references = (current.get("metadata") or {}).get("ownerReferences") or []
        if owner_uid is not None and not any(ref.get("uid") == owner_uid for ref in references):
            return
        time.sleep(0.2)
    raise ClusterError(f"{resource.label(name)} is still being deleted after {timeout:g}s; submit again later")


def wait_companions_released(cluster: Cluster, objects: Sequence[Mapping[str, Any]], owner_uid: str, *,
                             timeout: float = 120.0) -> None:
    """After the workload `owner_uid` is gone, wait until the garbage collector is done with the companions it
    owned. paictl's owner references say `blockOwnerDeletion: false` (blocking needs the right to update the
    owner's finalizers), so a foreground deletion does not wait for them: the collector deletes them when it gets
    to them, possibly after the workload is gone and after paictl applied them again for the next run, whose pods
    then cannot mount them (kubernetes garbagecollector.go: node.blockingDependents, attemptToDeleteItem)."""
    for obj in objects:
        resource = resource_for(obj)
        if obj.get("kind") in WORKLOAD_KINDS or not resource.namespaced:
            continue
        metadata = obj.get("metadata") or {}
        wait_gone(cluster, resource, str(metadata.get("name")), metadata.get("namespace"), timeout=timeout,
                  owner_uid=owner_uid)
