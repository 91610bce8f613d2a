"""How the process ends: on Ctrl-C or SIGTERM (130), and once a command is done, without the interpreter's teardown.

That teardown is 15 ms of each run, a tenth of a local run of one task, and nothing of paictl's needs it. What an
exit must still do is done: the `atexit` handlers run (the kubernetes client deletes its temporary certificate files
there) and the standard streams are flushed. Used by the console script (entry.py, app.py) and by the child that
does a followed local run's work (own_session.py).
"""

from __future__ import annotations

import os
import sys

INTERRUPTED = 130


def _interrupted(signum: int, frame: object) -> None:
    raise SystemExit(INTERRUPTED)


def exit_on_interrupt() -> None:
    """Ctrl-C (SIGINT) and SIGTERM end the command with 130 through its clean-up, except a signal this process
    inherited ignored: a script's background job ignores SIGINT so that Ctrl-C at the terminal stops the script
    and not it (Python keeps that for SIGINT too), and a supervisor may have its reasons for SIGTERM."""
    import signal

    for signum in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(signum) != signal.SIG_IGN:
            signal.signal(signum, _interrupted)


def flush_standard_streams() -> None:
    """Flush standard output and error; a failure to write them was reported by the command, or cannot be."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass


def exit_now(status: int) -> None:
    import atexit

    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)
    if run_exit_handlers is None:  # not CPython: the ordinary exit
        sys.exit(status)
    run_exit_handlers()
    flush_standard_streams()
    os._exit(status)
