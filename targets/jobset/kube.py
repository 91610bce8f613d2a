"""Following and stopping a JobSet with the Kubernetes machinery (targets/kube): what is JobSet-specific in it.

- **Follow**: the JobSet and its pods, found by the label JobSet puts on every pod (`jobset.sigs.k8s.io/
  jobset-name`), read by status.py.
- **Stop**: delete with foreground propagation (the JobSet stays visible until its Jobs and pods are gone, so a
  follower sees it stopping, then deleted: stopped). Or, with `suspend`, `spec.suspend: true`, which deletes the
  pods of its Jobs and keeps the JobSet, to be resumed; paictl marks its own suspension with an annotation so the
  status says stopped, while a JobSet that Kueue keeps suspended reads as pending. The patch is a merge patch
  under the field manager `paictl-stop`, as stopping a Framework is.
"""

from __future__ import annotations

from typing import Optional

from paictl.targets.jobset import status
from paictl.targets.kube.client import JOBSET, STOP_FIELD_MANAGER, Cluster, describe_failure
from paictl.targets.kube.follow import Workload


def workload() -> Workload:
    return Workload(resource=JOBSET, pod_selector=lambda name: f"{status.JOBSET_LABEL}={name}",
                    view=status.job_view, pod_task=status.pod_task)


def stop_jobset(cluster: Cluster, name: str, namespace: str, *, suspend: bool = False,
                current: Optional[dict] = None) -> str:
    """Stop the JobSet; returns what was done, in kubectl's words ("deleted (foreground)", "suspended").
    `current`: the JobSet as just read (else it is read here)."""
    current = current if current is not None else _get(cluster, name, namespace)
    if status.job_state(current).is_final:
        return "already finished"
    if not suspend:
        from paictl.targets.kube.apply import delete_marsjob as delete_foreground

        delete_foreground(cluster, name, namespace, resource=JOBSET)
        return "deleted (foreground)"
    body = {"metadata": {"annotations": {status.SUSPENDED_BY_ANNOTATION: "paictl stop --suspend"}},
            "spec": {"suspend": True}}
    try:
        cluster.json("PATCH", JOBSET.item(name, namespace), query=[("fieldManager", STOP_FIELD_MANAGER)],
                     body=body, content_type="application/merge-patch+json")
    except Exception as exc:  # noqa: BLE001
        raise describe_failure(cluster, exc, verb="patch", resource=JOBSET, name=name, namespace=namespace) from None
    return "suspended"


def _get(cluster: Cluster, name: str, namespace: str) -> dict:
    try:
        return cluster.json("GET", JOBSET.item(name, namespace))
    except Exception as exc:  # noqa: BLE001
        raise describe_failure(cluster, exc, verb="get", resource=JOBSET, name=name, namespace=namespace) from None

