"""The JSON-schema phase: run the project's schema and explain each violation the way a compiler would.

jsonschema's own messages name Python reprs and schema keywords; users need to hear which key is wrong, where, and
what was probably meant. Each jsonschema error becomes one or more `Finding`s with a stable code.
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any, Iterable

from .codes import finding
from .diagnostics import Anchor, Finding, pointer_of
from .suggest import did_you_mean as suggest

# Keys renamed or commonly mistyped in older OpenPAI protocols, mapped to what the current protocol calls them.
KNOWN_RENAMES = {
    "minsucceededtaskcount": "minSucceededInstances",
    "minfailedtaskcount": "minFailedInstances",
    "tasknumber": "instances",
    "taskrole": "taskRoles",
    "default": "defaults",
    "image": "dockerImage",
    "command": "commands",
    "retrycount": "taskRetryCount",
    "resource": "resourcePerInstance",
    "resources": "resourcePerInstance",
    "memory": "memoryMB",
    "gpunumber": "gpu",
    "cpunumber": "cpu",
}

_JSON_TYPES = {
    "object": "a mapping", "array": "a list", "string": "a string", "integer": "an integer",
    "number": "a number", "boolean": "a boolean", "null": "null",
}


@functools.lru_cache(maxsize=None)
def _validator(schema_name: str = "job"):
    from jsonschema import Draft202012Validator, validators

    from paictl.schemas import load_schema

    if schema_name != "job":
        return Draft202012Validator(load_schema(schema_name))
    # ajv (OpenPAI) takes +-Infinity for an integer (`!(x % 1) && !isNaN(x)`); its minimum still applies.
    checker = Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda checker, value: Draft202012Validator.TYPE_CHECKER.is_type(value, "integer")
        or (type(value) is float and math.isinf(value)))
    validator = validators.extend(Draft202012Validator, type_checker=checker)
    return validator(load_schema(schema_name))


def check_schema(data: Any, schema_name: str = "job", limit: int | None = None) -> list[Finding]:
    """Every schema finding, or, with `limit`, the first ones: jsonschema makes its errors lazily, so 200,000
    wrong-typed items cost 1,001 errors (0.1 s), not 200,000 (6 s and 250 MB)."""
    from paictl.schemas import fast_validator

    if fast_validator(schema_name).is_valid(data):
        return []  # tests/test_schema.py holds jsonschema-rs and jsonschema to the same verdicts
    if schema_name == "job":
        data = _failing_part(data)
    findings: list[Finding] = []
    for error in _validator(schema_name).iter_errors(data):
        findings.extend(_date_hint(error, _explain(error, ROOTS.get(schema_name, "the document"))))
        if limit is not None and len(findings) > limit:
            break
    return _unique(findings)


#: Above this many task roles the Python validator sees only the ones that fail (it costs ~0.25 ms per role).
_PRUNE_ABOVE = 50


def _failing_part(data: Any) -> Any:
    """The job with its task roles narrowed to those the fast validator rejects (at least one is kept).

    jsonschema (Python) takes 2.6 s for a job of 10,000 task roles; the errors of a role depend only on its name
    and its value, so the valid ones can be left out without changing a single finding.
    """
    roles = data.get("taskRoles") if isinstance(data, dict) else None
    if not isinstance(roles, dict) or len(roles) <= _PRUNE_ABOVE:
        return data
    validator = _role_validator()
    name_ok = re.compile(next(iter(load_job_schema()["properties"]["taskRoles"]["patternProperties"])))
    failing = {name: role for name, role in roles.items()
               if not name_ok.search(name) or not validator.is_valid(role)}
    if not failing:
        first = next(iter(roles))
        failing = {first: roles[first]}
    return {**data, "taskRoles": failing}


def load_job_schema() -> dict:
    from paictl.schemas import load_schema

    return load_schema("job")


@functools.lru_cache(maxsize=1)
def _role_validator():
    import jsonschema_rs

    schema = load_job_schema()
    return jsonschema_rs.validator_for({"$schema": schema["$schema"], "$defs": schema["$defs"],
                                        "$ref": "#/$defs/taskRole"})


def _unique(findings: Iterable[Finding]) -> list[Finding]:
    seen, result = set(), []
    for f in findings:
        key = (f.code, f.pointer, f.message)
        if key not in seen:
            seen.add(key)
            result.append(f)
    return result


def _finding(code: str, message: str, path: Iterable[Any], anchor: Anchor = Anchor.VALUE,
             hint: str | None = None) -> Finding:
    return finding(code, pointer_of(*path), message, hint, anchor)


#: What each schema's root is called in a message ("the job is missing the required key 'name'").
ROOTS = {"job": "the job", "profile": "the profile", "grass-cluster": "the cluster file",
         "search-space": "the search space", "marketplace-item": "the item"}


def _where(path: list[Any], root: str = "the job") -> str:
    """A human name for a location: `taskRoles.worker.completion`, or `root` (`the job`) for the root."""
    if not path:
        return root
    text = ""
    for token in path:
        text += f"[{token}]" if isinstance(token, int) else (("." if text else "") + str(token))
    return text


def _date_hint(error, findings: list[Finding]) -> list[Finding]:
    """A value that is an unquoted date (a JavaScript Date to OpenPAI): say so, and how to keep it a string."""
    from .timestamps import DateView

    if not isinstance(error.instance, DateView):
        return findings
    hint = (f"quote it ('{error.instance.timestamp}'): OpenPAI's YAML reader (js-yaml, YAML 1.1) reads an unquoted "
            "date as a timestamp, not a string")
    return [f._replace(hint=hint) for f in findings]


def _describe(value: Any) -> str:
    from .timestamps import DateView

    if isinstance(value, DateView):
        return f"the unquoted date {value.timestamp}"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return f"number {value}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"string {shown!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def did_you_mean(key: str, candidates: Iterable[str]) -> str | None:
    return suggest(key, candidates, KNOWN_RENAMES)


def _explain(error, root: str) -> list[Finding]:
    path = list(error.absolute_path)
    keyword = error.validator
    where = _where(path, root)

    if keyword in ("oneOf", "anyOf") and error.context:
        from jsonschema.exceptions import best_match

        return _explain(best_match(error.context), root)

    if keyword == "required":
        missing = [k for k in error.validator_value if isinstance(error.instance, dict) and k not in error.instance]
        return [_finding("E201", f"{where} is missing the required key '{k}'", path, Anchor.KEY,
                         hint=_required_hint(k)) for k in missing]

    if keyword == "additionalProperties" and isinstance(error.instance, dict):
        return _unknown_keys(error, path, root)

    if error.schema is False:
        # jsonschema reports a `false` subschema at the parent object, without the key; the only `false` in the
        # job schema is upstream's misplaced `additionalProperties: false` inside extraContainerOptions.properties.
        if path and path[-1] == "extraContainerOptions":
            key_path = [*path, "additionalProperties"]
            return [_finding("E212", f"{_where(key_path)} is rejected by OpenPAI: its schema forbids a key named "
                             "'additionalProperties' in extraContainerOptions", key_path, Anchor.KEY,
                             hint="remove this key (an upstream schema bug makes it the one forbidden name)")]
        return [_finding("E200", f"{where}: {error.message}", path, Anchor.KEY)]

    if keyword == "type":
        return [_type_error(error, path, root)]

    if path and path[-1] == "ports" and keyword in ("not", "minimum", "maximum", "maxLength"):
        return [_ports_error(error.instance, path)]

    if keyword in ("enum", "const"):
        allowed = error.validator_value if keyword == "enum" else [error.validator_value]
        shown = ", ".join(repr(a) if isinstance(a, str) else str(a) for a in allowed)
        hint = None
        if isinstance(error.instance, str):
            guess = did_you_mean(error.instance, [a for a in allowed if isinstance(a, str)])
            if guess is not None:
                hint = f"did you mean {guess!r}?"
        if path and path[-1] == "type" and len(path) == 3 and path[0] == "prerequisites":
            return [_finding("E209", f"{where} is {_describe(error.instance)}; a prerequisite type is one of "
                             f"{shown}", path, hint=hint)]
        return [_finding("E204", f"{where} is {_describe(error.instance)}; expected one of {shown}", path,
                         hint=hint)]

    if keyword == "pattern":
        pattern = _shown_pattern(error.validator_value)
        return [_finding("E205", f"{where} {_describe(error.instance)} does not match {pattern}", path,
                         hint=_pattern_hint(pattern))]

    if keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength"):
        bound = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<",
                 "minLength": "length >=", "maxLength": "length <="}[keyword]
        value = error.instance if not isinstance(error.instance, str) else len(error.instance)
        return [_finding("E206", f"{where} is {value}; it must be {bound} {error.validator_value}", path)]

    if keyword in ("minItems", "minProperties"):
        noun = "item" if keyword == "minItems" else "entry"
        return [_finding("E207", f"{where} must have at least {error.validator_value} {noun}", path)]

    return [_finding("E200", f"{where}: {error.message}", path)]


_MAX_UNKNOWN_KEYS = 1000


def _unknown_keys(error, path: list[Any], root: str) -> list[Finding]:
    schema = error.schema if isinstance(error.schema, dict) else {}
    declared = list(schema.get("properties", {}))
    patterns = [re.compile(p) for p in schema.get("patternProperties", {})]
    shown = _shown_pattern(patterns[0].pattern) if patterns else ""
    where = _where(path, root)
    findings = []
    for key in error.instance:
        if len(findings) > _MAX_UNKNOWN_KEYS:  # a file reports at most 1,000 problems (protocol/validate.py)
            break
        if key in declared or any(p.search(key) for p in patterns):
            continue
        key_path = [*path, key]
        if patterns and not declared:
            if path and path[-1] == "taskRoles":
                findings.append(_finding(
                    "E208", f"task role name {key!r} is invalid: it must match {shown}", key_path,
                    Anchor.KEY, hint="use letters, digits and underscores, not starting with a digit (and avoid "
                    "underscores: OpenPAI drops them when it converts names)"))
            else:
                findings.append(_finding("E205", f"{where} key {key!r} does not match {shown}", key_path,
                                         Anchor.KEY, hint=_pattern_hint(shown)))
            continue
        guess = did_you_mean(key, declared)
        message = f"unknown key {key!r} in {where}"
        if guess:
            message += f"; did you mean {guess!r}?"
        hint = None if guess else (f"allowed keys: {', '.join(declared)}" if declared else None)
        findings.append(_finding("E202", message, key_path, Anchor.KEY, hint=hint))
    return findings


def _ports_error(value: Any, path: list[Any]) -> Finding:
    """`ports` of a shape upstream cannot use (false, 0, "", [] and null mean no ports there, and here)."""
    return _finding("E203", f"{_where(path)} is {_describe(value)}; it must be a mapping of port label to number of "
                    "ports (OpenPAI's rest-server crashes on this value; false, 0, \"\" or null mean no ports)", path,
                    hint="write `ports: {http: 1}`, or leave the key out")


def _port_list_entry_error(value: Any, path: list[Any]) -> Finding:
    """An entry of a `ports` list that is no count: OpenPAI makes the list's indexes port labels and its entries
    their counts, which the runtime cannot use when an entry is not a number."""
    return _finding("E210", f"{_where(path)} is {_describe(value)}; a `ports` list gives the labels 0, 1, ... and "
                    "its entries are their port counts, so this one must be a number", path,
                    hint="write `ports: {http: 1}`, not `ports: [- http: 1]`; the value is how many ports to "
                    "allocate, not a port number")


def _type_error(error, path: list[Any], root: str) -> Finding:
    expected = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
    wanted = " or ".join(_JSON_TYPES.get(t, t) for t in expected)
    where = _where(path, root)
    value = error.instance
    if len(path) > 1 and path[-2] == "ports" and isinstance(path[-1], int):
        return _port_list_entry_error(value, path)
    if isinstance(value, str) and "<%" in value and "integer" in expected:
        return _finding("E211", f"{where} is the template {value.strip()!r}; OpenPAI renders placeholders only in "
                        "commands, so this field must be a literal " + wanted.removeprefix("an ").removeprefix("a "),
                        path, hint="use a YAML anchor and alias to share a value, or write the number")
    return _finding("E203", f"{where} is {_describe(value)}; expected {wanted}", path)


def _required_hint(key: str) -> str | None:
    return {
        "protocolVersion": "add `protocolVersion: 2`",
        "type": "add `type: job`",
        "gpu": "write `gpu: 0` for a CPU-only task",
        "uri": "a dockerimage prerequisite needs `uri: <image reference>`",
    }.get(key)


def _shown_pattern(pattern: str) -> str:
    # The schema's patterns end in `$(?!\n)` so that Python's `$` cannot match before a final newline (JavaScript's
    # cannot); users read the plain regex.
    return pattern.removesuffix("(?!\\n)")


def _pattern_hint(pattern: str) -> str | None:
    if pattern == "^[a-zA-Z0-9_-]+$":
        return "use only letters, digits, '_' and '-'"
    if pattern == "^[a-zA-Z_][a-zA-Z0-9_]*$":
        return "use letters, digits and '_', not starting with a digit"
    return None
