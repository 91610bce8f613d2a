"""Scalars read as js-yaml 3 (the OpenPAI rest-server's reader) reads them, plain or under a standard tag, and keys
turned into the text js-yaml makes of them.

Why a module of its own: what a scalar *means* (`0o2`, `0X1f` and `08192` are strings, `010` is octal 8, `1:30` is 90,
`2.0` is the number 2, `2020-01-01` a Date, a 4,300-digit integer Infinity) is a question of js-yaml's schema, apart
from how the document is built from libyaml's events (yamlevents.py) and walked for positions (yamlpositions.py);
both use these rules, so the two can never read a value differently.
"""

from __future__ import annotations

import math
import re
from typing import Any

from .jsstring import js_numeric as js_number  # one reading of numbers for both loaders
from .yamlreader import LoadProblem, position
from .yamltags import binary

_TAG_PREFIX = "tag:yaml.org,2002:"
_NOTHING = object()  # no value: an empty scalar under !!int, !!float or !!bool
_QUOTED = ("'", '"')


_NULLS = {"", "~", "null", "Null", "NULL"}
#: A plain scalar can be other than a string only if it starts with one of these or is one of NON_STRING_WORDS.
NON_STRING_STARTS = frozenset("0123456789+-._~<")
NON_STRING_WORDS = frozenset({"", "null", "Null", "NULL", "true", "True", "TRUE", "false", "False", "FALSE"})
_BOOLS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_FLOAT = re.compile(r"[-+]?(?:0|[1-9][0-9_]*)(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?|\.[0-9_]+(?:[eE][-+]?[0-9]+)?"
                    r"|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)")
_INT_DIGITS = {"b": "01_", "x": "0123456789abcdefABCDEF_", "o": "01234567_"}
#: Python refuses to convert longer decimal digit strings (CVE-2020-10735, a quadratic conversion); js-yaml reads
#: them as a JavaScript number, which for a decimal integer that long is always +-Infinity: read so, without the
#: conversion (js_value_checks.py warns, W209).
MAX_DIGITS = 4300


def resolve(raw: str, event) -> Any:
    """The value js-yaml makes of a scalar event's text `raw` (the event's tag and style decide how it is read)."""
    tag = explicit_tag(event.tag)
    plain = bool(event.implicit[0])  # untagged and plain (libyaml: style "" is plain)
    try:
        return _resolve_tagged(raw, tag, plain, event)
    except LoadProblem as problem:
        if problem.line is None:
            problem.line, problem.column = position(event.start_mark)
        raise


def _resolve_tagged(raw: str, tag: str | None, plain: bool, event) -> Any:
    if tag is None:
        return _js_implicit(raw, event.start_mark) if plain else raw
    if tag == "str":
        return raw
    if tag == "timestamp":
        from .timestamps import read_timestamp

        found = read_timestamp(raw) if raw[:1].isdigit() else None
        if found is None:
            raise LoadProblem("E101", "this value cannot be read as !!timestamp", *position(event.start_mark),
                              hint="write a date (2020-01-01) or a date and time, or remove the tag")
        return _timestamp(raw, event.start_mark)
    if tag == "binary":
        return binary(raw, position(event.start_mark), empty_node=raw == "" and event.style in ("", None))
    if tag == "null" and raw == "" and event.style in _QUOTED:
        # js-yaml resolves !!null from the scalar's text, and a quoted '' is text, not the empty node null is
        raise LoadProblem("E101", "this value cannot be read as !!null", *position(event.start_mark),
                          hint="write `!!null` alone, `~` or `null`, or remove the tag")
    if tag == "merge":
        if raw != "<<":  # js-yaml's merge type resolves `<<` only
            raise LoadProblem("E101", "this value cannot be read as !!merge", *position(event.start_mark),
                              hint="a merge key is `<<`; remove the tag")
        return raw
    if tag in ("int", "float", "bool", "null"):
        # each of js-yaml's types resolves only its own forms: `!!int 1.0` and `!!float 0x1F` fail there
        if tag == "int":
            value = _js_int(raw) if raw else _NOTHING
        elif tag == "float":
            value = _js_float(raw) if _FLOAT.fullmatch(raw) and not raw.endswith("_") else _NOTHING
        else:
            value = _js_implicit(raw, event.start_mark) if raw != "" or tag == "null" else _NOTHING
        wanted = {"int": int, "float": (int, float), "bool": bool, "null": type(None)}[tag]
        if value is _NOTHING or value is None and tag != "null" or not isinstance(value, wanted) or (tag != "bool" and isinstance(value, bool)):
            raise LoadProblem("E101", f"this value cannot be read as !!{tag}", *position(event.start_mark),
                              hint=f"remove the !!{tag} tag, or write a value of that type")
        return value
    raise tag_problem(event.tag, event.start_mark)


def reads_as_string(text: str) -> bool:
    """Whether js-yaml reads `text`, written as a plain scalar, as this very string (not null, a boolean, a number or
    a date): what its dumper asks before writing a string plain."""
    try:
        return type(_js_implicit(text, None)) is str
    except LoadProblem:  # a date beyond the years paictl holds: still a date to js-yaml
        return False


def _js_implicit(raw: str, mark) -> Any:
    if raw in _NULLS:
        return None
    if raw in _BOOLS:
        return _BOOLS[raw]
    first = raw[:1]
    if not (first.isdigit() or first in "+-._"):
        return raw
    number = _js_int(raw)
    if number is None and _FLOAT.fullmatch(raw) and not raw.endswith("_"):
        number = _js_float(raw)
    if number is None:
        return _timestamp(raw, mark) if first.isdigit() and "-" in raw else raw
    return number


def _timestamp(raw: str, mark) -> Any:
    """js-yaml's default schema reads `2020-01-01` (and a date with a time) as a Date: a Timestamp here."""
    from .timestamps import TimestampRangeError, read_timestamp

    try:
        found = read_timestamp(raw)
    except TimestampRangeError:
        raise LoadProblem("E101", f"the date {raw} lies beyond the years 1 to 9999", *position(mark),
                          hint="quote it if it is meant as text") from None
    return raw if found is None else found


def _js_int(raw: str) -> int | None:
    body, sign = raw, 1
    if body[:1] in "+-":
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    if not body:
        return None
    if body[0] == "0" and len(body) > 1:
        base_char = body[1]
        if base_char in "bx":
            digits = body[2:]
            if not digits or digits.endswith("_") or any(c not in _INT_DIGITS[base_char] for c in digits):
                return None
            if not digits.replace("_", ""):
                return None
            return sign * _checked_int(digits.replace("_", ""), 2 if base_char == "b" else 16)
        digits = body[1:]
        if digits.endswith("_") or any(c not in _INT_DIGITS["o"] for c in digits) or not digits.replace("_", ""):
            return None
        return sign * _checked_int(digits.replace("_", ""), 8)
    head, colon, tail = body.partition(":")
    # js-yaml: a decimal may not start with `_` (after its sign); only the whole scalar may not end with one, so
    # `1_:30` is sexagesimal 90
    if not head or head[0] == "_" or (head.endswith("_") and not colon) or any(c not in "0123456789_" for c in head) \
            or not head.replace("_", ""):
        return None
    if colon:
        if not re.fullmatch(r"(?::[0-5]?[0-9])+", ":" + tail):
            return None
        if len(body) > MAX_DIGITS:  # each `:` multiplies by 60: 700,000 parts would be a quadratic big integer;
            total_float = 0.0       # js-yaml adds them up in doubles, which overflow to Infinity as here
            for part in [head.replace("_", ""), *tail.split(":")]:
                total_float = total_float * 60 + float(part)
            return js_number(sign * total_float)
        total = 0
        for part in [head.replace("_", ""), *tail.split(":")]:
            total = total * 60 + int(part)
        return sign * total
    return sign * _checked_int(head.replace("_", ""), 10)


def _checked_int(digits: str, base: int) -> int | float:
    if base == 10 and len(digits.lstrip("0")) > MAX_DIGITS:
        return math.inf  # at least 10**4300: JavaScript's parseInt gives Infinity (bases 2, 8, 16 convert linearly)
    return int(digits, base)


def _js_float(raw: str) -> int | float:
    text = raw.replace("_", "")
    lowered = text.lower()
    if lowered.endswith("inf"):
        return -math.inf if text.startswith("-") else math.inf
    if lowered.endswith("nan"):
        return math.nan
    if ":" in text:
        sign = -1 if text.startswith("-") else 1
        base = 0.0
        for part in text.lstrip("+-").split(":"):
            base = base * 60 + float(part)
        value = sign * base
    else:
        value = float(text)  # linear in the text's length, however long (unlike int())
    return js_number(value)


def explicit_tag(tag: str | None) -> str | None:
    if tag is None or tag == "!":
        return None
    if tag.startswith(_TAG_PREFIX):
        return tag[len(_TAG_PREFIX):]
    return "!" + tag  # a local or foreign tag: never a known one


_SUPPORTED_TAGS = ("str", "int", "float", "bool", "null", "map", "seq", "set", "timestamp", "binary", "omap",
                   "pairs", "merge")


def tag_problem(tag: str, mark) -> LoadProblem:
    shown = "!!" + tag[len(_TAG_PREFIX):] if tag.startswith(_TAG_PREFIX) else tag
    return LoadProblem("E101", f"unsupported YAML tag {shown!r}", *position(mark),
                       hint="a job uses plain YAML values; the standard tags "
                            + ", ".join("!!" + t for t in _SUPPORTED_TAGS) + " are understood")


def key_text(value: Any) -> str:
    """The key js-yaml makes of a mapping key: a string as it is; any other value as JavaScript's String() writes it
    (`1: x` is key "1", `true: x` "true", a Date its date text, a !!binary key its bytes' text); a mapping "[object
    Object]" and a list its items joined by commas (`[a, b]: v` is key "a,b"). A list holding a list is the one key
    js-yaml refuses ("nested arrays are not supported inside keys"): LoadProblem without a position."""
    if value.__class__ is str:  # nearly every key: no import machinery per key (120,000 keys cost 0.2 s)
        return value
    from .jsstring import js_string

    if isinstance(value, list) and any(isinstance(item, list) for item in value):
        raise LoadProblem("E101", "a list used as a key holds a list; OpenPAI's YAML reader refuses nested lists in "
                          "keys", None, None, hint="a job's keys are names; write the key as a string")
    return str(js_string(value))  # str(): a Timestamp's or a Buffer's text, as a plain string
