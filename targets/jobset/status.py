"""A JobSet's status in paictl's words (targets/states.py): pure functions over the objects the API server returns.

The JobSet controller writes conditions, `terminalState`, `restarts` and per-replicatedJob counts of child Jobs
(reference jobset.md 1.4). The mapping, in the order it is decided (the first row that matches wins):

    JobSet                                                    | JobState   | why
    ----------------------------------------------------------+------------+-----------------------------------------
    status.terminalState "Completed", or a condition          | SUCCEEDED  | the successPolicy was met (reason
    Completed with status True                                |            | AllJobsCompleted)
    status.terminalState "Failed", or a condition Failed      | FAILED     | FailedJobs (a Job failed, no restarts
    with status True                                          |            | allowed), ReachedMaxRestarts (it failed
                                                              |            | again after maxRestarts),
                                                              |            | FailJobSetFailurePolicyAction
    metadata.deletionTimestamp set                            | STOPPING   | `paictl stop` deletes it (foreground)
    spec.suspend true and paictl's stop annotation            | STOPPED    | `paictl stop --suspend` (under Kueue:
                                                              |            | while its Workloads stay deactivated,
                                                              |            | see `after_stop`)
    spec.suspend true, or a condition Suspended True          | PENDING    | suspended: Kueue has not admitted it yet
                                                              |            | (said so when it carries a queue name)
    a condition RestartingJobSet with status True             | RESTARTING | a Job failed, all are being recreated
    a child Job ready, succeeded or failed, or a pod running  | RUNNING    |
    anything else (no status yet, Jobs created, pods pending) | PENDING    |

The attempt is `status.restarts` (every recreation of the Jobs, as a new FrameworkAttempt). The controller's own
`jobSetFinished` reads exactly the Completed and Failed conditions; terminalState says the same in one field, and
either is enough. A JobSet that is gone (404) after `ttlSecondsAfterFinished` is the caller's business.

Tasks come from the pods, which JobSet and the Job controller label: `jobset.sigs.k8s.io/jobset-name`,
`jobset.sigs.k8s.io/replicatedjob-name`, `jobset.sigs.k8s.io/restart-attempt` and the completion index
(`batch.kubernetes.io/job-completion-index`, label or annotation). A retried index has several pods (restartPolicy
Never leaves failed ones): the newest pod of the current restart attempt is the task, the older ones its attempts.
The role shown is the task role's own name, from the pod annotation paictl sets (replicatedJob names are converted).
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any, Mapping, Optional, Sequence

from paictl.targets.mars.status import dig, pod_state_word  # the same reading of a pod's main container
from paictl.targets.states import JobState, JobView, TaskView, condition_message

API_VERSION = "jobset.x-k8s.io/v1alpha2"
KIND = "JobSet"
PLURAL = "jobsets"
CONTAINER = "app"
JOBSET_LABEL = "jobset.sigs.k8s.io/jobset-name"
RJOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
RESTART_LABEL = "jobset.sigs.k8s.io/restart-attempt"
INDEX_KEY = "batch.kubernetes.io/job-completion-index"
ROLE_ANNOTATION = "paictl.dev/task-role"
#: Set by `paictl stop --suspend` beside `spec.suspend: true`, so that a suspension paictl made reads as stopped
#: while one Kueue made (a JobSet waiting for admission) reads as pending.
SUSPENDED_BY_ANNOTATION = "paictl.dev/suspended-by"
#: Set by `paictl stop --suspend` of a JobSet Kueue manages: the Workloads it deactivated, comma-separated. Resuming
#: is their `spec.active: true`; `spec.suspend: false` on the JobSet alone is undone by Kueue at once (a job whose
#: Workload is not admitted is suspended again), so the status names them.
DEACTIVATED_WORKLOADS_ANNOTATION = "paictl.dev/deactivated-kueue-workloads"
#: The label Kueue reads to admit a workload through a LocalQueue (all pods of the JobSet as one unit).
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"

_COUNTS = ("ready", "active", "succeeded", "failed", "suspended")


def job_state(jobset: Mapping[str, Any]) -> JobState:
    return _decide(jobset, [])[0]


def pod_task(pod: Mapping[str, Any]) -> Optional[tuple[str, int]]:
    """(task role, index) of a JobSet pod, or None for a pod that is not one."""
    meta = pod.get("metadata") or {}
    labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
    index = str(labels.get(INDEX_KEY, annotations.get(INDEX_KEY, "")))
    role = annotations.get(ROLE_ANNOTATION) or labels.get(RJOB_LABEL)
    return (str(role), int(index)) if role and index.isdigit() else None


def task_views(jobset: Mapping[str, Any], pods: list[Mapping[str, Any]]) -> tuple[TaskView, ...]:
    """One TaskView per task (role, index) of the current restart attempt, in spec order, then by index."""
    name = dig(jobset, "metadata", "name")
    restarts = str(dig(jobset, "status", "restarts") or 0)
    by_task: dict[tuple[str, int], list[Mapping[str, Any]]] = {}
    rjob_of: dict[str, str] = {}
    for pod in pods:
        labels = dig(pod, "metadata", "labels") or {}
        task = pod_task(pod)
        if labels.get(JOBSET_LABEL) != name or task is None or str(labels.get(RESTART_LABEL, "0")) != restarts:
            continue
        by_task.setdefault(task, []).append(pod)
        rjob_of[task[0]] = str(labels.get(RJOB_LABEL))
    order = {str(r.get("name")): i for i, r in enumerate(dig(jobset, "spec", "replicatedJobs") or ())
             if isinstance(r, Mapping)}
    views = []
    for (role, index), attempts in by_task.items():
        attempts.sort(key=_created)
        pod = attempts[-1]
        container = next((c for c in dig(pod, "status", "containerStatuses") or ()
                          if isinstance(c, Mapping) and c.get("name") == CONTAINER), {})
        terminated = dig(container, "state", "terminated")
        views.append(TaskView(role=role, index=index, state=pod_state_word(pod, container), attempt=len(attempts) - 1,
                              node=dig(pod, "spec", "nodeName") or None,
                              exit_code=terminated.get("exitCode") if isinstance(terminated, Mapping) else None))
    return tuple(sorted(views, key=lambda v: (order.get(rjob_of[v.role], len(order)), v.role, v.index)))


def job_view(jobset: Mapping[str, Any], pods: list[Mapping[str, Any]], *, kubectl: str = "kubectl",
             kueue_workloads: Optional[Sequence[Mapping[str, Any]]] = None) -> JobView:
    """`kubectl`: how the advice it prints starts (the flags that reach the cluster, `Cluster.kubectl`).
    `kueue_workloads`: the Kueue Workloads of a JobSet `paictl stop --suspend` left deactivated (`deactivated_
    workloads` names them), as read now; None: not read, and the JobSet's own word stands."""
    state, condition = _decide(jobset, pods)
    tasks = task_views(jobset, pods)
    queue = (dig(jobset, "metadata", "labels") or {}).get(QUEUE_LABEL)
    stopped = None
    if state is JobState.STOPPED:
        state, stopped = after_stop(jobset, kueue_workloads, kubectl)
    if stopped is not None:
        message = stopped
    elif state is JobState.PENDING and queue and dig(jobset, "spec", "suspend") is True:
        # the JobSet controller's condition says only "jobset is suspended"
        message = f"queued in Kueue's LocalQueue {queue}, not admitted yet"
    elif condition is not None:
        message = condition_message(condition)
    elif state is JobState.STOPPING:
        message = "the JobSet is being deleted"
    else:
        message = progress(jobset) or "waiting for the JobSet controller"
    triggered_by = completion_code = None
    if state is JobState.FAILED:
        failed = [t for t in tasks if t.exit_code not in (None, 0)]
        named = _tasks_of_job(_first_failed_job(condition), pods)
        failed = [t for t in failed if (t.role, t.index) in named] or failed
        if failed:
            triggered_by, completion_code = (failed[0].role, failed[0].index), failed[0].exit_code
    elif state is JobState.SUCCEEDED:
        completion_code = 0
    namespace = dig(jobset, "metadata", "namespace") or "default"
    return JobView(name=str(dig(jobset, "metadata", "name")), state=state,
                   attempt=int(dig(jobset, "status", "restarts") or 0), tasks=tasks, message=message,
                   completion_code=completion_code, triggered_by=triggered_by,
                   where=f"{KIND} {namespace}/{dig(jobset, 'metadata', 'name')}")


def event_objects(jobset: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Where a JobSet without pods says why: the JobSet (the JobSet controller's JobCreationFailed) and its Jobs
    `<js>-<rjob>-<i>` (the Job controller's FailedCreate: the namespace's quota, an admission webhook)."""
    name = str(dig(jobset, "metadata", "name"))
    jobs = [("Job", f"{name}-{rjob.get('name')}-{index}") for rjob in dig(jobset, "spec", "replicatedJobs") or ()
            if isinstance(rjob, Mapping) for index in range(_replicas(rjob))]
    return [("JobSet", name), *jobs]


def _replicas(rjob: Mapping[str, Any]) -> int:
    replicas = rjob.get("replicas", 1)
    return replicas if isinstance(replicas, int) and 0 <= replicas <= 1024 else 1


def deactivated_workloads(jobset: Mapping[str, Any]) -> list[str]:
    """The Kueue Workloads `paictl stop --suspend` deactivated, as its annotation on the JobSet names them."""
    annotations = dig(jobset, "metadata", "annotations") or {}
    return [w for w in str(annotations.get(DEACTIVATED_WORKLOADS_ANNOTATION) or "").split(",") if w]


#: Kueue's reasons for an eviction that its deactivation (`spec.active: false`) made: InactiveWorkload before
#: Kueue 0.9, Deactivated since (pkg/workload: WorkloadDeactivated); not a preemption when the Workload is active.
_DEACTIVATION_REASONS = ("Deactivated", "InactiveWorkload")


def after_stop(jobset: Mapping[str, Any], workloads: Optional[Sequence[Mapping[str, Any]]],
               kubectl: str = "kubectl") -> tuple[JobState, str]:
    """The state and message of a JobSet `paictl stop --suspend` suspended. Without Kueue, or with its Workloads
    still inactive: stopped, with the commands that resume it. Under Kueue, a user may resume by making the Workload
    active again and leave paictl's annotations: then Kueue decides, and its Workload says what is true (the JobSet
    stays suspended until Kueue admits it, and is suspended again when Kueue evicts it):

        Workloads (the JobSet's, read now)              | JobState | message
        ------------------------------------------------+----------+------------------------------------------
        none read, or all `spec.active: false`          | STOPPED  | suspended by paictl, how to resume
        an active one whose condition Admitted is True  | PENDING  | admitted by Kueue into its ClusterQueue,
                                                        |          | starting (Kueue unsuspends the JobSet)
        an active one Evicted (not by a deactivation)   | PENDING  | preempted (or evicted) by Kueue: the
                                                        |          | condition's reason and message; requeued
        an active one otherwise                         | PENDING  | queued in the LocalQueue (and why, from
                                                        |          | QuotaReserved)
    """
    active = [w for w in workloads or () if dig(w, "spec", "active") is not False]
    if not active:
        return JobState.STOPPED, _stopped_message(jobset, kubectl)
    workload = active[0]
    name = dig(workload, "metadata", "name")
    true = {str(c.get("type")): c for c in dig(workload, "status", "conditions") or ()
            if isinstance(c, Mapping) and c.get("status") == "True"}
    if "Admitted" in true:
        where = dig(workload, "status", "admission", "clusterQueue")
        return JobState.PENDING, (f"resumed: Kueue workload {name} admitted"
                                  + (f" into ClusterQueue {where}" if where else "") + ", starting")
    evicted = true.get("Evicted")
    if evicted is not None and evicted.get("reason") not in _DEACTIVATION_REASONS:
        verb = "preempted" if evicted.get("reason") == "Preempted" else "evicted"
        return JobState.PENDING, (f"{verb} by Kueue after a resume (workload {name}: {condition_message(evicted)}); "
                                  "queued to be admitted again")
    queue = dig(workload, "spec", "queueName") or (dig(jobset, "metadata", "labels") or {}).get(QUEUE_LABEL)
    waiting = next((c for c in dig(workload, "status", "conditions") or () if isinstance(c, Mapping)
                    and c.get("type") == "QuotaReserved" and c.get("status") == "False" and c.get("message")), None)
    return JobState.PENDING, (f"resumed: queued in Kueue's LocalQueue {queue}, not admitted yet"
                              + (f" ({condition_message(waiting)})" if waiting else ""))


#: `paictl stop --suspend` undone on a JobSet Kueue does not manage: running again, and no longer marked as paictl's
#: suspension (one merge patch, so that a later suspension by someone else reads as theirs).
_RESUME_PATCH = json.dumps({"metadata": {"annotations": {SUSPENDED_BY_ANNOTATION: None}}, "spec": {"suspend": False}},
                           separators=(",", ":"))
_ACTIVATE_PATCH = json.dumps({"spec": {"active": True}}, separators=(",", ":"))


def _stopped_message(jobset: Mapping[str, Any], kubectl: str) -> str:
    """How to resume a JobSet `paictl stop --suspend` stopped, as commands to run (`kubectl` reaches the cluster as
    paictl did; the namespace is the JobSet's). Under Kueue: its Workloads active again (Kueue then unsuspends the
    JobSet once it admits them), and paictl's annotations off, so that the JobSet reads as queued, not stopped,
    while it waits for quota."""
    name = shlex.quote(str(dig(jobset, "metadata", "name")))
    where = f"-n {shlex.quote(str(dig(jobset, 'metadata', 'namespace') or 'default'))}"
    workloads = deactivated_workloads(jobset)
    if not workloads:
        return (f"suspended by paictl stop --suspend (resume: {kubectl} patch jobset {name} {where} --type merge "
                f"-p {shlex.quote(_RESUME_PATCH)})")
    resume = [f"{kubectl} patch workloads.kueue.x-k8s.io {shlex.quote(w)} {where} --type merge "
              f"-p {shlex.quote(_ACTIVATE_PATCH)}" for w in workloads]
    resume.append(f"{kubectl} annotate jobset {name} {where} {SUSPENDED_BY_ANNOTATION}- "
                  f"{DEACTIVATED_WORKLOADS_ANNOTATION}-")
    return (f"suspended by paictl stop --suspend, Kueue workload {', '.join(workloads)} deactivated "
            f"(resume: {' && '.join(resume)})")


def _first_failed_job(condition: Optional[Mapping[str, Any]]) -> str:
    """The Job JobSet blames in its Failed condition: kubernetes-sigs/jobset pkg/controllers/failure_policy.go
    messageWithFirstFailedJob, "<message> (first failed job: <job name>)", the Job that failed earliest."""
    found = re.search(r"\(first failed job: ([^)\s]+)\)", str((condition or {}).get("message") or ""))
    return found.group(1) if found else ""


def _tasks_of_job(job: str, pods: list[Mapping[str, Any]]) -> set[tuple[str, int]]:
    """The tasks whose pods belong to the Job named `job` (the Job controller's `batch.kubernetes.io/job-name`)."""
    if not job:
        return set()
    tasks = set()
    for pod in pods:
        labels = dig(pod, "metadata", "labels") or {}
        task = pod_task(pod)
        if task is not None and job in (labels.get("batch.kubernetes.io/job-name"), labels.get("job-name")):
            tasks.add(task)
    return tasks


def progress(jobset: Mapping[str, Any]) -> str:
    """Per task role (replicatedJob), its child Jobs by state: `worker: 1 ready; ps: 1 active`."""
    parts = []
    for status in dig(jobset, "status", "replicatedJobsStatus") or ():
        if not isinstance(status, Mapping):
            continue
        counts = ", ".join(f"{status[key]} {key}" for key in _COUNTS if status.get(key))
        if counts:
            parts.append(f"{status.get('name')}: {counts}")
    return "; ".join(parts)


def _decide(jobset: Mapping[str, Any], pods: list[Mapping[str, Any]]) -> tuple[JobState, Optional[Mapping]]:
    """The state and the condition that decided it (None when no condition did)."""
    conditions = [c for c in dig(jobset, "status", "conditions") or () if isinstance(c, Mapping)]
    true = {str(c.get("type")): c for c in conditions if c.get("status") == "True"}
    terminal = dig(jobset, "status", "terminalState") or ""
    for kind, state in (("Completed", JobState.SUCCEEDED), ("Failed", JobState.FAILED)):
        if terminal == kind or kind in true:
            return state, true.get(kind)
    if dig(jobset, "metadata", "deletionTimestamp"):
        return JobState.STOPPING, None
    if dig(jobset, "spec", "suspend") is True:
        if (dig(jobset, "metadata", "annotations") or {}).get(SUSPENDED_BY_ANNOTATION):
            return JobState.STOPPED, None
        return JobState.PENDING, true.get("Suspended")
    if "Suspended" in true:
        return JobState.PENDING, true["Suspended"]
    if "RestartingJobSet" in true:
        return JobState.RESTARTING, true["RestartingJobSet"]
    counts = [s for s in dig(jobset, "status", "replicatedJobsStatus") or () if isinstance(s, Mapping)]
    if any(s.get(key) for s in counts for key in ("ready", "succeeded", "failed")) or any(
            dig(pod, "status", "phase") == "Running" for pod in pods):
        return JobState.RUNNING, None
    if int(dig(jobset, "status", "restarts") or 0) > 0 and not any(
            c.get("type") == "RestartingJobSet" for c in conditions):
        # JobSet before v0.12 has no RestartingJobSet condition: a restart shows only as status.restarts going up
        # while the new attempt's Jobs come up (counted afresh)
        return JobState.RESTARTING, None
    return JobState.PENDING, None


def _created(pod: Mapping[str, Any]) -> tuple[str, str]:
    return str(dig(pod, "metadata", "creationTimestamp") or ""), str(dig(pod, "metadata", "name") or "")
