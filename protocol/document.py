"""A loaded job document (its data, text and positions), its error, and its lines as YAML counts them.

Why a module of its own: the loaders (protocol/loading.py) make documents and the redaction rule (redaction.py)
reads them, and loading's errors are redacted: kept in loading.py, the two imported each other.
"""

from __future__ import annotations

import functools
import re
from typing import Any, NamedTuple

from .diagnostics import Diagnostic

#: (key line, key column, value line, value column), all 1-based.
Position = tuple[int, int, int, int]


class Document(NamedTuple):
    """A loaded job document: plain JSON-like data, plus where each JSON pointer sits in the text (when known).

    A named tuple, not a dataclass (see protocol/diagnostics.py)."""

    path: str
    text: str
    data: dict[str, Any]
    positions: dict[str, Position] | None = None
    #: (start, end) character offsets of secret values (`secrets`, registry `auth`): never shown in a diagnostic.
    secret_spans: tuple[tuple[int, int], ...] = ()
    #: Pointers of the entries whose key is written as a list or a mapping (`[a, b]: v`, key "a,b"): W102.
    stringified_keys: tuple[str, ...] = ()

    @property
    def lines(self) -> list[str]:
        """The text's lines (shared between calls: do not change the list)."""
        return _cached_lines(self.text)


@functools.lru_cache(maxsize=4)
def _cached_lines(text: str) -> list[str]:
    """Every diagnostic of a document reads its lines; split once (a str keeps its hash, so a lookup is cheap)."""
    return source_lines(text)


class DocumentError(Exception):
    """The bytes could not become a single YAML mapping; `diagnostics` says why, located."""

    def __init__(self, diagnostics: list[Diagnostic]):
        super().__init__("; ".join(d.message for d in diagnostics))
        self.diagnostics = diagnostics


#: YAML's line breaks: LF, CRLF and CR (not NEL, LS or PS, which YAML 1.2 reads as characters).
LINE_BREAK = re.compile(r"\r\n|\r|\n")


def source_lines(text: str) -> list[str]:
    """The text's lines as YAML counts them (only CR and LF break lines; `str.splitlines` also breaks at NEL, LS,
    PS, VT, FF and the separators U+001C-U+001E, which would shift every line number after one)."""
    lines = text.split("\n") if "\r" not in text else LINE_BREAK.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines
