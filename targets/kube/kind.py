"""What the follower needs to know of one workload kind (Framework, JobSet, MarsJob): the seam between the generic
Kubernetes machinery (follow, pods, logs) and each target's own reading of its objects, which depends on it."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional

if TYPE_CHECKING:
    from paictl.targets.kube.client import Cluster, Resource
    from paictl.targets.states import JobView


@dataclasses.dataclass(frozen=True, kw_only=True)
class Workload:
    """How to follow one kind: where it lives, how its pods are labelled, how to read it."""

    resource: Resource
    pod_selector: Callable[[str], str]                        # job name → label selector of its pods
    view: Callable[[Mapping[str, Any], list], JobView]        # (job object, pods) → JobView
    pod_task: Callable[[Mapping[str, Any]], Optional[tuple[str, int]]]  # pod → (role, index) of its task
    #: (job, role, index) → the failed container's termination message the job object keeps, when it keeps one
    termination_message: Optional[Callable[[Mapping[str, Any], str, int], str]] = None
    #: (cluster, job, pods) → JobView, for a kind whose verdict can need more than the job and its pods (a JobSet
    #: `paictl stop --suspend` left under Kueue: the Workloads it deactivated) and whose advice names the cluster as
    #: the user did (`Cluster.kubectl`). None: `view` says it all.
    read: Optional[Callable[[Cluster, Mapping[str, Any], list], JobView]] = None
    #: job → (kind, name) of the objects whose Warning events say why it has no pod yet (its controllers record
    #: a pod or child they could not create there, not on any pod). None: the job object's own status says it.
    event_objects: Optional[Callable[[Mapping[str, Any]], list[tuple[str, str]]]] = None

    def view_on(self, cluster: Cluster, job: Mapping[str, Any], pods: list) -> JobView:
        """The job's view as read on `cluster` (`read`, else `view`)."""
        return self.read(cluster, job, pods) if self.read is not None else self.view(job, pods)
