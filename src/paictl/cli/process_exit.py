"""How the process ends: on Ctrl-C or SIGTERM (130), and once a command is done, without the interpreter's teardown;
the signal dispositions every command starts from (`take_signals`), and standard streams that write whole
(`whole_writes`).

That teardown is 15 ms of each run, a tenth of a local run of one task, and nothing of paictl's needs it. What an
exit must still do is done: the `atexit` handlers run (the kubernetes client deletes its temporary certificate files
there) and the standard streams are flushed. Used by the console script (entry.py, app.py) and by the child that
does a followed local run's work (own_session.py).
"""

from __future__ import annotations

import os
import sys

INTERRUPTED = 130


def exit_interrupted(signum: int, frame: object) -> None:
    """The handler of SIGINT and SIGTERM: the command ends with 130 through its clean-up."""
    raise SystemExit(INTERRUPTED)


def take_signals() -> None:
    """Every command's start, on both paths (entry.py's, app.main):
    - Ctrl-C (SIGINT) and SIGTERM end the command with 130 through its clean-up (`exit_interrupted`), except a signal
      this process inherited ignored: a script's background job ignores SIGINT so that Ctrl-C at the terminal stops
      the script and not it (Python keeps that for SIGINT too), and a supervisor may have its reasons for SIGTERM;
    - SIGCHLD inherited ignored goes back to its default: ignored, the kernel reaps every child at once and no exit
      status can be read (a failed task, a `docker` or `kubectl` that failed, would read as exit 0)."""
    import signal

    for signum in (signal.SIGINT, signal.SIGTERM):
        interrupt_on(signum)
    if signal.getsignal(signal.SIGCHLD) == signal.SIG_IGN:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)


def whole_writes() -> None:
    """Standard output and error written whole, or with an error. Under `python -u` or PYTHONUNBUFFERED (set in many
    CI images and containers) Python's text streams write straight to the file descriptor and ignore a short write:
    what the kernel did not take (a reader that went away, a signal interrupting a write to a slow pipe, a disk that
    fills) was dropped without an error, so `paictl ... | head` exited 0 or 1, not 141, and output cut short by a
    full disk could exit 0. A buffered writer in between writes the rest or raises; each echo flushes (plain_echo,
    click's echo), so nothing is held back. The replaced streams stay as `sys.__stdout__`/`sys.__stderr__`, which
    keeps their descriptors open."""
    import io

    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        raw = getattr(stream, "buffer", None)
        if not isinstance(raw, io.FileIO) or stream is not getattr(sys, f"__{name}__"):
            continue  # already buffered (the usual case), or replaced by someone else (a test's capture)
        setattr(sys, name, io.TextIOWrapper(io.BufferedWriter(raw), encoding=stream.encoding, errors=stream.errors,
                                            line_buffering=stream.line_buffering, write_through=True))


def interrupt_on(signum: int) -> object:
    """`exit_interrupted` for `signum`, unless this process inherited it ignored (see take_signals); returns the
    handler it had, to be put back."""
    import signal

    previous = signal.getsignal(signum)
    if previous != signal.SIG_IGN:
        signal.signal(signum, exit_interrupted)
    return previous


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
