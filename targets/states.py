"""What every runner (local, Framework, MarsJob) reports while a job runs, in one vocabulary.

Each backend maps its own states onto these (the tables live in the backend's module, as TorchX keeps one per
scheduler); the CLI renders `JobView`s and turns the final one into an exit status without knowing the backend.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any, Optional


class JobState(str, enum.Enum):
    PENDING = "pending"          # accepted, nothing running yet (queued, pulling images, waiting for a gang)
    RUNNING = "running"
    RESTARTING = "restarting"    # an attempt ended and another will start (job retry)
    STOPPING = "stopping"        # a stop was asked for; processes/pods are being deleted
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    STOPPED = "stopped"
    UNKNOWN = "unknown"          # the backend reports something this version of paictl does not know

    @property
    def is_final(self) -> bool:
        return self in FINAL_STATES


FINAL_STATES = frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.STOPPED})

# Exit status of `submit --follow` / `status --follow` for a job that reached a final state (README "Exit codes").
# A local run interrupted by Ctrl-C exits 130 instead of 4: the user stopped paictl itself, as any Unix tool.
VERDICT_EXIT_CODES = {JobState.SUCCEEDED: 0, JobState.FAILED: 1, JobState.STOPPED: 4}


@dataclasses.dataclass(frozen=True, kw_only=True)
class TaskView:
    """One task instance as a status view shows it, whatever the backend."""
    role: str
    index: int
    state: str                        # the backend's own word (e.g. Framework TaskState, "exited"), shown as is
    attempt: int = 0                  # 0-based retry count of this task within the job attempt
    node: Optional[str] = None        # node name, or "localhost"
    exit_code: Optional[int] = None   # the process / container exit code once terminated
    diagnosis: Optional[str] = None   # e.g. "231 ContainerSyntaxError: ..." from the exit rules
    #: Earlier attempts of this task that failed and were retried, oldest first: (attempt, exit code, diagnosis).
    failed_attempts: tuple[tuple[int, Optional[int], Optional[str]], ...] = ()


@dataclasses.dataclass(frozen=True, kw_only=True)
class JobView:
    """One snapshot of a job. The last one a follower yields is final, unless it timed out waiting."""

    name: str
    state: JobState
    attempt: int = 0                  # 0-based job attempt (jobRetryCount)
    tasks: tuple[TaskView, ...] = ()
    completion_code: Optional[int] = None
    message: str = ""                 # one line: why it finished, or what it is waiting for
    triggered_by: Optional[tuple[str, int]] = None  # (role, index) of the task whose completion decided the job
    where: str = ""                   # the run folder or the namespace/kind, printed once
    created: Optional[str] = None     # when the job was made, RFC 3339 in UTC (listings: the AGE column)


_VIEW_FIELDS = tuple(field.name for field in dataclasses.fields(JobView))
_TASK_FIELDS = tuple(field.name for field in dataclasses.fields(TaskView))  # all plain values


def view_to_data(view: JobView) -> dict[str, Any]:
    """Plain JSON data: what `--format json` prints and what a local run's state file keeps."""
    # Field by field rather than dataclasses.asdict, whose deep copy took most of a 200-task run's state writes.
    data = {name: getattr(view, name) for name in _VIEW_FIELDS}
    data["tasks"] = [_task_data(task) for task in view.tasks]
    data["state"] = view.state.value
    if view.created is None:  # only listings know it: the records of a followed job are unchanged
        del data["created"]
    if view.triggered_by is not None:
        data["triggered_by"] = {"role": view.triggered_by[0], "index": view.triggered_by[1]}
    return data


def _task_data(task: TaskView) -> dict[str, Any]:
    data = {name: getattr(task, name) for name in _TASK_FIELDS}
    if task.failed_attempts:  # only when there were some: the records of tasks without retries are unchanged
        data["failed_attempts"] = [{"attempt": attempt, "exit_code": code, "diagnosis": diagnosis}
                                   for attempt, code, diagnosis in task.failed_attempts]
    else:
        del data["failed_attempts"]
    return data


def _task_from_data(data: dict[str, Any]) -> TaskView:
    fields = dict(data)
    fields["failed_attempts"] = tuple((item["attempt"], item["exit_code"], item["diagnosis"])
                                      for item in fields.get("failed_attempts") or ())
    return TaskView(**fields)


def view_from_data(data: dict[str, Any]) -> JobView:
    fields = dict(data)
    fields["state"] = JobState(fields["state"])
    fields["tasks"] = tuple(_task_from_data(task) for task in fields["tasks"])
    trigger = fields.get("triggered_by")
    fields["triggered_by"] = (trigger["role"], trigger["index"]) if trigger else None
    return JobView(**fields)


def condition_message(condition: Any) -> str:
    """A Kubernetes status condition as one message line: "Reason: message", whitespace folded, else its type."""
    text = ": ".join(str(part) for part in (condition.get("reason"), condition.get("message")) if part)
    return " ".join(text.split()) or str(condition.get("type"))
