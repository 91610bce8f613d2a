"""Hover text and go-to-definition at a cursor. Positions are 0-based lines and characters (code points)."""

from __future__ import annotations

import re
from typing import Any, NamedTuple, Sequence

from paictl.protocol.diagnostics import Diagnostic, pointer_of

from . import names
from .cursor import line_content, cursor_at, key_span

#: Where the table of every code is: an editor links a diagnostic's code here (LSP codeDescription).
CODES_URL = "https://github.com/paictl/paictl/blob/main/docs/reference/codes.md#diagnostic-codes"


class Span(NamedTuple):
    line: int
    start: int
    end: int


def explain(code: str) -> str | None:
    """What `paictl explain CODE` says, as Markdown."""
    from paictl.protocol.codes import CODES
    from paictl.protocol.explanations import EXPLANATIONS

    if code not in CODES:
        return None
    severity, title = CODES[code]
    explanation, example, fix = EXPLANATIONS[code]
    example_block = "\n".join("    " + line for line in example.splitlines())
    return f"**{code}** ({severity.value}): {title}\n\n{explanation}\n\nExample:\n\n{example_block}\n\nFix: {fix}"


def diagnostic_hover(diagnostic: Diagnostic) -> str:
    parts = [f"**{diagnostic.severity.value}[{diagnostic.code}]**: {diagnostic.message}"]
    if diagnostic.hint:
        parts.append(f"hint: {diagnostic.hint}")
    explained = explain(diagnostic.code)
    if explained:
        parts.append("---\n\n" + explained)
    return "\n\n".join(parts)


def covers(diagnostic: Diagnostic, span_end: int, line: int, column: int) -> bool:
    return (diagnostic.line is not None and diagnostic.line - 1 == line and diagnostic.column is not None
            and diagnostic.column - 1 <= column <= span_end)


def key_on_line(text: str) -> tuple[str, int, int] | None:
    """The block mapping key a line holds: (key, start, end)."""
    column, _, content = line_content(text)
    found = key_span(content)
    if found is None:
        return None
    return found[0], column + found[1], column + found[2]


def key_hover(lines: list[str], line: int, column: int, data: Any) -> tuple[str, Span] | None:
    """The schema's description of the key on the cursor's line."""
    from paictl.protocol import schemapaths

    from .completion import schema_for

    found = key_on_line(lines[line]) if line < len(lines) else None
    if found is None:
        return None
    key, start, end = found
    cursor = cursor_at(lines, line, start)
    schema, spot = schema_for(data, cursor.path, "\n".join(lines))
    description = schemapaths.description_at(schema, (*spot, key))
    if description is None:
        return None
    return f"**{key}**\n\n{description}", Span(line, start, end)


def placeholder_hover(lines: list[str], line: int, column: int, data: Any) -> tuple[str, Span] | None:
    """What `<% $root.a.b %>` under the cursor renders to, as the job defines it (a secret's value never shown)."""
    text = lines[line] if line < len(lines) else ""
    tag = names.tag_at(text, column)
    if tag is None:
        return None
    cursor = cursor_at(lines, line, column)
    job, _, inner = names.job_of(data, cursor.path)
    root, segments = names.split_placeholder(tag[2])
    context, _ = names.placeholder_context(job, root, inner[1] if len(inner) > 1 and inner[0] == "taskRoles" else None)
    shown = tag[2].strip()
    if context is None:
        return None
    value = names.walk(context, segments)
    if value is None:
        said = "not defined by this job: OpenPAI leaves the tag as written (or empty at run time with secrets)"
    elif root == "$secrets":
        said = "a secret (its value is not shown)"
    else:
        import json

        said = "`" + json.dumps(value, ensure_ascii=False, default=str)[:200] + "`"
    return f"`{shown}`: {said}", Span(line, tag[0], tag[1])


def definition(lines: list[str], line: int, column: int, data: Any) -> str | None:
    """The JSON pointer of what the reference under the cursor names: a prerequisite, a deployment, a parameter,
    a secret, or a prerequisite's field read by `<% $script.x %>`."""
    text = lines[line] if line < len(lines) else ""
    cursor = cursor_at(lines, line, column)
    job, prefix, inner = names.job_of(data, cursor.path)
    role = inner[1] if len(inner) > 1 and inner[0] == "taskRoles" else None
    tag = names.tag_at(text, column)
    if tag is not None:
        root, segments = names.split_placeholder(tag[2])
        _, where = names.placeholder_context(job, root, role)
        if where is None:
            return None
        # The deepest segment that exists: a misspelt last key still leads to the mapping it should be in.
        value_path: list[Any] = list(where)
        context, _ = names.placeholder_context(job, root, role)
        for segment in segments:
            context = names.walk(context, [segment])
            if context is None:
                break
            value_path.append(segment)
        return pointer_of(*prefix, *value_path)
    found = key_on_line(text)
    key = found[0] if found is not None else None
    if names.names_task_roles(inner) and found is not None:
        return pointer_of(*prefix, "taskRoles", key) if key in names.task_role_names(job) else None
    value = _scalar_after(text, found[2]) if found is not None else _list_item(text)
    if value is None:
        return None
    if len(inner) == 2 and inner[0] == "taskRoles" and key in names.REFERENCE_FIELDS:
        return names.prerequisite_pointer(job, value, names.REFERENCE_FIELDS[key], prefix)
    if found is None and len(inner) == 4 and inner[0] == "taskRoles" and inner[2] == "prerequisites":
        return names.prerequisite_pointer(job, value, None, prefix)
    if inner == ("defaults",) and key == "deployment":
        for index, name in enumerate(names.deployment_names(job)):
            if name == value:
                return pointer_of(*prefix, "deployments", index)
    return None


def _scalar_after(text: str, colon_from: int) -> str | None:
    rest = text[colon_from:].split(":", 1)
    if len(rest) < 2:
        return None
    return _unquoted(rest[1])


def _list_item(text: str) -> str | None:
    match = re.match(r"\s*-\s+(.*)$", text)
    return _unquoted(match.group(1)) if match else None


def _unquoted(value: str) -> str | None:
    value = re.split(r"\s#", value, maxsplit=1)[0].strip()
    if len(value) > 1 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    return value or None


def range_of_pointer(positions: dict[str, tuple[int, int, int, int]], pointer: str,
                     lines: Sequence[str]) -> Span | None:
    """Where the entry at `pointer` starts (its key, or a list item's value)."""
    found = positions.get(pointer)
    if found is None:
        return None
    line, column = found[0] - 1, found[1] - 1
    text = lines[line] if line < len(lines) else ""
    end = re.search(r"[:\s,\]}]|$", text[column + 1:])
    return Span(line, column, column + 1 + (end.start() if end else 0))
