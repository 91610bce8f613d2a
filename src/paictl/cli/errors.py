"""How the CLI reports what went wrong: one module every command imports, so that no command imports `app.py`.

Errors are `paictl.errors.PaictlError`s raised anywhere below; here they become one line on standard error and the
documented exit status. Standard output stays clean for data and pipes.
"""

from __future__ import annotations

from typing import NoReturn, Sequence

import typer

from paictl.errors import InvalidJobError, PaictlError


def fail(error: PaictlError) -> NoReturn:
    typer.echo(f"paictl: error: {error}", err=True)
    raise typer.Exit(error.exit_code)


def report_invalid(error: InvalidJobError) -> NoReturn:
    """Diagnostics of a job a command refuses, on standard error (standard output stays clean for pipes)."""
    from paictl.protocol.validate import ValidationResult

    from .report import text_report

    errors = [d for d in error.diagnostics if d.is_error]
    typer.echo(text_report([ValidationResult(path="", diagnostics=tuple(errors), data=None)]), err=True)
    raise typer.Exit(error.exit_code)


def report_warnings(diagnostics: Sequence) -> None:
    """Warnings of a job a command goes on with (validation, then the target's own), on standard error."""
    from .report import format_diagnostic

    if diagnostics:
        typer.echo("\n".join(format_diagnostic(d) for d in diagnostics), err=True)
