"""This machine as a `Backend`: a local plan run as host processes, its state in a run folder.

Attached (`submit --follow`, or `attach=True` from Python) the job runs in this process, with its watchdog, so
Ctrl-C, SIGTERM or even SIGKILL of the caller ends every task. Detached, a supervisor process runs it and `submit`
returns once the supervisor has written its first state. Either way the run folder (by default
`$XDG_STATE_HOME/paictl/runs/<job>`, see store.py) holds the state and the logs that `describe`, `watch`, `stop`
and `logs` read from any other process. Without an explicit run folder, runs in the current directory's
`.paictl/runs` (where older versions kept them) are found too.

A corrupt run (store.CorruptRun) is listed as `unknown` with the reason, and `describe`/`watch`/`logs` of it fail
with one line (exit 3); a run folder that vanishes under a follower ends the follow the same way.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Optional

from paictl.errors import InternalError, NotFoundError, UsageError
from paictl.targets.backend import (Attached, BackendOptions, FailureExcerpt, LogLine, Logs, StopResult, Submission)
from paictl.targets.states import JobState, JobView, view_to_data

if TYPE_CHECKING:  # status and stop of a local run compile nothing
    from paictl.targets.compiled import CompiledJob

TAIL_LINES = 10
#: How much of a failed task's log's end the excerpt reads: ten lines of a traceback, or of long lines.
EXCERPT_BYTES = 64 * 1024
#: How long `submit` waits for the detached supervisor's first state, and `stop` beyond the grace period.
_START_TIMEOUT = 10.0
_STOP_MARGIN = 10.0
_POLL = 0.2


class LocalBackend:
    """Runs `local` plans on this machine (see the module docstring)."""

    targets = ("local",)
    namespace = None

    def __init__(self, options: BackendOptions = BackendOptions()):
        from .store import LEGACY_RUN_DIR, default_run_dir

        self.run_dir = Path(options.run_dir) if options.run_dir is not None else default_run_dir()
        #: Where runs are looked for: the run folder, then (without an explicit one) ./.paictl/runs.
        self.run_dirs = [self.run_dir] + ([LEGACY_RUN_DIR] if options.run_dir is None and LEGACY_RUN_DIR.is_dir()
                                          and LEGACY_RUN_DIR.resolve() != self.run_dir.resolve() else [])
        self.exit_spec = options.exit_spec
        #: --runtime docker|host (None: docker when an engine answers), --pull, and the CLI's way of showing a line
        #: now (`report(line, transient)`: the runtime chosen, an image's pull progress), none from Python.
        self.runtime = options.extra.get("runtime")
        self.pull = options.extra.get("pull") or "missing"
        self.pull_given = options.extra.get("pull") is not None
        self.report = options.extra.get("report")
        from .choices import check_choices

        check_choices(self.runtime, self.pull)

    # -- submit -------------------------------------------------------------------------------------------------

    def submit(self, compiled: CompiledJob, *, dry_run: bool = False, attach: bool = False) -> Submission:
        from paictl.compiler.exit_rules import load_rule_set
        from paictl.targets.framework.native import secret_files

        from .store import prepare_run

        plan = dict(compiled.objects[0])
        name = compiled.job.name
        rules = load_rule_set(self.exit_spec)  # a bad --exit-spec fails before anything runs
        tasks = sum(role["instances"] for role in plan["spec"]["taskRoles"])
        plan, notes = self._runtime(plan, compiled, dry_run=dry_run)
        docker = plan["spec"]["runtime"]["kind"] == "docker"
        what = "container(s)" if docker else "task process(es)"
        if dry_run:
            return Submission(name=name, dry_run=True, notes=notes + (
                f"paictl: dry run: {name} would start {tasks} {what}; nothing was run "
                "(`paictl compile --target local` prints the plan)",))
        secrets = secret_files(compiled.job, [role["command"][-2] for role in plan["spec"]["taskRoles"]])
        if compiled.job.secrets and plan["spec"]["runtime"]["kind"] == "docker":
            from paictl.compiler.emit import to_yaml_document
            from paictl.targets.framework.values import plain

            # OpenPAI mounts the job's secrets as secrets.yaml beside the per-secret files (containers.py)
            secrets["secrets.yaml"] = to_yaml_document(plain(compiled.job.secrets))
        from .store import owner_record

        folder, lock = prepare_run(self.run_dir, name, plan, owner=owner_record(os.getpid()))
        notes += (f"paictl: {name}: {tasks} task(s) on this machine ({'containers' if docker else 'host processes'}); run folder {folder} "
                  "(task logs: <attempt>/<role>-<index>.log)",)
        if attach:
            from .runner import LocalRunner

            runner = LocalRunner(folder, plan, secrets=secrets, rules=rules, work_dir=os.getcwd(), lock=lock)
            return Submission(name=name, where=str(folder), notes=notes,
                              attached=Attached(views=runner.views(), interrupt=runner.interrupt,
                                                close=runner.close))
        try:
            view = self._start_supervisor(folder, secrets, lock)
        finally:
            os.close(lock)  # the supervisor holds the lock from now on
        return Submission(name=name, where=str(folder), notes=notes, data=(view_to_data(view),), lines=(
            f"{name}: started (supervisor pid {self._owner_pid(folder)}); `paictl status {name} --follow` "
            f"follows it, `paictl logs {name}` shows its output",))

    def _runtime(self, plan: dict, compiled: CompiledJob, *, dry_run: bool) -> tuple[dict, tuple[str, ...]]:
        """Choose where the tasks run (containers.py), and for docker check the limits and make every image present
        (images.py; pulling none in a dry run); the plan as the run folder keeps it (with `spec.runtime`), and the
        notes."""
        from .choices import images

        notes: list[str] = []
        spec = dict(plan["spec"])
        choice = None
        if self.runtime != "host":  # --runtime host needs none of the docker machinery (a tenth of a 1-task run)
            from .containers import choose_runtime

            choice = choose_runtime(self.runtime)
            if choice.defaulted:
                self._say(choice.line, notes)
        if choice is None or choice.kind == "host":
            spec["runtime"] = {"kind": "host"}
            if self.pull_given:
                notes.append("paictl: --pull ignored: no image is used by host processes")
            notes += [f"paictl: image {image} (task role {', '.join(roles)}) is not used: tasks run as host "
                      "processes (--runtime host)" for image, roles in images(plan).items()]
            return {**plan, "spec": spec}, tuple(notes)
        from .containers import check_limits
        from .images import ensure_images

        assert choice.engine is not None
        spec["runtime"] = {"kind": "docker", "engine": choice.engine.address.url}
        check_limits(plan, choice.engine, compiled.document, compiled.path)
        if dry_run:  # the same refusal as a real submit's with --pull never; otherwise what would be pulled
            if self.pull == "never":
                ensure_images(plan, choice.engine, "never", None)
            notes += [f"paictl: image {image} is not on this machine: it would be pulled"
                      for image in images(plan) if choice.engine.image(image) is None]
        else:
            for line in ensure_images(plan, choice.engine, self.pull, self.report):
                self._say(line, notes)
        return {**plan, "spec": spec}, tuple(notes)

    def _say(self, line: str, notes: list[str]) -> None:
        """A line shown now when the CLI gave a way (so it comes before a pull's progress), else a note."""
        if self.report is not None:
            self.report(line, False)
        else:
            notes.append(line)

    def _start_supervisor(self, folder: Path, secrets: dict[str, str], lock: int) -> JobView:
        """The detached supervisor, its settings (secrets included) through a pipe, the run's lock inherited;
        returns its first view."""
        from .store import SUPERVISOR_LOG, CorruptRun, folder_error, read_state

        settings = {"work_dir": os.getcwd(),
                    "exit_spec": str(Path(self.exit_spec).resolve()) if self.exit_spec else None,
                    "secrets": secrets, "lock": lock}
        try:
            with open(folder / SUPERVISOR_LOG, "ab") as log:
                process = subprocess.Popen([sys.executable, "-m", "paictl.targets.local.supervisor", str(folder)],
                                           stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
                                           start_new_session=True, pass_fds=(lock,))
        except OSError as error:
            raise folder_error(folder, error) from None
        assert process.stdin is not None
        process.stdin.write(json.dumps(settings).encode())
        process.stdin.close()
        deadline = time.monotonic() + _START_TIMEOUT
        while time.monotonic() < deadline:
            try:
                state = read_state(folder)
            except (CorruptRun, OSError):
                state = None
            if state is not None and state.owner and state.owner["pid"] == process.pid:
                return state.view
            if process.poll() is not None:
                break
            time.sleep(0.05)
        if not folder.is_dir():
            raise folder_error(folder, FileNotFoundError(2, "vanished"))
        raise InternalError(f"the local supervisor did not start (see {folder / SUPERVISOR_LOG}); this is a bug in "
                            "paictl, please report it")

    @staticmethod
    def _owner_pid(folder: Path) -> str:
        from .store import CorruptRun, read_state

        try:
            state = read_state(folder)
        except (CorruptRun, OSError):
            state = None
        return str(state.owner["pid"]) if state is not None and state.owner else "?"

    # -- reading a run ------------------------------------------------------------------------------------------

    def is_configured(self) -> bool:
        return True  # this machine is always there

    def has_job(self, name: str) -> bool:
        return self._find(name) is not None

    def _find(self, name: str) -> Optional[Path]:
        from .store import run_folder

        for run_dir in self.run_dirs:
            folder = run_folder(run_dir, name)
            if folder is not None:
                return folder
        return None

    def _where(self) -> str:
        return " or ".join(map(str, self.run_dirs))

    def not_found(self, name: str) -> str:
        return f"no local run {name!r} in {self._where()}"

    def _folder(self, name: str) -> Path:
        folder = self._find(name)
        if folder is None:
            raise NotFoundError(f"no local run named {name!r} in {self._where()}")
        return folder

    @staticmethod
    def _current(folder: Path, name: str) -> JobView:
        """The run's view; store.CorruptRun, or NotFoundError once the folder is gone."""
        from .store import read_state, run_locked, shown_view

        state = read_state(folder)
        if state is None:
            if not folder.is_dir():
                raise NotFoundError(f"the run folder {folder} vanished")
            if not run_locked(folder):
                return JobView(name=name, state=JobState.STOPPED, where=str(folder),
                               message="abandoned: the process that started it ended before the run began")
            return JobView(name=name, state=JobState.PENDING, message="starting", where=str(folder))
        view = shown_view(folder, state)
        return _with_leftovers_removed(folder, view) if view.state.is_final else view

    @classmethod
    def _listed(cls, folder: Path) -> JobView:
        """A row of the listing: a corrupt or vanished run is shown as such, never breaks the list. Its age is its
        plan's: the plan is written once, when the run is submitted."""
        import dataclasses

        from .store import PLAN, CorruptRun

        try:
            view = cls._current(folder, folder.name)
        except (CorruptRun, NotFoundError) as error:
            view = JobView(name=folder.name, state=JobState.UNKNOWN, message=str(error), where=str(folder))
        try:
            made = time.gmtime((folder / PLAN).stat().st_mtime)
        except OSError:
            return view
        return dataclasses.replace(view, created=time.strftime("%Y-%m-%dT%H:%M:%SZ", made))

    def describe(self, name: str) -> JobView:
        return self._current(self._folder(name), name)

    def watch(self, name: str, *, uid: Optional[str] = None) -> Iterator[JobView]:
        """Views until the verdict. A corrupt state is waited out only while its owner lives (the owner rewrites it at
        the next change); otherwise it ends the follow with CorruptRun, as a vanished folder does with NotFound."""
        from .store import CorruptRun, run_locked

        folder = self._folder(name)
        while True:
            try:
                view = self._current(folder, name)
            except CorruptRun:
                if not run_locked(folder):
                    raise
                time.sleep(_POLL)
                continue
            yield view
            if view.state.is_final:
                return
            time.sleep(_POLL)

    def list(self) -> list[JobView]:
        """Every run in the run folders, by name (a folder without a plan is not a run paictl made)."""
        from .store import PLAN

        views: list[JobView] = []
        for run_dir in self.run_dirs:
            try:
                folders = sorted(run_dir.iterdir()) if run_dir.is_dir() else []
            except OSError:
                continue
            views += [self._listed(folder) for folder in folders
                      if not folder.name.startswith(".") and folder.is_dir() and (folder / PLAN).is_file()]
        return views

    def failure_excerpt(self, view: JobView) -> Optional[FailureExcerpt]:
        """The last lines of the task that failed the job (the user's own output), and where the whole log is."""
        from .store import log_tail, task_log

        if view.state is not JobState.FAILED or view.triggered_by is None:
            return None
        role, index = view.triggered_by
        path = self._folder(view.name) / task_log(view.attempt, role, index)
        try:  # only the end: a task may have written gigabytes, and reading them all held the verdict back
            cut = path.stat().st_size > EXCERPT_BYTES
            lines = log_tail(path, 0, EXCERPT_BYTES).splitlines()
        except OSError:
            return None
        if cut and len(lines) > 1:
            lines = lines[1:]  # the tail began inside it
        return FailureExcerpt(label=f"{role}-{index} ({path})", lines=tuple(lines[-TAIL_LINES:]))

    # -- acting on a run ----------------------------------------------------------------------------------------

    def stop(self, name: str) -> StopResult:
        from .store import CorruptRun, folder_error, read_plan, request_stop

        folder = self._folder(name)
        view = self._current(folder, name)
        if not view.state.is_final:
            try:
                request_stop(folder)
            except OSError as error:
                raise folder_error(folder, error) from None
            try:
                grace = float(read_plan(folder)["spec"]["gracePeriodSec"])
            except (CorruptRun, OSError):
                grace = 30.0
            deadline = time.monotonic() + grace + _STOP_MARGIN
            while not view.state.is_final and time.monotonic() < deadline:
                time.sleep(0.1)
                view = self._current(folder, name)
        if view.state.is_final:
            line = f"{name}: {view.state.value}" + (f": {view.message}" if view.message else "")
        else:
            line = f"{name}: stop requested; still {view.state.value}"
        return StopResult(line=line, data=view_to_data(view), view=view)

    def logs(self, name: str, *, role: Optional[str] = None, index: Optional[int] = None,
             attempt: Optional[int] = None, follow: bool = False, previous: bool = False,
             task_attempt: Optional[int] = None) -> Logs:
        """Each task's log of one job attempt (the latest unless `attempt`). A task's log file holds every attempt of
        the task in that job attempt, each opened by the runner's line `[paictl] ROLE-I: task attempt N of job
        attempt M starts`; `task_attempt` shows one of them, and `previous` (as kubectl logs -p) the one before the
        task's latest: its previous task attempt, else its last attempt in the previous job attempt."""
        from .store import read_plan, read_state, task_log

        folder = self._folder(name)
        _leftovers_note(folder)  # `status` says what was removed
        try:
            roles = {r["name"]: r["instances"] for r in read_plan(folder)["spec"]["taskRoles"]}
        except FileNotFoundError:
            raise NotFoundError(f"the run folder {folder} vanished") from None
        if role is not None and role not in roles:
            raise UsageError(f"job {name!r} has no task role {role!r}; its task roles: {', '.join(roles)}")
        if index is not None and role is not None and not 0 <= index < roles[role]:
            raise UsageError(f"task role {role!r} has instances 0 to {roles[role] - 1}, not {index}")
        selected = [(r, i) for r, count in roles.items() if role in (None, r) for i in range(count)
                    if index in (None, i)]
        kept = sorted(int(p.name) for p in folder.iterdir() if p.is_dir() and p.name.isdigit())
        if attempt is not None and attempt not in kept:
            raise NotFoundError(f"job {name!r} has no job attempt {attempt}; its attempts: "
                                f"{', '.join(map(str, kept)) or 'none yet'}")
        if previous or task_attempt is not None:
            job_attempt = attempt if attempt is not None else (kept[-1] if kept else 0)
            sources = [_earlier_section(folder, task_log, job_attempt, r, i, task_attempt) for r, i in selected]
            return Logs(tasks=tuple(selected), lines=(
                LogLine(role=r, index=i, text=line) for (r, i), (path, number) in zip(selected, sources)
                for line in _section_lines(path, f"{r}-{i}", number)))
        return Logs(tasks=tuple(selected), lines=self._log_lines(folder, selected, attempt=attempt, follow=follow,
                                                                 read_state=read_state, task_log=task_log))

    @staticmethod
    def _log_lines(folder: Path, selected: list[tuple[str, int]], *, attempt: Optional[int], follow: bool,
                   read_state, task_log) -> Iterator[LogLine]:
        offsets: dict[str, int] = {}
        shown = None
        from .store import CorruptRun

        while True:
            try:
                state = read_state(folder)
            except CorruptRun:  # the logs are still worth showing: those of the first attempt
                state = None
            current = state.attempt if state is not None else 0
            wanted = current if attempt is None else attempt
            if wanted != shown:
                shown, offsets = wanted, {}
            done = (not follow or state is None or state.view.state.is_final or state.abandoned
                    or wanted != current)  # an earlier attempt is over: nothing more will be written to it
            for r, i in selected:
                path = folder / task_log(shown, r, i)
                for line, offsets[path.name] in _new_lines(path, offsets.get(path.name, 0), whole=done):
                    yield LogLine(role=r, index=i, text=line)
            if done:
                return
            time.sleep(_POLL)

    def close(self) -> None:
        pass


def _leftovers_note(folder: Path) -> Optional[str]:
    """An ended run whose docker engine kept its containers (it was stopped mid-run): they are removed now that a
    command touches the run (containers.sweep_leftovers); what `status` says about it, else None."""
    from .store import LEFTOVERS

    if not (folder / LEFTOVERS).is_file():
        return None
    from .containers import sweep_leftovers

    return sweep_leftovers(folder)


def _with_leftovers_removed(folder: Path, view: JobView) -> JobView:
    note = _leftovers_note(folder)
    if note is None:
        return view
    import dataclasses

    return dataclasses.replace(view, message=f"{view.message}; {note}" if view.message else note)


def _attempt_marker(label: str) -> "re.Pattern[bytes]":
    """The runner's line that opens each task attempt in a task's log (runner.py `_start_task`)."""
    return re.compile(rb"^\[paictl\] " + re.escape(label.encode()) + rb": task attempt (\d+) of job attempt \d+ "
                      rb"starts$")


def _task_attempts(path: Path, label: str) -> list[int]:
    """The task attempts a task's log holds, in order (read a line at a time)."""
    marker = _attempt_marker(label)
    try:
        with open(path, "rb") as log:
            return [int(m.group(1)) for m in (marker.match(line.rstrip(b"\n")) for line in log) if m]
    except OSError:
        return []


def _earlier_section(folder: Path, task_log: Any, job_attempt: int, role: str, index: int,
                     task_attempt: Optional[int]) -> tuple[Path, int]:
    """(log file, task attempt) for `--task-attempt N` in `job_attempt`, or for `--previous` when N is None."""
    label = f"{role}-{index}"
    path = folder / task_log(job_attempt, role, index)
    numbers = _task_attempts(path, label)
    if task_attempt is not None:
        if task_attempt not in numbers:
            raise NotFoundError(f"{label} has no task attempt {task_attempt} in job attempt {job_attempt}; its "
                                f"attempts there: {', '.join(map(str, numbers)) or 'none'}")
        return path, task_attempt
    if numbers and numbers[-1] > 0:
        return path, numbers[-1] - 1
    earlier = folder / task_log(job_attempt - 1, role, index)
    numbers = _task_attempts(earlier, label) if job_attempt > 0 else []
    if not numbers:
        raise NotFoundError(f"{label} has no previous attempt: job attempt {job_attempt}, task attempt 0 is its "
                            "first")
    return earlier, numbers[-1]


def _section_lines(path: Path, label: str, number: int) -> Iterator[str]:
    """The lines of one task attempt in a task's log, from its opening line to the next attempt's, streamed."""
    marker = _attempt_marker(label)
    inside = False
    with open(path, "rb") as log:
        for line in log:
            found = marker.match(line.rstrip(b"\n"))
            if found:
                if inside:
                    return
                inside = int(found.group(1)) == number
            if inside:
                yield line.rstrip(b"\n").decode("utf-8", "surrogateescape")


def _new_lines(path: Path, offset: int, *, whole: bool) -> Iterator[tuple[str, int]]:
    """Each line added since `offset`, with the offset after it, read a line at a time (a log of any size costs
    one line of memory); a last unfinished line waits for the next call unless `whole`."""
    try:
        log = open(path, "rb")
    except OSError:
        return
    with log:
        log.seek(offset)
        for raw in log:
            if not raw.endswith(b"\n") and not whole:
                return
            offset += len(raw)
            yield raw.rstrip(b"\n").decode("utf-8", "surrogateescape"), offset
