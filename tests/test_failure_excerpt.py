"""A failed job's last lines are shown only when there are lines: a backend whose node serves no logs (MARO's) once
printed the heading "last lines of main-0 (...):" over nothing."""

from __future__ import annotations

from paictl.cli.submit_run import show_excerpt
from paictl.targets.backend import FailureExcerpt


class Backend:
    def __init__(self, excerpt):
        self.excerpt = excerpt

    def failure_excerpt(self, view):
        return self.excerpt


def shown(excerpt) -> list[str]:
    lines: list[str] = []
    show_excerpt(Backend(excerpt), None, lines.append)
    return lines


def test_an_excerpt_without_lines_prints_nothing():
    assert shown(FailureExcerpt(label="main-0 (c1 on n1)", lines=())) == []
    assert shown(None) == []


def test_an_excerpt_with_lines_prints_its_heading_and_lines():
    assert shown(FailureExcerpt(label="main-0 (c1 on n1)", lines=("boom",))) == ["last lines of main-0 (c1 on n1):",
                                                                               "  boom"]


def test_an_excerpts_control_characters_are_escaped_and_its_tabs_kept():
    """A task's last words are its own bytes: OSC 52 (write the clipboard), a title, a bell or a screen reset must
    not reach the terminal through paictl's verdict."""
    lines = ("\x1b]52;c;ZXZpbA==\x07done", "\x1bc\x00\tTraceback", "fine\tcolumns")
    assert shown(FailureExcerpt(label="w-0 (\x1b[2Jrun)", lines=lines)) == [
        "last lines of w-0 (\\x1b[2Jrun):", "  \\x1b]52;c;ZXZpbA==\\x07done", "  \\x1bc\\x00\tTraceback",
        "  fine\tcolumns"]
