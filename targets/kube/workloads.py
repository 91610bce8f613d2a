"""The workload kinds the Kubernetes backend runs, one entry each: how to find a job's pods, how to read its state.

Each kind's state table lives beside its target (`targets/framework/status.py`, `targets/mars/status.py`,
`targets/jobset/status.py`); this
module only connects them to the follower. Adding a Kubernetes target is one entry in `WORKLOADS` (and its name in
`paictl.targets.RUNS_ON`).
"""

from __future__ import annotations

from typing import Callable, Optional

from paictl.targets.kube.kind import Workload


def _framework() -> Workload:
    from paictl.targets.framework import status
    from paictl.targets.kube.client import FRAMEWORK

    return Workload(resource=FRAMEWORK, pod_selector=lambda name: f"FC_FRAMEWORK_NAME={name}",
                    view=lambda job, pods: status.job_view(job), pod_task=_framework_pod_task,
                    termination_message=status.termination_message)


def _mars() -> Workload:
    from paictl.targets.kube.client import MARSJOB
    from paictl.targets.mars import status

    return Workload(resource=MARSJOB, pod_selector=lambda name: f"job-name={name}", view=status.job_view,
                    pod_task=_mars_pod_task, event_objects=status.event_objects)


def _framework_pod_task(pod: dict) -> Optional[tuple[str, int]]:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    index = str(labels.get("FC_TASK_INDEX", ""))
    return (labels["FC_TASKROLE_NAME"], int(index)) if "FC_TASKROLE_NAME" in labels and index.isdigit() else None


def _mars_pod_task(pod: dict) -> Optional[tuple[str, int]]:
    from paictl.targets.mars.status import REPLICA_TYPES

    labels = (pod.get("metadata") or {}).get("labels") or {}
    role = {t.lower(): t for t in REPLICA_TYPES}.get(str(labels.get("replica-type", "")).lower())
    index = str(labels.get("replica-index", ""))
    return (role, int(index)) if role and index.isdigit() else None


def _jobset() -> Workload:
    from paictl.targets.jobset.kube import workload as jobset_workload

    return jobset_workload()


#: Target name -> its workload, in the order a job NAME is looked for when no --target is given.
WORKLOADS: dict[str, Callable[[], Workload]] = {
    "framework": _framework,
    "mars": _mars,
    "jobset": _jobset,
}


def workload(target: str) -> Workload:
    return WORKLOADS[target]()


def target_of(kind: str) -> str:
    """The target whose workload has this object kind (e.g. Framework -> framework)."""
    for target, make in WORKLOADS.items():
        if make().resource.kind == kind:
            return target
    raise KeyError(kind)
