"""The source excerpt under a diagnostic: a long line is shown as a window around the marked column."""

from __future__ import annotations

import pytest

from paictl.cli.report import EXCERPT_COLUMNS, format_diagnostic
from paictl.protocol.diagnostics import Diagnostic, Severity


def diagnostic(line: str, column: int, end_column: int | None = None) -> Diagnostic:
    return Diagnostic(code="E202", severity=Severity.ERROR, message="m", file="f.yaml", line=3, column=column,
                      end_column=end_column, pointer="/x", source_line=line)


def shown(d: Diagnostic) -> tuple[str, str]:
    _, text, caret = format_diagnostic(d).splitlines()[:3]
    return text[len(" 3 | "):], caret[len(" 3 | "):]


def test_a_short_line_is_shown_whole():
    text, caret = shown(diagnostic("  instancez: 1", 3))
    assert (text, caret) == ("  instancez: 1", "  ^" + "~" * len("nstancez"))


@pytest.mark.parametrize("column", [1, 40, 2_000, 4_990, 5_012])
def test_a_long_line_is_a_window_with_the_caret_under_the_marked_text(column):
    line = "x" * 5_000 + " unknownkey: 1"
    text, caret = shown(diagnostic(line, column, column + 9))
    assert len(text) <= EXCERPT_COLUMNS + 6
    at = caret.index("^")
    start = column - 1 - (at - (3 if text.startswith("...") else 0))  # where the window starts in the line
    assert text.strip(".") == line[start:start + len(text.strip("."))]
    assert text.startswith("...") == (start > 0) and text.endswith("...") == (start + EXCERPT_COLUMNS < len(line))
    assert 1 <= len(caret) - at <= 10 and at < len(text)


def test_the_caret_of_a_number_runs_to_the_window_s_edge_only():
    text, caret = shown(diagnostic("  seed: " + "1" * 4_400, 9))
    assert text == "  seed: " + "1" * (EXCERPT_COLUMNS - 8) + "..."
    assert caret == " " * 8 + "^" + "~" * (EXCERPT_COLUMNS - 9)
