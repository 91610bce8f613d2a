"""`paictl fix`: apply the fixes diagnostics' hints state (protocol/fixes.py), in place or as a diff.

The file is changed only where a fix edits it (comments, quoting, layout and line endings stay), and written whole
or not at all: the new text goes to a temporary file beside it, then replaces it. The exit status is `validate`'s
for the fixed text (0 valid, 1 still invalid, 2 usage or I/O error), so `paictl fix` in a hook fails only for what
it could not fix.
"""

from __future__ import annotations

import difflib
import json
import os
import tempfile
from pathlib import Path
from typing import Sequence

from paictl.errors import InputError

from .validate_cmd import Echo, PassedOver, collect_paths, passed_over_count, validate_if_item


def _validate(text: str, path: str):
    from paictl.protocol.validate import validate_text

    return validate_text(text, path, other_kinds=validate_if_item)


class NotWritten(Exception):
    """A file `fix` leaves as it is, on purpose (a warning, not an error): see `_write_in_place`."""


def _write_in_place(path: str, text: str, bom: bool) -> None:
    """Replace the file's content through a temporary file beside it, renamed over it: a kill at any moment leaves
    the old file or the new one, never a part. What a rename would change is kept or the file is left alone
    (NotWritten), as formatters decide (black and ruff skip what they cannot write and never follow links out of
    the folder searched):
    - a symlink stays a symlink: its target is what is fixed;
    - a read-only file (no write permission bit, or none for this user) is not written, even by root;
    - a file with several hard links is not written: a rename would split it from its other names;
    - the mode is kept, and the owner and group: root fixing another user's file leaves it theirs; when they
      cannot be kept (not root, a file of another owner that is group-writable), the file is not written."""
    target = Path(path).resolve()
    info = target.stat()
    if not info.st_mode & 0o222 or not os.access(target, os.W_OK):
        raise NotWritten("read-only (make it writable, or apply `paictl fix --diff` yourself)")
    if info.st_nlink > 1:
        raise NotWritten(f"has {info.st_nlink} hard links, which replacing it would split (apply "
                         "`paictl fix --diff` with a tool that writes in place)")
    data = ("\ufeff" if bom else "").encode() + text.encode("utf-8")
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".paictl-fix", dir=target.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        created = os.stat(temporary)
        if (created.st_uid, created.st_gid) != (info.st_uid, info.st_gid):
            try:
                os.chown(temporary, info.st_uid, info.st_gid)
            except OSError:
                raise NotWritten("belongs to another user or group, and a fixed copy could not be given to "
                                 "them") from None
        os.chmod(temporary, info.st_mode & 0o7777)  # after chown, which clears set-user-ID and set-group-ID bits
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def run_fix(paths: Sequence[str], *, diff: bool, unsafe: bool, json_output: bool, strict: bool, stdin_name: str,
            echo: Echo) -> int:
    """Fix `paths`, print what was done and what remains; return the exit status (0, 1 or 2)."""
    from paictl.protocol import read_source, read_stdin
    from paictl.protocol.fixes import fix_text
    from paictl.protocol.loading import DocumentError, decode_source

    from .errors import error_line
    from .report import json_escaped, summary_line, text_report

    files, passed_over, io_errors = collect_paths(paths)
    for entry in passed_over:
        echo(entry.line(), err=True)
    results, records, fixed_total, changed_files, not_written = [], [], 0, 0, 0
    for file, searched in files:  # fix looks at every file's shape itself (fixes.looks_like_job_or_item)
        name = stdin_name if file == "-" else file
        try:
            raw = read_stdin() if file == "-" else read_source(file)
        except InputError as exc:
            if searched:  # found by a search: a warning, and the search goes on
                passed_over.append(PassedOver(file, str(exc).removeprefix(f"{file}: ")))
                echo(passed_over[-1].line(), err=True)
            else:
                io_errors.append(str(exc))
            continue
        try:
            text = decode_source(raw, name)
        except DocumentError as exc:
            from paictl.protocol.validate import ValidationResult

            results.append(ValidationResult(path=name, diagnostics=tuple(exc.diagnostics), data=None))
            records.append({"file": name, "changed": False, "fixes": [], "made_up": []})
            continue
        outcome = fix_text(text, name, _validate, unsafe=unsafe)
        changed = outcome.text != text
        if changed and diff:
            before, after, masked = _diff_sides(text, outcome.text, name)
            echo("".join(difflib.unified_diff(before, after, fromfile=_diff_name("a", name),
                                              tofile=_diff_name("b", name))).rstrip("\n"))
            if masked:
                echo(f"paictl: {name}: secret values in the diff are shown as ***; `paictl fix` applies it as it is",
                     err=True)
        elif changed and file == "-":
            echo(outcome.text, nl=False)  # the text exactly: no newline added to a file that ends without one
        elif changed:
            try:
                _write_in_place(file, outcome.text, raw.startswith(b"\xef\xbb\xbf"))
            except NotWritten as why:
                echo(PassedOver(file, str(why)).line("not fixed"), err=True)
                not_written += 1
                results.append(_validate(text, name).summary())  # what remains is the file as it is
                records.append({"file": name, "changed": False, "fixes": [], "made_up": [], "written": False})
                continue
            except OSError as exc:
                io_errors.append(f"{file}: cannot write the fixed file: {exc.strerror or exc}")
                continue
        elif file == "-" and not diff:
            echo(text, nl=False)
        fixed_total += len(outcome.applied)
        changed_files += changed
        verdict = outcome.result if outcome.result is not None else _validate(outcome.text, name)
        results.append(verdict.summary())
        records.append({"file": name, "changed": changed, "fixes": [
            {"code": f.diagnostic.code, "line": f.diagnostic.line, "column": f.diagnostic.column, "title": f.title}
            for f in outcome.applied], "made_up": made_up_values(outcome.applied)})

    # Standard output carries the fixed text for `-` and the diff for --diff: the report then goes to standard error.
    report_err = diff or any(found.path == "-" for found in files)
    failing = [not r.ok or (strict and bool(r.warnings)) or bool(record["made_up"])
               for record, r in zip(records, results)]
    if json_output:
        payload = {"summary": {"files": len(results), "changed": changed_files, "fixes": fixed_total,
                               "invalid": sum(failing), "written": not diff, "notWritten": not_written,
                               "unread": len(passed_over),
                               "made_up": sum(len(record["made_up"]) for record in records)},
                   "results": [{**record, "valid": not fails, "diagnostics": [d.to_dict() for d in r.diagnostics]}
                               for record, r, fails in zip(records, results, failing)]}
        echo(json_escaped(json.dumps(payload, indent=2, ensure_ascii=False)), err=report_err)
    else:
        report = text_report(results)
        if report:
            echo(report, err=report_err)
        for record in records:
            for value in record["made_up"]:
                echo(f"{record['file']}: {value['path']}: {value['value']} was made up by --unsafe-fixes: "
                     "replace it with your own value", err=report_err)
        if results:
            verb = "to apply" if diff else "applied"
            echo(f"{fixed_total} fix{'es' if fixed_total != 1 else ''} {verb} in {changed_files} "
                 f"file{'s' if changed_files != 1 else ''}"
                 + (f" ({not_written} not written: see the warnings)" if not_written else "")
                 + f"; remaining: {_remaining(results, records, strict)}{passed_over_count(passed_over)}",
                 err=report_err)
    for message in io_errors:
        echo(error_line(message), err=True)
    if io_errors:
        return InputError.exit_code
    return 1 if any(failing) else 0


def made_up_values(applied) -> list[dict[str, str]]:
    """The keys an unsafe fix added with a value the schema made up (`cpu: 0`, `commands: [TODO]`): the file then
    validates, but it is not the user's job until they choose those values, so the report must not call it valid."""
    from paictl.protocol.diagnostics import split_pointer

    values = []
    for fix in applied:
        if fix.safe:
            continue
        for edit in fix.edits:
            written = edit.new_text.strip().lstrip(",{").strip().splitlines()[0].strip().lstrip("- ")
            key, _, value = written.partition(":")
            path = ".".join((*split_pointer(fix.diagnostic.pointer), key.strip()))
            values.append({"path": path, "value": value.strip()})
    return values


def _remaining(results, records, strict: bool) -> str:
    from .report import summary_line

    made_up = sum(len(record["made_up"]) for record in records)
    files = sum(1 for record in records if record["made_up"])
    if not made_up:
        return summary_line(results, strict)
    return (f"{made_up} made-up value{'s' if made_up != 1 else ''} to replace in {files} "
            f"file{'s' if files != 1 else ''}; the checks: {summary_line(results, strict)}")


def _diff_sides(text: str, fixed: str, name: str) -> tuple[list[str], list[str], bool]:
    """The two texts' lines for the diff, with the stretches of secret values (`secrets`, registry `auth`) shown as
    `***`, as everywhere paictl prints a job; and whether the diff shows such a line (it then no longer applies
    with `patch` there)."""
    before, after = text.splitlines(keepends=True), fixed.splitlines(keepends=True)
    if "secrets" not in text and "auth" not in text:
        return before, after, False
    from paictl.protocol.loading import DocumentError, load_located
    from paictl.protocol.redaction import masked_lines

    try:
        masked_before, masked_after = masked_lines(load_located(text, name)), masked_lines(load_located(fixed, name))
    except DocumentError:  # not read as YAML: shown line by line as the report shows an unparsed file's
        return before, after, False
    plain = list(difflib.unified_diff(before, after))
    return masked_before, masked_after, list(difflib.unified_diff(masked_before, masked_after)) != plain


def _diff_name(side: str, name: str) -> str:
    """git's `a/job.yaml` for a relative path; an absolute one as it is."""
    return name if os.path.isabs(name) else f"{side}/{name}"
