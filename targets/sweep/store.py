"""A sweep's record, so that it survives the process that runs it: `paictl sweep --resume ID`, `status --sweep`,
`stop --sweep` and `logs --sweep` all read it.

    <sweeps>/<id>/sweep.json         what the sweep is: the job (path and digest, never its text: it may hold
                                     secrets), target, backend options, strategy, seed, options, and every trial
    <sweeps>/<id>/trials/<n>.json    one trial's progress: `submitting` (intent, written before the backend is
                                     asked), `submitted`, then its final state, exit code, metric and times
    <sweeps>/<id>/stop               a stop request (`paictl stop --sweep`, or --stop-when met): no trial starts after
    <sweeps>/.<id>.lock              held (flock) by the one process driving the sweep

`<sweeps>` is `$XDG_STATE_HOME/paictl/sweeps` (beside the local runs' folder). Every file is replaced atomically.
A trial is never submitted twice: its intent is on disk before `submit`, and a resumed sweep asks the backend
whether a trial it meant to submit exists (by the trial's job name) before submitting it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional

from paictl.errors import ClusterError, NotFoundError, UsageError

from ..local.store import default_run_dir, lock_run, read_json, run_locked, write_json

DEFINITION, TRIALS, STOP = "sweep.json", "trials", "stop"


PHASES = ("submitting", "submitted", "done")


def _definition_shape(data: Any) -> bool:
    """What the readers of sweep.json use, checked: an edited or truncated record is one line, never a traceback."""
    if not isinstance(data, dict) or not isinstance(data.get("trials"), list):
        return False
    if not all(isinstance(data.get(key), str) for key in ("id", "target")) or not isinstance(data.get("job"), dict):
        return False
    if not isinstance(data["job"].get("name"), str) or not isinstance(data.get("backend", {}), dict):
        return False
    return all(isinstance(trial, dict) and trial.get("index") == position and isinstance(trial.get("name"), str)
               and isinstance(trial.get("parameters"), dict) for position, trial in enumerate(data["trials"]))


def _record_shape(data: Any, index: int) -> bool:
    return (isinstance(data, dict) and data.get("index") == index and data.get("phase") in PHASES
            and isinstance(data.get("name"), str))


def default_sweeps_dir() -> Path:
    return default_run_dir().parent / "sweeps"


class SweepStore:
    """One sweep's folder (see the module docstring)."""

    def __init__(self, sweep_id: str, root: Optional[Path] = None):
        from .prepare import check_sweep_id

        self.sweep_id = check_sweep_id(sweep_id)  # never a path: `../x` or `.x.lock` name no sweep
        self.root = Path(root) if root is not None else default_sweeps_dir()
        self.folder = self.root / sweep_id
        self._lock: Optional[int] = None

    # -- the definition --------------------------------------------------------------------------------------------

    def create(self, definition: dict[str, Any]) -> None:
        try:
            (self.folder / TRIALS).mkdir(parents=True, exist_ok=False)
            write_json(self.folder / DEFINITION, definition)
        except FileExistsError:
            raise UsageError(f"sweep {self.sweep_id} already exists in {self.root}") from None
        except OSError as error:
            raise ClusterError(f"the sweep folder {self.folder} cannot be written: {error.strerror or error}") from None

    def exists(self) -> bool:
        return (self.folder / DEFINITION).is_file()

    def definition(self) -> dict[str, Any]:
        try:
            data = read_json(self.folder / DEFINITION)
        except FileNotFoundError:
            raise NotFoundError(f"no sweep {self.sweep_id!r} in {self.root}") from None
        except (OSError, ValueError) as error:
            raise ClusterError(f"the sweep record {self.folder / DEFINITION} cannot be read: {error}") from None
        if not _definition_shape(data):
            raise ClusterError(f"the sweep record {self.folder / DEFINITION} is not one paictl wrote")
        return data

    # -- trials -----------------------------------------------------------------------------------------------------

    def record(self, index: int) -> Optional[dict[str, Any]]:
        try:
            data = read_json(self.folder / TRIALS / f"{index}.json")
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as error:
            raise ClusterError(f"the trial record {self.folder / TRIALS / f'{index}.json'} cannot be read: "
                               f"{error}") from None
        if not _record_shape(data, index):
            raise ClusterError(f"the trial record {self.folder / TRIALS / f'{index}.json'} is not one paictl wrote")
        return data

    def records(self) -> dict[int, dict[str, Any]]:
        found: dict[int, dict[str, Any]] = {}
        try:
            names = os.listdir(self.folder / TRIALS)
        except FileNotFoundError:
            return found
        for name in names:
            stem = name[:-len(".json")] if name.endswith(".json") else ""
            if stem.isdigit():
                record = self.record(int(stem))
                if record is not None:
                    found[int(stem)] = record
        return found

    def write_record(self, index: int, record: dict[str, Any]) -> None:
        try:
            write_json(self.folder / TRIALS / f"{index}.json", record)
        except OSError as error:
            raise ClusterError(f"the sweep folder {self.folder} cannot be written: {error.strerror or error}") from None

    def forget(self, index: int) -> None:
        """Drop a trial's intent that never reached the backend (a resumed sweep submits it)."""
        try:
            os.unlink(self.folder / TRIALS / f"{index}.json")
        except FileNotFoundError:
            pass

    # -- stop and ownership -------------------------------------------------------------------------------------

    def request_stop(self, reason: str) -> None:
        try:
            (self.folder / STOP).write_text(reason + "\n", encoding="utf-8")
        except OSError as error:
            raise ClusterError(f"the sweep folder {self.folder} cannot be written: {error.strerror or error}") from None

    def stop_reason(self) -> Optional[str]:
        try:
            return (self.folder / STOP).read_text(encoding="utf-8").strip() or "stopped"
        except FileNotFoundError:
            return None

    def take(self) -> None:
        """Become the one process driving the sweep (held until `release` or this process ends)."""
        try:
            self._lock = lock_run(self.root, self.sweep_id)
        except ClusterError:
            raise UsageError(f"sweep {self.sweep_id} is being run by another paictl process; follow it with "
                             f"`paictl status --sweep {self.sweep_id}`") from None

    def driven(self) -> bool:
        """Whether a live process drives the sweep."""
        return run_locked(self.folder)

    def release(self) -> None:
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None
