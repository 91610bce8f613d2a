"""Reading a Framework's status the way FrameworkController means it (reference frameworkcontroller.md b).

FrameworkController has no status subresource and no conditions: `status.state` walks an attempt state machine in
which `AttemptCompleted` is *not* final (a retry may follow) and only `Completed` is. Success or failure then comes
from the completion status type, and the codes -210/-220 mean someone stopped it. A pod that can never start (an
image that cannot be pulled) keeps the Framework in `AttemptPreparing` forever (FrameworkController issue #14), so
the follower, not this table, decides when waiting has lasted too long.
"""

from __future__ import annotations

import base64
import gzip
import json
from typing import Any, Mapping, Optional

from paictl.targets.states import JobState, JobView, TaskView

#: Completion codes that mean "stopped on request", not a failure: executionType Stop (-210) and a task stopped
#: because its attempt completed (-220). OpenPAI's convertState treats both so.
STOP_CODES = frozenset({-210, -220})

# FrameworkState → JobState, as OpenPAI's frameworkConverter.js convertState decides (and what it means).
FRAMEWORK_STATES: dict[str, JobState] = {
    "AttemptCreationPending": JobState.PENDING,     # the attempt's ConfigMap is not created yet (or retry delay)
    "AttemptCreationRequested": JobState.PENDING,   # ConfigMap create sent, not yet seen
    "AttemptPreparing": JobState.PENDING,           # no task has run yet: scheduling, image pulls, gang barrier
    "AttemptRunning": JobState.RUNNING,             # at least one task of this attempt has run
    "AttemptDeletionPending": JobState.RUNNING,     # completion policy met; STOPPING when stopped (see below)
    "AttemptDeletionRequested": JobState.RUNNING,
    "AttemptDeleting": JobState.RUNNING,
    "AttemptCompleted": JobState.RUNNING,           # NOT final: a retry may follow (RESTARTING when scheduled)
    "Completed": JobState.SUCCEEDED,                # the only final state; the completion type decides (see below)
}
COMPLETING_STATES = frozenset({"AttemptDeletionPending", "AttemptDeletionRequested", "AttemptDeleting",
                               "AttemptCompleted"})

# TaskState words are shown as FrameworkController writes them; this says which ones mean "done".
TASK_FINAL_STATE = "Completed"


def decode_task_role_statuses(attempt: Mapping[str, Any]) -> list[dict[str, Any]]:
    """`taskRoleStatuses`, or its gzip+base64 form a controller with largeFrameworkCompression writes instead."""
    statuses = attempt.get("taskRoleStatuses")
    if statuses is not None:
        return list(statuses)
    compressed = attempt.get("taskRoleStatusesCompressed")
    if not compressed:
        return []
    try:
        return list(json.loads(gzip.decompress(base64.b64decode(compressed))))
    except (ValueError, OSError, TypeError):
        return []


def job_state(framework: Mapping[str, Any]) -> JobState:
    status = framework.get("status")
    stop_asked = (framework.get("spec") or {}).get("executionType") == "Stop"
    if not status:
        return JobState.STOPPING if stop_asked else JobState.PENDING  # not seen by the controller yet
    state = status.get("state")
    completion = (status.get("attemptStatus") or {}).get("completionStatus") or {}
    code = completion.get("code")
    if state == "Completed":
        if code in STOP_CODES:
            return JobState.STOPPED
        return JobState.SUCCEEDED if (completion.get("type") or {}).get("name") == "Succeeded" else JobState.FAILED
    if state not in FRAMEWORK_STATES:
        return JobState.UNKNOWN
    if stop_asked or (state in COMPLETING_STATES and code in STOP_CODES):
        return JobState.STOPPING
    if state == "AttemptCompleted" and (status.get("retryPolicyStatus") or {}).get("retryDelaySec") is not None:
        return JobState.RESTARTING
    return FRAMEWORK_STATES[state]


def task_views(framework: Mapping[str, Any]) -> tuple[TaskView, ...]:
    attempt = (framework.get("status") or {}).get("attemptStatus") or {}
    views = []
    for role in decode_task_role_statuses(attempt):
        for task in role.get("taskStatuses") or []:
            task_attempt = task.get("attemptStatus") or {}
            completion = task_attempt.get("completionStatus") or {}
            code = completion.get("code")
            views.append(TaskView(
                role=str(role.get("name", "")), index=int(task.get("index", 0)),
                state=str(task.get("state", "")),
                attempt=int((task.get("retryPolicyStatus") or {}).get("totalRetriedCount", 0)),
                node=task_attempt.get("podNodeName") or None,
                exit_code=_container_exit_code(completion),
                diagnosis=f"{code} {completion.get('phrase', '')}".strip() if code not in (None, 0) else None))
    return tuple(sorted(views, key=lambda v: (v.role, v.index)))


def termination_message(framework: Mapping[str, Any], role: str, index: int) -> str:
    """The failed container's termination message FrameworkController copied from the pod: with its default
    FallbackToLogsOnError, the last lines of the log. Only for failure analysis, never shown (it is user output)."""
    attempt = (framework.get("status") or {}).get("attemptStatus") or {}
    for role_status in decode_task_role_statuses(attempt):
        if role_status.get("name") != role:
            continue
        for task in role_status.get("taskStatuses") or []:
            if task.get("index") == index:
                completion = (task.get("attemptStatus") or {}).get("completionStatus") or {}
                containers = (completion.get("pod") or {}).get("containers") or []
                failed = [c for c in containers if c.get("code") not in (None, 0)]
                return str((failed or containers or [{}])[-1].get("message") or "")
    return ""


def _container_exit_code(completion: Mapping[str, Any]) -> Optional[int]:
    """The failed container's code, else any container's: what the process itself returned."""
    containers = (completion.get("pod") or {}).get("containers") or []
    codes = [c.get("code") for c in containers if isinstance(c.get("code"), int)]
    failed = [code for code in codes if code != 0]
    if failed:
        return failed[-1]
    return codes[-1] if codes else None


def job_view(framework: Mapping[str, Any]) -> JobView:
    metadata = framework.get("metadata") or {}
    status = framework.get("status") or {}
    attempt = status.get("attemptStatus") or {}
    completion = attempt.get("completionStatus") or {}
    trigger = completion.get("trigger") or {}
    state = job_state(framework)
    triggered_by = None
    if trigger.get("taskRoleName") is not None and trigger.get("taskIndex") is not None:
        triggered_by = (str(trigger["taskRoleName"]), int(trigger["taskIndex"]))
    return JobView(
        name=str(metadata.get("name", "")), state=state,
        attempt=int(attempt.get("id", (status.get("retryPolicyStatus") or {}).get("totalRetriedCount", 0)) or 0),
        tasks=task_views(framework),
        completion_code=completion.get("code") if completion else None,
        message=_message(state, status, completion, trigger),
        triggered_by=triggered_by,
        where=f"Framework {metadata.get('namespace', '')}/{metadata.get('name', '')}")


def _message(state: JobState, status: Mapping[str, Any], completion: Mapping[str, Any],
             trigger: Mapping[str, Any]) -> str:
    if not status:
        return "waiting for FrameworkController to pick the job up"
    if completion and (state.is_final or state in (JobState.STOPPING, JobState.RESTARTING)):
        phrase = str(completion.get("phrase") or "")
        reason = str(trigger.get("message") or "")
        if state is JobState.RESTARTING:
            delay = (status.get("retryPolicyStatus") or {}).get("retryDelaySec")
            return f"{phrase}; retrying in {delay}s" if phrase else f"retrying in {delay}s"
        return "; ".join(part for part in (phrase, " ".join(reason.split())) if part)
    if state is JobState.STOPPING:
        return "stop requested"
    if status.get("state") == "AttemptCompleted":
        return "attempt completed; FrameworkController decides whether to retry"
    return ""
