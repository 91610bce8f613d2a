"""The redaction rule for diagnostics: a value under `secrets` or a registry `auth` is never printed, nor its source.

A diagnostic shows its message and its source line, and either could carry a secret: `secrets is string '...'`,
a placeholder warning quoting a registry password, or any problem on a line that also holds a secret (a one-line
JSON job is one line). So, for every located diagnostic:
- the source line keeps its layout, with every stretch that belongs to a secret value replaced by `***`;
- a finding at or below a secret spot has every secret value's text in its message, hint and excerpt replaced by
  `***`, and so does any finding whose message happens to quote a secret.
A file that could not be parsed has no structure to go by: a line inside a `secrets:`/`auth:` block (by
indentation), or one naming such a key in a flow collection, is shown up to the key only.
"""

from __future__ import annotations

import functools
import json
import re
from typing import TYPE_CHECKING, Any, Iterator

if TYPE_CHECKING:
    from .document import Document

MASK = "***"
_SECRET_ROOT = re.compile(r"/secrets(?:/|$)|/prerequisites/[0-9]+/auth(?:/|$)")


def is_secret_pointer(pointer: str) -> bool:
    return _SECRET_ROOT.match(pointer) is not None


def secret_values(data: Any) -> list[str]:
    """The text of every scalar under `secrets` and under each prerequisite's `auth`, longest first."""
    found: set[str] = set()
    if isinstance(data, dict):
        _collect(data.get("secrets"), found, keys=False)
        for item in data.get("prerequisites") or [] if isinstance(data.get("prerequisites"), list) else []:
            if isinstance(item, dict) and "auth" in item:
                _collect(item["auth"], found, keys=False)
    return sorted((v for v in found if v), key=len, reverse=True)


def _collect(value: Any, found: set[str], keys: bool) -> None:
    if isinstance(value, dict):
        for item in value.values():
            _collect(item, found, keys)
    elif isinstance(value, list):
        for item in value:
            _collect(item, found, keys)
    elif isinstance(value, str):
        from .yamlevents import is_reference_only

        if is_reference_only(value):
            return
        found.add(value)
        found.update(line for line in value.splitlines() if len(line) >= 4)
    elif value is not None:
        found.add(json.dumps(value))
        found.add(str(value))


def _mask_quoted_fragments(text: str, values: list[str]) -> str:
    """Every '...' stretch (between any two consecutive quote marks: an apostrophe may come first) that is part of
    a secret becomes '***'."""
    for quote in ("'", '"'):
        marks = [i for i, c in enumerate(text) if c == quote]
        spans = [(a, b) for a, b in zip(marks, marks[1:]) if b > a + 1 and any(text[a + 1:b] in v for v in values)]
        for a, b in reversed(spans):
            text = text[:a + 1] + MASK + text[b:]
    return text


def redact_text(text: str | None, values: list[str], *, aggressive: bool) -> str | None:
    """`text` with secret values replaced: quoted forms always; bare forms when `aggressive` or long enough to
    never be a coincidence."""
    if not text or not values:
        return text
    if aggressive:  # a quoted fragment of a secret (`unclosed tag '<%2'`) is as bad as the whole
        text = _mask_quoted_fragments(text, values)
    for value in values:
        for quoted in (repr(value), f"'{value}'", f'"{value}"', json.dumps(value)):
            text = text.replace(quoted, f"'{MASK}'")
        if aggressive or len(value) >= 6:
            text = re.sub(rf"(?<![\w]){re.escape(value)}(?![\w])" if value[:1].isalnum() and value[-1:].isalnum()
                          else re.escape(value), MASK, text)
    return text


def redact_line(document: Document, line_number: int, line: str | None) -> str | None:
    """The source line with each stretch inside a secret value's span replaced by `***` (line_number is 1-based)."""
    if line is None or not document.secret_spans:
        return line
    start = _line_start(document, line_number)
    if start is None:
        return line
    end = start + len(line)
    pieces, cursor = [], start
    for span_start, span_end in sorted(document.secret_spans):
        if span_end <= start or span_start >= end:
            continue
        lo, hi = max(span_start, start), min(span_end, end)
        if lo < cursor:
            lo = cursor
        if lo >= hi:
            continue
        pieces.append(line[cursor - start:lo - start])
        pieces.append(MASK)
        cursor = hi
    if not pieces:
        return line
    pieces.append(line[cursor - start:])
    return "".join(pieces)


def masked_lines(document: Document) -> list[str]:
    """The document's lines (line ends kept), each stretch of a secret value replaced by `***`: what a diff of the
    file may show (two such lists differ exactly where the texts do, outside the secrets)."""
    lines = document.text.splitlines(keepends=True)
    if not document.secret_spans:
        return lines
    masked = []
    for number, line in enumerate(lines, start=1):
        body = line.rstrip("\r\n")
        masked.append(redact_line(document, number, body) + line[len(body):])
    return masked


def _line_start(document: Document, line_number: int) -> int | None:
    offsets = _line_offsets(document)
    return offsets[line_number - 1] if 0 < line_number <= len(offsets) else None


def _line_offsets(document: Document) -> list[int]:
    return _offsets(document.text)


@functools.lru_cache(maxsize=4)
def _offsets(text: str) -> list[int]:
    """Where each line of `text` starts; computed once per text, as every redacted diagnostic of a file asks."""
    offsets = [0]
    for match in re.finditer(r"\r\n|\r|\n", text):
        offsets.append(match.end())
    return offsets


_SECRET_KEY_LINE = re.compile(r"""^(?P<indent>[ ]*)(?:-[ ]+)?['"]?(?:secrets|auth)['"]?[ \t]*:""")
_SECRET_KEY_ANYWHERE = re.compile(r"""['"]?\b(?:secrets|auth|password)\b['"]?[ \t]*:""")


def redact_unparsed_line(lines: list[str], index: int) -> str:
    """Line `index` of a file that could not be parsed, cut at a secret key if it may hold a secret."""
    line = lines[index]
    found = _SECRET_KEY_ANYWHERE.search(line)
    if found is not None:
        return line[:found.end()] + " " + MASK
    for owner in _enclosing_lines(lines, index):
        if _SECRET_KEY_LINE.match(owner):
            indent = len(line) - len(line.lstrip(" \t"))
            return line[:indent] + MASK
    return line


def _enclosing_lines(lines: list[str], index: int) -> Iterator[str]:
    """The lines that open the blocks line `index` sits in (each less indented than the last), nearest first."""
    line = lines[index]
    indent = len(line) - len(line.lstrip(" \t")) if line.strip() else 10 ** 9
    for number in range(index - 1, max(-1, index - 2000), -1):
        candidate = lines[number]
        if not candidate.strip() or candidate.lstrip().startswith("#"):
            continue
        own = len(candidate) - len(candidate.lstrip(" \t"))
        if own < indent:
            yield candidate
            indent = own
            if own == 0:
                return
