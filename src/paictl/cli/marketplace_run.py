"""`paictl marketplace validate` without typer, and how the marketplace commands find items in folders.

`marketplace validate` runs in pre-commit hooks and CI as `validate` does, so it starts the same way (entry.py):
its body is here, typer-free, and the typer command in marketplace_cmd.py calls the same function.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable, Sequence

from paictl.errors import InputError, PaictlError

_PROTOCOL_KEY = re.compile(rb"""protocol["']?[ \t]*:""")


def may_be_item(raw: bytes) -> bool:
    """Whether a file found in a folder may be an item: it has a `protocol` key somewhere (a job's own key is
    `protocolVersion`). Saves parsing every job a folder of items holds beside them."""
    return _PROTOCOL_KEY.search(raw) is not None


def item_checks(paths: Sequence[str], passed_over: list | None = None, unusable: list | None = None) -> list:
    """(path, ItemCheck) of every item given; PaictlError (InputError, exit 2) for what cannot be read, unless
    `passed_over` and `unusable` are given (`marketplace validate`): then what a folder search cannot read is added to
    `passed_over`, why an input named on the command line gives no item (it cannot be read, a folder without items)
    to `unusable`, and the other inputs are still checked.

    A folder is searched as `paictl validate DIR` searches (recursively, *.yaml and *.yml, hidden folders skipped);
    of the files found there, those that are not items by their shape are skipped (the jobs items name, say)."""
    from paictl.marketplace.checking import check_item_bytes, check_item_file
    from paictl.marketplace.shape import looks_like_item
    from paictl.protocol import read_source

    from .validate_cmd import PassedOver, collect_paths

    def refuse(message: str) -> None:
        if unusable is None:  # pack and publish: all of the inputs, or nothing
            raise InputError(message)
        unusable.append(message)

    checks = []
    for given in paths:
        collected = collect_paths([given])
        if collected.unusable:
            refuse(collected.unusable[0])
            continue
        searched = given != "-" and Path(given).is_dir()
        found = 0
        unread = [entry for entry in collected.passed_over if not entry.outside]
        if passed_over is None and unread:  # pack and publish: all of the folder, or nothing
            raise InputError(f"{unread[0].path}: {unread[0].reason}")
        if passed_over is not None:
            passed_over += collected.passed_over
        for path, _searched in collected.found:
            if not searched:
                try:
                    checks.append((path, check_item_file(path)))
                except InputError as error:
                    refuse(str(error))
                continue
            try:
                raw = read_source(path)  # read once, for the look and the check
            except InputError as error:
                if passed_over is None:
                    raise
                passed_over.append(PassedOver(path, str(error).removeprefix(f"{path}: ")))  # the search goes on
                continue
            if not may_be_item(raw):
                continue
            check = check_item_bytes(raw, path)
            if check.result.data is not None and not looks_like_item(check.result.data):
                continue
            checks.append((path, check))
            found += 1
        if searched and not found:
            refuse(f"{given}: no marketplace items in this directory (YAML files with a `protocol`)")
    return checks


def run_marketplace_validate(paths: Sequence[str], *, output: str, strict: bool,
                             echo: Callable[..., None]) -> int:
    """Validate the items, print the report through `echo` (text, json or yaml), return the exit status."""
    from paictl.protocol.diagnostics import Diagnostic, Severity

    from .errors import error_line, print_error
    from .report import json_report, summary_line, text_report

    from .validate_cmd import passed_over_count

    passed_over: list = []
    unusable: list[str] = []
    try:
        checks = item_checks(paths, passed_over, unusable)
    except PaictlError as error:
        return print_error(error, echo)
    for entry in passed_over:
        echo(entry.line(), err=True)
    results = []
    for path, check in checks:
        result = check.result
        if result.data is not None and "protocol" not in result.data:
            not_item = Diagnostic(code="E201", severity=Severity.ERROR, file=path, line=1, column=1,
                                  message="not a marketplace item: it has no `protocol` (use `paictl validate` for a job)")
            result = type(result)(path=path, diagnostics=(not_item,), data=result.data)
        results.append(result)
    if output == "text":
        report = text_report(results)
        if report:
            echo(report)
        echo(summary_line(results, strict) + passed_over_count(passed_over))
    else:
        import json

        unread = [(entry.path, entry.reason) for entry in passed_over]
        if output == "json":
            echo(json_report(results, strict, passed_over=unread))
        else:
            from paictl.marketplace.yamltext import dump_any

            echo(dump_any(json.loads(json_report(results, strict, passed_over=unread))).rstrip("\n"))
    for message in unusable:
        echo(error_line(message), err=True)
    if unusable or (strict and passed_over):
        return InputError.exit_code
    return 1 if any(not r.ok or (strict and r.warnings) for r in results) else 0
