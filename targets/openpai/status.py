"""Reading an OpenPAI job detail (`GET /api/v2/jobs/{user}~{job}`, swagger `JobDetail`) in paictl's job states.

The REST server already folds FrameworkController's attempt state machine into six words (`jobStatus.state`) and
keeps the controller's own word beside it (`subState`). The table below maps the six; the sub-state refines two of
them (a WAITING job that has retried is restarting; a RUNNING job whose attempt is completing says so). Exit codes
are the runtime's (`containerExitCode`, `appExitCode`): the exit spec gives each its phrase. The server's own
`containerExitSpec`/`appExitSpec` is used when present; otherwise the code is looked up in paictl's exit rules
(`paictl.compiler.exit_rules`, or `--exit-spec FILE`), so a user sees "231 ContainerSyntaxError" either way.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

from paictl.targets.states import JobState, JobView, TaskView

# OpenPAI job state → paictl JobState (what each means in OpenPAI).
OPENPAI_STATES: dict[str, JobState] = {
    "WAITING": JobState.PENDING,      # submitted; the attempt is being created, scheduled or its images pulled
    "RUNNING": JobState.RUNNING,      # at least one task of the current attempt has started
    "STOPPING": JobState.STOPPING,    # executionType STOP was asked for; the pods are being deleted
    "STOPPED": JobState.STOPPED,      # final: stopped on request (completion code -210/-220)
    "SUCCEEDED": JobState.SUCCEEDED,  # final: the completion policy says succeeded
    "FAILED": JobState.FAILED,        # final: the completion policy says failed, and no retry is left
    "UNKNOWN": JobState.UNKNOWN,      # the server could not read the Framework either
}

# FrameworkController sub-states in which a WAITING job with retries > 0 is starting its next attempt.
RETRY_SUBSTATES = frozenset({"AttemptCreationPending", "AttemptCreationRequested", "AttemptPreparing",
                             "AttemptCompleted"})
# Sub-states in which a RUNNING job's attempt is already completing (the completion policy was met).
COMPLETING_SUBSTATES = frozenset({"AttemptDeletionPending", "AttemptDeletionRequested", "AttemptDeleting",
                                  "AttemptCompleted"})


def job_state(status: Mapping[str, Any]) -> JobState:
    state = OPENPAI_STATES.get(str(status.get("state") or ""), JobState.UNKNOWN)
    if status.get("executionType") == "STOP" and not state.is_final:
        # A stop was asked for and the server still says WAITING or RUNNING until the controller acts on it (the
        # web portal shows "Stopping" from executionType, recordings/openpai job-stopped).
        return JobState.STOPPING
    if state is JobState.PENDING and int(status.get("retries") or 0) > 0 \
            and status.get("subState") in RETRY_SUBSTATES:
        return JobState.RESTARTING
    return state


def created_at(status: Mapping[str, Any]) -> Optional[str]:
    """When the job was submitted, RFC 3339 in UTC (the AGE column): `submissionTime`, else `createdTime`, both
    epoch milliseconds in the server's answers."""
    import datetime

    for key in ("submissionTime", "createdTime"):
        value = status.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 253402300800000:
            moment = datetime.datetime.fromtimestamp(value / 1000, datetime.timezone.utc)
            return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    return None


def diagnosis(code: Optional[int], spec: Optional[Mapping[str, Any]], rules: Any = None) -> Optional[str]:
    """"code Phrase" for a non-zero exit code: the server's exit spec, else paictl's rules for that code."""
    if code is None or code == 0:
        return None
    if spec and spec.get("phrase"):
        return f"{spec.get('code', code)} {spec['phrase']}"
    from paictl.compiler.exit_rules import analyse, load_rule_set

    rule_set = rules if rules is not None else load_rule_set(None)
    known = next((rule for rule in rule_set.rules if rule.code == code), None)
    # A runtime code (e.g. 231) was already decided from the logs by the runtime; anything else is analysed as a
    # bare container exit code, which falls to the default rule when no pattern applies.
    rule = known if known is not None else analyse(code, rules=rule_set).rule
    return f"{rule.code} {rule.phrase}"


def task_views(detail: Mapping[str, Any], rules: Any = None) -> tuple[TaskView, ...]:
    views = []
    for role, role_status in (detail.get("taskRoles") or {}).items():
        for task in (role_status or {}).get("taskStatuses") or []:
            code = task.get("containerExitCode")
            views.append(TaskView(
                role=str(role), index=int(task.get("taskIndex") or 0), state=str(task.get("taskState") or ""),
                attempt=int(task.get("retries") or task.get("attemptId") or 0),
                node=task.get("containerNodeName") or task.get("containerIp") or None,
                exit_code=code if isinstance(code, int) else None,
                diagnosis=diagnosis(code if isinstance(code, int) else None, task.get("containerExitSpec"), rules)))
    return tuple(sorted(views, key=lambda v: (v.role, v.index)))


def job_view(detail: Mapping[str, Any], *, where: str = "", rules: Any = None) -> JobView:
    status = detail.get("jobStatus") or {}
    state = job_state(status)
    role, index = status.get("appExitTriggerTaskRoleName"), status.get("appExitTriggerTaskIndex")
    code = status.get("appExitCode")
    return JobView(
        name=str(detail.get("name") or ""), state=state,
        attempt=int(status.get("attemptId") if status.get("attemptId") is not None else status.get("retries") or 0),
        tasks=task_views(detail, rules),
        completion_code=code if isinstance(code, int) and state.is_final else None,
        message=_message(state, status, rules),
        triggered_by=(str(role), int(index)) if role is not None and index is not None else None,
        where=where)


def _message(state: JobState, status: Mapping[str, Any], rules: Any) -> str:
    sub_state = str(status.get("subState") or "")
    if state.is_final:
        code = status.get("appExitCode")
        parts = [diagnosis(code, status.get("appExitSpec"), rules) if isinstance(code, int) else None,
                 " ".join(str(status.get("appExitTriggerMessage") or "").split()) or None]
        return "; ".join(part for part in parts if part)
    if state is JobState.RESTARTING:
        delay = status.get("retryDelayTime")
        return f"retry {status.get('retries')}" + (f" in {delay}s" if delay is not None else "") + f" ({sub_state})"
    if state is JobState.RUNNING and sub_state in COMPLETING_SUBSTATES:
        return f"completing ({sub_state})"
    if state is JobState.STOPPING:
        return f"stop requested ({sub_state})" if sub_state else "stop requested"
    return sub_state


def summary_view(summary: Mapping[str, Any], *, where: str = "", owner: bool = False) -> JobView:
    """A row of `GET /api/v2/jobs` (swagger `JobSummary`): the state without tasks, for `paictl status`. `owner`:
    name the job `user~job`, as a listing of every user's jobs must."""
    state = job_state(summary)
    code = summary.get("appExitCode")
    name = str(summary.get("name") or "")
    if owner and summary.get("username"):
        name = f"{summary['username']}~{name}"
    message = str(summary.get("subState") or "")
    if state is JobState.STOPPING:
        message = f"stop requested ({message})" if message else "stop requested"
    return JobView(name=name, state=state, attempt=int(summary.get("retries") or 0),
                   completion_code=code if isinstance(code, int) and state.is_final else None,
                   message=message, where=where, created=created_at(summary))
