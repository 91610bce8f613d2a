"""How the typer-free command bodies write (`plain_echo`, typer.echo's bytes), and how both entry paths (the typer
app and the typer-free commands) end when standard output cannot be written, which is not a bug. A reader that went
away (`paictl ... | head`) exits 141, as a shell reports SIGPIPE; a full disk or another write error exits 74
(EX_IOERR) with one line on standard error (README, exit codes).
"""

from __future__ import annotations

import os
import re
import sys

_ANSI = re.compile(r"\033\[[;?0-9]*[a-zA-Z]")


def plain_echo(message: str, err: bool = False, nl: bool = True) -> None:
    """`typer.echo` for a str, byte for byte: a newline added (unless `nl` is false), ANSI codes stripped unless on a
    terminal, flushed."""
    stream = sys.stderr if err else sys.stdout
    text = message + "\n" if nl else message
    try:
        terminal = stream.isatty()
    except Exception:  # noqa: BLE001 - click treats any failure as "not a terminal"
        terminal = False
    if not terminal:
        text = _ANSI.sub("", text)
    stream.write(text)
    stream.flush()


EXIT_BROKEN_PIPE = 141
EXIT_OUTPUT_ERROR = 74


def flush_stdout() -> None:
    stream = sys.stdout
    if stream is not None and not getattr(stream, "closed", False):
        stream.flush()


def silence_stdout() -> None:
    """Point standard output at /dev/null, so the interpreter's final flush cannot fail again."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError):
        pass


def output_error_exit(error: OSError) -> int:
    """The exit status for a failed write to standard output; any other OSError is re-raised (a bug)."""
    if isinstance(error, BrokenPipeError):
        silence_stdout()
        return EXIT_BROKEN_PIPE
    if error.errno is None or getattr(error, "filename", None) is not None:
        raise error
    silence_stdout()
    sys.stderr.write(f"paictl: error: cannot write standard output: {error.strerror or error}\n")
    sys.stderr.flush()
    return EXIT_OUTPUT_ERROR
