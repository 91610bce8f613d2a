"""`paictl validate` without typer: the command's whole behaviour, shared by the typer command in app.py and the
start-up fast path in entry.py, so both print the same bytes and exit with the same codes.

`validate` runs in pre-commit hooks and editors, where start-up is most of the cost: importing typer and every
other command's module took longer than validating a file. This module imports neither.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Callable, NamedTuple, Sequence

from paictl.errors import InputError, UsageError

YAML_SUFFIXES = (".yaml", ".yml")

#: Writes one line (`err=True`: to standard error), as `typer.echo` does.
Echo = Callable[..., None]


class Found(NamedTuple):
    path: str
    searched: bool  # found in a directory (checked only if it is a job or an item by its shape), not named


#: A job's own root keys at the start of a line: a document with one of them is a job, however broken it is.
_JOB_ROOT_KEY = re.compile(rb"^(?:protocolVersion|taskRoles|prerequisites|deployments)[ \t]*:", re.M)
SKIP_REASON = ("neither a job nor a marketplace item: no protocolVersion, taskRoles, prerequisites or deployments, "
               "and no protocol with a name or author, at its root")


def is_job_or_item(raw: bytes, path: str) -> bool:
    """Whether a file found in a directory is one `validate` checks: a job (one of a job's keys at its root) or a
    marketplace item. Block-style jobs are recognised from their text; anything else is read (the loader's cache
    keeps the data for the check that follows)."""
    if _JOB_ROOT_KEY.search(raw):
        return True
    from paictl.marketplace.shape import looks_like_item
    from paictl.protocol.loading import DocumentError, decode_source, load_data

    try:
        data = load_data(decode_source(raw, path), path)
    except DocumentError:
        return False  # not YAML paictl can read, and no job key where a job has them
    return isinstance(data, dict) and (looks_like_item(data) or any(
        key in data for key in ("protocolVersion", "taskRoles", "prerequisites", "deployments")))


class PassedOver(NamedTuple):
    """An entry of a searched folder that was not read: a folder or file that cannot be read, or a symbolic link
    that leads out of the folder given. Each is one warning line; the summary counts them."""

    path: str
    reason: str
    outside: bool = False  # a link out of the folder (not followed), not something that could not be read

    def line(self, outcome: str = "skipped") -> str:
        from paictl.protocol.diagnostics import one_line

        return f"paictl: warning: {one_line(self.path)}: {self.reason}; {outcome}"


class Collected(NamedTuple):
    found: list[Found]
    passed_over: list[PassedOver]
    #: Why an input named on the command line gives nothing to check (a folder without YAML files, an empty name):
    #: an input error (exit 2) as a missing file is, while the other inputs are still checked.
    unusable: list[str]


STDIN_TWICE = "'-': standard input is given more than once; it can be read only once"


def collect_paths(paths: Sequence[str]) -> Collected:
    """Files as given; directories searched recursively for *.yaml/*.yml (hidden folders skipped); '-' is stdin.

    A search goes on past what it cannot read (a folder without read permission, an entry whose type cannot be
    found) and does not follow symbolic links to folders, nor symbolic links to files outside the folder given
    (as black does): a search of DIR reads, and `fix DIR` writes, only what lies in DIR. A file named on the
    command line is read (and fixed) wherever its link points."""
    found: list[Found] = []
    passed_over: list[PassedOver] = []
    unusable: list[str] = []
    for given in paths:
        if given == "-":
            if any(f.path == "-" for f in found):  # read once, it is empty the second time: not a second document
                unusable.append(STDIN_TWICE)
            else:
                found.append(Found(given, False))
            continue
        if not given:  # Path("") is ".": an empty argument (an unset shell variable) must not search, or fix, the cwd
            unusable.append("'': no such file (an empty name)")
            continue
        path = Path(given)
        try:
            is_dir = path.is_dir()
        except (OSError, ValueError):  # a name too long for the file system: reading it reports why, located
            is_dir = False
        if is_dir:
            before = len(passed_over)
            files = _search_folder(path, passed_over)
            if not files:
                unread = len(passed_over) - before
                unusable.append(f"{given}: no *.yaml or *.yml files in this directory" +
                                (f" ({unread} entr{'y' if unread == 1 else 'ies'} could not be read: "
                                 f"{passed_over[before].path}: {passed_over[before].reason})" if unread else ""))
            found.extend(Found(str(p), True) for p in files)
        else:
            found.append(Found(given, False))
    return Collected(found, passed_over, unusable)


def _search_folder(root: Path, passed_over: list[PassedOver]) -> list[Path]:
    import os

    real_root = os.path.realpath(root)
    files: list[Path] = []
    folders = [root]
    while folders:
        folder = folders.pop()
        try:
            with os.scandir(folder) as entries:
                listed = list(entries)
        except OSError as exc:
            passed_over.append(PassedOver(str(folder), f"cannot read the folder: {_why(exc)}"))
            continue
        for entry in listed:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if not entry.name.startswith("."):
                        folders.append(Path(entry.path))
                    continue
                if Path(entry.name).suffix not in YAML_SUFFIXES:
                    continue
                if entry.is_symlink():
                    target = os.path.realpath(entry.path)
                    if os.path.commonpath([real_root, target]) != real_root:
                        passed_over.append(PassedOver(entry.path, "a symbolic link out of the folder searched "
                                                                  "(name the file itself to check it)", outside=True))
                        continue
                if entry.is_file():
                    files.append(Path(entry.path))
            except (OSError, ValueError) as exc:
                passed_over.append(PassedOver(entry.path, f"cannot tell what it is: {_why(exc)}"))
    return sorted(files)


def _why(exc: BaseException) -> str:
    return (getattr(exc, "strerror", None) or str(exc)).lower()


def passed_over_count(passed_over: Sequence[PassedOver]) -> str:
    """The summary's count of what a search did not read ("" when it read everything)."""
    count = len(passed_over)
    return f"; {count} entr{'y' if count == 1 else 'ies'} not read (see the warnings)" if count else ""


def run_validate(paths: Sequence[str], *, json_output: bool, strict: bool, stdin_name: str, quiet: bool,
                 echo: Echo, all_files: bool = False, by_shape: bool = False,
                 target: str | None = None, profile: str | None = None) -> int:
    """Validate `paths`, print the report through `echo`, return the exit status (0, 1 or 2).

    Each file's result keeps only its diagnostics once checked (`ValidationResult.summary`), not its parsed
    document, so memory stays flat however many files are given.
    """
    from paictl.protocol import read_source, read_stdin
    from paictl.protocol.validate import validate_bytes

    from .errors import error_line
    from .report import json_report, summary_line, text_report

    results = []
    skipped: list[str] = []
    files, passed_over, io_errors = collect_paths(paths)
    for file, searched in files:
        try:
            raw = read_stdin() if file == "-" else read_source(file)
        except InputError as exc:
            if searched:  # found by a search: a warning, and the search goes on
                passed_over.append(PassedOver(file, str(exc).removeprefix(f"{file}: ")))
            else:
                io_errors.append(str(exc))
            continue
        name = stdin_name if file == "-" else file
        if (searched or by_shape) and not all_files and not is_job_or_item(raw, name):
            skipped.append(name)
            continue
        result = validate_bytes(raw, name, other_kinds=validate_if_item)
        if (target is not None or profile is not None) and result.ok and not _is_item(result.data):
            try:
                result = with_compile_verdict(result, raw, target=target or "framework", profile=profile or "default")
            except UsageError as exc:
                echo(error_line(exc), err=True)
                return exc.exit_code
        results.append(result.summary())

    for entry in passed_over:
        echo(entry.line(), err=True)
    if json_output:
        echo(json_report(results, strict, skipped=[(name, SKIP_REASON) for name in skipped],
                         passed_over=[(entry.path, entry.reason) for entry in passed_over]))
    else:
        report = text_report(results)
        if report:
            echo(report)
        if not quiet and (results or skipped):
            echo(summary_line(results, strict) + passed_over_count(passed_over))
        if not quiet and skipped:
            echo(skipped_line(skipped))
    for message in io_errors:
        echo(error_line(message), err=True)
    if io_errors or (strict and passed_over):
        return InputError.exit_code
    return 1 if any(not r.ok or (strict and r.warnings) for r in results) else 0


def skipped_line(skipped: Sequence[str]) -> str:
    """How many YAML files were not checked, which (the first few), why, and how to check them."""
    from paictl.protocol.diagnostics import one_line

    shown = ", ".join(one_line(name) for name in skipped[:5]) + (", ..." if len(skipped) > 5 else "")
    count = f"{len(skipped)} YAML file" + ("" if len(skipped) == 1 else "s")
    return f"{count} skipped ({shown}): {SKIP_REASON}; --all-files checks every file"


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

