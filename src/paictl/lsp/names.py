"""What the names in a job refer to: prerequisites by type, deployments, placeholder roots and their values.

Shared by completion (which names may be written here) and go-to-definition (where the named thing is defined).
Reads plain data only; positions are looked up by JSON pointer by the caller.
"""

from __future__ import annotations

import re
from typing import Any, Iterator

from paictl.protocol.diagnostics import pointer_of

#: A task role's fields that name a prerequisite, and the type that prerequisite must have.
REFERENCE_FIELDS = {"dockerImage": "dockerimage", "data": "data", "script": "script", "output": "output"}
#: Placeholder roots: where each one's values come from.
PLACEHOLDER_ROOTS = ("$parameters", "$secrets", "$script", "$output", "$data")

_ROOT = re.compile(r"[$\w]*")
_SEGMENT = re.compile(r"\.?([^.\[\]\s]+)|\[(\d+)\]")


def job_of(data: Any, path: tuple[str, ...]) -> tuple[Any, tuple[str, ...], tuple[str, ...]]:
    """(the job, the path's prefix to it, the path inside it): a marketplace item's inline `protocol` is a job."""
    if isinstance(data, dict) and "protocol" in data and "taskRoles" not in data and path[:1] == ("protocol",):
        return data.get("protocol"), ("protocol",), path[1:]
    return data, (), path


def prerequisites(job: Any) -> Iterator[tuple[int, dict[str, Any]]]:
    items = job.get("prerequisites") if isinstance(job, dict) else None
    for index, item in enumerate(items if isinstance(items, list) else []):
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            yield index, item


def prerequisite_names(job: Any, kind: str | None = None) -> list[str]:
    return list(dict.fromkeys(item["name"] for _, item in prerequisites(job) if kind is None or item.get("type") == kind))


def deployment_names(job: Any) -> list[str]:
    items = job.get("deployments") if isinstance(job, dict) else None
    return [d["name"] for d in (items if isinstance(items, list) else [])
            if isinstance(d, dict) and isinstance(d.get("name"), str)]


def task_role_names(job: Any) -> list[str]:
    roles = job.get("taskRoles") if isinstance(job, dict) else None
    return [name for name in roles if isinstance(name, str)] if isinstance(roles, dict) else []


def names_task_roles(path: tuple[str, ...]) -> bool:
    """Is `path` a mapping keyed by the job's task role names (a deployment's `taskRoles`, HiveD's settings)?"""
    return len(path) > 1 and path[-1] == "taskRoles" and path[0] in ("deployments", "extras")


def prerequisite_pointer(job: Any, name: str, kind: str | None, prefix: tuple[str, ...] = ()) -> str | None:
    for index, item in prerequisites(job):
        if item["name"] == name and (kind is None or item.get("type") == kind):
            return pointer_of(*prefix, "prerequisites", index)
    return None


def placeholder_context(job: Any, root: str, role: str | None) -> tuple[Any, tuple[Any, ...] | None]:
    """The value a placeholder root reads from, and the path of that value in the job (None if unknown)."""
    if not isinstance(job, dict):
        return None, None
    if root in ("$parameters", "$secrets"):
        return job.get(root[1:]), (root[1:],)
    roles = job.get("taskRoles")
    task = roles.get(role) if isinstance(roles, dict) and role is not None else None
    name = task.get(root[1:]) if isinstance(task, dict) else None
    if not isinstance(name, str):
        return None, None
    for index, item in prerequisites(job):
        if item["name"] == name and item.get("type") == root[1:]:
            return item, ("prerequisites", index)
    return None, None


def split_placeholder(text: str) -> tuple[str, list[str]]:
    """`$parameters.a.b[0]` -> ("$parameters", ["a", "b", "0"])."""
    text = text.strip()
    root = _ROOT.match(text).group()
    return root, [m.group(1) or m.group(2) for m in _SEGMENT.finditer(text, len(root))]


def tag_at(line: str, column: int) -> tuple[int, int, str] | None:
    """The `<% ... %>` tag the cursor is in: (start, end, inner text). Linear: one search each way."""
    start = line.rfind("<%", 0, column + 2)
    if start < 0:
        return None
    end = line.find("%>", start + 2)
    if end < 0 or column > end + 2:
        return None
    return start, end + 2, line[start + 2:end]


def walk(value: Any, segments: list[str]) -> Any:
    for segment in segments:
        if isinstance(value, dict) and segment in value:
            value = value[segment]
        elif isinstance(value, list) and segment.isdigit() and int(segment) < len(value):
            value = value[int(segment)]
        else:
            return None
    return value
