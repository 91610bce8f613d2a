"""A MarsJob's status in paictl's words (targets/states.py): pure functions over the objects the API server returns.

KubeDL's status (marsjob.md 3) is a list of conditions, newest last, plus per-replica-type counts. The mapping, in
the order it is decided (the first row that matches wins):

    MarsJob                                                   | JobState   | why
    ----------------------------------------------------------+------------+-----------------------------------------
    a condition Succeeded with status True (anywhere)         | SUCCEEDED  | all scheduler pods exited 0 (completed)
    a condition Failed with status True (anywhere)            | FAILED     | a scheduler pod failed (MarsJobFailed),
                                                              |            | backoffLimit or activeDeadlineSeconds
                                                              |            | exceeded (JobFailed)
    metadata.deletionTimestamp set                            | STOPPING   | `stop` deletes the MarsJob; its pods go
    newest condition with status True is Running              | RUNNING    | a worker is active
    ... is Restarting                                         | RESTARTING | a failover restart (MarsJobRestarting)
    ... is Created or Queuing                                 | PENDING    | accepted, pods not running yet
    no status, or no condition with status True               | PENDING    | the operator has not reconciled it yet
    ... is any other type                                     | UNKNOWN    | a newer KubeDL than paictl knows

Succeeded and Failed are searched in all conditions, not only the newest: KubeDL adds nothing after them, but
scanning is what its own IsSucceeded/IsFailed do, and it survives a reordered list. When Failed or Succeeded is
added, KubeDL flips an earlier Running to status False, hence "status True" everywhere. A MarsJob that is gone (404)
after `ttlSecondsAfterFinished` is the caller's business: it finished and was collected.

Pods are identified by the labels KubeDL sets (marsjob.md 4): `job-name`, `replica-type` (lower case) and
`replica-index`. Their state is that of the container named `mars`, the one KubeDL reads exit codes from.
"""

from __future__ import annotations

from typing import Any, Mapping

from paictl.targets.states import JobState, JobView, TaskView, condition_message

API_VERSIONS: tuple[str, ...] = ("training.kubedl.io/v1alpha1", "kubedl.io/v1alpha1")
KIND = "MarsJob"
PLURAL = "marsjobs"
#: KubeDL's reconcile order, which is also the order tasks are listed in.
REPLICA_TYPES = ("Scheduler", "WebService", "Worker")
CONTAINER = "mars"

_FINAL = (("Succeeded", JobState.SUCCEEDED), ("Failed", JobState.FAILED))
_ONGOING = {"Running": JobState.RUNNING, "Restarting": JobState.RESTARTING, "Created": JobState.PENDING,
            "Queuing": JobState.PENDING}


def job_state(marsjob: Mapping[str, Any]) -> JobState:
    return _decide(marsjob)[0]


def task_views(marsjob: Mapping[str, Any], pods: list[Mapping[str, Any]]) -> tuple[TaskView, ...]:
    """One TaskView per pod of this MarsJob, Scheduler first, then WebService and Worker, each by index."""
    name = dig(marsjob, "metadata", "name")
    by_lower = {t.lower(): t for t in REPLICA_TYPES}
    views = []
    for pod in pods:
        labels = dig(pod, "metadata", "labels") or {}
        replica_type = by_lower.get(str(labels.get("replica-type", "")).lower())
        index = labels.get("replica-index")
        if labels.get("job-name") != name or replica_type is None or not str(index).isdigit():
            continue
        container = next((c for c in dig(pod, "status", "containerStatuses") or ()
                          if isinstance(c, Mapping) and c.get("name") == CONTAINER), {})
        terminated = dig(container, "state", "terminated")
        views.append(TaskView(role=replica_type, index=int(str(index)), state=pod_state_word(pod, container),
                              attempt=int(container.get("restartCount") or 0),
                              node=dig(pod, "spec", "nodeName") or None,
                              exit_code=terminated.get("exitCode") if isinstance(terminated, Mapping) else None))
    return tuple(sorted(views, key=lambda v: (REPLICA_TYPES.index(v.role), v.index)))


def job_view(marsjob: Mapping[str, Any], pods: list[Mapping[str, Any]]) -> JobView:
    state, condition = _decide(marsjob)
    tasks = task_views(marsjob, pods)
    if condition is not None:
        message = condition_message(condition)
    elif state is JobState.STOPPING:
        message = "the MarsJob is being deleted"
    else:
        message = "waiting for the KubeDL operator to take the MarsJob"
    schedulers = [t for t in tasks if t.role == "Scheduler"]
    triggered_by = completion_code = None
    if state.is_final and schedulers and (state is JobState.SUCCEEDED or
                                          (condition or {}).get("reason") == "MarsJobFailed"):
        decider = next((t for t in schedulers if t.exit_code not in (None, 0)), schedulers[0]) \
            if state is JobState.FAILED else schedulers[0]
        triggered_by, completion_code = (decider.role, decider.index), decider.exit_code
    namespace = dig(marsjob, "metadata", "namespace") or "default"
    return JobView(name=str(dig(marsjob, "metadata", "name")), state=state, tasks=tasks, message=message,
                   completion_code=completion_code, triggered_by=triggered_by,
                   where=f"{KIND} {namespace}/{dig(marsjob, 'metadata', 'name')}")


def event_objects(marsjob: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Where a MarsJob without pods says why: KubeDL records a pod it could not create (FailedCreatePod) and a
    Service (FailedCreateService) on the MarsJob itself (pkg/job_controller/pod_control.go, service_control.go)."""
    return [(KIND, str(dig(marsjob, "metadata", "name")))]


def _decide(marsjob: Mapping[str, Any]) -> tuple[JobState, Mapping[str, Any] | None]:
    """The state and the condition that decided it (None when no condition did)."""
    conditions = [c for c in dig(marsjob, "status", "conditions") or () if isinstance(c, Mapping)]
    true = [c for c in conditions if c.get("status") == "True"]
    for kind, state in _FINAL:
        found = next((c for c in true if c.get("type") == kind), None)
        if found is not None:
            return state, found
    if dig(marsjob, "metadata", "deletionTimestamp"):
        return JobState.STOPPING, None
    if not true:
        return JobState.PENDING, None
    newest = true[-1]
    return _ONGOING.get(str(newest.get("type")), JobState.UNKNOWN), newest


def pod_state_word(pod: Mapping[str, Any], container: Mapping[str, Any]) -> str:
    """The word shown for a task: Terminating, else the `mars` container's state or reason, else the pod's."""
    if dig(pod, "metadata", "deletionTimestamp"):
        return "Terminating"
    state = container.get("state") if isinstance(container.get("state"), Mapping) else {}
    if isinstance(state.get("terminated"), Mapping):
        terminated = state["terminated"]
        return terminated.get("reason") or ("Completed" if terminated.get("exitCode") == 0 else "Error")
    if isinstance(state.get("waiting"), Mapping):
        return state["waiting"].get("reason") or "Waiting"
    if isinstance(state.get("running"), Mapping):
        return "Running"
    return dig(pod, "status", "reason") or dig(pod, "status", "phase") or "Pending"


def dig(obj: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj
