"""Showing a job while it runs: a live rich table on a terminal, one line per change otherwise, JSON lines on request.

Backends yield `JobView` snapshots; this module only draws them, so the local runner and the Kubernetes follower
look the same to the user.
"""

from __future__ import annotations

import sys
from typing import Iterable, Optional

from paictl.targets.states import JobView, TaskView, view_to_data

from .output import plain_echo as echo  # typer.echo's bytes, without importing typer


def shown(text: str) -> str:
    """Job-supplied text (names, messages, diagnoses, node names) as it may reach a terminal: control characters
    escaped, so a job cannot write the clipboard (OSC 52), the title (OSC 0), reset the screen (ESC c) or ring the
    bell through `paictl status`. JSON and YAML records keep the text as it is."""
    if text.isascii() and text.isprintable():  # nothing to escape (and a listing need not import protocol/)
        return text
    from paictl.protocol.diagnostics import one_line

    return one_line(text)


def _task_line(task: TaskView) -> str:
    parts = [f"{task.role}-{task.index}", task.state, f"attempt {task.attempt}"]
    if task.node:
        parts.append(f"on {task.node}")
    if task.exit_code is not None:
        parts.append(f"exit {task.exit_code}")
    if task.diagnosis:
        parts.append(task.diagnosis)
    return "  ".join(parts)


def _failed_line(task: TaskView, failed: tuple) -> str:
    """An earlier attempt of the task that failed and was retried (the snapshots may never have shown it)."""
    attempt, code, diagnosis = failed
    parts = [f"{task.role}-{task.index}", "failed", f"attempt {attempt}"]
    if task.node:
        parts.append(f"on {task.node}")
    if code is not None:
        parts.append(f"exit {code}")
    if diagnosis:
        parts.append(diagnosis)
    return "  ".join(parts + ["retried"])


def _job_line(view: JobView) -> str:
    line = f"{view.name}: {view.state.value} (attempt {view.attempt})"
    if view.completion_code is not None:
        line += f", code {view.completion_code}"
    if view.triggered_by is not None:
        line += f", decided by {view.triggered_by[0]}-{view.triggered_by[1]}"
    if view.message:
        line += f": {view.message}"
    return line


def _table(view: JobView):
    """The job line above the task table (as a title it would wrap to the table's width)."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    table = Table(expand=False)
    for column in ("role", "index", "state", "attempt", "node", "exit", "diagnosis"):
        table.add_column(column)
    for task in view.tasks:
        diagnosis = task.diagnosis or ""
        if not diagnosis and task.failed_attempts:
            attempt, code, why = task.failed_attempts[-1]
            diagnosis = f"attempt {attempt} failed: exit {code}" + (f" {why}" if why else "") + ", retried"
        table.add_row(*(shown(cell) for cell in (task.role, str(task.index), task.state, str(task.attempt),
                                                   task.node or "", "" if task.exit_code is None else
                                                   str(task.exit_code), diagnosis)))
    return Group(Text(shown(_job_line(view))), table)


def follow(views: Iterable[JobView], *, output_format: str = "text", live: Optional[bool] = None) -> Optional[JobView]:
    """Draw every snapshot; return the last one (None if the backend yielded nothing).

    text on a terminal: a rich live table. text otherwise: the job line and each task line whenever they change,
    so a log file or a pipe gets a readable history. json: one JSON object per changed snapshot.
    """
    last: Optional[JobView] = None
    if output_format != "text":
        from .formats import record_text

        for view in views:
            if view != last:
                echo(record_text(view_to_data(view), output_format))
                sys.stdout.flush()
            last = view
        return last
    if live is None:
        live = sys.stdout.isatty()
    if live:
        from rich.console import Console
        from rich.live import Live

        console = Console()
        with Live(console=console, auto_refresh=False, transient=False) as display:
            for view in views:
                if view != last:
                    display.update(_table(view), refresh=True)
                last = view
        return last
    shown_job = ""
    shown_tasks: dict[tuple[str, int], str] = {}
    shown_failures: dict[tuple[str, int], int] = {}
    for view in views:
        if view.where and last is None:
            echo(shown(f"{view.name}: {view.where}"))
        line = shown(_job_line(view))
        if line != shown_job:
            echo(line)
            shown_job = line
        for task in view.tasks:
            key = (task.role, task.index)
            for failed in task.failed_attempts[shown_failures.get(key, 0):]:
                echo(f"  {shown(_failed_line(task, failed))}")
            shown_failures[key] = len(task.failed_attempts)
            task_line = shown(_task_line(task))
            if shown_tasks.get((task.role, task.index)) != task_line:
                echo(f"  {task_line}")
                shown_tasks[(task.role, task.index)] = task_line
        sys.stdout.flush()
        last = view
    return last


def job_rows(views: list[JobView], *, wide: bool = False, now: float) -> list[tuple[str, ...]]:
    """The rows of `paictl status` without a name, as `kubectl get` prints them (wide: the tasks and the message)."""
    from .formats import age

    rows = [("NAME", "WHERE", "STATE", "ATTEMPT", "CODE", "AGE") + (("TASKS", "MESSAGE") if wide else ())]
    for view in views:
        row = (view.name, view.where, view.state.value, str(view.attempt),
               "" if view.completion_code is None else str(view.completion_code), age(view.created, now))
        if wide:
            done = sum(1 for task in view.tasks if task.state in ("succeeded", "Succeeded", "Completed", "SUCCEEDED"))
            row += (f"{done}/{len(view.tasks)}" if view.tasks else "", view.message)
        rows.append(tuple(shown(cell) for cell in row))
    return rows


def table_lines(rows: list[tuple[str, ...]]) -> list[str]:
    """Columns three spaces apart, the last one not padded (kubectl's tabwriter)."""
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]) - 1)]
    return ["   ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "   " + row[-1] for row in rows]


def job_list(views: list[JobView], *, output_format: str = "text") -> None:
    """`paictl status` without a name: one line per job, as `kubectl get` (`-o wide` adds columns, `-o name` prints
    the names only); JSON: one array of the snapshots; YAML: one document per job."""
    import time

    if output_format in ("json", "yaml"):
        from .formats import records_text

        text = records_text([view_to_data(view) for view in views], output_format)
        if text:
            echo(text)
        return
    if not views:
        echo("no jobs", err=True)
        return
    if output_format == "name":
        for view in views:
            echo(shown(view.name))
        return
    for line in table_lines(job_rows(views, wide=output_format == "wide", now=time.time())):
        echo(line)
