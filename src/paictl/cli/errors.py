"""How the CLI reports what went wrong: one module every command imports, so that no command imports `app.py`.

Errors are `paictl.errors.PaictlError`s raised anywhere below; here they become one line on standard error and the
documented exit status. Standard output stays clean for data and pipes.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: entry.py's early answers use error_line
if TYPE_CHECKING:
    from typing import NoReturn, Sequence

    from paictl.errors import InvalidJobError, PaictlError


def error_line(error: PaictlError | str) -> str:
    """The one line every command prints for an error, on standard error."""
    text = str(error)
    if text.isascii() and text.isprintable() and not any(mark in text for mark in "@?#"):
        return f"paictl: error: {text}"  # no control character to escape, no URL that carries credentials
    from paictl.errors import mask_urls
    from paictl.protocol.diagnostics import one_line  # a file name or --profile value must not reach the terminal raw

    return f"paictl: error: {mask_urls(one_line(text))}"


def check_seconds(value: float | None, option: str) -> float | None:
    """A duration given on the command line (`--pending-timeout`, `--min-poll-interval`, `--interval`): a finite
    number of seconds above 0, or None (not given). click's FLOAT takes `nan`, `inf` and `-1`, which time.sleep
    refuses with a traceback, or which make a wait end at once or never; they are usage errors (exit 2)."""
    import math

    if value is not None and not (math.isfinite(value) and value > 0):
        from paictl.errors import UsageError

        raise UsageError(f"{option} {value!r}: give a number of seconds above 0")
    return value


def fail(error: PaictlError) -> NoReturn:
    """End the command with its error: an invalid file (a job, profile or cluster file) as its located report,
    anything else as one line."""
    import typer

    raise typer.Exit(print_error(error, typer.echo))


def invalid_report(error: InvalidJobError) -> str:
    """The text report of a job a command refuses, as `validate` prints it: its diagnostics, located, in the file's
    order, then the summary line. (Warnings shown before a later error are not in `error.diagnostics`.)"""
    from paictl.protocol.validate import ValidationResult

    from .report import summary_line, text_report

    result = ValidationResult(path="", diagnostics=tuple(error.diagnostics), data=None)
    return text_report([result]) + "\n" + summary_line([result], strict=False)


def print_error(error: PaictlError, echo) -> int:
    """A refused command's error on standard error (an invalid job's located report, else one line); its status.

    For the typer-free command bodies, which return a status instead of raising typer.Exit."""
    from paictl.errors import InvalidJobError

    echo(invalid_report(error) if isinstance(error, InvalidJobError) else error_line(error), err=True)
    return error.exit_code


def report_invalid(error: InvalidJobError) -> NoReturn:
    """Diagnostics of a job a command refuses, on standard error (standard output stays clean for pipes)."""
    import typer

    typer.echo(invalid_report(error), err=True)
    raise typer.Exit(error.exit_code)


def report_warnings(diagnostics: Sequence) -> None:
    """Warnings of a job a command goes on with (validation, then the target's own), on standard error.

    Written as `typer.echo` writes (output.plain_echo), without importing typer: the typer-free `compile`
    path (entry.py) reports warnings too."""
    from .report import format_diagnostic
    from .output import plain_echo

    if diagnostics:
        plain_echo("\n".join(format_diagnostic(d) for d in diagnostics), err=True)
