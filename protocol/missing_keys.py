"""The fix for a missing required key (E201): the key inserted where the mapping's entries are, at their
indentation (or before the `}` of a flow mapping), with the value the hint names or a skeleton from the schema.

Called by protocol/fixes.py, and apart from it because it is the one fix that needs the document's layout (where each entry of
the mapping is), so it loads the text with positions; the others work on the diagnostic's own position.
"""

from __future__ import annotations

import re
from typing import Any

from .diagnostics import Diagnostic, escape_pointer_token, pointer_of, split_pointer
from .textedits import Fix, TextEdit, value_at

_BACKTICKED = re.compile(r"`([^`]+)`")


class Located:
    """The document's data and positions, loaded once for the fixes that need a mapping's layout."""

    def __init__(self, text: str):
        from .loading import DocumentError, load_located

        try:
            document = load_located(text, "<fix>")
        except DocumentError:
            self.data, self.positions = None, {}
        else:
            self.data, self.positions = document.data, document.positions or {}


_REQUIRED = re.compile(r"missing the required key '((?:[^'\\]|\\.)*)'")


def add_required_key(diagnostic: Diagnostic, lines: list[str], located: Located) -> Fix | None:
    missing = _REQUIRED.search(diagnostic.message)
    if missing is None or located.data is None:
        return None
    key = missing.group(1)
    tokens = split_pointer(diagnostic.pointer)
    mapping = value_at(located.data, tokens)
    if not isinstance(mapping, dict) or key in mapping:
        return None
    value_text, safe = _stated_value(diagnostic.hint, key)
    value: Any = None
    if value_text is None:
        value, safe = _schema_value(diagnostic, tokens, key)
    children = [located.positions.get(diagnostic.pointer + "/" + escape_pointer_token(k)) for k in mapping]
    children = [c for c in children if c is not None]
    here = located.positions.get(pointer_of(*tokens))
    flow_start = (here[2] - 1, here[3] - 1) if here is not None else None
    edit: TextEdit | None
    if flow_start is not None and tokens and lines[flow_start[0]][flow_start[1]:flow_start[1] + 1] == "{":
        entry = f"{key}: {value_text if value_text is not None else _flow(value)}"
        edit = _insert_in_flow(lines, flow_start, entry, bool(mapping))
    elif children:
        edit = _insert_in_block(lines, children, key, value_text, value)
    else:
        edit = None
    if edit is None:
        return None
    return Fix(f"Add the required key '{key}'", diagnostic, (edit,), safe=safe, kind="add-key")


def _stated_value(hint: str | None, key: str) -> tuple[str | None, bool]:
    """The value a hint writes out for `key` (`add `protocolVersion: 2``): used as is, a safe fix; a `<...>` in
    it is something the user must fill in, so the fix is offered but not applied by `paictl fix`."""
    for written in _BACKTICKED.findall(hint or ""):
        name, sep, value = written.partition(":")
        if sep and name.strip() == key and value.strip():
            value = value.strip()
            return value, "<" not in value
    return None, False


def _schema_value(diagnostic: Diagnostic, tokens: list[str], key: str) -> tuple[Any, bool]:
    from paictl.schemas import load_schema

    from .schemapaths import PLACEHOLDER, child_schemas, schemas_at, skeleton

    schema = load_schema("job" if not diagnostic.message.startswith("the item") else "marketplace-item")
    nodes = [sub for node in schemas_at(schema, tokens) for sub in child_schemas(schema, node, key)]
    # Values the schema makes up (a lower bound, "TODO") are the user's to choose: offered, never applied unasked.
    return (skeleton(schema, nodes[0]) if nodes else PLACEHOLDER), False


def _flow(value: Any) -> str:
    """A value in YAML flow style (plain scalars where YAML reads them back unchanged)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    text = str(value)
    if re.fullmatch(r"[A-Za-z_][\w./-]*", text) and text.lower() not in ("true", "false", "null", "yes", "no", "on",
                                                                           "off", "y", "n", "~"):
        return text
    return "'" + text.replace("'", "''") + "'"


def _block(key: str, value: Any, indent: str) -> list[str]:
    if isinstance(value, dict) and value:
        return [f"{indent}{key}:"] + [line for k, v in value.items() for line in _block(k, v, indent + "  ")]
    if isinstance(value, list) and value and isinstance(value[0], dict) and value[0]:
        first, *rest = [line for k, v in value[0].items() for line in _block(k, v, indent + "    ")]
        return [f"{indent}{key}:", f"{indent}  - {first.lstrip()}", *rest]
    return [f"{indent}{key}: {_flow(value)}"]


def _insert_in_block(lines: list[str], children: list[tuple[int, int, int, int]], key: str,
                     value_text: str | None, value: Any) -> TextEdit | None:
    columns = {c[1] for c in children}
    if len(columns) != 1 or len({c[0] for c in children}) != len(children):
        return None  # entries on one line or at several indents: not a block mapping whose layout is clear
    column = columns.pop() - 1
    last = max(c[0] for c in children) - 1
    end = last
    for number in range(last + 1, len(lines)):
        stripped = lines[number].strip()
        if not stripped or stripped.startswith("#"):
            continue
        if len(lines[number]) - len(lines[number].lstrip(" ")) > column:
            end = number
        else:
            break
    indent = " " * column
    entry = [f"{indent}{key}: {value_text}"] if value_text is not None else _block(key, value, indent)
    tail = len(lines[end])
    return TextEdit(end, tail, end, tail, "".join("\n" + line for line in entry))


def _insert_in_flow(lines: list[str], start: tuple[int, int], entry: str, has_entries: bool) -> TextEdit | None:
    """Before the `}` closing the flow mapping that opens at `start` (on one line only)."""
    line, column = start
    text = lines[line]
    depth, quote, index = 0, "", column
    while index < len(text):
        char = text[index]
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                before = text[:index].rstrip()
                separator = ", " if has_entries and not before.endswith(",") else (" " if has_entries else "")
                return TextEdit(line, len(before), line, len(before), separator + entry)
        elif char == "#" and text[index - 1:index].isspace():
            return None
        index += 1
    return None
