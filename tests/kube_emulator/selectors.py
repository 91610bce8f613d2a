"""Label and field selectors with the API server's grammar (`a=b,c!=d,e in (x,y),!f` and `metadata.name=x`)."""

from __future__ import annotations

import re
from typing import Callable

from .errors import bad_request

Predicate = Callable[[dict], bool]

# Field labels each kind supports besides metadata.name and metadata.namespace (pkg/registry/*/strategy.go).
FIELD_LABELS = {
    "Pod": {"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName", "status.phase",
            "status.podIP", "status.nominatedNodeName", "spec.hostNetwork"},
    "Secret": {"type"},
    "Event": {"involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
              "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason",
              "reportingComponent", "source", "type"},
}

_SET_RE = re.compile(r"^\s*([A-Za-z0-9_./-]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")


def _split_terms(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    terms, depth, current = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            terms.append(current)
            current = ""
        else:
            current += ch
    terms.append(current)
    return [t.strip() for t in terms if t.strip()]


def label_selector(text: str | None) -> Predicate:
    if not text:
        return lambda obj: True
    checks: list[Callable[[dict], bool]] = []
    for term in _split_terms(text):
        match = _SET_RE.match(term)
        if match:
            key, op, values = match.group(1), match.group(2), {v.strip() for v in match.group(3).split(",")}
            if op == "in":
                checks.append(lambda labels, k=key, vs=values: labels.get(k) in vs)
            else:
                checks.append(lambda labels, k=key, vs=values: labels.get(k) not in vs)
        elif "!=" in term:
            key, value = (s.strip() for s in term.split("!=", 1))
            checks.append(lambda labels, k=key, v=value: labels.get(k) != v)
        elif "=" in term:
            key, value = (s.strip() for s in term.replace("==", "=").split("=", 1))
            checks.append(lambda labels, k=key, v=value: labels.get(k) == v)
        elif term.startswith("!"):
            checks.append(lambda labels, k=term[1:].strip(): k not in labels)
        elif re.fullmatch(r"[A-Za-z0-9_./-]+", term):
            checks.append(lambda labels, k=term: k in labels)
        else:
            raise bad_request(f"unable to parse requirement: {term!r}")

    def predicate(obj: dict) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(check(labels) for check in checks)

    return predicate


def _field_value(obj: dict, path: str) -> str:
    value = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def field_selector(text: str | None, kind: str) -> Predicate:
    if not text:
        return lambda obj: True
    allowed = {"metadata.name", "metadata.namespace"} | FIELD_LABELS.get(kind, set())
    checks = []
    for term in _split_terms(text):
        negate = "!=" in term
        key, value = (s.strip() for s in term.replace("!=", "=").replace("==", "=").split("=", 1)) \
            if "=" in term else (term, None)
        if value is None:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{term}'")
        if key not in allowed:
            raise bad_request(f'field label not supported: {key}')
        checks.append((key, value, negate))

    def predicate(obj: dict) -> bool:
        return all((_field_value(obj, key) == value) != negate for key, value, negate in checks)

    return predicate
