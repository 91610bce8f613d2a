"""Finding and killing every process of a local run, whatever the tasks did to escape their process group.

A task may leave its process group (`timeout 600 cmd`, `set -m; cmd &`, `setsid cmd`), so killing groups is not
enough. Two facts tie a process to its run, read from /proc:

- ancestry: the process that runs the tasks is a *child subreaper* (prctl PR_SET_CHILD_SUBREAPER), so a task's
  orphaned descendants are re-parented to it rather than to init, and every process of the run stays in its tree
  while it lives;
- the run marker: every task starts with `PAICTL_RUN_ID=<run id>` (runtime.RUN_MARKER) and
  `PAICTL_RUN_ID_TASK=<role>-<index>` in its environment, which its children inherit; /proc/<pid>/environ keeps
  the environment a process was started with, so a process still carries it after the runner has died (kill -9),
  when ancestry is lost.

Deliberately stdlib-only: the watchdog imports it.
"""

from __future__ import annotations

import ctypes
import os
import signal
import time
from typing import Callable, Iterable, Optional

#: The run marker every task starts with (runtime.py sets it; defined here so that the watchdog, which runs without
#: site-packages, needs no other module).
RUN_MARKER = "PAICTL_RUN_ID"
#: Per-task marker; starts with runtime.RUN_MARKER so that a task never inherits it from the shell that ran paictl.
TASK_MARKER = "PAICTL_RUN_ID_TASK"
_PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Make this process adopt its orphaned descendants (Linux >= 3.4); False where that is not available."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def stop_subreaping() -> None:
    """Undo `become_subreaper` (an attached run ends inside a process that lives on, e.g. a Python program)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass



def _stat(pid: int) -> Optional[tuple[int, str, str]]:
    """(ppid, state, start time in ticks) of `pid`, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            text = stat.read().decode("ascii", "replace")
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    return int(fields[1]), fields[0], fields[19]


def children(pid: int) -> Optional[set[int]]:
    """The direct children of `pid` (zombies included), from /proc/<pid>/task/*/children; None where the kernel does
    not provide those files. One small read per thread, against a read of every process for `process_table`."""
    found: set[int] = set()
    try:
        threads = os.listdir(f"/proc/{pid}/task")
        for thread in threads:
            with open(f"/proc/{pid}/task/{thread}/children", "rb") as listed:
                found.update(int(child) for child in listed.read().split())
    except FileNotFoundError:
        if not os.path.exists(f"/proc/{pid}/task/{pid}/children"):
            return None  # no CONFIG_PROC_CHILDREN
        return children(pid)  # a thread ended while we read: read again
    except OSError:
        return None
    return found


def process_table() -> dict[int, tuple[int, str, str]]:
    """Every visible process: pid -> (ppid, state, start ticks)."""
    table: dict[int, tuple[int, str, str]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _stat(int(entry))
            if stat is not None:
                table[int(entry)] = stat
    return table


def descendants(root: int, table: Optional[dict[int, tuple[int, str, str]]] = None, *,
                skip: Iterable[int] = ()) -> set[int]:
    """Every live (non-zombie) process below `root` in the process tree, not entering the subtrees of `skip`."""
    table = process_table() if table is None else table
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: set[int] = set()
    skipped = set(skip)
    todo = list(children.get(root, ()))
    while todo:
        pid = todo.pop()
        if pid not in found and pid not in skipped:
            found.add(pid)
            todo.extend(children.get(pid, ()))
    return {pid for pid in found if table[pid][1] not in ("Z", "X")}


def marked_among(pids: Iterable[int], run_id: str, task: Optional[str] = None) -> set[int]:
    """Those of `pids` that are alive and were started with this run's marker (and this task's, if given)."""
    wanted = [f"{RUN_MARKER}={run_id}".encode()]
    if task is not None:
        wanted.append(f"{TASK_MARKER}={task}".encode())
    me = os.getpid()
    found: set[int] = set()
    for pid in pids:
        if pid == me:
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as environ:
                variables = environ.read().split(b"\0")
        except OSError:  # gone, or another user's
            continue
        if all(item in variables for item in wanted):
            stat = _stat(pid)
            if stat is not None and stat[1] not in ("Z", "X"):
                found.add(pid)
    return found


def marked(run_id: str, task: Optional[str] = None) -> set[int]:
    """Every live process started with this run's marker (and this task's, if given) in its environment."""
    if not run_id:
        return set()
    return marked_among((int(entry) for entry in os.listdir("/proc") if entry.isdigit()), run_id, task)


def kill_all(pids: Iterable[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def kill_until_gone(find: Callable[[], set[int]], *, keep: Iterable[int] = (), rounds: int = 50) -> set[int]:
    """SIGKILL what `find()` returns until it returns nothing (a process may fork while we kill), reaping those
    that were our children (adopted orphans; never the ones in `keep`, which `subprocess` waits for). The
    survivors, if any."""
    killed: set[int] = set()
    left = find()
    for _ in range(rounds):
        if not left:
            break
        kill_all(left)
        killed |= left
        time.sleep(0.01)
        left = find()
    _reap(killed - set(keep))
    return left


def _reap(pids: Iterable[int]) -> None:
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # not our child: its own parent reaps it
            pass
