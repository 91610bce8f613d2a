"""The run folder of a local run: the one place a run's state lives, so any terminal can read it or stop it.

    <run-dir>/<job>/plan.json                the LocalPlan (no secret values: the tags are resolved at start)
    <run-dir>/<job>/state.json               the latest JobView and who owns the run; replaced atomically
    <run-dir>/<job>/stop                     a stop request (`paictl stop`); the owner polls for it
    <run-dir>/<job>/supervisor.log           the detached supervisor's own messages
    <run-dir>/<job>/<attempt>/ports.json     the ports allocated for that job attempt
    <run-dir>/<job>/<attempt>/<role>-<i>.log each task's output (stdout and stderr), all its task attempts

A RUN is named by its job: there is at most one run of a job name per run folder. Submitting a name whose run is
still active is refused, as a cluster refuses a duplicate running job; submitting it again once that run has
finished replaces the old run folder (the edit-and-resubmit loop of local debugging). The process that owns a run
holds an exclusive lock (flock) on `<run-dir>/.<job>.lock` for the run's whole life; the kernel drops it when that
process ends, however it ends. A submit takes the lock without waiting, so of concurrent submits of one name exactly
one runs and the others are refused; the new run folder is built beside the old one and renamed into place.

Where runs live (`default_run_dir`): `$XDG_STATE_HOME/paictl/runs` (default `~/.local/state/paictl/runs`), so
`status` works from any directory; runs made by older versions in the current directory's `.paictl/runs` are
still found.

State files are validated on read: a state.json or plan.json of the wrong shape raises `CorruptRun`, which the
backend shows as a corrupt run instead of failing the listing.

The owner (the `submit --follow` process, or the detached supervisor) is recorded with its pid and its start time
in clock ticks (/proc/<pid>/stat), so a recycled pid is never mistaken for it. A run whose owner is gone without a
verdict was abandoned (paictl killed with SIGKILL): its watchdog killed the tasks; `status` says so.
"""

from __future__ import annotations

import dataclasses
import errno
import fcntl
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any, Optional

from paictl.errors import ClusterError

from paictl.targets.states import JobState, JobView, view_from_data, view_to_data

PLAN, STATE, STOP, SUPERVISOR_LOG, PORTS = "plan.json", "state.json", "stop", "supervisor.log", "ports.json"
#: Job names are ^[a-zA-Z0-9_-]+$ (job.schema.json); anything else cannot name a run (and cannot escape the folder).
_RUN_NAME = re.compile(r"[a-zA-Z0-9_-]+")


LEGACY_RUN_DIR = Path(".paictl") / "runs"


class CorruptRun(ClusterError):
    """A run folder whose state.json or plan.json is not what paictl writes (edited, truncated, another version)."""


class RunFolderError(ClusterError):
    """The run folder cannot be written (disk full, read-only) or vanished while the run was going on."""


def default_run_dir() -> Path:
    """The per-user state folder (XDG Base Directory): $XDG_STATE_HOME/paictl/runs, else ~/.local/state/..."""
    base = os.environ.get("XDG_STATE_HOME") or ""
    root = Path(base) if os.path.isabs(base) else Path.home() / ".local" / "state"
    return root / "paictl" / "runs"


def folder_error(folder: Path, error: OSError, *, making: bool = False) -> RunFolderError:
    """One line for a run folder that cannot be written or is gone; `making`: one that could not be made at all
    (a parent that is a file, a read-only or missing file system: `--run-dir`, $XDG_STATE_HOME), which never
    existed, so it did not vanish."""
    if making:
        why = "it is a file, not a folder" if error.errno == errno.EEXIST else error.strerror or error
        return RunFolderError(f"the run folder {folder} cannot be made: {why}")
    if error.errno == errno.ENOENT or not folder.exists():
        return RunFolderError(f"the run folder {folder} vanished (deleted while the run was going on)")
    return RunFolderError(f"the run folder {folder} cannot be written: {error.strerror or error}")


def _lock_path(run_dir: Path, name: str) -> Path:
    return run_dir / f".{name}.lock"


def lock_run(run_dir: Path, name: str) -> int:
    """Take the run's lock without waiting; the open descriptor holds it. ClusterError if another process has it."""
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise folder_error(run_dir, error, making=True) from None
    try:
        handle = os.open(_lock_path(run_dir, name), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as error:
        raise folder_error(run_dir, error) from None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(handle)
        raise ClusterError(f"job {name!r} is already running locally ({run_dir / name}); stop it with "
                           f"`paictl stop {name}` or rename the job") from None
    return handle


def run_locked(folder: Path) -> bool:
    """Whether a live process owns the run in `folder` (holds its lock)."""
    try:
        handle = os.open(_lock_path(folder.parent, folder.name), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(handle)


def run_folder(run_dir: Path, name: str) -> Optional[Path]:
    """The folder of run `name`, or None when no such run exists (or the name cannot be one)."""
    if not _RUN_NAME.fullmatch(name):
        return None
    folder = run_dir / name
    return folder if (folder / PLAN).is_file() else None


def task_log(attempt: int, role: str, index: int) -> str:
    return f"{attempt}/{role}-{index}.log"


def log_tail(path: Path, offset: int, limit: int) -> str:
    """What a task wrote to its log since `offset`, at most its last `limit` bytes (the exit rules read those)."""
    with open(path, "rb") as log:
        size = log.seek(0, os.SEEK_END)
        log.seek(max(offset, size - limit))
        return log.read().decode("utf-8", errors="replace")


def append_note(path: Path, line: str) -> None:
    """Add one of paictl's own lines to a task's log, on a line of its own even if the task's output did not end
    with a newline."""
    log = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o666)  # os-level: 5 calls, not 9
    try:
        size = os.lseek(log, 0, os.SEEK_END)
        ends_line = size == 0 or os.pread(log, 1, size - 1) == b"\n"
        os.write(log, f"{'' if ends_line else chr(10)}{line}\n".encode())
    finally:
        os.close(log)


def write_json(path: Path, data: Any) -> None:
    """Write through a temporary file and rename it over `path`: a reader sees the old or the new file, never half."""
    import tempfile  # here: `status` only reads runs (tempfile's import with random's is 2% of its run)

    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(json.dumps(data, ensure_ascii=False))  # dumps, not dump: only dumps uses the C encoder
        os.replace(temporary, path)
    except BaseException:
        try:  # a signal (Ctrl-C) right after the rename: the temporary file is already the real one
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def read_plan(folder: Path) -> dict[str, Any]:
    """The run's plan, checked for what the readers use; CorruptRun otherwise."""
    try:
        plan = read_json(folder / PLAN)
        roles = plan["spec"]["taskRoles"]
        if not (isinstance(roles, list) and all(isinstance(r["name"], str) and isinstance(r["instances"], int)
                                                for r in roles)):
            raise TypeError("spec.taskRoles")
        float(plan["spec"]["gracePeriodSec"])
    except FileNotFoundError:
        raise
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise CorruptRun(f"local run {folder.name!r} is corrupt: {folder / PLAN} is not a plan paictl wrote "
                         f"({type(error).__name__}: {error})") from None
    return plan


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
    """A local run's state as stored in its folder (validated on every read)."""
    view: JobView
    owner: Optional[dict[str, Any]]
    attempt: int
    work_dir: str
    run_id: str

    @property
    def abandoned(self) -> bool:
        return not self.view.state.is_final and not owner_alive(self.owner)


def read_state(folder: Path) -> Optional[RunState]:
    """The run's state; None before the owner wrote one; CorruptRun when it is not what paictl writes."""
    try:
        data = read_json(folder / STATE)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        raise CorruptRun(f"local run {folder.name!r} is corrupt: {folder / STATE} cannot be read "
                         f"({type(error).__name__}: {error})") from None
    try:
        owner = data.get("owner")
        if owner is not None and not (isinstance(owner.get("pid"), int) and isinstance(owner.get("start"),
                                                                                       (str, type(None)))):
            raise TypeError("owner")
        if not (isinstance(data["attempt"], int) and isinstance(data["work_dir"], str)
                and isinstance(data["run_id"], str)):
            raise TypeError("attempt, work_dir or run_id")
        view = view_from_data(data["view"])
        if not isinstance(view.name, str) or not isinstance(view.message, str):
            raise TypeError("view")
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise CorruptRun(f"local run {folder.name!r} is corrupt: {folder / STATE} is not a state paictl wrote "
                         f"({type(error).__name__}: {error})") from None
    return RunState(view=view, owner=owner, attempt=data["attempt"], work_dir=data["work_dir"],
                    run_id=data["run_id"])


def write_state(folder: Path, view: JobView, *, owner: dict[str, Any], attempt: int, work_dir: str,
                run_id: str) -> None:
    write_json(folder / STATE, {"view": view_to_data(view), "owner": owner, "attempt": attempt,
                                "work_dir": work_dir, "run_id": run_id})


def shown_view(folder: Path, state: RunState) -> JobView:
    """The view to report: the stored one, or, for an abandoned run, the same marked stopped with the reason.

    What it says about the tasks is checked, not assumed: /proc is searched for processes of the run."""
    if not state.abandoned:
        return state.view
    from .procs import marked

    pid = state.owner["pid"] if state.owner else "?"
    left = sorted(marked(state.run_id))
    tasks = tuple(task if task.state in ("succeeded", "failed", "stopped") else
                  dataclasses.replace(task, state="killed" if not left else "unknown") for task in state.view.tasks)
    found = ("no process of the run is left" if not left else
             f"{len(left)} process(es) of the run still live (pids {', '.join(map(str, left[:10]))}): its watchdog "
             "has not killed them (yet)")
    return dataclasses.replace(state.view, state=JobState.STOPPED, tasks=tasks,
                               message=f"abandoned: the paictl process that ran it (pid {pid}) ended without a "
                                       f"verdict; {found}")


def prepare_run(run_dir: Path, name: str, plan: dict[str, Any], *,
                owner: Optional[dict[str, Any]] = None) -> tuple[Path, int]:
    """A fresh run folder holding `plan` and a first state owned by `owner`, and the descriptor that holds the run's
    lock (the caller keeps it open for the run's life). ClusterError if a run of that name is still active."""
    import tempfile

    lock = lock_run(run_dir, name)
    try:
        folder = run_dir / name
        try:
            state = read_state(folder) if (folder / PLAN).is_file() else None
        except CorruptRun:
            state = None
        if state is not None and not state.view.state.is_final and owner_alive(state.owner):
            raise ClusterError(f"job {name!r} is already running locally (pid {state.owner['pid']}, "
                               f"{folder}); stop it with `paictl stop {name}` or rename the job")
        fresh = Path(tempfile.mkdtemp(dir=run_dir, prefix=f".{name}.new-"))
        try:
            write_json(fresh / PLAN, plan)
            write_state(fresh, JobView(name=name, state=JobState.PENDING, message="starting", where=str(folder)),
                        owner=owner or owner_record(os.getpid()), attempt=0, work_dir=os.getcwd(), run_id="")
            if folder.exists():
                old = Path(tempfile.mkdtemp(dir=run_dir, prefix=f".{name}.old-"))
                os.replace(folder, old / name)
                shutil.rmtree(old, ignore_errors=True)
            os.replace(fresh, folder)
        except BaseException:
            shutil.rmtree(fresh, ignore_errors=True)
            raise
    except OSError as error:
        os.close(lock)
        raise folder_error(run_dir, error) from None
    except BaseException:
        os.close(lock)
        raise
    return folder, lock


#: The docker runtime's containers of a run that could not be removed when it ended (the engine did not answer:
#: stopped mid-run, it keeps them as `Exited (143)` once it is back): {"engine": URL, "run": RUN_ID, "removed": null
#: until a later command removed them, then their names}.
LEFTOVERS = "leftover-containers.json"


def record_leftovers(folder: Path, engine: str, run_id: str) -> None:
    write_json(folder / LEFTOVERS, {"engine": engine, "run": run_id, "removed": None})


def read_leftovers(folder: Path) -> Optional[dict[str, Any]]:
    """The record, or None (none written, or not one paictl wrote: it is then left alone)."""
    try:
        data = read_json(folder / LEFTOVERS)
    except (OSError, ValueError):
        return None
    if not (isinstance(data, dict) and isinstance(data.get("engine"), str) and isinstance(data.get("run"), str)
            and (data.get("removed") is None or (isinstance(data["removed"], list)
                                                 and all(isinstance(n, str) for n in data["removed"])))):
        return None
    return data


def request_stop(folder: Path) -> None:
    (folder / STOP).touch()


def stop_requested(folder: Path) -> bool:
    return (folder / STOP).exists()
