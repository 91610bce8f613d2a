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


class JSBuffer(str):
    """A !!binary value: js-yaml makes a Node Buffer of the decoded bytes, which a placeholder prints as their UTF-8
    text (invalid sequences as U+FFFD): that text is this string's value. ajv sees an object, not a string
    (protocol/validate.py `_as_ajv_sees_it`), so a command or a uri written as !!binary fails the schema upstream
    and here alike."""

    #: The decoded bytes, which an emitter writes back as !!binary (compiler/emit.py).
    buffer_bytes: bytes = b""


def binary(raw: str, at: tuple[int, int]) -> str:
    """The JSBuffer of a !!binary scalar. Line breaks are skipped as js-yaml skips them."""
    import base64
    import binascii

    data = raw.replace("\n", "").replace("\r", "")
    if any(c not in _BASE64 for c in data) or len(data) % 4:  # js-yaml counts 6 bits a character, `=` too
        raise LoadProblem("E101", "this value cannot be read as !!binary (base64)", *at,
                          hint="write base64 text, or remove the tag")
    try:
        decoded = base64.b64decode(data)
    except binascii.Error:
        raise LoadProblem("E101", "this value cannot be read as !!binary (base64)", *at,
                          hint="write base64 text, or remove the tag") from None
    buffer = JSBuffer(decoded.decode("utf-8", "replace"))
    buffer.buffer_bytes = decoded
    return buffer
