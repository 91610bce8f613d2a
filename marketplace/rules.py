"""What an OpenPAI marketplace server refuses, or stores in a way nobody can use, known before anything is sent.

- E883: a tag or category with a comma. The server's `?tag=` and `?category=` split their value on commas, so such
  a tag can be stored and linked but never found (on the local index either: search means the same on both).
- E884: a NUL anywhere (PostgreSQL's text columns cannot hold it: the server answers 500), or any control character
  in a name, author, tag, category, group or summary (they identify the item and are printed in listings).
- W883: the item is larger, as the JSON body publishing sends, than express' default limit the server keeps
  (100 kB): the server answers 413 without reading it. A warning here, because a local index takes it;
  publishing to a server refuses it before the first write.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from paictl.protocol.codes import finding
from paictl.protocol.diagnostics import Anchor, Finding, pointer_of

from .item import item_from_document
from .wire import BODY_LIMIT_BYTES, encode_body, full_document

_IDENTIFYING = ("name", "author", "type", "summary", "dataType", "dataUrl", "source")
_LISTS = ("tags", "categories", "groupList")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def name_findings(data: dict[str, Any]) -> list[Finding]:
    found = []
    for key in _IDENTIFYING:
        value = data.get(key)
        if isinstance(value, str) and _CONTROL.search(value):
            found.append(_control(pointer_of(key), key, value))
    for key in _LISTS:
        values = data.get(key)
        for index, value in enumerate(values if isinstance(values, list) else ()):
            if not isinstance(value, str):
                continue
            if _CONTROL.search(value):
                found.append(_control(pointer_of(key, index), f"{key}[{index}]", value))
            elif "," in value and key != "groupList":
                what = "tag" if key == "tags" else "category"
                found.append(finding("E883", pointer_of(key, index), f"the {what} {value!r} has a comma: the server "
                                     f"splits `?{what}=` on commas, so nobody could ever find the item by it",
                                     f"split it into several {key}, or use another separator such as '-'"))
    for key in ("description", "protocol"):
        value = data.get(key)
        if isinstance(value, str) and "\x00" in value:
            found.append(finding("E884", pointer_of(key), f"{key} contains a NUL character, which the server's "
                                 "database cannot store", "remove it"))
    return found


def _control(pointer: str, where: str, value: str) -> Finding:
    character = _CONTROL.search(value).group()  # type: ignore[union-attr]
    what = "a NUL" if character == "\x00" else f"the control character U+{ord(character):04X}"
    return finding("E884", pointer, f"{where} contains {what}", "names, tags and summaries are one line of "
                   "printable text: remove it")


def size_findings(data: dict[str, Any], text: str, description: str | None,
                  protocol: str | Callable[[], str]) -> list[Finding]:
    """W883 when the packed item, as publishing sends it, exceeds the server's body limit. `text` is the item
    file's: with the files it names, it bounds the packed size well enough to skip packing when far below."""
    estimate = len(text) + len(description or "") + (len(protocol) if isinstance(protocol, str) else 0)
    if estimate < BODY_LIMIT_BYTES // 2:
        return []  # well below: the exact size is not worth packing for
    text = protocol if isinstance(protocol, str) else protocol()
    document = item_from_document({**data, "description": description or "", "protocol": text}).to_document()
    size = len(encode_body(full_document(document)))
    if size <= BODY_LIMIT_BYTES:
        return []
    pointer = "/description" if len(description or "") > len(text) else "/protocol"
    return [finding("W883", pointer, f"the item is {size} bytes as JSON; an OpenPAI marketplace server takes "
                    f"request bodies up to {BODY_LIMIT_BYTES} bytes (it answers 413), so only a local index takes it",
                    "shorten the description or the job, e.g. link to a long README instead of inlining it",
                    Anchor.KEY)]
