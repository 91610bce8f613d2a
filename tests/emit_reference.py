"""The first, plain version of paictl's YAML emitter, kept as the reference the fast one must match byte for byte
(tests/test_emit.py). It is slow (every string re-quoted, every node re-walked) but obviously right; the shipped
emitter (compiler/emit.py) caches and streams, and must never print anything else."""

from __future__ import annotations

import json
import re
from typing import Any, Iterable, Mapping

_PLAIN = re.compile(r"[A-Za-z_/][A-Za-z0-9_./@+=~-]*(?: [A-Za-z0-9_./@+=~-]+)*")
# Words YAML 1.1 or 1.2 readers take for booleans or null; anything starting with a digit, sign or dot is quoted too.
_RESERVED = {"y", "yes", "n", "no", "on", "off", "true", "false", "null", "nan", "inf"}
# Characters that must be escaped even inside a double-quoted scalar (JSON leaves them raw; YAML readers do not).
_ESCAPE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]")
_BLOCK_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]|[ \t]\n|[ \t]$|"
                           "\n[ \t]*$")


def _quoted(text: str) -> str:
    return _ESCAPE.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(text, ensure_ascii=False))


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, (int, float)) or not isinstance(value, str):
        # Numbers and instants: one rule each, shared with the emitter (this reference checks its caching).
        from paictl.compiler.emit import _scalar as scalar

        return scalar(value)
    if _PLAIN.fullmatch(value) and value.lower() not in _RESERVED:
        return value
    return _quoted(value)


def _block(text: str, indent: str) -> str | None:
    """A literal block (`|`) for multi-line text that a block can carry exactly, else None."""
    if "\n" not in text.rstrip("\n") or text[:1] in (" ", "\t", "\n") or _BLOCK_UNSAFE.search(text.rstrip("\n")):
        return None
    body = text.rstrip("\n")
    chomp = "-" if not text.endswith("\n") else ("" if text.count("\n", len(body)) == 1 else "+")
    lines = "\n".join(f"{indent}{line}" if line else "" for line in body.split("\n"))
    return f"|{chomp}\n{lines}" + "\n" * (text.count("\n", len(body)) - 1 if chomp == "+" else 0)


def _emit(value: Any, indent: str, out: list[str]) -> None:
    """Append `value` as a block node whose own lines start at `indent`; the caller wrote what precedes it."""
    if isinstance(value, dict):
        if not value:
            out.append(" {}\n")
            return
        out.append("\n")
        for key, item in value.items():
            out.append(f"{indent}{_scalar(str(key))}:")
            _emit(item, indent + "  ", out)
    elif isinstance(value, list):
        if not value:
            out.append(" []\n")
            return
        out.append("\n")
        for item in value:
            out.append(f"{indent}-")
            _emit_item(item, indent + "  ", out)
    else:
        block = _block(value, indent) if isinstance(value, str) else None
        out.append(f" {block}\n" if block is not None else f" {_scalar(value)}\n")


def _emit_item(item: Any, indent: str, out: list[str]) -> None:
    if isinstance(item, dict) and item:
        first = True
        for key, value in item.items():
            out.append(f" {_scalar(str(key))}:" if first else f"{indent}{_scalar(str(key))}:")
            _emit(value, indent + "  ", out)
            first = False
    else:
        _emit(item, indent, out)


def to_yaml(objects: Iterable[Mapping[str, Any]]) -> str:
    out: list[str] = []
    for obj in objects:
        out.append("---")
        _emit(dict(obj), "", out)
    return "".join(out)
