"""Submitting a job whose name the cluster already has: what an apply would do to the workload there decides
whether the submit refuses, waits, replaces it (`--replace`), or applies on top of it (`make_room`).

A server-side apply of a finished workload only "configures" it (it never runs again); of a workload being deleted,
it is taken away by the deletion; of an edited running one, it changes only what the controller builds from then
on. Each case is one line saying so, decided before anything is applied.

Whether the job on the cluster is the one being submitted is decided by comparing meanings, not JSON (issue 36,
R1/R2): the stored object is not what paictl sent. JobSet's mutating webhook stores `cpu: 1` as "1" and adds
defaults (`protocol: TCP`, `startupPolicy`, template `metadata: {}`); FrameworkController writes the whole Framework
back in its own form (string quantities, empty env values dropped, `resources: {}`) and so becomes a manager of
`.spec.taskRoles`, where any apply of paictl's form is a 409 conflict. An unchanged job is therefore not applied
again at all, and an edited one is refused before any apply.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Optional

from paictl.errors import ClusterError

from .workloads import target_of, workload

if TYPE_CHECKING:
    from .client import Cluster


def make_room(connection: Cluster, job: dict, namespace: str, objects, *, dry_run: bool,
              replace: bool) -> tuple[str, Optional[str], bool]:
    """A finished job of that name would only be "configured" by an apply and never run again: refuse, or with
    `replace` (`submit --replace`) delete it, wait until it is gone, and let the apply create it anew.
    A job still being deleted (a `stop` of a MarsJob or JobSet deletes it in the foreground, which lasts as long
    as its pods' grace period) would take the apply with it: wait until it is gone first.
    Returns the line saying what was replaced ("" when nothing was), the uid of the workload that stays, and
    whether that workload is the job as submitted (then it is not applied again)."""
    from .apply import delete_and_wait, wait_companions_released, wait_gone
    from .client import ApiFailure, describe_failure, resource_for

    resource = resource_for(job)
    name = job["metadata"]["name"]
    try:
        current = connection.json("GET", resource.item(name, namespace))
    except ApiFailure as failure:
        if failure.status == 404:
            return "", None, False
        raise describe_failure(connection, failure, verb="get", resource=resource, name=name,
                               namespace=namespace) from None
    except Exception as exc:  # noqa: BLE001
        raise describe_failure(connection, exc, verb="get", resource=resource, name=name,
                               namespace=namespace) from None
    view = workload(target_of(job["kind"])).view(current, [])
    old_uid = str((current.get("metadata") or {}).get("uid") or "")
    if (current.get("metadata") or {}).get("deletionTimestamp"):
        if dry_run:
            return f"{resource.label(name)} is being deleted; the submit would wait until it is gone", None, False
        wait_gone(connection, resource, name, namespace)
        wait_companions_released(connection, objects, old_uid)
        return f"{resource.label(name)} was still being deleted; waited until it was gone", None, False
    if not replace:
        if view.state.is_final:
            raise ClusterError(f"{resource.label(name)} already ran and {view.state.value}"
                               f"{f' ({view.message})' if view.message else ''}; applying it again would not run "
                               f"it again: `paictl submit --replace` deletes it and runs the job anew")
        changed = edited_fields(job, current)
        edited = [field for field in changed if field.startswith("spec.")]
        if _held_by_others(current, edited):
            # stopped by `paictl stop`, edited with kubectl, someone else's object: the apply's conflict names who
            # holds which field, and what to do
            return "", old_uid or None, False
        if edited:
            consequence = ("be refused: JobSet's webhook keeps spec.replicatedJobs immutable"
                           if resource.kind == "JobSet" else
                           f"reach only the pods created from now on ({_controller_of(resource.kind)} builds each "
                           "new pod from the current spec): a run mixing both versions")
            raise ClusterError(f"{resource.label(name)} is {view.state.value} with another version of the job "
                               f"({', '.join(edited)} changed); applying the edited one would {consequence}; "
                               f"`paictl submit --replace` deletes it and runs the edited job")
        # unchanged: not applied again, if it is paictl's (someone else's copy is applied, and paictl shares it);
        # a new description only: applied, it reaches no pod
        return "", old_uid or None, not changed and _applied_by_paictl(current)
    if dry_run:
        return f"{resource.label(name)} would be deleted and created anew (--replace)", None, False
    delete_and_wait(connection, resource, name, namespace)
    wait_companions_released(connection, objects, old_uid)
    return f"{resource.label(name)} deleted (--replace; it was {view.state.value})", None, False

def edited_fields(job: dict, current: dict) -> list[str]:
    """The parts of `job` (its labels, annotations and each spec field) that the object on the cluster does not hold
    in the same meaning; [] when it is the job as submitted. What the server or a controller added (defaults, a
    webhook's fields, status) is not a change; a value is compared by meaning (`same_value`)."""
    spec, stored_spec = job.get("spec") or {}, current.get("spec") or {}
    changed = [f"spec.{key}" for key in spec if not same_value(spec[key], stored_spec.get(key))]
    metadata, stored = job.get("metadata") or {}, current.get("metadata") or {}
    for part in ("labels", "annotations"):
        sent, kept = metadata.get(part) or {}, stored.get(part) or {}
        changed += [f"metadata.{part}.{key}" for key in sent if not same_value(sent[key], kept.get(key))]
    return changed


def same_value(sent: Any, stored: Any) -> bool:
    """Whether `stored` holds what `sent` says: every key of a mapping (a key the stored side has in addition is a
    default), lists item by item, a quantity by its amount (`1` and "1", "512Mi" and 536870912), and an empty
    value ("", {}, [], null) as no value (FrameworkController drops empty env values)."""
    if _empty(sent):
        return _empty(stored)
    if isinstance(sent, dict):
        return isinstance(stored, dict) and all(same_value(value, stored.get(key)) for key, value in sent.items())
    if isinstance(sent, list):
        return isinstance(stored, list) and len(sent) == len(stored) and all(
            same_value(a, b) for a, b in zip(sent, stored))
    if sent == stored and type(sent) is type(stored):
        return True
    amounts = _quantity(sent), _quantity(stored)
    return amounts[0] is not None and amounts[0] == amounts[1]


def _empty(value: Any) -> bool:
    return value is None or value == "" or value == {} or value == []


_SUFFIXES = {"Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50, "Ei": 2 ** 60,
             "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": 1, "k": 10 ** 3, "M": 10 ** 6,
             "G": 10 ** 9, "T": 10 ** 12, "P": 10 ** 15, "E": 10 ** 18}
_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?)$")


def _quantity(value: Any) -> Optional[Decimal]:
    """A Kubernetes quantity's amount (apimachinery resource.ParseQuantity's forms), None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return Decimal(str(value))
    match = _QUANTITY.match(value) if isinstance(value, str) else None
    if match is None:
        return None
    number, exponent, suffix = match.groups()
    return Decimal(number + (exponent or "")) * _SUFFIXES[suffix or ""]


def _applied_by_paictl(current: dict) -> bool:
    from .client import FIELD_MANAGER

    return any(entry.get("manager") == FIELD_MANAGER and entry.get("operation") == "Apply"
               for entry in (current.get("metadata") or {}).get("managedFields") or [])


def _held_by_others(current: dict, fields: list[str]) -> bool:
    """Whether a field manager other than paictl and the workload's controller (which rewrites what paictl applied,
    client.CONTROLLER_MANAGERS) holds one of `fields` ("spec.<key>") on the stored object."""
    from .client import CONTROLLER_MANAGERS, FIELD_MANAGER

    keys = {f"f:{field.split('.', 1)[1]}" for field in fields}
    for entry in (current.get("metadata") or {}).get("managedFields") or []:
        if entry.get("manager") in (FIELD_MANAGER, *CONTROLLER_MANAGERS):
            continue
        held = ((entry.get("fieldsV1") or {}).get("f:spec") or {}).keys()
        if keys & set(held):
            return True
    return False


def _controller_of(kind: str) -> str:
    return {"Framework": "FrameworkController", "MarsJob": "KubeDL"}.get(kind, f"the {kind} controller")
