"""Field ownership (managedFields), server-side apply and the three other PATCH formats.

Simplification, documented in the package docstring: a field set is the set of *leaf paths* of an object, maps are
granular, every list is atomic (Kubernetes merges some built-in lists by key, e.g. containers by name; CRDs without
`x-kubernetes-list-type: map`, like Framework's taskRoles, are atomic as here). fieldsV1 is rendered with `f:` keys
only. The rules that matter to a client are real: a manager that applies a field another manager owns with a
different value gets a 409 Conflict naming the field, unless it forces; equal values are shared; fields a manager
stops applying are removed unless another manager still owns them; an identical re-apply changes nothing.
"""

from __future__ import annotations

import copy
from typing import Any, Iterable

from .errors import ApiError, bad_request, invalid_options

Path = tuple[str, ...]
_MISSING = object()
# metadata fields a manager can own; the rest (name, uid, resourceVersion...) belong to the server.
_OWNABLE_METADATA = ("labels", "annotations", "finalizers", "ownerReferences")


def leaf_paths(obj: Any, prefix: Path = ()) -> set[Path]:
    if isinstance(obj, dict) and (obj or not prefix):
        out: set[Path] = set()
        for key, value in obj.items():
            out |= leaf_paths(value, prefix + (key,))
        return out
    return {prefix}


def object_paths(obj: dict) -> set[Path]:
    """The ownable leaf paths of an object (not apiVersion/kind/server-owned metadata)."""
    out: set[Path] = set()
    for key, value in obj.items():
        if key in ("apiVersion", "kind"):
            continue
        if key == "metadata":
            for meta_key in _OWNABLE_METADATA:
                if meta_key in (value or {}):
                    out |= leaf_paths(value[meta_key], ("metadata", meta_key))
            continue
        out |= leaf_paths(value, (key,))
    return out


def get_path(obj: Any, path: Path) -> Any:
    for key in path:
        if not isinstance(obj, dict) or key not in obj:
            return _MISSING
        obj = obj[key]
    return obj


def delete_path(obj: dict, path: Path) -> None:
    parents = []
    node: Any = obj
    for key in path[:-1]:
        if not isinstance(node, dict) or key not in node:
            return
        parents.append((node, key))
        node = node[key]
    if isinstance(node, dict):
        node.pop(path[-1], None)
    for parent, key in reversed(parents):  # prune maps left empty by the removal
        if parent[key] == {}:
            del parent[key]
        else:
            break


def deep_merge(dst: dict, src: dict) -> dict:
    for key, value in src.items():
        if isinstance(value, dict) and isinstance(dst.get(key), dict):
            deep_merge(dst[key], value)
        else:
            dst[key] = copy.deepcopy(value)
    return dst


def _overlap(a: Path, b: Path) -> bool:
    short = min(len(a), len(b))
    return a[:short] == b[:short]


# -- managedFields <-> path sets -----------------------------------------------------------------------------------

def render_fields(paths: Iterable[Path]) -> dict:
    root: dict = {}
    for path in sorted(paths):
        node = root
        for key in path:
            node = node.setdefault(f"f:{key}", {})
    return root


def parse_fields(fields: dict, prefix: Path = ()) -> set[Path]:
    out: set[Path] = set()
    for key, sub in (fields or {}).items():
        if key == ".":
            continue
        name = key[2:] if key.startswith("f:") else key
        if sub:
            out |= parse_fields(sub, prefix + (name,))
        else:
            out.add(prefix + (name,))
    return out


class Entry:
    """One managedFields entry: who (manager, operation, apiVersion, subresource) owns which paths."""

    def __init__(self, manager: str, operation: str, api_version: str, time: str, paths: set[Path],
                 subresource: str = "") -> None:
        self.manager, self.operation, self.api_version = manager, operation, api_version
        self.time, self.paths, self.subresource = time, paths, subresource

    @property
    def identity(self) -> tuple[str, str, str, str]:
        return self.manager, self.operation, self.api_version, self.subresource

    def render(self) -> dict:
        out = {"manager": self.manager, "operation": self.operation, "apiVersion": self.api_version,
               "time": self.time, "fieldsType": "FieldsV1", "fieldsV1": render_fields(self.paths)}
        if self.subresource:
            out["subresource"] = self.subresource
        return out


def read_entries(obj: dict | None) -> list[Entry]:
    entries = []
    for raw in ((obj or {}).get("metadata") or {}).get("managedFields") or []:
        if not raw:
            continue
        entries.append(Entry(raw.get("manager", ""), raw.get("operation", "Update"), raw.get("apiVersion", ""),
                             raw.get("time", ""), parse_fields(raw.get("fieldsV1") or {}),
                             raw.get("subresource", "")))
    return entries


def write_entries(obj: dict, entries: list[Entry]) -> None:
    kept = [e.render() for e in entries if e.paths]
    if kept:
        obj.setdefault("metadata", {})["managedFields"] = kept
    else:
        obj.setdefault("metadata", {}).pop("managedFields", None)


def _put_entry(entries: list[Entry], entry: Entry, old: list[Entry]) -> None:
    """Replace the entry with the same identity; keep its time when its paths did not change."""
    for index, existing in enumerate(entries):
        if existing.identity == entry.identity:
            previous = next((e for e in old if e.identity == entry.identity), None)
            if previous is not None and previous.paths == entry.paths:
                entry.time = previous.time
            entries[index] = entry
            return
    entries.append(entry)


def record_update(old: dict | None, new: dict, manager: str, api_version: str, now: str,
                  subresource: str = "") -> None:
    """Give `manager` the fields an Update (create, PUT, non-apply PATCH) changed, as the API server does."""
    old_entries = read_entries(old)
    entries = [Entry(e.manager, e.operation, e.api_version, e.time, set(e.paths), e.subresource) for e in old_entries]
    new_paths = object_paths(new)
    changed = {p for p in new_paths if old is None or get_path(old, p) != get_path(new, p)}
    for entry in entries:
        entry.paths = {p for p in entry.paths if p in new_paths and not any(_overlap(p, c) for c in changed)}
    mine = next((e for e in entries if e.identity == (manager, "Update", api_version, subresource)), None)
    paths = (set(mine.paths) if mine else set()) | changed
    _put_entry(entries, Entry(manager, "Update", api_version, now, paths, subresource), old_entries)
    write_entries(new, entries)


# -- server-side apply ---------------------------------------------------------------------------------------------

def _manager_label(entry: Entry) -> str:
    label = f'"{entry.manager}"'
    if entry.subresource:
        label += f' with subresource "{entry.subresource}"'
    if entry.operation == "Update":
        label += f" using {entry.api_version}"
    return label


def _path_text(path: Path) -> str:
    return "".join(f".{key}" for key in path)


def conflict_error(rt, name: str, conflicts: list[tuple[Entry, Path]]) -> ApiError:
    causes = [{"reason": "FieldManagerConflict", "message": f"conflict with {_manager_label(e)}",
               "field": _path_text(p)} for e, p in conflicts]
    if len(conflicts) == 1:
        entry, path = conflicts[0]
        message = f"Apply failed with 1 conflict: conflict with {_manager_label(entry)}: {_path_text(path)}"
    else:  # grouped by manager, managers sorted, as apimachinery words it
        lines = []
        for label in sorted({_manager_label(e) for e, _ in conflicts}):
            lines.append(f"conflicts with {label}:")
            lines += [f"- {_path_text(p)}" for e, p in conflicts if _manager_label(e) == label]
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    details = {"name": name, "kind": rt.plural, "causes": causes}
    if rt.group:
        details["group"] = rt.group
    return ApiError(409, "Conflict", message, details)


def server_side_apply(rt, live: dict | None, applied: dict, manager: str, force: bool, now: str,
                      subresource: str = "") -> dict:
    """The object that results from `manager` applying `applied` to `live` (None: the object does not exist yet)."""
    if not manager:
        raise invalid_options("PatchOptions", "fieldManager", "FieldValueRequired",
                              "Required value: is required for apply patch")
    mine_paths = object_paths(applied)
    old_entries = read_entries(live)
    entries = [Entry(e.manager, e.operation, e.api_version, e.time, set(e.paths), e.subresource) for e in old_entries]
    identity = (manager, "Apply", rt.api_version, subresource)
    base = copy.deepcopy(live) if live is not None else {}
    conflicts: list[tuple[Entry, Path]] = []
    for entry in entries:
        if entry.identity == identity:
            continue
        for owned in sorted(entry.paths):
            for path in mine_paths:
                if _overlap(owned, path):
                    shorter = owned if len(owned) <= len(path) else path
                    if get_path(base, shorter) != get_path(applied, shorter):
                        conflicts.append((entry, owned))
                        break
    if conflicts and not force:
        raise conflict_error(rt, applied["metadata"]["name"], conflicts)
    for entry, owned in conflicts:
        entry.paths.discard(owned)
    previous = next((e for e in entries if e.identity == identity), None)
    others = [e for e in entries if e.identity != identity]
    if previous is not None:
        for path in previous.paths - mine_paths:
            if not any(_overlap(path, p) for e in others for p in e.paths):
                delete_path(base, path)
    body = {k: v for k, v in applied.items() if k != "metadata"}
    deep_merge(base, body)
    meta = base.setdefault("metadata", {})
    for key in _OWNABLE_METADATA:
        if key in applied.get("metadata", {}):
            value = applied["metadata"][key]
            if isinstance(value, dict) and isinstance(meta.get(key), dict):
                deep_merge(meta[key], value)
            else:
                meta[key] = copy.deepcopy(value)
    for key in ("name", "namespace", "generateName"):
        if key in applied.get("metadata", {}) and key not in meta:
            meta[key] = applied["metadata"][key]
    _put_entry(entries, Entry(manager, "Apply", rt.api_version, now, mine_paths, subresource), old_entries)
    write_entries(base, entries)
    return base


# -- the other patch formats ---------------------------------------------------------------------------------------

def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """Strategic merge for built-in kinds, approximated: lists of maps that all have `name` merge by name (as
    containers, env, ports and volumes do); `$`-directives are dropped; everything else is a merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$"):
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list) and _named(value) and _named(result.get(key)):
            merged = {item["name"]: item for item in result[key]}
            for item in value:
                if item.get("$patch") == "delete":
                    merged.pop(item["name"], None)
                else:
                    merged[item["name"]] = strategic_merge_patch(merged.get(item["name"]), item)
            result[key] = list(merged.values())
        else:
            result[key] = strategic_merge_patch(result.get(key), value)
    return result


def _named(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(i, dict) and "name" in i for i in value)


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise bad_request(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _resolve(doc: Any, parts: list[str]) -> Any:
    for part in parts:
        if isinstance(doc, list):
            doc = doc[int(part)]
        else:
            doc = doc[part]
    return doc


def json_patch(doc: Any, ops: Any, invalid) -> Any:
    """RFC 6902. `invalid(message)` builds the 422 a failed `test` (or a bad path) gets."""
    if not isinstance(ops, list):
        raise bad_request("json patch must be a list of operations")
    doc = copy.deepcopy(doc)
    for op in ops:
        kind, parts = op.get("op"), _pointer(op.get("path", ""))
        try:
            if kind == "test":
                if _resolve(doc, parts) != op.get("value"):
                    raise invalid(f"testing value {op.get('path')} failed: test failed")
                continue
            if kind in ("move", "copy"):
                value = copy.deepcopy(_resolve(doc, _pointer(op["from"])))
                if kind == "move":
                    doc = json_patch(doc, [{"op": "remove", "path": op["from"]}], invalid)
                doc = json_patch(doc, [{"op": "add", "path": op["path"], "value": value}], invalid)
                continue
            parent, last = _resolve(doc, parts[:-1]), parts[-1]
            if kind == "remove":
                if isinstance(parent, list):
                    parent.pop(int(last))
                else:
                    del parent[last]
            elif kind in ("add", "replace"):
                value = copy.deepcopy(op.get("value"))
                if isinstance(parent, list):
                    if last == "-":
                        parent.append(value)
                    elif kind == "add":
                        parent.insert(int(last), value)
                    else:
                        parent[int(last)] = value
                else:
                    if kind == "replace" and last not in parent:
                        raise invalid(f"replace operation does not apply: doc is missing key: {op.get('path')}")
                    parent[last] = value
            else:
                raise bad_request(f"Unexpected kind: {kind}")
        except (KeyError, IndexError, ValueError, TypeError):
            raise invalid(f"{kind} operation does not apply: doc is missing path: {op.get('path')}") from None
    return doc
