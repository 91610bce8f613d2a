"""The run folder of a local run: the one place a run's state lives, so any terminal can read it or stop it.

    <run-dir>/<job>/plan.json                the LocalPlan (no secret values: the tags are resolved at start)
    <run-dir>/<job>/state.json               the latest JobView and who owns the run; replaced atomically
    <run-dir>/<job>/stop                     a stop request (`paictl stop`); the owner polls for it
    <run-dir>/<job>/supervisor.log           the detached supervisor's own messages
    <run-dir>/<job>/<attempt>/ports.json     the ports allocated for that job attempt
    <run-dir>/<job>/<attempt>/<role>-<i>.log each task's output (stdout and stderr), all its task attempts

A RUN is named by its job: there is at most one run of a job name per run folder. Submitting a name whose run is
still active is refused, as a cluster refuses a duplicate running job; submitting it again once that run has
finished replaces the old run folder (the edit-and-resubmit loop of local debugging).

The owner (the `submit --follow` process, or the detached supervisor) is recorded with its pid and its start time
in clock ticks (/proc/<pid>/stat), so a recycled pid is never mistaken for it. A run whose owner is gone without a
verdict was abandoned (paictl killed with SIGKILL): its watchdog killed the tasks; `status` says so.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, Optional

from paictl.errors import ClusterError

from paictl.targets.states import JobState, JobView, view_from_data, view_to_data

PLAN, STATE, STOP, SUPERVISOR_LOG, PORTS = "plan.json", "state.json", "stop", "supervisor.log", "ports.json"
#: Job names are ^[a-zA-Z0-9_-]+$ (job.schema.json); anything else cannot name a run (and cannot escape the folder).
_RUN_NAME = re.compile(r"[a-zA-Z0-9_-]+")


def run_folder(run_dir: Path, name: str) -> Optional[Path]:
    """The folder of run `name`, or None when no such run exists (or the name cannot be one)."""
    if not _RUN_NAME.fullmatch(name):
        return None
    folder = run_dir / name
    return folder if (folder / PLAN).is_file() else None


def task_log(attempt: int, role: str, index: int) -> str:
    return f"{attempt}/{role}-{index}.log"


def write_json(path: Path, data: Any) -> None:
    """Write through a temporary file and rename it over `path`: a reader sees the old or the new file, never half."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(data, out, ensure_ascii=False, indent=1)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def process_start(pid: int) -> Optional[str]:
    """The start time of `pid` (clock ticks since boot), or None when no such process runs (a zombie is dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return None if fields[0] in ("Z", "X") else fields[19]


def owner_record(pid: int) -> dict[str, Any]:
    return {"pid": pid, "start": process_start(pid)}


def owner_alive(owner: Optional[dict[str, Any]]) -> bool:
    if not owner:
        return False
    start = process_start(owner["pid"])
    return start is not None and start == owner["start"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunState:
    view: JobView
    owner: Optional[dict[str, Any]]
    attempt: int
    work_dir: str
    run_id: str

    @property
    def abandoned(self) -> bool:
        return not self.view.state.is_final and not owner_alive(self.owner)


def read_state(folder: Path) -> Optional[RunState]:
    try:
        data = read_json(folder / STATE)
    except (OSError, ValueError):
        return None
    return RunState(view=view_from_data(data["view"]), owner=data.get("owner"), attempt=data["attempt"],
                    work_dir=data["work_dir"], run_id=data["run_id"])


def write_state(folder: Path, view: JobView, *, owner: dict[str, Any], attempt: int, work_dir: str,
                run_id: str) -> None:
    write_json(folder / STATE, {"view": view_to_data(view), "owner": owner, "attempt": attempt,
                                "work_dir": work_dir, "run_id": run_id})


def shown_view(folder: Path, state: RunState) -> JobView:
    """The view to report: the stored one, or, for an abandoned run, the same marked stopped with the reason."""
    if not state.abandoned:
        return state.view
    pid = state.owner["pid"] if state.owner else "?"
    tasks = tuple(task if task.state in ("succeeded", "failed", "stopped") else
                  dataclasses.replace(task, state="killed") for task in state.view.tasks)
    return dataclasses.replace(state.view, state=JobState.STOPPED, tasks=tasks,
                               message=f"abandoned: the paictl process that ran it (pid {pid}) ended without a "
                                       "verdict; its watchdog killed the tasks")


def prepare_run(run_dir: Path, name: str, plan: dict[str, Any]) -> Path:
    """A fresh run folder holding `plan`; ClusterError if a run of that name is still active."""
    folder = run_dir / name
    if (folder / PLAN).is_file():
        state = read_state(folder)
        if state is not None and not state.view.state.is_final and owner_alive(state.owner):
            raise ClusterError(f"job {name!r} is already running locally (pid {state.owner['pid']}, "
                               f"{folder}); stop it with `paictl stop {name}` or rename the job")
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    write_json(folder / PLAN, plan)
    return folder


def request_stop(folder: Path) -> None:
    (folder / STOP).touch()


def stop_requested(folder: Path) -> bool:
    return (folder / STOP).exists()
