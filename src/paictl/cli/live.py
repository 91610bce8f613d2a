"""Showing a job while it runs: a live rich table on a terminal, one line per change otherwise, JSON lines on request.

Backends yield `JobView` snapshots; this module only draws them, so the local runner and the Kubernetes follower
look the same to the user.
"""

from __future__ import annotations

from paictl.compiler.emit import strict_json
import sys
from typing import Iterable, Optional

from paictl.targets.states import JobView, TaskView, view_to_data

from .output import plain_echo as echo  # typer.echo's bytes, without importing typer


def _task_line(task: TaskView) -> str:
    parts = [f"{task.role}-{task.index}", task.state, f"attempt {task.attempt}"]
    if task.node:
        parts.append(f"on {task.node}")
    if task.exit_code is not None:
        parts.append(f"exit {task.exit_code}")
    if task.diagnosis:
        parts.append(task.diagnosis)
    return "  ".join(parts)


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
        table.add_row(task.role, str(task.index), task.state, str(task.attempt), task.node or "",
                      "" if task.exit_code is None else str(task.exit_code), task.diagnosis or "")
    return Group(Text(_job_line(view)), table)


def follow(views: Iterable[JobView], *, output_format: str = "text", live: Optional[bool] = None) -> Optional[JobView]:
    """Draw every snapshot; return the last one (None if the backend yielded nothing).

    text on a terminal: a rich live table. text otherwise: the job line and each task line whenever they change,
    so a log file or a pipe gets a readable history. json: one JSON object per changed snapshot.
    """
    last: Optional[JobView] = None
    if output_format == "json":
        for view in views:
            if view != last:
                echo(strict_json(view_to_data(view), ensure_ascii=False))
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
    for view in views:
        if view.where and last is None:
            echo(f"{view.name}: {view.where}")
        line = _job_line(view)
        if line != shown_job:
            echo(line)
            shown_job = line
        for task in view.tasks:
            task_line = _task_line(task)
            if shown_tasks.get((task.role, task.index)) != task_line:
                echo(f"  {task_line}")
                shown_tasks[(task.role, task.index)] = task_line
        sys.stdout.flush()
        last = view
    return last


def job_list(views: list[JobView], *, output_format: str = "text") -> None:
    """`paictl status` without a name: one line per job, as `kubectl get`; JSON: one array of the snapshots."""
    if output_format == "json":
        echo(strict_json([view_to_data(view) for view in views], ensure_ascii=False))
        return
    if not views:
        echo("no jobs", err=True)
        return
    rows = [("NAME", "WHERE", "STATE", "ATTEMPT", "CODE")]
    rows += [(view.name, view.where, view.state.value, str(view.attempt),
              "" if view.completion_code is None else str(view.completion_code)) for view in views]
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]) - 1)]
    for row in rows:
        echo("   ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "   " + row[-1])
