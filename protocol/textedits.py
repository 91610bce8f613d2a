"""What a fix is: text edits of exact character ranges, and the data they were made from.

Why a module of its own: the fixes a hint states (protocol/fixes.py) and the fix for a missing required key
(protocol/missing_keys.py, called by fixes.py) both build these; kept in fixes.py, missing_keys would import them
back from the module that imports it.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

from .diagnostics import Diagnostic


class TextEdit(NamedTuple):
    """Replace the characters from (start_line, start_column) up to (end_line, end_column) with `new_text`.

    Lines and columns are 0-based and count characters (code points), as an LSP server's own positions do."""

    start_line: int
    start_column: int
    end_line: int
    end_column: int
    new_text: str


class Fix(NamedTuple):
    title: str
    diagnostic: Diagnostic
    edits: tuple[TextEdit, ...]
    #: Applied by `paictl fix`: the edit writes what the hint says. A skeleton whose values the schema made up
    #: (`name: TODO`, `cpu: 0`) is offered to editors only (`paictl fix --unsafe-fixes` applies it too).
    safe: bool = True
    kind: str = "rename"  # rename | quote | add-key


def value_at(data: Any, tokens: Sequence[str]) -> Any:
    """The value at a pointer's tokens in plain data, or None when the path does not exist."""
    for token in tokens:
        if isinstance(data, dict):
            data = data.get(token)
        elif isinstance(data, list) and token.isdigit() and int(token) < len(data):
            data = data[int(token)]
        else:
            return None
    return data
