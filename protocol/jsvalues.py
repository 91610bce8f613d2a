"""What a template name reaches when mustache.js looks it up in a JavaScript object, and what is then printed.

The rest-server renders `<% $parameters.a.b %>` with mustache.js's `Context.lookup` over the job's data as js-yaml
built it: each dotted segment is a JavaScript property access (`value[segment]`), so besides the data's own keys
and indexes a segment reaches what JavaScript's built-in prototypes give every value: a string's `length` and
characters, `constructor`, `__proto__`, `toString`, `hasOwnProperty`... When the name ends on a function,
mustache.js calls it with the view (`{$parameters, $script, $output, $data}`, a plain object) as `this` and no
arguments, and the rest-server appends the result with `+=` (JavaScript's `String()`).

This module is a model of exactly that, as data: the prototypes' properties, each function with its `name`,
`length` and what calling it on the view gives (a constant, since `this` is always that plain object) or that it
throws (then the rest-server's render fails and the job is refused: protocol/compile_checks.py, E810). Nothing here
touches a Python attribute: values are looked up in dicts, lists, strings and the tables below only. A name that
reaches a built-in the tables do not describe (a static method such as `Object.keys`, a Date called for the
current time) is `Unmodeled`, refused too (README, "Deliberate differences from OpenPAI"). The tables were
checked against Node 20 by the differential harness described in tests/test_openpai_alignment.py.
"""

from __future__ import annotations

from typing import Any, Mapping

from .jsstring import js_string
from .timestamps import Timestamp
from .yamltags import JSBuffer


class JsThrow(Exception):
    """JavaScript throws while looking the name up or printing its value: the rest-server's render fails."""


class Unmodeled(Exception):
    """The name reaches a JavaScript built-in this model does not describe."""


class _Marker:
    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


UNDEFINED = _Marker("undefined")
THROWS = _Marker("throws")  # a function result: calling it on the view throws
VIEW = _Marker("view")  # a function result: the view itself (prints as "[object Object]")


class JsFunction:
    """A built-in function as the model knows it. A plain class, not a dataclass: `validate` looks placeholders up
    through this module, and importing `dataclasses` (with `inspect` and `ast`) was a seventh of a pre-commit run.
    Compared by identity."""

    __slots__ = ("name", "length", "result", "own", "statics")

    def __init__(self, name: str, length: int, result: Any, own: Mapping[str, Any] | None = None,
                 statics: frozenset[str] = frozenset()):
        self.name = name
        self.length = length
        #: what calling it with `this` = the view and no arguments gives (THROWS, VIEW, UNDEFINED or data)
        self.result = result
        self.own = own if own is not None else {}  # e.g. `prototype` of a constructor
        self.statics = statics  # own properties the model leaves out (refused)

    def __repr__(self) -> str:
        return f"JsFunction({self.name!r})"


class JsPrototype:
    """A built-in prototype: its own properties, its parent, and `String(prototype)`. Compared by identity."""

    __slots__ = ("name", "own", "parent", "text")

    def __init__(self, name: str, own: dict[str, Any], parent: JsPrototype | None, text: Any):
        self.name = name
        self.own = own
        self.parent = parent
        self.text = text  # String(prototype), or THROWS

    def __repr__(self) -> str:
        return f"JsPrototype({self.name!r})"


#: The text `String(fn)` gives for the function `Function()` returns.
ANONYMOUS_SOURCE = "function anonymous(\n) {\n\n}"
_VIEW_TEXT = "[object Object]"
_ITERATOR = "[object Array Iterator]"


def _fn(name: str, length: int, result: Any, **own: Any) -> JsFunction:
    return JsFunction(name, length, result, own)


def _html(tag: str, attribute: str | None = None) -> str:
    opening = f'<{tag} {attribute}="undefined">' if attribute else f"<{tag}>"
    return f"{opening}{_VIEW_TEXT}</{tag}>"


OBJECT_PROTOTYPE = JsPrototype("Object.prototype", {}, None, _VIEW_TEXT)
OBJECT_PROTOTYPE.own.update({
    "hasOwnProperty": _fn("hasOwnProperty", 1, False), "isPrototypeOf": _fn("isPrototypeOf", 1, False),
    "propertyIsEnumerable": _fn("propertyIsEnumerable", 1, False), "toString": _fn("toString", 0, _VIEW_TEXT),
    "toLocaleString": _fn("toLocaleString", 0, _VIEW_TEXT), "valueOf": _fn("valueOf", 0, VIEW),
    "__defineGetter__": _fn("__defineGetter__", 2, THROWS), "__defineSetter__": _fn("__defineSetter__", 2, THROWS),
    "__lookupGetter__": _fn("__lookupGetter__", 1, UNDEFINED),
    "__lookupSetter__": _fn("__lookupSetter__", 1, UNDEFINED),
})
FUNCTION_PROTOTYPE = JsPrototype("Function.prototype", {
    "apply": _fn("apply", 2, THROWS), "bind": _fn("bind", 1, THROWS), "call": _fn("call", 1, THROWS),
    "toString": _fn("toString", 0, THROWS), "name": "", "length": 0, "caller": THROWS, "arguments": THROWS,
}, OBJECT_PROTOTYPE, THROWS)
_ANONYMOUS = JsFunction("anonymous", 0, UNDEFINED, {"prototype": UNDEFINED})

_STRING_METHODS: dict[str, tuple[int, Any]] = {
    "at": (1, "["), "charAt": (1, "["), "charCodeAt": (1, 91), "codePointAt": (1, 91),
    "concat": (1, _VIEW_TEXT), "endsWith": (1, False), "includes": (1, False), "indexOf": (1, -1),
    "lastIndexOf": (1, -1), "localeCompare": (1, -1), "match": (1, ""), "matchAll": (1, "[object RegExp String "
    "Iterator]"), "normalize": (0, _VIEW_TEXT), "padEnd": (1, _VIEW_TEXT), "padStart": (1, _VIEW_TEXT),
    "repeat": (1, ""), "replace": (2, _VIEW_TEXT), "replaceAll": (2, _VIEW_TEXT), "search": (1, 0),
    "slice": (2, _VIEW_TEXT), "split": (2, _VIEW_TEXT), "startsWith": (1, False), "substr": (2, _VIEW_TEXT),
    "substring": (2, _VIEW_TEXT), "toLowerCase": (0, "[object object]"), "toUpperCase": (0, "[OBJECT OBJECT]"),
    "toLocaleLowerCase": (0, "[object object]"), "toLocaleUpperCase": (0, "[OBJECT OBJECT]"),
    "trim": (0, _VIEW_TEXT), "trimStart": (0, _VIEW_TEXT), "trimEnd": (0, _VIEW_TEXT),
    "toString": (0, THROWS), "valueOf": (0, THROWS), "isWellFormed": (0, True), "toWellFormed": (0, _VIEW_TEXT),
    "anchor": (1, _html("a", "name")), "big": (0, _html("big")), "blink": (0, _html("blink")),
    "bold": (0, _html("b")), "fixed": (0, _html("tt")), "fontcolor": (1, _html("font", "color")),
    "fontsize": (1, _html("font", "size")), "italics": (0, _html("i")), "link": (1, _html("a", "href")),
    "small": (0, _html("small")), "strike": (0, _html("strike")), "sub": (0, _html("sub")),
    "sup": (0, _html("sup")),
}
_ARRAY_METHODS: dict[str, tuple[int, Any]] = {
    "at": (1, UNDEFINED), "concat": (1, _VIEW_TEXT), "copyWithin": (2, VIEW), "entries": (0, _ITERATOR),
    "every": (1, THROWS), "fill": (1, VIEW), "filter": (1, THROWS), "find": (1, THROWS), "findIndex": (1, THROWS),
    "findLast": (1, THROWS), "findLastIndex": (1, THROWS), "flat": (0, ""), "flatMap": (1, THROWS),
    "forEach": (1, THROWS), "includes": (1, False), "indexOf": (1, -1), "join": (1, ""), "keys": (0, _ITERATOR),
    "lastIndexOf": (1, -1), "map": (1, THROWS), "pop": (0, UNDEFINED), "push": (1, 0), "reduce": (1, THROWS),
    "reduceRight": (1, THROWS), "reverse": (0, VIEW), "shift": (0, UNDEFINED), "slice": (2, ""),
    "some": (1, THROWS), "sort": (1, VIEW), "splice": (2, ""), "toLocaleString": (0, ""), "toReversed": (0, ""),
    "toSorted": (1, ""), "toSpliced": (2, ""), "toString": (0, _VIEW_TEXT), "unshift": (1, 0),
    "values": (0, _ITERATOR), "with": (2, THROWS),
}
_NUMBER_METHODS = {"toExponential": 1, "toFixed": 1, "toLocaleString": 0, "toPrecision": 1, "toString": 1,
                   "valueOf": 0}
_DATE_METHODS = (
    "getDate getDay getFullYear getHours getMilliseconds getMinutes getMonth getSeconds getTime getTimezoneOffset "
    "getUTCDate getUTCDay getUTCFullYear getUTCHours getUTCMilliseconds getUTCMinutes getUTCMonth getUTCSeconds "
    "getYear setDate setFullYear setHours setMilliseconds setMinutes setMonth setSeconds setTime setUTCDate "
    "setUTCFullYear setUTCHours setUTCMilliseconds setUTCMinutes setUTCMonth setUTCSeconds setYear toDateString "
    "toISOString toJSON toGMTString toLocaleDateString toLocaleString toLocaleTimeString toString toTimeString "
    "toUTCString valueOf").split()
#: V8 gives the legacy aliases the names of the functions they alias.
_ALIAS_NAMES = {"trimLeft": "trimStart", "trimRight": "trimEnd"}

STRING_PROTOTYPE = JsPrototype("String.prototype", {n: _fn(n, k, r) for n, (k, r) in _STRING_METHODS.items()},
                               OBJECT_PROTOTYPE, "")
STRING_PROTOTYPE.own.update({alias: _fn(name, 0, _VIEW_TEXT) for alias, name in _ALIAS_NAMES.items()})
STRING_PROTOTYPE.own["length"] = 0
ARRAY_PROTOTYPE = JsPrototype("Array.prototype", {n: _fn(n, k, r) for n, (k, r) in _ARRAY_METHODS.items()},
                              OBJECT_PROTOTYPE, "")
ARRAY_PROTOTYPE.own["length"] = 0
NUMBER_PROTOTYPE = JsPrototype("Number.prototype", {n: _fn(n, k, THROWS) for n, k in _NUMBER_METHODS.items()},
                               OBJECT_PROTOTYPE, "0")
BOOLEAN_PROTOTYPE = JsPrototype("Boolean.prototype", {n: _fn(n, 0, THROWS) for n in ("toString", "valueOf")},
                                OBJECT_PROTOTYPE, "false")
DATE_PROTOTYPE = JsPrototype("Date.prototype", {n: _fn(n, 0, THROWS) for n in _DATE_METHODS}, OBJECT_PROTOTYPE,
                             THROWS)


def _constructor(name: str, length: int, result: Any, prototype: JsPrototype, statics: str) -> JsFunction:
    made = JsFunction(name, length, result, {"prototype": prototype}, frozenset(statics.split()))
    prototype.own["constructor"] = made
    return made


OBJECT = _constructor("Object", 1, {}, OBJECT_PROTOTYPE, "assign create defineProperties defineProperty entries "
                      "freeze fromEntries getOwnPropertyDescriptor getOwnPropertyDescriptors getOwnPropertyNames "
                      "getOwnPropertySymbols getPrototypeOf groupBy hasOwn is isExtensible isFrozen isSealed keys "
                      "preventExtensions seal setPrototypeOf values")
FUNCTION = _constructor("Function", 1, _ANONYMOUS, FUNCTION_PROTOTYPE, "")
STRING = _constructor("String", 1, "", STRING_PROTOTYPE, "fromCharCode fromCodePoint raw")
NUMBER = _constructor("Number", 1, 0, NUMBER_PROTOTYPE, "EPSILON MAX_SAFE_INTEGER MAX_VALUE MIN_SAFE_INTEGER "
                      "MIN_VALUE NaN NEGATIVE_INFINITY POSITIVE_INFINITY isFinite isInteger isNaN isSafeInteger "
                      "parseFloat parseInt")
BOOLEAN = _constructor("Boolean", 1, False, BOOLEAN_PROTOTYPE, "")
ARRAY = _constructor("Array", 1, [], ARRAY_PROTOTYPE, "from fromAsync isArray of")
DATE = _constructor("Date", 7, Unmodeled("Date() gives the time of submission"), DATE_PROTOTYPE, "UTC now parse")


def _prototype_of(value: Any) -> JsPrototype | None:
    if isinstance(value, Timestamp):
        return DATE_PROTOTYPE
    if isinstance(value, str):
        return STRING_PROTOTYPE
    if isinstance(value, bool):
        return BOOLEAN_PROTOTYPE
    if isinstance(value, (int, float)):
        return NUMBER_PROTOTYPE
    if isinstance(value, list):
        return ARRAY_PROTOTYPE
    if isinstance(value, JsFunction):
        return FUNCTION_PROTOTYPE
    if isinstance(value, JsPrototype):
        return value.parent
    return OBJECT_PROTOTYPE  # a mapping, or a function's result object


def _is_index(segment: str) -> bool:
    return segment.isascii() and segment.isdigit() and (segment == "0" or not segment.startswith("0"))


def _utf16(text: str) -> list[str]:
    """A JavaScript string's elements: UTF-16 code units (a character outside the BMP is two of them)."""
    units = text.encode("utf-16-le", "surrogatepass")
    return [chr(int.from_bytes(units[i:i + 2], "little")) for i in range(0, len(units), 2)]


def get(value: Any, key: str) -> Any:
    """`value[key]` in JavaScript (UNDEFINED when absent). `value` is never null or undefined here."""
    own = _own(value, key)
    if own is not UNDEFINED:
        return own
    if key == "__proto__":
        return _prototype_of(value) or None
    proto = value if isinstance(value, JsPrototype) else _prototype_of(value)
    while proto is not None:
        if key in proto.own:
            found = proto.own[key]
            if found is THROWS:  # an accessor that throws (Function.prototype.caller)
                raise JsThrow(f"'{key}' may not be accessed")
            return found
        proto = proto.parent
    return UNDEFINED


def _own(value: Any, key: str) -> Any:
    if isinstance(value, dict):
        return value[key] if key in value else UNDEFINED
    if isinstance(value, Timestamp):
        return UNDEFINED
    if isinstance(value, JSBuffer) and (key == "length" or _is_index(key)):
        # a Node Buffer (!!binary) counts and indexes its bytes, each a number (its text is only how it prints)
        data = value.buffer_bytes
        return len(data) if key == "length" else data[int(key)] if int(key) < len(data) else UNDEFINED
    if isinstance(value, str):
        if key == "length" or _is_index(key):
            units = _utf16(value) if not value.isascii() else value
            if key == "length":
                return len(units)
            if int(key) >= len(units):
                return UNDEFINED
            if "\ud800" <= units[int(key)] <= "\udfff":
                raise Unmodeled("half of a UTF-16 surrogate pair, which no YAML or JSON text can hold")
            return units[int(key)]
        return UNDEFINED
    if isinstance(value, list):
        if key == "length":
            return len(value)
        return value[int(key)] if _is_index(key) and int(key) < len(value) else UNDEFINED
    if isinstance(value, JsFunction):
        if key in value.statics:
            raise Unmodeled(f"{value.name}.{key} is a JavaScript built-in paictl does not model")
        if key == "name":
            return value.name
        if key == "length":
            return value.length
        return value.own.get(key, UNDEFINED)
    if isinstance(value, JsPrototype):
        return UNDEFINED  # its properties are looked up as the prototype chain's
    return UNDEFINED


def lookup(path: tuple[str, ...], view: Mapping[str, Any]) -> Any:
    """mustache.js `Context.lookup` of a name already split into `path` (() is `.`, the view itself), including
    the call of a final function: the value the rest-server appends, or None/UNDEFINED (written back literally).
    Raises JsThrow or Unmodeled."""
    value: Any = dict(view)
    if not path:
        return VIEW
    for segment in path:
        if value is None or value is UNDEFINED:
            return value
        value = get(value, segment)
    if value is FUNCTION_PROTOTYPE:  # itself a function, which returns undefined
        return UNDEFINED
    if isinstance(value, JsFunction):
        if isinstance(value.result, Unmodeled):
            raise value.result
        if value.result is THROWS:
            raise JsThrow(f"{value.name}() throws when mustache.js calls it on the view")
        return value.result
    return value


def printed(value: Any) -> str | None:
    """What `result += value` appends, or None when the name is written back literally (null or undefined)."""
    if value is None or value is UNDEFINED:
        return None
    if value is VIEW:
        return _VIEW_TEXT
    if isinstance(value, JsFunction):  # only `Function()`'s result is a function here
        return ANONYMOUS_SOURCE
    if isinstance(value, JsPrototype):
        if value.text is THROWS:
            raise JsThrow(f"String({value.name}) throws")
        return value.text
    _check_printable(value, set())
    return js_string(value)


def _check_printable(value: Any, seen: set[int]) -> None:
    """JavaScript cannot print a mapping with an own `toString` key: the key's value is data, not a function, and
    `valueOf` gives the object itself, so converting it to a string throws (also inside an array's join)."""
    if isinstance(value, dict):
        if "toString" in value:
            raise JsThrow("a mapping with a `toString` key cannot be converted to a string")
    elif isinstance(value, list) and id(value) not in seen:
        seen.add(id(value))
        for item in value:
            _check_printable(item, seen)
