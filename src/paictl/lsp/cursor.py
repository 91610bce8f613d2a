"""Where the cursor is in a YAML document being typed: the path of keys above it, and what it is on.

A document being edited is usually not valid YAML at the moment completion is asked for (`    comm` alone on a line
is a syntax error), so the parser's positions cannot answer. Block YAML's structure is its indentation: the
mapping keys and list items above the cursor with less indentation are its ancestors. Flow collections (`{...}`) are
not looked into; they rarely hold what completion offers.
"""

from __future__ import annotations

import re
from typing import NamedTuple

_COLON = re.compile(r":(?:\s|$)")
_PLACEHOLDER_OPEN = "<%"
_WORD_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$.-")


class Cursor(NamedTuple):
    #: Keys and list indexes (as strings) from the root to the mapping or list the cursor is in.
    path: tuple[str, ...]
    #: The key of the entry the cursor's line holds, when the cursor is after its `:` (completing a value).
    value_of: str | None
    #: The text from the start of the word under the cursor up to the cursor.
    prefix: str
    #: Inside `<% ... %>`: the placeholder text typed so far after `<%` (e.g. ` $parameters.le`), else None.
    placeholder: str | None
    #: Is the cursor's line a list item (`- ...`) of the list at `path`?
    in_list_item: bool


def line_content(line: str) -> tuple[int, int | None, str]:
    """(column of the content, column of a leading `- ` or None, the content) of one line."""
    stripped = line.lstrip(" ")
    indent = len(line) - len(stripped)
    if stripped.startswith("- ") or stripped == "-":
        rest = stripped[1:].lstrip(" ")
        return indent + (len(stripped) - len(rest)), indent, rest
    return indent, None, stripped


def key_span(content: str) -> tuple[str, int, int] | None:
    """The block mapping key `content` starts with: (key, start, end of its text), or None. Linear in the line
    (these run on every request, on lines as long as a file can be)."""
    if not content or content[0] in "#{[&*!|>%@`,":
        return None
    if content[0] in "'\"":
        close = content.find(content[0], 1)
        if close < 0 or _COLON.match(content, close + 1 + _spaces(content, close + 1)) is None:
            return None
        return content[1:close], 0, close + 1
    colon = _COLON.search(content)
    if colon is None or " #" in content[:colon.start()]:
        return None
    key = content[:colon.start()].rstrip()
    return (key, 0, len(key)) if key else None


def _spaces(text: str, start: int) -> int:
    return len(text) - start - len(text[start:].lstrip(" \t"))


def _key_of(content: str) -> str | None:
    found = key_span(content)
    return found[0] if found is not None else None


def _skipped(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#") or stripped in ("---", "...")


def ancestors(lines: list[str], line: int, target: int, dash: int | None = None) -> tuple[str, ...]:
    """The path to the collection holding an entry at column `target` on 0-based `line` (a list item's dash at
    column `dash`)."""
    path: list[str] = []
    if dash is not None:
        index = _item_index(lines, line, dash)
        path.append(str(index))
        target = dash
    number = line - 1
    while number >= 0 and target > 0:
        text = lines[number]
        if _skipped(text):
            number -= 1
            continue
        column, item_dash, content = line_content(text)
        if item_dash is not None and item_dash < target:
            path.append(str(_item_index(lines, number, item_dash)))
            target = item_dash
        elif column < target:
            key = _key_of(content)
            if key is None:
                return tuple(reversed(path))  # not a block mapping's key: a scalar continued, a flow collection
            path.append(key)
            target = column
            if item_dash is not None:
                path.append(str(_item_index(lines, number, item_dash)))
                target = item_dash
        number -= 1
    return tuple(reversed(path))


def _item_index(lines: list[str], line: int, dash: int) -> int:
    """How many items of the same list (dashes at `dash`) come before the one on `line`."""
    index = 0
    for number in range(line - 1, -1, -1):
        text = lines[number]
        if _skipped(text):
            continue
        column, item_dash, _ = line_content(text)
        if item_dash == dash:
            index += 1
        elif column <= dash and item_dash is None:
            break
        elif item_dash is not None and item_dash < dash:
            break
    return index


def cursor_at(lines: list[str], line: int, column: int) -> Cursor:
    """The cursor's context at 0-based `line` and `column` (characters)."""
    text = lines[line] if line < len(lines) else ""
    before = text[:column]
    opened = before.rfind(_PLACEHOLDER_OPEN)
    placeholder = before[opened + 2:] if opened >= 0 and "%>" not in before[opened:] else None
    content_column, dash, content = line_content(before)
    if not before.strip(" ") or (dash is not None and not content):
        content_column = column
    key = _key_of(content)
    value_of = key if key is not None and ":" in content else None
    path = ancestors(lines, line, content_column, dash)
    start = len(before)
    while start > 0 and (before[start - 1] in _WORD_CHARACTERS or before[start - 1].isalnum()):
        start -= 1
    prefix = before[start:]
    return Cursor(path=path, value_of=value_of, prefix=prefix, placeholder=placeholder,
                  in_list_item=dash is not None)
