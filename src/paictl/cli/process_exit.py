"""Leaving the process once a command is done, without the interpreter's teardown of every module and object.

That teardown is 15 ms of each run, a tenth of a local run of one task, and nothing of paictl's needs it. What an
exit must still do is done: the `atexit` handlers run (the kubernetes client deletes its temporary certificate files
there) and the standard streams are flushed. Used by the console script (entry.py) and by the child that does a
followed local run's work (own_session.py).
"""

from __future__ import annotations

import os
import sys


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
