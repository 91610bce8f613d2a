"""`submit/status/stop/logs` for local runs (`--target local`): this machine, no cluster.

`submit --follow` runs the job in this process (the runner, with its watchdog), so Ctrl-C, SIGTERM or even SIGKILL
of paictl ends every task. Without `--follow` a detached supervisor runs it and the command returns at once. Either
way the run folder (`--run-dir`, default .paictl/runs/<job>) holds the state and the logs that `status`, `stop` and
`logs` read from another terminal. Exit statuses: 0 succeeded, 1 failed, 4 stopped by `paictl stop`, 130
interrupted (Ctrl-C or SIGTERM).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator, Optional

import typer

from paictl.errors import InternalError, NotFoundError, UsageError
from paictl.targets.states import VERDICT_EXIT_CODES, JobState, JobView

from .jobinput import CompiledJob
from .live import follow as follow_views

INTERRUPTED = 130
TAIL_LINES = 10
#: How long `submit` waits for the detached supervisor's first state, and `stop` beyond the grace period.
_START_TIMEOUT = 10.0
_STOP_MARGIN = 10.0


def find_local_run(name: str, run_dir: Path) -> bool:
    from paictl.targets.local.store import run_folder

    return run_folder(run_dir, name) is not None


def submit_local(compiled: CompiledJob, *, follow: bool, output_format: str, run_dir: Path,
                 exit_spec: Optional[Path], dry_run: bool) -> None:
    from paictl.compiler.exit_rules import load_rule_set
    from paictl.targets.framework.native import secret_files
    from paictl.targets.local.store import prepare_run

    plan = compiled.objects[0]
    rules = load_rule_set(exit_spec)
    tasks = sum(role["instances"] for role in plan["spec"]["taskRoles"])
    for note in plan["spec"]["notes"]:
        typer.echo(f"paictl: {note}", err=True)
    if dry_run:
        typer.echo(f"paictl: dry run: {compiled.job.name} would start {tasks} task process(es); nothing was run "
                   "(`paictl compile --target local` prints the plan)", err=True)
        return
    secrets = secret_files(compiled.job, [role["command"][-2] for role in plan["spec"]["taskRoles"]])
    folder = prepare_run(run_dir, compiled.job.name, plan)
    typer.echo(f"paictl: {compiled.job.name}: {tasks} task(s) on this machine; run folder {folder} "
               "(task logs: <attempt>/<role>-<index>.log)", err=True)
    if not follow:
        view = _start_supervisor(folder, secrets, exit_spec)
        if output_format == "json":
            _echo_json(view)
        else:
            typer.echo(f"{compiled.job.name}: started (supervisor pid {_owner_pid(folder)}); "
                       f"`paictl status {compiled.job.name} --follow` follows it, "
                       f"`paictl logs {compiled.job.name}` shows its output")
        return
    from paictl.targets.local.runner import LocalRunner

    runner = LocalRunner(folder, plan, secrets=secrets, rules=rules, work_dir=os.getcwd())
    previous = signal.signal(signal.SIGTERM, _interrupted)
    try:
        last = follow_views(runner.views(), output_format=output_format)
    except BaseException as exc:  # Ctrl-C, SIGTERM, or a failure such as a closed stdout: no task may outlive it
        interrupted = isinstance(exc, (SystemExit, KeyboardInterrupt))
        try:
            runner.interrupt("interrupted: paictl received Ctrl-C or SIGTERM" if interrupted else
                             f"stopped: paictl failed while following ({type(exc).__name__})")
        finally:
            runner.close()
        if not interrupted:
            raise
        typer.echo(f"paictl: {compiled.job.name}: interrupted; every task was stopped", err=True)
        raise typer.Exit(INTERRUPTED)
    finally:
        runner.close()
        signal.signal(signal.SIGTERM, previous)
    _finish(folder, last, output_format)


def status_local(name: str, *, run_dir: Path, follow: bool, output_format: str) -> None:
    folder = _folder(name, run_dir)
    if not follow:
        view = _current(folder, name)
        if output_format == "json":
            _echo_json(view)
        else:
            follow_views(iter([view]), output_format="text", live=False)
            _show_failed_tail(folder, view, output_format)
        return
    last = follow_views(_poll_views(folder, name), output_format=output_format)
    _finish(folder, last, output_format)


def list_local(run_dir: Path) -> list[JobView]:
    """Every run in the run folder, by name (a folder without a plan is not a run paictl made)."""
    from paictl.targets.local.store import PLAN

    if not run_dir.is_dir():
        return []
    return [_current(folder, folder.name) for folder in sorted(run_dir.iterdir())
            if folder.is_dir() and (folder / PLAN).is_file()]


def stop_local(name: str, *, run_dir: Path, output_format: str) -> None:
    from paictl.targets.local.store import read_json, request_stop, PLAN

    folder = _folder(name, run_dir)
    view = _current(folder, name)
    if not view.state.is_final:
        request_stop(folder)
        deadline = time.monotonic() + read_json(folder / PLAN)["spec"]["gracePeriodSec"] + _STOP_MARGIN
        while not view.state.is_final and time.monotonic() < deadline:
            time.sleep(0.1)
            view = _current(folder, name)
    if output_format == "json":
        _echo_json(view)
    elif view.state.is_final:
        typer.echo(f"{name}: {view.state.value}" + (f": {view.message}" if view.message else ""))
    else:
        typer.echo(f"{name}: stop requested; still {view.state.value}")


def logs_local(name: str, role: Optional[str], index: Optional[int], *, run_dir: Path, follow: bool,
               attempt: Optional[int] = None) -> None:
    from paictl.targets.local.store import PLAN, read_json, task_log

    folder = _folder(name, run_dir)
    roles = {r["name"]: r["instances"] for r in read_json(folder / PLAN)["spec"]["taskRoles"]}
    if role is not None and role not in roles:
        raise UsageError(f"job {name!r} has no task role {role!r}; its task roles: {', '.join(roles)}")
    if index is not None and role is not None and not 0 <= index < roles[role]:
        raise UsageError(f"task role {role!r} has instances 0 to {roles[role] - 1}, not {index}")
    selected = [(r, i) for r, count in roles.items() if role in (None, r) for i in range(count)
                if index in (None, i)]
    prefix = len(selected) > 1
    if attempt is not None:
        kept = sorted(int(p.name) for p in folder.iterdir() if p.is_dir() and p.name.isdigit())
        if attempt not in kept:
            raise UsageError(f"job {name!r} has no attempt {attempt}; its attempts: "
                             f"{', '.join(map(str, kept)) or 'none yet'}")
    offsets: dict[str, int] = {}
    shown = None
    while True:
        state = _state(folder)
        current = state.attempt if state is not None else 0
        wanted = current if attempt is None else attempt
        if wanted != shown:
            shown, offsets = wanted, {}
        done = (not follow or state is None or state.view.state.is_final or state.abandoned
                or wanted != current)  # an earlier attempt is over: nothing more will be written to it
        for r, i in selected:
            path = folder / task_log(shown, r, i)
            offsets[path.name] = _print_new(path, offsets.get(path.name, 0), f"[{r}-{i}] " if prefix else "",
                                            whole=done)
        if done:
            return
        time.sleep(0.2)


# -- helpers --------------------------------------------------------------------------------------------------------

def _interrupted(signum: int, frame: object) -> None:
    raise SystemExit(INTERRUPTED)


def _folder(name: str, run_dir: Path) -> Path:
    from paictl.targets.local.store import run_folder

    folder = run_folder(run_dir, name)
    if folder is None:
        raise NotFoundError(f"no local run named {name!r} in {run_dir}")
    return folder


def _state(folder: Path):
    from paictl.targets.local.store import read_state

    return read_state(folder)


def _current(folder: Path, name: str) -> JobView:
    from paictl.targets.local.store import shown_view

    state = _state(folder)
    if state is None:
        return JobView(name=name, state=JobState.PENDING, message="starting", where=str(folder))
    return shown_view(folder, state)


def _poll_views(folder: Path, name: str) -> Iterator[JobView]:
    while True:
        view = _current(folder, name)
        yield view
        if view.state.is_final:
            return
        time.sleep(0.2)


def _owner_pid(folder: Path) -> str:
    state = _state(folder)
    return str(state.owner["pid"]) if state is not None and state.owner else "?"


def _start_supervisor(folder: Path, secrets: dict[str, str], exit_spec: Optional[Path]) -> JobView:
    """The detached supervisor, its settings (secrets included) through a pipe; returns its first view."""
    settings = {"work_dir": os.getcwd(), "exit_spec": str(exit_spec.resolve()) if exit_spec else None,
                "secrets": secrets}
    from paictl.targets.local.store import SUPERVISOR_LOG

    with open(folder / SUPERVISOR_LOG, "ab") as log:
        process = subprocess.Popen([sys.executable, "-m", "paictl.targets.local.supervisor", str(folder)],
                                   stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    assert process.stdin is not None
    process.stdin.write(json.dumps(settings).encode())
    process.stdin.close()
    deadline = time.monotonic() + _START_TIMEOUT
    while time.monotonic() < deadline:
        state = _state(folder)
        if state is not None:
            return state.view
        if process.poll() is not None:
            break
        time.sleep(0.05)
    raise InternalError(f"the local supervisor did not start (see {folder / SUPERVISOR_LOG}); this is a bug in "
                        "paictl, please report it")


def _finish(folder: Path, last: Optional[JobView], output_format: str) -> None:
    if last is None or not last.state.is_final:
        raise typer.Exit(INTERRUPTED)
    _show_failed_tail(folder, last, output_format)
    raise typer.Exit(VERDICT_EXIT_CODES[last.state])


def _show_failed_tail(folder: Path, view: JobView, output_format: str) -> None:
    """The last lines of the task that failed the job (the user's own output), and where the whole log is."""
    from paictl.targets.local.store import task_log

    if output_format != "text" or view.state is not JobState.FAILED or view.triggered_by is None:
        return
    role, index = view.triggered_by
    path = folder / task_log(view.attempt, role, index)
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return
    typer.echo(f"last lines of {role}-{index} ({path}):")
    for line in lines[-TAIL_LINES:]:
        typer.echo(f"  {line}")


def _print_new(path: Path, offset: int, prefix: str, *, whole: bool) -> int:
    """Print the lines added since `offset`; a last unfinished line waits for the next call unless `whole`."""
    try:
        with open(path, "rb") as log:
            log.seek(offset)
            data = log.read()
    except OSError:
        return offset
    end = len(data) if whole else data.rfind(b"\n") + 1
    for line in data[:end].decode("utf-8", errors="replace").splitlines():
        typer.echo(f"{prefix}{line}")
    return offset + end


def _echo_json(view: JobView) -> None:
    from paictl.targets.states import view_to_data

    typer.echo(json.dumps(view_to_data(view), ensure_ascii=False))
