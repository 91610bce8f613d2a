"""Reporters: diagnostics in, text out. Pure functions, so the CLI alone decides where output goes."""

from __future__ import annotations

import re
from typing import Iterable, Sequence

from paictl.compiler.emit import strict_json
from paictl.protocol.diagnostics import Diagnostic, one_line
from paictl.protocol.validate import ValidationResult

_TOKEN_END = re.compile(r"[\s:,\]}]")
EXCERPT_COLUMNS = 120  # of a source line shown under a diagnostic
EXCERPT_CONTEXT = 30   # columns kept before the marked one when a long line is cut


def format_diagnostic(d: Diagnostic) -> str:
    """`path:line:col: severity[CODE]: message`, then the source line with a caret, then the hint."""
    file = one_line(d.file)  # a crafted file name or --stdin-name must not reach the terminal raw
    where = file if d.line is None else f"{file}:{d.line}:{d.column}"
    lines = [f"{where}: {d.severity.value}[{d.code}]: {d.message}"]
    if d.source_line is not None and d.line is not None and d.column is not None:
        gutter = str(d.line)
        rest = d.source_line[d.column - 1:]
        if d.end_column is not None:
            width = max(1, d.end_column - d.column + 1)
        else:
            end = _TOKEN_END.search(rest, 1) if rest else None
            width = max(1, end.start() if end else len(rest.rstrip()))
        shown, at, width = _excerpt(d.source_line.rstrip(), d.column - 1, width)
        lines.append(f" {gutter} | {shown}")
        lines.append(f" {' ' * len(gutter)} | {' ' * at}^{'~' * (width - 1)}")
    if d.hint:
        lines.append(f"   = hint: {d.hint}")
    return "\n".join(lines)


def _excerpt(line: str, at: int, width: int) -> tuple[str, int, int]:
    """A source line longer than EXCERPT_COLUMNS is shown as a window around the marked column, cut with `...`
    (as rustc does): a 4,300-digit number or a minified one-line job must not print pages of text and tildes.
    Returns the text shown, where the caret goes in it and how wide it is."""
    if len(line) <= EXCERPT_COLUMNS:
        return line, at, width
    start = max(0, min(at - EXCERPT_CONTEXT, len(line) - EXCERPT_COLUMNS))
    end = start + EXCERPT_COLUMNS
    prefix = "..." if start else ""
    suffix = "..." if end < len(line) else ""
    return prefix + line[start:end] + suffix, len(prefix) + at - start, max(1, min(width, end - at))


def summary_line(results: Sequence[ValidationResult], strict: bool) -> str:
    errors = sum(len(r.errors) for r in results)
    warnings = sum(len(r.warnings) for r in results)
    failing = sum(1 for r in results if not r.ok or (strict and r.warnings))
    files = f"{len(results)} file" + ("" if len(results) == 1 else "s")
    if not errors and not warnings:
        return f"{files} valid"
    parts = []
    if errors:
        parts.append(f"{errors} error" + ("" if errors == 1 else "s"))
    if warnings:
        parts.append(f"{warnings} warning" + ("" if warnings == 1 else "s") + (" (strict)" if strict else ""))
    return f"{', '.join(parts)}; {failing} of {files} invalid"


def text_report(results: Iterable[ValidationResult]) -> str:
    return "\n".join(format_diagnostic(d) for r in results for d in r.diagnostics)


def json_report(results: Sequence[ValidationResult], strict: bool,
                skipped: Sequence[tuple[str, str]] = (), passed_over: Sequence[tuple[str, str]] = ()) -> str:
    records = [{
        "file": r.path,
        "valid": r.ok and not (strict and r.warnings),
        "diagnostics": [d.to_dict() for d in r.diagnostics],
    } for r in results]
    summary = {
        "files": len(results),
        "invalid": sum(1 for r in records if not r["valid"]),
        "errors": sum(len(r.errors) for r in results),
        "warnings": sum(len(r.warnings) for r in results),
        "strict": strict,
    }
    report: dict = {"summary": summary, "results": records}
    if skipped:  # only when a directory held other YAML: the report of the files checked is otherwise unchanged
        summary["skipped"] = len(skipped)
        report["skipped"] = [{"file": file, "reason": reason} for file, reason in skipped]
    if passed_over:  # entries of the folders searched that could not be read (each also a warning on stderr)
        summary["unread"] = len(passed_over)
        report["unread"] = [{"path": path, "reason": reason} for path, reason in passed_over]
    return json_escaped(strict_json(report, indent=2, ensure_ascii=False))


#: Characters JSON may carry raw that a terminal would act on: C1 controls, DEL, line separators, bidi overrides.
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def json_escaped(text: str) -> str:
    """JSON text with the characters above written as \\uXXXX escapes: the same JSON value, safe on a terminal."""
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
