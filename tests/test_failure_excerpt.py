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
