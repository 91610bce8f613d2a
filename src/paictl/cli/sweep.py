"""`paictl sweep` without typer: starting, resuming and drawing a sweep, and the sweep parts of `compile --space`
(reached from compile_run.py, so the start-up fast path of entry.py takes it too), `status --sweep`, `stop --sweep`
and `logs --sweep`. The typer declaration is sweep_cmd.py.

The machinery is `paictl.targets.sweep` (trials compiled, the record, the runner); this module draws `SweepView`s
(a live table on a terminal, one line per change in a pipe, JSON lines or YAML documents) and maps the outcome to
an exit status: 0 every trial succeeded (or --stop-when was met), 1 a trial failed, 4 stopped, 130 interrupted
(the trials go on; `--resume ID` picks the sweep up).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, List, Optional

from paictl.errors import ClusterError, PaictlError, UsageError

from .output import plain_echo as echo
from .process_exit import INTERRUPTED

if TYPE_CHECKING:
    from paictl.targets.backend import Backend
    from paictl.targets.sweep.runner import SweepView, TrialRow

#: How often the runner asks the backend about its live trials (seconds): a local run's state is a file read.
POLL = {"local": 0.3}
DEFAULT_POLL = 2.0


def run_sweep(*, job_path: Optional[str], specs: List[str], target: Optional[str], strategy: Optional[str],
              max_trials: Optional[int], parallel: int, seed: Optional[int], metric: Optional[str],
              goal: Optional[str], stop_when: Optional[str], resume: Optional[str], sweep_id: Optional[str],
              output_format: str, given: dict[str, Any], compile_options: dict[str, Any], strict: bool,
              stdin_name: str) -> int:
    """The whole command; its exit status (errors raised as PaictlError)."""
    from .submit_run import check_format

    check_format(output_format)
    if goal not in (None, "min", "max"):
        raise UsageError(f"--goal {goal!r}: expected min or max")
    if goal is not None and metric is None:
        raise UsageError("--goal ranks the trials by their metric: give --metric NAME too")
    if parallel < 1:
        raise UsageError(f"--parallel {parallel}: give 1 or more")
    if resume is not None:
        if job_path is not None or specs:
            raise UsageError("--resume ID continues a recorded sweep: give no JOB or --space")
        return _resume(resume, output_format)
    if job_path is None:
        raise UsageError("give the JOB to sweep (or --resume ID)")
    if stop_when is not None:
        from paictl.targets.sweep.metrics import parse_stop_when

        parse_stop_when(stop_when, metric)
    return _start(job_path=job_path, specs=specs, target=target, strategy=strategy, max_trials=max_trials,
                  parallel=parallel, seed=seed, metric=metric, goal=goal, stop_when=stop_when, sweep_id=sweep_id,
                  output_format=output_format, given=given, compile_options=compile_options, strict=strict,
                  stdin_name=stdin_name)


def _open(target: str, given: dict[str, Any]) -> "Backend":
    from .submit_run import Reporter, backend_options, open_target

    flags = {key: given.get(key) for key in ("context", "namespace", "kubeconfig", "cluster", "run_dir", "exit_spec")}
    if flags["run_dir"] is not None:
        flags["run_dir"] = Path(flags["run_dir"])
    if flags["exit_spec"] is not None:
        flags["exit_spec"] = Path(flags["exit_spec"])
    report = Reporter(echo)
    shown: set[str] = set()

    def once(line: str, transient: bool = False) -> None:  # the same runtime note for every trial: shown once
        if transient or line not in shown:
            shown.add(line)
            report(line, transient)

    return open_target(target, backend_options(**flags, extra={
        "virtual_cluster": given.get("virtual_cluster"), "runtime": given.get("runtime"), "pull": given.get("pull"),
        "report": once}))


def _start(*, job_path: str, specs: List[str], target: Optional[str], strategy: Optional[str],
           max_trials: Optional[int], parallel: int, seed: Optional[int], metric: Optional[str], goal: Optional[str],
           stop_when: Optional[str], sweep_id: Optional[str], output_format: str, given: dict[str, Any],
           compile_options: dict[str, Any], strict: bool, stdin_name: str) -> int:
    from paictl.targets.sweep.prepare import prepare_sweep
    from paictl.targets.sweep.runner import definition_of
    from paictl.targets.sweep.store import SweepStore

    from .errors import report_warnings
    from .submit_run import check_target, default_submit_target, target_names

    if strategy is not None and strategy not in ("grid", "random", "list"):
        raise UsageError(f"--strategy {strategy!r}: expected grid, random or list")
    if job_path == "-":
        raise UsageError("a sweep reads its job again on --resume: give a file, not -")
    if target is None:
        target = default_submit_target(given["context"], given["kubeconfig"])
        echo(f"paictl: target {target} (choose with --target {'|'.join(target_names())})", err=True)
    check_target(target)
    if target != "local" and (given["runtime"] is not None or given["pull"] is not None):
        raise UsageError(f"--runtime and --pull choose how a local run runs its tasks; --target {target} runs them "
                         "elsewhere")
    backend = _open(target, given)
    try:
        prepared = prepare_sweep(job_path, specs, target=target, strategy=strategy, seed=seed, max_trials=max_trials,
                                 sweep_id=sweep_id, namespace=backend.namespace, strict=strict, stdin_name=stdin_name,
                                 on_warnings=report_warnings, **compile_options)
        definition = definition_of(prepared, backend=given, compile_options=compile_options, parallel=parallel,
                                   metric=metric, goal=goal, stop_when=stop_when, max_trials=max_trials)
        store = SweepStore(prepared.sweep_id)
        store.create(definition)
        store.take()
        how = prepared.strategy + (f", seed {prepared.seed}" if prepared.seed is not None else "")
        echo(f"paictl: sweep {prepared.sweep_id}: {len(prepared.trials)} trial(s) of {prepared.job_name} on {target} "
             f"({how}; at most {parallel} at once); record {store.folder}", err=True)
        compiled = dict(enumerate(prepared.compiled))
        return _drive(store, backend, definition, compiled, output_format)
    finally:
        backend.close()


def _resume(sweep_id: str, output_format: str) -> int:
    from paictl.targets.sweep.prepare import compile_recorded
    from paictl.targets.sweep.store import SweepStore

    from .errors import report_warnings

    store = SweepStore(sweep_id)
    definition = store.definition()
    store.take()
    backend = _open(definition["target"], definition.get("backend") or {})
    try:
        records = store.records()
        remaining = [t["index"] for t in definition["trials"]
                     if t["index"] not in records or records[t["index"]]["phase"] == "submitting"]
        compiled = compile_recorded(definition, remaining if store.stop_reason() is None else [],
                                    namespace=backend.namespace, on_warnings=report_warnings)
        done = len(definition["trials"]) - len(remaining)
        echo(f"paictl: sweep {sweep_id}: resuming {definition['job']['name']} on {definition['target']}: "
             f"{done} of {len(definition['trials'])} trial(s) already submitted", err=True)
        return _drive(store, backend, definition, compiled, output_format)
    finally:
        backend.close()


def _drive(store, backend: "Backend", definition: dict[str, Any], compiled: dict, output_format: str) -> int:
    from paictl.targets.sweep.runner import SweepRunner

    runner = SweepRunner(store, backend, definition, compiled, poll=POLL.get(definition["target"], DEFAULT_POLL),
                         on_notes=lambda notes: [echo(note, err=True) for note in notes])
    try:
        last = draw(runner.views(), output_format=output_format)
    except (KeyboardInterrupt, SystemExit) as stop:
        if isinstance(stop, SystemExit) and stop.code not in (INTERRUPTED, None):
            raise
        echo(f"paictl: sweep {store.sweep_id} interrupted; its submitted trials go on running. Resume it with "
             f"`paictl sweep --resume {store.sweep_id}`, stop it with `paictl stop --sweep {store.sweep_id}`",
             err=True)
        return INTERRUPTED
    except ClusterError as error:  # a lost connection: what was submitted goes on, and the record knows it
        raise type(error)(f"{error}; sweep {store.sweep_id} stops following: resume it with `paictl sweep "
                          f"--resume {store.sweep_id}`") from None
    finally:
        store.release()
    return verdict(last)


def verdict(view: Optional["SweepView"]) -> int:
    if view is None:
        return 0
    if view.stopped and not view.stopped.startswith("--stop-when"):
        return 4
    return 1 if any(row.state in ("failed", "unknown") for row in view.rows) else 0


# ------------------------------------------------------------------------------------------------------------------
# Drawing

def parameters_text(parameters: dict[str, Any]) -> str:
    return " ".join(f"{key}={value if isinstance(value, str) else json.dumps(value)}"
                    for key, value in parameters.items())


def duration_text(seconds: Optional[float]) -> str:
    if seconds is None:
        return ""
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, second = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{second:02d}s"
    return f"{minutes // 60}h{minutes % 60:02d}m"


def metric_text(value: Optional[float]) -> str:
    return "" if value is None else f"{value:.6g}"


def table_rows(view: "SweepView") -> list[tuple[str, ...]]:
    header = ("TRIAL", "PARAMETERS", "STATE", "DURATION", "EXIT", (view.metric or "METRIC").upper(), "BEST")
    return [header] + [(str(row.index), parameters_text(row.parameters), row.state, duration_text(row.duration),
                        "" if row.exit_code is None else str(row.exit_code), metric_text(row.metric),
                        "*" if row.best else "") for row in view.rows]


def summary_line(view: "SweepView") -> str:
    counts: dict[str, int] = {}
    for row in view.rows:
        counts[row.state] = counts.get(row.state, 0) + 1
    line = (f"sweep {view.sweep_id}: {view.job} on {view.target}, {len(view.rows)} trial(s): "
            + ", ".join(f"{count} {state}" for state, count in counts.items()))
    best = view.best
    if best is not None:
        line += (f"; best trial {best.index} ({view.metric}={metric_text(best.metric)}): "
                 f"{parameters_text(best.parameters)}")
    if view.stopped:
        line += f"; stopped: {view.stopped}"
    return line


def _row_line(view: "SweepView", row: "TrialRow") -> str:
    parts = [f"trial {row.index}", row.name, parameters_text(row.parameters), row.state]
    if row.duration is not None and row.final:
        parts.append(duration_text(row.duration))
    if row.exit_code is not None:
        parts.append(f"exit {row.exit_code}")
    if row.metric is not None:
        parts.append(f"{view.metric}={metric_text(row.metric)}")
    if row.message and row.final and row.state != "succeeded":
        parts.append(row.message)
    return "  ".join(parts)


def _rich_table(view: "SweepView"):
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    rows = table_rows(view)
    table = Table(expand=False)
    for column in rows[0]:
        table.add_column(column)
    for row in rows[1:]:
        table.add_row(*row, style="bold green" if row[-1] else None)
    return Group(Text(summary_line(view)), table)


def draw(views, *, output_format: str = "text", live: Optional[bool] = None) -> Optional["SweepView"]:
    """Every view: a live table on a terminal, one line per changed trial otherwise (then the final table), or a
    record per changed trial (json, yaml) and the sweep's record at the end. Returns the last view."""
    last: Optional[SweepView] = None
    if output_format != "text":
        from .formats import record_text

        shown: dict[int, Any] = {}
        for view in views:
            for row in view.rows:
                data = {"kind": "trial", "sweep": view.sweep_id, **row.data()}
                key = {**data, "duration": None}
                if shown.get(row.index) != key:
                    echo(record_text(data, output_format))
                    shown[row.index] = key
            sys.stdout.flush()
            last = view
        if last is not None:
            echo(record_text({"kind": "sweep", **last.data()}, output_format))
        return last
    if live is None:
        live = sys.stdout.isatty()
    if live:
        from rich.console import Console
        from rich.live import Live

        with Live(console=Console(), auto_refresh=False, transient=False) as display:
            for view in views:
                display.update(_rich_table(view), refresh=True)
                last = view
        return last
    lines: dict[int, str] = {}
    for view in views:
        for row in sorted(view.rows, key=lambda row: row.index):
            line = _row_line(view, row)
            if row.state != "waiting" and lines.get(row.index) != line:
                echo(line)
                lines[row.index] = line
        sys.stdout.flush()
        last = view
    if last is not None:
        print_table(last)
    return last


def print_table(view: "SweepView") -> None:
    from .live import table_lines

    echo(summary_line(view))
    for line in table_lines(table_rows(view)):
        echo(line.rstrip())


# ------------------------------------------------------------------------------------------------------------------
# status, stop and logs of a sweep (run_cmds.py hands --sweep here)

def _recorded(sweep_id: str):
    from paictl.targets.sweep.store import SweepStore

    store = SweepStore(sweep_id)
    definition = store.definition()
    return store, definition, _open(definition["target"], definition.get("backend") or {})


def show_sweep(sweep_id: str, output_format: str) -> None:
    """`paictl status --sweep ID`: the table, the trials still running asked of their backend."""
    from paictl.targets.sweep.runner import observed

    from .formats import record_text
    from .submit_run import check_format

    check_format(output_format)
    store, _, backend = _recorded(sweep_id)
    try:
        view = observed(store, backend)
    finally:
        backend.close()
    if output_format == "text":
        print_table(view)
    else:
        echo(record_text({"kind": "sweep", **view.data()}, output_format))


def stop_whole_sweep(sweep_id: str, output_format: str) -> None:
    """`paictl stop --sweep ID`: no trial starts any more, and every running one is stopped."""
    from paictl.targets.sweep.runner import stop_sweep

    from .formats import record_text
    from .submit_run import check_format

    check_format(output_format)
    store, _, backend = _recorded(sweep_id)
    try:
        stopped = stop_sweep(store, backend, f"stopped by `paictl stop --sweep {sweep_id}` at "
                                             f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}")
    finally:
        backend.close()
    if output_format == "text":
        for _, line in stopped:
            echo(line)
        echo(f"sweep {sweep_id}: stopped; {len(stopped)} trial(s) were running; the others will not start")
    else:
        echo(record_text({"sweep": sweep_id, "stopped": [{"trial": row.index, "name": row.name, "result": line}
                                                         for row, line in stopped]}, output_format))


def trial_for_logs(sweep_id: str, trial: Optional[int]) -> tuple[str, str, dict[str, Any]]:
    """`paictl logs --sweep ID --trial N`: the trial's job name on its backend, the target, the recorded flags."""
    from paictl.targets.sweep.store import SweepStore

    if trial is None:
        raise UsageError("--sweep needs --trial N (the trial whose logs to show)")
    store = SweepStore(sweep_id)
    definition = store.definition()
    trials = {t["index"]: t for t in definition["trials"]}
    if trial not in trials:
        raise UsageError(f"sweep {sweep_id} has trials 0 to {len(trials) - 1}, not {trial}")
    record = store.record(trial)
    if record is None or record.get("phase") == "submitting":
        raise UsageError(f"trial {trial} of sweep {sweep_id} was never submitted")
    return record.get("job") or record["name"], definition["target"], definition.get("backend") or {}
