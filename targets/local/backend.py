"""This machine as a `Backend`: a local plan run as host processes, its state in a run folder.

Attached (`submit --follow`, or `attach=True` from Python) the job runs in this process, with its watchdog, so
Ctrl-C, SIGTERM or even SIGKILL of the caller ends every task. Detached, a supervisor process runs it and `submit`
returns once the supervisor has written its first state. Either way the run folder (default .paictl/runs/<job>)
holds the state and the logs that `describe`, `watch`, `stop` and `logs` read from any other process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator, Optional

from paictl.errors import InternalError, NotFoundError, UsageError
from paictl.targets.backend import (Attached, BackendOptions, FailureExcerpt, LogLine, Logs, StopResult, Submission)
from paictl.targets.compiled import CompiledJob
from paictl.targets.states import JobState, JobView, view_to_data

DEFAULT_RUN_DIR = Path(".paictl") / "runs"
TAIL_LINES = 10
#: How long `submit` waits for the detached supervisor's first state, and `stop` beyond the grace period.
_START_TIMEOUT = 10.0
_STOP_MARGIN = 10.0
_POLL = 0.2


class LocalBackend:
    """Runs `local` plans on this machine (see the module docstring)."""

    targets = ("local",)
    namespace = None

    def __init__(self, options: BackendOptions = BackendOptions()):
        self.run_dir = Path(options.run_dir) if options.run_dir is not None else DEFAULT_RUN_DIR
        self.exit_spec = options.exit_spec

    # -- submit -------------------------------------------------------------------------------------------------

    def submit(self, compiled: CompiledJob, *, dry_run: bool = False, attach: bool = False) -> Submission:
        from paictl.compiler.exit_rules import load_rule_set
        from paictl.targets.framework.native import secret_files

        from .store import prepare_run

        plan = compiled.objects[0]
        name = compiled.job.name
        rules = load_rule_set(self.exit_spec)  # a bad --exit-spec fails before anything runs
        tasks = sum(role["instances"] for role in plan["spec"]["taskRoles"])
        notes = tuple(f"paictl: {note}" for note in plan["spec"]["notes"])
        if dry_run:
            return Submission(name=name, dry_run=True, notes=notes + (
                f"paictl: dry run: {name} would start {tasks} task process(es); nothing was run "
                "(`paictl compile --target local` prints the plan)",))
        secrets = secret_files(compiled.job, [role["command"][-2] for role in plan["spec"]["taskRoles"]])
        folder = prepare_run(self.run_dir, name, plan)
        notes += (f"paictl: {name}: {tasks} task(s) on this machine; run folder {folder} "
                  "(task logs: <attempt>/<role>-<index>.log)",)
        if attach:
            from .runner import LocalRunner

            runner = LocalRunner(folder, plan, secrets=secrets, rules=rules, work_dir=os.getcwd())
            return Submission(name=name, where=str(folder), notes=notes,
                              attached=Attached(views=runner.views(), interrupt=runner.interrupt,
                                                close=runner.close))
        view = self._start_supervisor(folder, secrets)
        return Submission(name=name, where=str(folder), notes=notes, data=(view_to_data(view),), lines=(
            f"{name}: started (supervisor pid {self._owner_pid(folder)}); `paictl status {name} --follow` "
            f"follows it, `paictl logs {name}` shows its output",))

    def _start_supervisor(self, folder: Path, secrets: dict[str, str]) -> JobView:
        """The detached supervisor, its settings (secrets included) through a pipe; returns its first view."""
        from .store import SUPERVISOR_LOG, read_state

        settings = {"work_dir": os.getcwd(),
                    "exit_spec": str(Path(self.exit_spec).resolve()) if self.exit_spec else None,
                    "secrets": secrets}
        with open(folder / SUPERVISOR_LOG, "ab") as log:
            process = subprocess.Popen([sys.executable, "-m", "paictl.targets.local.supervisor", str(folder)],
                                       stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
                                       start_new_session=True)
        assert process.stdin is not None
        process.stdin.write(json.dumps(settings).encode())
        process.stdin.close()
        deadline = time.monotonic() + _START_TIMEOUT
        while time.monotonic() < deadline:
            state = read_state(folder)
            if state is not None:
                return state.view
            if process.poll() is not None:
                break
            time.sleep(0.05)
        raise InternalError(f"the local supervisor did not start (see {folder / SUPERVISOR_LOG}); this is a bug in "
                            "paictl, please report it")

    @staticmethod
    def _owner_pid(folder: Path) -> str:
        from .store import read_state

        state = read_state(folder)
        return str(state.owner["pid"]) if state is not None and state.owner else "?"

    # -- reading a run ------------------------------------------------------------------------------------------

    def is_configured(self) -> bool:
        return True  # this machine is always there

    def has_job(self, name: str) -> bool:
        from .store import run_folder

        return run_folder(self.run_dir, name) is not None

    def not_found(self, name: str) -> str:
        return f"no local run {name!r} in {self.run_dir}"

    def _folder(self, name: str) -> Path:
        from .store import run_folder

        folder = run_folder(self.run_dir, name)
        if folder is None:
            raise NotFoundError(f"no local run named {name!r} in {self.run_dir}")
        return folder

    @staticmethod
    def _current(folder: Path, name: str) -> JobView:
        from .store import read_state, shown_view

        state = read_state(folder)
        if state is None:
            return JobView(name=name, state=JobState.PENDING, message="starting", where=str(folder))
        return shown_view(folder, state)

    def describe(self, name: str) -> JobView:
        return self._current(self._folder(name), name)

    def watch(self, name: str, *, uid: Optional[str] = None) -> Iterator[JobView]:
        folder = self._folder(name)
        while True:
            view = self._current(folder, name)
            yield view
            if view.state.is_final:
                return
            time.sleep(_POLL)

    def list(self) -> list[JobView]:
        """Every run in the run folder, by name (a folder without a plan is not a run paictl made)."""
        from .store import PLAN

        if not self.run_dir.is_dir():
            return []
        return [self._current(folder, folder.name) for folder in sorted(self.run_dir.iterdir())
                if folder.is_dir() and (folder / PLAN).is_file()]

    def failure_excerpt(self, view: JobView) -> Optional[FailureExcerpt]:
        """The last lines of the task that failed the job (the user's own output), and where the whole log is."""
        from .store import task_log

        if view.state is not JobState.FAILED or view.triggered_by is None:
            return None
        role, index = view.triggered_by
        path = self._folder(view.name) / task_log(view.attempt, role, index)
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return None
        return FailureExcerpt(label=f"{role}-{index} ({path})", lines=tuple(lines[-TAIL_LINES:]))

    # -- acting on a run ----------------------------------------------------------------------------------------

    def stop(self, name: str) -> StopResult:
        from .store import PLAN, read_json, request_stop

        folder = self._folder(name)
        view = self._current(folder, name)
        if not view.state.is_final:
            request_stop(folder)
            deadline = time.monotonic() + read_json(folder / PLAN)["spec"]["gracePeriodSec"] + _STOP_MARGIN
            while not view.state.is_final and time.monotonic() < deadline:
                time.sleep(0.1)
                view = self._current(folder, name)
        if view.state.is_final:
            line = f"{name}: {view.state.value}" + (f": {view.message}" if view.message else "")
        else:
            line = f"{name}: stop requested; still {view.state.value}"
        return StopResult(line=line, data=view_to_data(view), view=view)

    def logs(self, name: str, *, role: Optional[str] = None, index: Optional[int] = None,
             attempt: Optional[int] = None, follow: bool = False, previous: bool = False) -> Logs:
        """Each task's log of one job attempt (the latest unless `attempt`); `previous` is Kubernetes' notion
        (a container's previous instance) and means nothing here: every task attempt is in the one log."""
        from .store import PLAN, read_json, read_state, task_log

        folder = self._folder(name)
        roles = {r["name"]: r["instances"] for r in read_json(folder / PLAN)["spec"]["taskRoles"]}
        if role is not None and role not in roles:
            raise UsageError(f"job {name!r} has no task role {role!r}; its task roles: {', '.join(roles)}")
        if index is not None and role is not None and not 0 <= index < roles[role]:
            raise UsageError(f"task role {role!r} has instances 0 to {roles[role] - 1}, not {index}")
        selected = [(r, i) for r, count in roles.items() if role in (None, r) for i in range(count)
                    if index in (None, i)]
        if attempt is not None:
            kept = sorted(int(p.name) for p in folder.iterdir() if p.is_dir() and p.name.isdigit())
            if attempt not in kept:
                raise UsageError(f"job {name!r} has no attempt {attempt}; its attempts: "
                                 f"{', '.join(map(str, kept)) or 'none yet'}")
        return Logs(tasks=tuple(selected), lines=self._log_lines(folder, selected, attempt=attempt, follow=follow,
                                                                 read_state=read_state, task_log=task_log))

    @staticmethod
    def _log_lines(folder: Path, selected: list[tuple[str, int]], *, attempt: Optional[int], follow: bool,
                   read_state, task_log) -> Iterator[LogLine]:
        offsets: dict[str, int] = {}
        shown = None
        while True:
            state = read_state(folder)
            current = state.attempt if state is not None else 0
            wanted = current if attempt is None else attempt
            if wanted != shown:
                shown, offsets = wanted, {}
            done = (not follow or state is None or state.view.state.is_final or state.abandoned
                    or wanted != current)  # an earlier attempt is over: nothing more will be written to it
            for r, i in selected:
                path = folder / task_log(shown, r, i)
                lines, offsets[path.name] = _new_lines(path, offsets.get(path.name, 0), whole=done)
                for line in lines:
                    yield LogLine(role=r, index=i, text=line)
            if done:
                return
            time.sleep(_POLL)

    def close(self) -> None:
        pass


def _new_lines(path: Path, offset: int, *, whole: bool) -> tuple[list[str], int]:
    """The lines added since `offset`; a last unfinished line waits for the next call unless `whole`."""
    try:
        with open(path, "rb") as log:
            log.seek(offset)
            data = log.read()
    except OSError:
        return [], offset
    end = len(data) if whole else data.rfind(b"\n") + 1
    return data[:end].decode("utf-8", errors="replace").splitlines(), offset + end
