"""Following and stopping a JobSet with the Kubernetes machinery (targets/kube): what is JobSet-specific in it.

- **Follow**: the JobSet and its pods, found by the label JobSet puts on every pod (`jobset.sigs.k8s.io/
  jobset-name`), read by status.py.
- **Stop**: delete with foreground propagation (the JobSet stays visible until its Jobs and pods are gone, so a
  follower sees it stopping, then deleted: stopped). Or, with `suspend`, `spec.suspend: true`, which deletes the
  pods of its Jobs and keeps the JobSet, to be resumed; paictl marks its own suspension with an annotation so the
  status says stopped, while a JobSet that Kueue keeps suspended reads as pending. The patch is a merge patch
  under the field manager `paictl-stop`, as stopping a Framework is. A JobSet Kueue manages (the queue-name label)
  also gets its Workload deactivated, or Kueue would start it again (see `_deactivate_workload`).
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

from paictl.targets.jobset import status
from paictl.targets.kube.client import JOBSET, STOP_FIELD_MANAGER, Cluster, Resource, describe_failure
from paictl.targets.kube.kind import Workload
from paictl.targets.states import JobState, JobView


def workload() -> Workload:
    return Workload(resource=JOBSET, pod_selector=lambda name: f"{status.JOBSET_LABEL}={name}",
                    view=status.job_view, pod_task=status.pod_task, read=read_jobset,
                    event_objects=status.event_objects)


def read_jobset(cluster: Cluster, jobset: Mapping[str, Any], pods: list) -> JobView:
    """The JobSet's view, its advice starting with the kubectl that reaches `cluster`. A JobSet `paictl stop
    --suspend` left suspended, with Workloads it deactivated, costs one list more: its Workloads, whose `active`
    and conditions say whether the user resumed it through Kueue since (status.after_stop)."""
    found = None
    if status.deactivated_workloads(jobset) and status.job_state(jobset) is JobState.STOPPED:
        namespace = (jobset.get("metadata") or {}).get("namespace") or cluster.namespace
        found = _owned_workloads(cluster, jobset, namespace)[1]
    return status.job_view(jobset, pods, kubectl=cluster.kubectl, kueue_workloads=found)


def stop_jobset(cluster: Cluster, name: str, namespace: str, *, suspend: bool = False,
                current: Optional[dict] = None) -> str:
    """Stop the JobSet; returns what was done, in kubectl's words ("deleted (foreground)", "suspended").
    `current`: the JobSet as just read (else it is read here). The caller decides first whether it is finished
    (KubeBackend.stop keeps a finished one), reading it as `status` does: a suspension the user undid through Kueue
    is no longer final."""
    current = current if current is not None else _get(cluster, name, namespace)
    if not suspend:
        from paictl.targets.kube.apply import delete_marsjob as delete_foreground

        delete_foreground(cluster, name, namespace, resource=JOBSET)
        return "deleted (foreground)"
    deactivated = ""
    if ((current.get("metadata") or {}).get("labels") or {}).get(status.QUEUE_LABEL):
        deactivated = _deactivate_workload(cluster, current, namespace)
    body = {"metadata": {"annotations": {status.SUSPENDED_BY_ANNOTATION: "paictl stop --suspend",
                                         status.DEACTIVATED_WORKLOADS_ANNOTATION: deactivated or None}},
            "spec": {"suspend": True}}
    try:
        cluster.json("PATCH", JOBSET.item(name, namespace), query=[("fieldManager", STOP_FIELD_MANAGER)],
                     body=body, content_type="application/merge-patch+json")
    except Exception as exc:  # noqa: BLE001
        raise describe_failure(cluster, exc, verb="patch", resource=JOBSET, name=name, namespace=namespace) from None
    return f"suspended (Kueue workload {deactivated.replace(',', ', ')} deactivated)" if deactivated else "suspended"


#: Kueue's Workload, newest API version first (v1beta2 from Kueue 0.15; v1beta1 before and beside it).
WORKLOADS = tuple(Resource(kind="Workload", api_version=f"kueue.x-k8s.io/{version}", plural="workloads")
                  for version in ("v1beta2", "v1beta1"))


def _deactivate_workload(cluster: Cluster, jobset: dict, namespace: str) -> str:
    """A JobSet Kueue manages cannot be suspended by `spec.suspend` alone: Kueue's job reconciler starts a suspended
    job again as long as its Workload is admitted (kueue pkg/controller/jobframework/reconciler.go, step 7 "Job
    admitted, unsuspending"). Kueue's own stop is the Workload's `spec.active: false`: the Workload is evicted, the
    job suspended, and it stays so (apis/kueue/v1beta1 workload_types.go: "Changing active from true to false will
    evict any running workloads"). Returns the Workloads' names, comma-separated ("" when Kueue has none for it: not
    installed, or not yet created, and then `spec.suspend` is all there is)."""
    resource, owned = _owned_workloads(cluster, jobset, namespace)
    for item in owned:
        workload = item["metadata"]["name"]
        try:
            cluster.json("PATCH", resource.item(workload, namespace), query=[("fieldManager", STOP_FIELD_MANAGER)],
                         body={"spec": {"active": False}}, content_type="application/merge-patch+json")
        except Exception as exc:  # noqa: BLE001
            raise describe_failure(cluster, exc, verb="patch", resource=resource, name=workload,
                                   namespace=namespace) from None
    return ",".join(item["metadata"]["name"] for item in owned)


def _owned_workloads(cluster: Cluster, jobset: Mapping[str, Any], namespace: str) -> tuple[Resource, list[dict]]:
    """The Kueue Workloads of the JobSet (Kueue labels them with the job's uid and makes the job their owner), from
    the first API version the cluster serves; none when no version is (Kueue is not installed)."""
    from paictl.targets.kube.client import ApiFailure

    uid = (jobset.get("metadata") or {}).get("uid")
    for resource in WORKLOADS:
        try:
            listed = cluster.json("GET", resource.collection(namespace),
                                  query=[("labelSelector", f"kueue.x-k8s.io/job-uid={uid}")])
        except ApiFailure as failure:
            if failure.status == 404:
                continue  # this version (or Kueue) is not served
            raise describe_failure(cluster, failure, verb="list", resource=resource, namespace=namespace) from None
        except Exception as exc:  # noqa: BLE001
            raise describe_failure(cluster, exc, verb="list", resource=resource, namespace=namespace) from None
        return resource, [item for item in listed.get("items") or [] if any(
            ref.get("uid") == uid for ref in (item.get("metadata") or {}).get("ownerReferences") or [])]
    return WORKLOADS[0], []


def _get(cluster: Cluster, name: str, namespace: str) -> dict:
    try:
        return cluster.json("GET", JOBSET.item(name, namespace))
    except Exception as exc:  # noqa: BLE001
        raise describe_failure(cluster, exc, verb="get", resource=JOBSET, name=name, namespace=namespace) from None

