"""Completion candidates at a cursor: keys the schema allows there, values it enumerates, the names of
prerequisites and deployments where a reference belongs, and placeholder names inside `<% %>`."""

from __future__ import annotations

from typing import Any, NamedTuple

from paictl.protocol import schemapaths

from . import names
from .cursor import Cursor, cursor_at


class Candidate(NamedTuple):
    label: str
    kind: str  # key | value | reference | placeholder
    #: Text that replaces the word before the cursor (`Cursor.prefix`, or the placeholder segment typed so far).
    insert: str
    replace_length: int
    detail: str = ""
    documentation: str | None = None


def schema_for(data: Any, path: tuple[str, ...], text: str) -> tuple[dict[str, Any], tuple[str, ...]]:
    from paictl.marketplace.shape import looks_like_item
    from paictl.schemas import load_schema

    is_item = looks_like_item(data) if data is not None else ("\nprotocol:" in "\n" + text and "\ntaskRoles:"
                                                               not in "\n" + text)
    if is_item and path[:1] == ("protocol",):
        return load_schema("job"), path[1:]
    return load_schema("marketplace-item" if is_item else "job"), path


def complete(lines: list[str], line: int, column: int, data: Any) -> list[Candidate]:
    cursor = cursor_at(lines, line, column)
    text = "\n".join(lines)
    if cursor.placeholder is not None:
        return _placeholders(cursor, data)
    job, _, inner = names.job_of(data, cursor.path)
    reference = _references(cursor, job, inner)
    if reference is not None:
        return reference
    schema, spot = schema_for(data, cursor.path, text)
    if cursor.value_of is not None:
        values = schemapaths.allowed_values(schema, (*spot, cursor.value_of))
        return [Candidate(str(v), "value", str(v), len(cursor.prefix)) for v in values
                if isinstance(v, (str, int)) and not isinstance(v, bool)]
    present = names.walk(data, list(cursor.path)) if data is not None else None
    taken = set(present) if isinstance(present, dict) else set()
    candidates = []
    for key, sub in schemapaths.keys_at(schema, spot).items():
        if key in taken and key != cursor.prefix:
            continue
        description = sub.get("description") if isinstance(sub.get("description"), str) else None
        candidates.append(Candidate(key, "key", f"{key}: ", len(cursor.prefix),
                                    detail=_first_sentence(description), documentation=description))
    return candidates


def _references(cursor: Cursor, job: Any, inner: tuple[str, ...]) -> list[Candidate] | None:
    """Names where a reference belongs, or None when the cursor is not at one."""
    found: list[str] | None = None
    if len(inner) == 2 and inner[0] == "taskRoles" and cursor.value_of in names.REFERENCE_FIELDS:
        found = names.prerequisite_names(job, names.REFERENCE_FIELDS[cursor.value_of])
        detail = f"prerequisite of type {names.REFERENCE_FIELDS[cursor.value_of]}"
    elif len(inner) == 4 and inner[0] == "taskRoles" and inner[2] == "prerequisites" and cursor.in_list_item:
        found, detail = names.prerequisite_names(job), "prerequisite"
    elif inner == ("defaults",) and cursor.value_of == "deployment":
        found, detail = names.deployment_names(job), "deployment"
    elif names.names_task_roles(inner) and cursor.value_of is None:
        present = names.walk(job, list(inner))
        taken = set(present) if isinstance(present, dict) else set()
        found = [role for role in names.task_role_names(job) if role not in taken or role == cursor.prefix]
        detail = "task role"
    if found is None:
        return None
    return [Candidate(name, "reference", name, len(cursor.prefix), detail=detail) for name in found]


def _placeholders(cursor: Cursor, data: Any) -> list[Candidate]:
    typed = (cursor.placeholder or "").lstrip()
    job, _, inner = names.job_of(data, cursor.path)
    if "." not in typed and "[" not in typed:
        return [Candidate(root, "placeholder", root, len(typed), detail="placeholder root")
                for root in names.PLACEHOLDER_ROOTS]
    head, _, segment = typed.rpartition(".")
    root, segments = names.split_placeholder(head)
    role = inner[1] if len(inner) > 1 and inner[0] == "taskRoles" else None
    context, _ = names.placeholder_context(job, root, role)
    container = names.walk(context, segments)
    if not isinstance(container, dict):
        return []
    shown = "********" if root == "$secrets" else None
    return [Candidate(str(key), "placeholder", str(key), len(segment),
                      detail=shown or _short(value)) for key, value in container.items()]


def _short(value: Any) -> str:
    text = repr(value) if not isinstance(value, str) else value
    return text if len(text) <= 60 else text[:57] + "..."


def _first_sentence(text: str | None) -> str:
    if not text:
        return ""
    sentence = text.split(". ")[0]
    return sentence if len(sentence) <= 100 else sentence[:97] + "..."
