"""The tags of js-yaml's safe schema beyond JSON's types, read as js-yaml reads them: !!omap and !!pairs (lists of
one-key mappings) and !!binary (a Node Buffer). protocol/yamlevents.py calls these while building a document (and
protocol/yamlscalars.py `binary`, also for a key);
anything else under such a tag makes js-yaml throw, so the rest-server fails, and paictl refuses it (E101, located).
"""

from __future__ import annotations

from typing import Any

from .yamlreader import LoadProblem

#: Sequence tags of js-yaml's safe schema whose items are one-key mappings.
PAIR_LIST_TAGS = ("omap", "pairs")
_BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="


def pair_list(tag: str, items: list[Any], at: tuple[int, int]) -> list[Any]:
    """js-yaml's !!omap (the one-key mappings as they are, keys unique) and !!pairs (each as a [key, value] list);
    anything else under the tag makes js-yaml throw, so the rest-server fails on it."""
    seen: set[str] = set()
    for item in items:
        if not isinstance(item, dict) or len(item) != 1:
            raise LoadProblem("E101", f"a !!{tag} holds one-key mappings only", *at,
                              hint=f"write each item as `- key: value`, or remove the !!{tag} tag")
        key = next(iter(item))
        if tag == "omap" and key in seen:
            raise LoadProblem("E101", f"key {key!r} appears twice in a !!omap", *at)
        seen.add(key)
    if tag == "omap":
        return items
    return [[key, value] for item in items for key, value in item.items()]


def _js_yaml_base64(digits: str) -> bytes:
    """js-yaml 3's decoding of any text its !!binary accepts, padding (`=`, anywhere) taken out first: three bytes a
    group of four digits, the bits of a group carried into the next, three NUL bytes when nothing is left over
    (so an empty text is three NULs), two or one for a tail of three or two digits, none for a tail of one."""
    out = bytearray()
    bits = 0
    for index, digit in enumerate(digits):
        if index and index % 4 == 0:
            out += bytes(((bits >> 16) & 0xFF, (bits >> 8) & 0xFF, bits & 0xFF))
        bits = ((bits << 6) | _BASE64.index(digit)) & 0xFFFFFF
    tail = len(digits) % 4
    if tail == 0:
        out += bytes(((bits >> 16) & 0xFF, (bits >> 8) & 0xFF, bits & 0xFF))
    elif tail == 3:
        out += bytes(((bits >> 10) & 0xFF, (bits >> 2) & 0xFF))
    elif tail == 2:
        out.append((bits >> 4) & 0xFF)
    return bytes(out)


class JSBuffer(str):
    """A !!binary value: js-yaml makes a Node Buffer of the decoded bytes, which a placeholder prints as their UTF-8
    text (invalid sequences as U+FFFD): that text is this string's value. ajv sees an object, not a string
    (protocol/validate.py `_as_ajv_sees_it`), so a command or a uri written as !!binary fails the schema upstream
    and here alike."""

    #: The decoded bytes, which an emitter writes back as !!binary (compiler/emit.py).
    buffer_bytes: bytes = b""


def binary(raw: str, at: tuple[int, int], *, empty_node: bool = False) -> str:
    """The JSBuffer of a !!binary scalar, decoded as js-yaml decodes it. Line breaks are skipped as js-yaml skips
    them. `empty_node`: the scalar is plain and empty, which js-yaml holds as null, and its !!binary refuses that."""
    import base64

    data = raw.replace("\n", "").replace("\r", "")
    if empty_node or any(c not in _BASE64 for c in data) or len(data) % 4:  # 6 bits a character, `=` too
        raise LoadProblem("E101", "this value cannot be read as !!binary (base64)", *at,
                          hint="write base64 text, or remove the tag")
    digits = data.rstrip("=")
    if digits and "=" not in digits and len(digits) % 4 != 1:
        decoded = base64.b64decode(data)  # canonical base64: what js-yaml's decoder gives too
    else:
        decoded = _js_yaml_base64(data.replace("=", ""))
    buffer = JSBuffer(decoded.decode("utf-8", "replace"))
    buffer.buffer_bytes = decoded
    return buffer
