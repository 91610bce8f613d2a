"""Submitting a job whose name the cluster already has: what an apply would do to the workload there decides
whether the submit refuses, waits, replaces it (`--replace`), or applies on top of it (`make_room`).

A server-side apply of a finished workload only "configures" it (it never runs again); of a workload being deleted,
it is taken away by the deletion; of an edited running one, it changes only what the controller builds from then
on. Each case is one line saying so, decided before anything is applied.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from paictl.errors import ClusterError

from .workloads import target_of, workload

if TYPE_CHECKING:
    from .client import Cluster


def make_room(connection: Cluster, job: dict, namespace: str, objects, *, dry_run: bool,
              replace: bool) -> tuple[str, Optional[str]]:
    """A finished job of that name would only be "configured" by an apply and never run again: refuse, or with
    `replace` (`submit --replace`) delete it, wait until it is gone, and let the apply create it anew.
    A job still being deleted (a `stop` of a MarsJob or JobSet deletes it in the foreground, which lasts as long
    as its pods' grace period) would take the apply with it: wait until it is gone first.
    Returns the line saying what was replaced ("" when nothing was) and the uid of the workload that stays."""
    from .apply import delete_and_wait, wait_companions_released, wait_gone
    from .client import ApiFailure, describe_failure, resource_for

    resource = resource_for(job)
    name = job["metadata"]["name"]
    try:
        current = connection.json("GET", resource.item(name, namespace))
    except ApiFailure as failure:
        if failure.status == 404:
            return "", None
        raise describe_failure(connection, failure, verb="get", resource=resource, name=name,
                               namespace=namespace) from None
    except Exception as exc:  # noqa: BLE001
        raise describe_failure(connection, exc, verb="get", resource=resource, name=name,
                               namespace=namespace) from None
    view = workload(target_of(job["kind"])).view(current, [])
    old_uid = str((current.get("metadata") or {}).get("uid") or "")
    if (current.get("metadata") or {}).get("deletionTimestamp"):
        if dry_run:
            return f"{resource.label(name)} is being deleted; the submit would wait until it is gone", None
        wait_gone(connection, resource, name, namespace)
        wait_companions_released(connection, objects, old_uid)
        return f"{resource.label(name)} was still being deleted; waited until it was gone", None
    if not replace:
        if view.state.is_final:
            raise ClusterError(f"{resource.label(name)} already ran and {view.state.value}"
                               f"{f' ({view.message})' if view.message else ''}; applying it again would not run "
                               f"it again: `paictl submit --replace` deletes it and runs the job anew")
        edited = _edited_fields(connection, resource, job, current)
        if edited:
            consequence = ("be refused: JobSet's webhook keeps spec.replicatedJobs immutable"
                           if resource.kind == "JobSet" else
                           f"reach only the pods created from now on ({_controller_of(resource.kind)} builds each "
                           "new pod from the current spec): a run mixing both versions")
            raise ClusterError(f"{resource.label(name)} is {view.state.value} with another version of the job "
                               f"({', '.join(edited)} changed); applying the edited one would {consequence}; "
                               f"`paictl submit --replace` deletes it and runs the edited job")
        return "", old_uid or None
    if dry_run:
        return f"{resource.label(name)} would be deleted and created anew (--replace)", None
    delete_and_wait(connection, resource, name, namespace)
    wait_companions_released(connection, objects, old_uid)
    return f"{resource.label(name)} deleted (--replace; it was {view.state.value})", None

def _edited_fields(connection: Cluster, resource, job: dict, current: dict) -> list[str]:
    """The spec fields an apply of `job` would change on the running workload, found by a server-side dry run
    (the server's defaulting and webhooks included). [] when nothing in the spec changes, or when the dry run
    fails for another reason (the real apply then reports it)."""
    import json as json_module

    from .client import APPLY_PATCH, FIELD_MANAGER, ApiFailure

    try:
        after = connection.json("PATCH", resource.item(job["metadata"]["name"], current["metadata"].get(
            "namespace")), query=[("fieldManager", FIELD_MANAGER), ("force", "false"), ("dryRun", "All")],
            body=json_module.dumps(job), content_type=APPLY_PATCH, retry=False)
    except ApiFailure as failure:
        if failure.status == 422 and "field is immutable" in failure.message:
            causes = (failure.body.get("details") or {}).get("causes") or []
            return [str(c.get("field")) for c in causes if "immutable" in str(c.get("message"))] or ["spec"]
        return []
    except Exception:  # noqa: BLE001 - the apply itself reports a connection failure
        return []
    before, later = current.get("spec") or {}, after.get("spec") or {}
    return [f"spec.{key}" for key in sorted(set(before) | set(later)) if before.get(key) != later.get(key)]


def _controller_of(kind: str) -> str:
    return {"Framework": "FrameworkController", "MarsJob": "KubeDL"}.get(kind, f"the {kind} controller")
