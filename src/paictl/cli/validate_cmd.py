"""`paictl validate` without typer: the command's whole behaviour, shared by the typer command in app.py and the
start-up fast path in entry.py, so both print the same bytes and exit with the same codes.

`validate` runs in pre-commit hooks and editors, where start-up is most of the cost: importing typer and every
other command's module took longer than validating a file. This module imports neither.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable, Sequence

from paictl.errors import InputError, UsageError

YAML_SUFFIXES = (".yaml", ".yml")

#: Writes one line (`err=True`: to standard error), as `typer.echo` does.
Echo = Callable[..., None]


def collect_paths(paths: Sequence[str]) -> list[str]:
    """Files as given; directories searched recursively for *.yaml/*.yml (hidden folders skipped); '-' is stdin."""
    found: list[str] = []
    for given in paths:
        if given == "-":
            found.append(given)
            continue
        path = Path(given)
        try:
            is_dir = path.is_dir()
        except (OSError, ValueError):  # a name too long for the file system: reading it reports why, located
            is_dir = False
        if is_dir:
            files = sorted(p for p in path.rglob("*") if p.suffix in YAML_SUFFIXES and p.is_file()
                           and not any(part.startswith(".") for part in p.relative_to(path).parts[:-1]))
            if not files:
                raise InputError(f"{given}: no *.yaml or *.yml files in this directory")
            found.extend(str(p) for p in files)
        else:
            found.append(given)
    return found


def run_validate(paths: Sequence[str], *, json_output: bool, strict: bool, stdin_name: str, quiet: bool,
                 echo: Echo, target: str | None = None, profile: str | None = None) -> int:
    """Validate `paths`, print the report through `echo`, return the exit status (0, 1 or 2).

    Each file's result keeps only its diagnostics once checked (`ValidationResult.summary`), not its parsed
    document, so memory stays flat however many files are given.
    """
    from paictl.protocol import read_source, read_stdin
    from paictl.protocol.validate import validate_bytes

    from .errors import error_line
    from .report import json_report, summary_line, text_report

    results = []
    io_errors: list[str] = []
    try:
        files = collect_paths(paths)
    except InputError as exc:
        echo(error_line(exc), err=True)
        return exc.exit_code
    for file in files:
        try:
            raw = read_stdin() if file == "-" else read_source(file)
        except InputError as exc:
            io_errors.append(str(exc))
            continue
        name = stdin_name if file == "-" else file
        result = validate_bytes(raw, name, other_kinds=validate_if_item)
        if (target is not None or profile is not None) and result.ok and not _is_item(result.data):
            try:
                result = with_compile_verdict(result, raw, target=target or "framework", profile=profile or "default")
            except UsageError as exc:
                echo(error_line(exc), err=True)
                return exc.exit_code
        results.append(result.summary())

    if json_output:
        echo(json_report(results, strict))
    else:
        report = text_report(results)
        if report:
            echo(report)
        if not quiet and results:
            echo(summary_line(results, strict))
    for message in io_errors:
        echo(error_line(message), err=True)
    if io_errors:
        return InputError.exit_code
    return 1 if any(not r.ok or (strict and r.warnings) for r in results) else 0


def with_compile_verdict(result, raw: bytes, *, target: str, profile: str):
    """`result` with what `compile --target TARGET --profile PROFILE` adds: its errors (the verdict is compile's) and
    the target's own warnings. Nothing is printed or written."""
    from paictl.errors import InvalidJobError
    from paictl.targets.compiled import compile_job

    seen = {(d.code, d.line, d.column, d.message) for d in result.diagnostics}
    try:
        added = list(compile_job(raw, target=target, profile=profile, name=result.path).warnings)
    except InvalidJobError as exc:
        added = list(exc.diagnostics)
    new = [d for d in added if (d.code, d.line, d.column, d.message) not in seen]
    if not new:
        return result
    ordered = sorted((*result.diagnostics, *new), key=lambda d: (d.line or 0, d.column or 0, d.code))
    return result._replace(diagnostics=tuple(ordered))


def _is_item(data) -> bool:
    from paictl.marketplace.shape import looks_like_item

    return isinstance(data, dict) and looks_like_item(data)


def validate_if_item(data: dict, text: str, path: str):
    """The hook for documents that are not clean jobs: a marketplace item's result, else None (a job)."""
    from paictl.marketplace.shape import looks_like_item

    if not looks_like_item(data):
        return None
    from paictl.marketplace.checking import check_item_text

    return check_item_text(text, path).result

