"""A followed local run works in a session of its own, while the process the user started stays the terminal's job.

Why: Linux's autogroup scheduler (`/proc/sys/kernel/sched_autogroup_enabled`, on by default) shares the CPUs between
sessions first and only then between the processes of a session. `submit --target local --follow` is the run's
runner: it starts every task, polls them and writes the run's state. Left in the terminal's session it shares that
session's one share with whatever else the session runs (a build or a training loop started with `&`): with four
busy processes in the session, 200 one-`true` tasks took 1.9-2.9 s to their verdict, against 0.8-1.1 s with the
runner in a session of its own. The detached supervisor (`submit` without `--follow`) and every task already run in
sessions of their own.

So the command forks: the child leaves the session (`setsid`) and does the command's work, writing to the same
standard output and error; the parent, still in the terminal's foreground process group, waits for it and exits
with its status. What the terminal sends the parent reaches the run as before: Ctrl-C, SIGTERM, SIGHUP and SIGQUIT
are passed on, Ctrl-Z stops the child with the parent and Ctrl-Z's `fg` resumes both. If the parent is killed
outright the child is too (PR_SET_PDEATHSIG), so the run's watchdog stops its tasks, as it did when the runner
itself was killed. The fork happens only where both processes can write the same streams: standard output and error
must be file descriptors 1 and 2 (not a test runner's capture), and no other thread may be running.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Callable

from .process_exit import exit_now, flush_standard_streams

#: Signals the terminal or a user sends the command that must reach the run (the child has the command's handlers).
PASSED_ON = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
_PR_SET_PDEATHSIG = 1


def can_fork() -> bool:
    """True when a child can do the command's work in this process's place (see the module's docstring)."""
    if not hasattr(os, "fork") or not hasattr(os, "setsid"):
        return False
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:
        return False
    for stream, descriptor in ((sys.stdout, 1), (sys.stderr, 2)):
        try:
            if stream is None or stream.fileno() != descriptor:
                return False
        except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation: an in-memory capture
            return False
    return True


def run_in_own_session(work: Callable[[], int], *, say: Callable[[str], None]) -> int:
    """`work()`'s exit status, run in a child in a new session when `can_fork()`, else here. `say`: writes a line to
    standard error (the parent's word when the child did not end on its own)."""
    if not can_fork():
        return work()
    flush_standard_streams()
    parent = os.getpid()
    try:
        child = os.fork()
    except OSError:  # no process to spare (RLIMIT_NPROC, memory): the work is done here, as before
        return work()
    if child == 0:
        status = _work_in_child(work, parent)
        try:
            exit_now(status)
        finally:  # never back into the caller's stack: the parent returns the status
            os._exit(status)
    return _wait(child, say)


def _work_in_child(work: Callable[[], int], parent: int) -> int:
    """`work()`'s status, as the interpreter would make one of what it raised."""
    import atexit

    # the exit handlers registered so far are the parent's, which runs them when it exits: the child runs its own
    clear_exit_handlers = getattr(atexit, "_clear", None)
    if clear_exit_handlers is not None:
        clear_exit_handlers()
    status = 1
    try:
        os.setsid()
        _die_with(parent)
        status = work()
    except SystemExit as stop:  # as the interpreter turns SystemExit into a status
        code = stop.code
        if code is None or isinstance(code, int):
            status = code or 0
        else:
            sys.stderr.write(f"{code}\n")
    except BaseException:  # as the interpreter reports an uncaught exception
        import traceback

        traceback.print_exc()
    return status


def _die_with(parent: int) -> None:
    """SIGKILL this process when its parent dies (Linux); leave now if it already has."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def _wait(child: int, say: Callable[[str], None]) -> int:
    def pass_on(signum: int, frame: object) -> None:
        try:
            os.kill(child, signum)
        except ProcessLookupError:
            pass

    def stop_with_child(signum: int, frame: object) -> None:  # Ctrl-Z: stop the run too; `fg`: resume both
        pass_on(signal.SIGSTOP, frame)
        signal.signal(signal.SIGTSTP, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTSTP)  # stops here until SIGCONT
        signal.signal(signal.SIGTSTP, stop_with_child)
        pass_on(signal.SIGCONT, frame)

    previous = {signum: signal.signal(signum, pass_on) for signum in PASSED_ON
                if signal.getsignal(signum) != signal.SIG_IGN}  # one inherited ignored stays so
    previous[signal.SIGTSTP] = signal.signal(signal.SIGTSTP, stop_with_child)
    try:
        while True:
            try:
                _, status = os.waitpid(child, 0)
                break
            except ChildProcessError:  # reaped elsewhere (a SIGCHLD handler set to SIG_IGN): nothing to report
                return 1
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        try:
            say(f"paictl: the run's process ended by signal {signum} ({signal.Signals(signum).name}); "
                "its watchdog stops every task left")
        except (OSError, ValueError):
            pass
        return 128 + signum
    return os.waitstatus_to_exitcode(status)
