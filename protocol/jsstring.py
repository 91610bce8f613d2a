"""JavaScript's `String(value)` for the plain data a job holds.

OpenPAI's rest-server builds the entrypoint with `entrypoint += value`, so whatever a tag resolves to reaches the
command as JavaScript prints it, not as Python does: `1.0` is `1`, `1e-7` is `1e-7` (Python says `1e-07`), `True`
is `true`, a list is its items joined with commas and a mapping is `[object Object]`. A job rendered here must give
the very bytes the rest-server gives, so the conversion follows ECMAScript's Number::toString and
Array.prototype.join rather than `str()`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Iterable

#: Integers up to this magnitude are exact doubles; beyond it JavaScript holds (and prints) the nearest double.
_EXACT_INT = 2**53


def js_numeric(value: float) -> int | float:
    """A YAML float as JavaScript holds it: one number type, so an integral float is the integer (`2.0` is 2, as
    upstream prints it). Both loaders read numbers through this."""
    if math.isfinite(value) and value == int(value) and abs(value) < _EXACT_INT:
        return int(value)
    return value


def js_string(value: Any) -> str:
    """`String(value)` as JavaScript computes it for JSON-like data (None is `null`, as JavaScript prints it)."""
    return _string(value, set())


def _string(value: Any, seen: set[int]) -> str:
    if isinstance(value, str):
        if type(value) is not str:
            from .timestamps import Timestamp, js_date_string

            if isinstance(value, Timestamp):  # an unquoted date, a Date upstream
                return js_date_string(value)
        return value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return js_number(value)
    if isinstance(value, float):
        return js_number(value)
    if isinstance(value, Mapping):
        return "[object Object]"
    if isinstance(value, (list, tuple)):
        # Array.prototype.join: null/undefined items are empty, and an array met again while joining (a cycle) is
        # empty too (V8's cycle detection), instead of recursing forever.
        if id(value) in seen:
            return ""
        seen.add(id(value))
        try:
            return ",".join("" if item is None else _string(item, seen) for item in value)
        finally:
            seen.discard(id(value))
    # Not JSON-like (only reachable through a caller's parameter override): Python's text is the best guess.
    return str(value)


def js_number(number: int | float) -> str:
    """ECMAScript Number::toString(10): the shortest round-trip digits, laid out as JavaScript lays them out.

    Python's `repr` finds the same shortest digits (both pick the closest of the shortest candidates); only the
    layout differs: JavaScript writes plain notation for exponents from -7 to 20 and `1e+21`/`1e-7` outside.
    """
    if isinstance(number, int) and not isinstance(number, bool) and -_EXACT_INT <= number <= _EXACT_INT:
        return str(number)
    try:
        number = float(number)
    except OverflowError:  # a huge YAML integer: js-yaml's parseInt gives Infinity
        return "Infinity" if number > 0 else "-Infinity"
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    if number == 0:
        return "0"  # -0 too
    sign = "-" if number < 0 else ""
    mantissa, _, exponent = repr(abs(number)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    raw = whole + fraction
    point = len(whole) + int(exponent or 0)  # the value is 0.<raw> * 10**point
    stripped = raw.lstrip("0")
    point -= len(raw) - len(stripped)
    digits = stripped.rstrip("0")
    return sign + _layout(digits, point)


def _layout(digits: str, point: int) -> str:
    """Steps 6-10 of ECMAScript Number::toString for the digits `digits` times 10**(point - len(digits))."""
    count = len(digits)
    if count <= point <= 21:
        return digits + "0" * (point - count)
    if 0 < point <= 21:
        return digits[:point] + "." + digits[point:]
    if -6 < point <= 0:
        return "0." + "0" * -point + digits
    exponent = point - 1
    mantissa = digits[0] + ("." + digits[1:] if count > 1 else "")
    return f"{mantissa}e{'+' if exponent >= 0 else '-'}{abs(exponent)}"


def object_keys(keys: Iterable[str]) -> list[str]:
    """`Object.keys` order of an object built with `keys` in this order: the array-index keys ("0", "7", "10", up to
    2**32 - 2, written canonically) first, ascending, then the others as they were inserted. JavaScript walks an
    object so when it serialises it or collects its values (k8s.js keys dockerimage prerequisites by name)."""
    keys = list(keys)

    def index(key: str) -> int | None:
        if key.isascii() and key.isdigit() and (key == "0" or key[0] != "0") and int(key) < 2 ** 32 - 1:
            return int(key)
        return None

    indexed = sorted((key for key in keys if index(key) is not None), key=index)
    return indexed + [key for key in keys if index(key) is None]


def js_truthy(value: Any) -> bool:
    """JavaScript's truthiness of plain data: null, false, 0, NaN and "" are false; every other value, an empty list
    or mapping and a date among them, is true (Python's `bool` says the opposite of empty collections)."""
    if value is None or value is False:
        return False
    if isinstance(value, (int, float)):
        return value == value and value != 0  # NaN is falsy
    if type(value) is str:
        return value != ""
    return True  # an object: a mapping, a list, a Date, a Buffer
