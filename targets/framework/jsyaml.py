"""YAML text as js-yaml 3's `safeDump` writes it, for the annotation OpenPAI's rest-server fills that way.

The HiveD pod scheduling spec is a YAML string inside the pod's annotations (hived.js builds the object, k8s.js
`yaml.safeDump`s it), so its bytes are part of the Framework: a group name with a blank or a non-ASCII letter must be
quoted, or not, exactly as js-yaml decides. Its defaults are followed (2-space indent, line width 80, block style,
compatibility quoting of YAML 1.1 booleans), and strings are measured as JavaScript measures them, in UTF-16 units.
Facts from nodeca/js-yaml 3.14.2 `lib/js-yaml/dumper.js`, the release npm gives the rest-server's `^3.13.1`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

_INDENT = 2
_LINE_WIDTH = 80
#: Written quoted however they resolve: YAML 1.1 read them as booleans (the dumper's compatibility mode).
_YAML11_BOOLEANS = frozenset("y Y yes Yes YES on On ON n N no No NO off Off OFF".split())
_ESCAPES = {0x00: "\\0", 0x07: "\\a", 0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0B: "\\v", 0x0C: "\\f",
            0x0D: "\\r", 0x1B: "\\e", 0x22: '\\"', 0x5C: "\\\\", 0x85: "\\N", 0xA0: "\\_", 0x2028: "\\L",
            0x2029: "\\P"}
#: c-indicator characters, which no plain scalar may start with.
_NOT_FIRST = frozenset("-?:,[]{}#&*!|=>'\"%@`")
_FLOW = frozenset(",[]{}")
_PLAIN, _SINGLE, _LITERAL, _FOLDED, _DOUBLE = range(5)


def safe_dump(value: Any) -> str:
    """`yaml.safeDump(value)` for JSON-like data (dates as the moments js-yaml writes)."""
    return _node(value, 0, compact=True) + "\n"


def _node(value: Any, level: int, *, compact: bool) -> str:
    from paictl.protocol.timestamps import Timestamp, iso_string

    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Timestamp):  # a Date: js-yaml writes its toISOString()
        return iso_string(value)
    if isinstance(value, str):
        return _scalar(value, level, key=False)
    if isinstance(value, (int, float)):
        return _number(value)
    if isinstance(value, Mapping):
        return _mapping(value, level, compact) if value else "{}"
    if isinstance(value, (list, tuple)):
        return _sequence(value, level, compact) if value else "[]"
    return _scalar(str(value), level, key=False)


def _number(value: int | float) -> str:
    from paictl.protocol.jsstring import js_number

    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        if value == 0 and math.copysign(1.0, value) < 0:
            return "-0.0"
        if not value.is_integer():  # the float type; integral numbers are written by the int type, as decimals
            text = js_number(value)
            return text.replace("e", ".e", 1) if re.match(r"[-+]?[0-9]+e", text) else text
    return js_number(value)


def _mapping(mapping: Mapping[Any, Any], level: int, compact: bool) -> str:
    from paictl.protocol.jsstring import object_keys

    texts = {key if isinstance(key, str) else str(key): key for key in mapping}
    out = []
    for position, text in enumerate(object_keys(texts)):
        key = texts[text]
        pair = "" if compact and position == 0 else "\n" + " " * (_INDENT * level)
        key_text = _scalar(text, level + 1, key=True)
        explicit = len(_utf16(key_text)) > 1024
        if explicit:
            pair += ("?" if key_text.startswith("\n") else "? ") + key_text + "\n" + " " * (_INDENT * level)
        else:
            pair += key_text
        value_text = _node(mapping[key], level + 1, compact=explicit)
        out.append(pair + (":" if value_text.startswith("\n") else ": ") + value_text)
    return "".join(out)


def _sequence(items: Any, level: int, compact: bool) -> str:
    out = []
    for position, item in enumerate(items):
        line = "" if compact and position == 0 else "\n" + " " * (_INDENT * level)
        text = _node(item, level + 1, compact=True)
        out.append(line + ("-" if text.startswith("\n") else "- ") + text)
    return "".join(out)


# ----------------------------------------------------------------------------------------------------------------
# Scalars (writeScalar, chooseScalarStyle)

def _utf16(text: str) -> list[int]:
    data = text.encode("utf-16-le", "surrogatepass")
    return [int.from_bytes(data[i:i + 2], "little") for i in range(0, len(data), 2)]


def _printable(unit: int) -> bool:
    return (0x20 <= unit <= 0x7E or (0xA1 <= unit <= 0xD7FF and unit not in (0x2028, 0x2029))
            or (0xE000 <= unit <= 0xFFFD and unit != 0xFEFF))


def _plain_safe(unit: int, previous: int | None) -> bool:
    if not _printable(unit) or chr(unit) in _FLOW or unit == 0x3A:
        return False
    # `#` only after a character that is neither blank nor a line break (3.14's refinement)
    return unit != 0x23 or (previous is not None and _printable(previous) and previous not in (0x20, 0x09))


def _plain_safe_first(unit: int) -> bool:
    return _printable(unit) and unit not in (0x20, 0x09) and chr(unit) not in _NOT_FIRST


def _resolves_to_other(text: str) -> bool:
    """Whether js-yaml would read `text`, written plain, as other than this string (null, bool, number, date, <<)."""
    from paictl.protocol.yamlscalars import reads_as_string

    return text == "<<" or not reads_as_string(text)


def _style(text: str, units: list[int], single_line: bool, width: int) -> int:
    plain = _plain_safe_first(units[0]) and units[-1] not in (0x20, 0x09)
    has_break = foldable = False
    previous_break = -1
    for index, unit in enumerate(units):
        if unit == 0x0A and not single_line:
            has_break = True
            foldable = foldable or (index - previous_break - 1 > width and units[previous_break + 1] != 0x20)
            previous_break = index
        elif not _printable(unit):
            return _DOUBLE
        plain = plain and _plain_safe(unit, units[index - 1] if index else None)
    if not single_line:
        foldable = foldable or (len(units) - previous_break - 1 > width
                                and (previous_break + 1 >= len(units) or units[previous_break + 1] != 0x20))
    if not has_break and not foldable:
        return _PLAIN if plain and not _resolves_to_other(text) else _SINGLE
    return _FOLDED if foldable else _LITERAL


def _scalar(text: str, level: int, *, key: bool) -> str:
    if not text:
        return "''"
    if text in _YAML11_BOOLEANS:
        return f"'{text}'"
    indent = _INDENT * max(1, level)
    width = max(min(_LINE_WIDTH, 40), _LINE_WIDTH - indent)
    style = _style(text, _utf16(text), key, width)
    if style == _PLAIN:
        return text
    if style == _SINGLE:
        return "'" + text.replace("'", "''") + "'"
    if style == _DOUBLE:
        return '"' + _escaped(text) + '"'
    body = _folded(text, width) if style == _FOLDED else text
    return (">" if style == _FOLDED else "|") + _block_header(text) + _drop_final_break(_indented(body, indent))


def _escaped(text: str) -> str:
    out = []
    for char in text:  # a Python character is a code point: a surrogate pair is combined, as js-yaml combines it
        point = ord(char)
        if point > 0xFFFF:
            out.append(f"\\U{point:08X}")
        elif point in _ESCAPES:
            out.append(_ESCAPES[point])
        elif _printable(point):
            out.append(char)
        else:
            out.append(f"\\x{point:02X}" if point <= 0xFF else f"\\u{point:04X}")
    return "".join(out)


def _block_header(text: str) -> str:
    indicator = str(_INDENT) if re.match(r"\n* ", text) else ""
    clip = text.endswith("\n")
    keep = clip and (text.endswith("\n\n") or text == "\n")
    return indicator + ("+" if keep else "" if clip else "-") + "\n"


def _drop_final_break(text: str) -> str:
    return text[:-1] if text.endswith("\n") else text


def _indented(text: str, spaces: int) -> str:
    """indentString: every line but an empty one indented (only LF breaks lines: other breaks are escaped)."""
    return "".join(line if line == "\n" else " " * spaces + line for line in re.findall(r"[^\n]*\n|[^\n]+$", text))


def _folded(text: str, width: int) -> str:
    """foldString: every line folded at blanks to the width, breaks between unindented lines doubled."""
    first_end = text.find("\n")
    first_end = len(text) if first_end == -1 else first_end
    result = _fold_line(text[:first_end], width)
    previous_more_indented = text[:1] in ("\n", " ")
    for breaks, line in re.findall(r"(\n+)([^\n]*)", text[first_end:]):
        more_indented = line[:1] == " "
        result += breaks + ("\n" if not previous_more_indented and not more_indented and line != "" else "")
        result += _fold_line(line, width)
        previous_more_indented = more_indented
    return result


def _fold_line(line: str, width: int) -> str:
    if line == "" or line[0] == " ":
        return line
    start = current = 0
    result = ""
    for match in re.finditer(r" [^ ]", line):
        following = match.start()
        if following - start > width:
            end = current if current > start else following
            result += "\n" + line[start:end]
            start = end + 1
        current = following
    result += "\n"
    if len(line) - start > width and current > start:
        result += line[start:current] + "\n" + line[current + 1:]
    else:
        result += line[start:]
    return result[1:]
