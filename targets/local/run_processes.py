"""The processes of a local run as its runner sees them: which are the run's, and how each task's are signalled,
killed and reaped, down to those that left the task's process group.

The runner is a child subreaper and every task carries the run's and its own marker variables (procs.py), so a
process of the run is found by ancestry and marker even after it left its group (`timeout`, `set -m`, `setsid`).
Children the runner's process had before the run (a Python program's own) and the watchdog are never the run's.
The watchdog (watchdog.py) is told of every task's process group as it starts and ends, so that it kills what is
left if the runner dies.
"""

from __future__ import annotations

import os
import signal
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional

from paictl.targets.local import procs, watchdog

if TYPE_CHECKING:
    from paictl.targets.local.task import TaskInstance


class RunProcesses:
    """One run's processes below its runner. `tasks`: the current attempt's tasks (read at each call); `docker`:
    the run's containers (containers.DockerTasks), told when a task's `docker run` has ended."""

    def __init__(self, run_id: str, tasks: Callable[[], Iterable["TaskInstance"]], docker: Any = None):
        self.run_id = run_id
        self._tasks = tasks
        self._docker = docker
        #: Children this process had before the run (a Python program's own): never the run's, nor their trees.
        self.foreign: set[int] = set()
        self.subreaper = False
        self.watchdog: Optional[watchdog.Link] = None

    def shells(self) -> set[int]:
        return {t.process.pid for t in self._tasks() if t.process is not None}

    def adopted(self) -> set[int]:
        """Processes below the runner that it did not start (orphans it adopted as subreaper), not the watchdog."""
        table = procs.process_table()
        return procs.descendants(os.getpid(), table, skip=self.foreign | self._watchdog_pid()) - self.shells()

    def reap_adopted(self) -> None:
        """Reap the adopted orphans that ended on their own (zombies of the subreaper)."""
        table = procs.process_table()
        me = os.getpid()
        for pid, (ppid, state, start) in table.items():
            if ppid == me and state == "Z" and pid not in self.foreign and pid not in self.shells() and \
                    pid not in self._watchdog_pid():
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass

    def signal(self, task: "TaskInstance", signum: int) -> None:
        try:
            os.killpg(task.process.pid, signum)  # type: ignore[union-attr]
        except (ProcessLookupError, PermissionError):
            pass
        for pid in self.task_processes(task):  # what left the group (timeout, set -m, setsid)
            try:
                os.kill(pid, signum)
            except (ProcessLookupError, PermissionError):
                pass

    def task_processes(self, task: "TaskInstance") -> set[int]:
        """The task's live processes outside its shell: the runner's descendants that carry its marker."""
        if self.left_nothing(task):
            return set()
        table = procs.process_table()
        return procs.marked_among(procs.descendants(os.getpid(), table) - self.shells(), self.run_id, task.label)

    def left_nothing(self, task: "TaskInstance", children: Optional[set[int]] = None) -> bool:
        """True when the task's shell has ended and been reaped, its process group is empty, and no process of the
        run lives outside the task shells.

        The runner is the run's subreaper, so a process leaves a task's tree only by being re-parented to the
        runner, which happens as its parent exits: once every member of the task's group is reaped, whatever they
        left behind is a child of the runner. With no child but task shells (and the watchdog, and the host
        program's own), nothing is left to find. This spares a read of every process in /proc as each of 200 tasks
        ends (7 ms a task); in any other case the full search runs. `children`: the runner's children as read after
        the shell was reaped (runner `_poll`); read now if not given.
        """
        if not self.subreaper or task.process is None or task.process.returncode is None:
            return False
        try:
            os.killpg(task.process.pid, 0)
            return False  # the group still has members, alive or not yet reaped
        except ProcessLookupError:
            pass
        except PermissionError:
            return False
        mine = procs.children(os.getpid()) if children is None else children
        if mine is None:
            return False
        return not (mine - self.shells() - self.foreign - self._watchdog_pid())

    def kill_group(self, task: "TaskInstance", children: Optional[set[int]] = None) -> None:
        """SIGKILL whatever is left of the task (its group and its marked processes), reap its shell and any orphan
        it left, and tell the watchdog the group is gone. `children`: as for `left_nothing`, from the runner's
        poll; when it shows nothing could be left, there is nothing to kill."""
        if task.process is None or task.group_gone:
            return
        if children is None or not self.left_nothing(task, children):
            self.signal(task, signal.SIGKILL)
            task.process.wait()
            procs.kill_until_gone(lambda: self.task_processes(task), keep=self.shells())
        if self._docker is not None:  # the CLI is gone: its container must not outlive it
            self._docker.ended(task.label)
        task.group_gone = True
        self.tell_watchdog(f"-{task.process.pid}")

    def tell_watchdog(self, line: str) -> None:
        if self.watchdog is not None:
            self.watchdog.tell(line)

    def flush_watchdog(self) -> None:
        if self.watchdog is not None:
            self.watchdog.flush()

    def _watchdog_pid(self) -> set[int]:
        return {self.watchdog.pid} if self.watchdog is not None else set()
