"""Walking a JSON Schema by a document path: what may sit at a spot, its description, a skeleton of a value.

Editors ask these questions of a document being typed (which keys are valid here? what does this key mean?), and a
fix for a missing key needs a value to insert. The schema answers all three; the walk follows `$ref` into `$defs`
and looks through `oneOf`/`anyOf`/`allOf` alternatives and `if`/`then` branches (a prerequisite is one of four
shapes), so the answer at a
spot is the union of what the alternatives allow there.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Sequence


def _resolve(root: dict[str, Any], node: Any) -> dict[str, Any]:
    seen = 0
    while isinstance(node, dict) and isinstance(node.get("$ref"), str) and node["$ref"].startswith("#/") and seen < 32:
        target: Any = root
        for token in node["$ref"][2:].split("/"):
            target = target.get(token, {}) if isinstance(target, dict) else {}
        # Keywords beside `$ref` (a description, say) win over the target's, as 2020-12 applies both.
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        seen += 1
    return node if isinstance(node, dict) else {}


def alternatives(root: dict[str, Any], node: Any) -> list[dict[str, Any]]:
    """The schema `node` as a list of plain object/value schemas: `$ref`s followed, `oneOf`/`anyOf`/`allOf` expanded."""
    node = _resolve(root, node)
    found = [node]
    for keyword in ("oneOf", "anyOf", "allOf"):
        for branch in node.get(keyword, ()) or ():
            found.extend(alternatives(root, branch))
    for keyword in ("then", "else"):  # `if` is not evaluated: what either branch allows is possible here
        if isinstance(node.get(keyword), dict):
            found.extend(alternatives(root, node[keyword]))
    return found


def child_schemas(root: dict[str, Any], node: Any, token: str) -> list[dict[str, Any]]:
    """The schemas of `token` (a key, or a list index written as digits) inside a value of schema `node`."""
    found: list[dict[str, Any]] = []
    for alt in alternatives(root, node):
        if token in alt.get("properties", {}):
            found.append(alt["properties"][token])
            continue
        matched = [sub for pattern, sub in alt.get("patternProperties", {}).items() if re.search(pattern, token)]
        found.extend(matched)
        if not matched and isinstance(alt.get("additionalProperties"), dict):
            found.append(alt["additionalProperties"])
        if token.isdigit() and isinstance(alt.get("items"), dict):
            found.append(alt["items"])
    return [resolved for sub in found for resolved in alternatives(root, sub)]


def schemas_at(root: dict[str, Any], tokens: Sequence[str]) -> list[dict[str, Any]]:
    """Every schema alternative that applies at the document path `tokens` (empty: nothing is known there)."""
    current = alternatives(root, root)
    for token in tokens:
        current = [sub for node in current for sub in child_schemas(root, node, str(token))]
        if not current:
            return []
    return current


def keys_at(root: dict[str, Any], tokens: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The named keys a mapping at `tokens` may hold, each with its (resolved) schema, in the schema's order."""
    keys: dict[str, dict[str, Any]] = {}
    for node in schemas_at(root, tokens):
        for name, sub in node.get("properties", {}).items():
            if isinstance(sub, dict) and name not in keys:
                keys[name] = _resolve(root, sub)
    return keys


def required_at(root: dict[str, Any], tokens: Sequence[str]) -> list[str]:
    names: list[str] = []
    for node in schemas_at(root, tokens):
        names.extend(n for n in node.get("required", ()) if n not in names)
    return names


def description_at(root: dict[str, Any], tokens: Sequence[str]) -> str | None:
    for node in schemas_at(root, tokens):
        if isinstance(node.get("description"), str):
            return node["description"]
    return None


def allowed_values(root: dict[str, Any], tokens: Sequence[str]) -> list[Any]:
    values: list[Any] = []
    for node in schemas_at(root, tokens):
        for value in [*node.get("enum", ()), *([node["const"]] if "const" in node else [])]:
            if value not in values:
                values.append(value)
    return values


#: What a skeleton holds for a string that has no enum, const or default: a value the user must replace.
PLACEHOLDER = "TODO"


def skeleton(root: dict[str, Any], node: Any, depth: int = 0) -> Any:
    """A minimal value of schema `node`: its default, const or first allowed value, else the required keys of a
    mapping filled the same way, one item of a list that needs one, the lower bound of a number, "TODO" for text."""
    alts = alternatives(root, node)
    for alt in alts:
        if "default" in alt:
            return alt["default"]
        if "const" in alt:
            return alt["const"]
        if alt.get("enum"):
            return alt["enum"][0]
    kinds = [t for alt in alts for t in _types(alt)]
    kind = kinds[0] if kinds else None
    if kind == "object" and depth < 6:
        return {name: skeleton(root, _property(root, alts, name), depth + 1)
                for name in dict.fromkeys(n for alt in alts for n in alt.get("required", ()))}
    if kind == "array":
        item = next((alt.get("items") for alt in alts if isinstance(alt.get("items"), dict)), {})
        return [skeleton(root, item, depth + 1)] if any(alt.get("minItems", 0) for alt in alts) else []
    if kind in ("integer", "number"):
        return max([alt["minimum"] for alt in alts if isinstance(alt.get("minimum"), (int, float))] or [0])
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return PLACEHOLDER


def _property(root: dict[str, Any], alts: Iterable[dict[str, Any]], name: str) -> Any:
    for alt in alts:
        if name in alt.get("properties", {}):
            return alt["properties"][name]
    return {}


def _types(node: dict[str, Any]) -> list[str]:
    kind = node.get("type")
    if isinstance(kind, str):
        return [kind]
    if isinstance(kind, list):
        return [k for k in kind if isinstance(k, str)]
    if "properties" in node or "required" in node:
        return ["object"]
    return []
