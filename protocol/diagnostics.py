"""The one diagnostic model every check produces and every reporter consumes.

Checks work on plain data and know only JSON pointers; they emit `Finding`s. The validator turns each finding into
a `Diagnostic` by looking the pointer up in the document's position index, so no check ever deals with line numbers.

The records on the validate path (`Finding`, `Diagnostic`, the `Document`, the `ValidationResult`, template `Tag`s
and placeholder `Scope`s) are typed named tuples rather than dataclasses: importing `dataclasses` imports `inspect`
and `ast`, about a seventh of the instructions of a `paictl validate` run, which pre-commit pays on every commit.
They are immutable like the frozen model, and built by keyword; `_replace` makes a changed copy.
"""

from __future__ import annotations

import enum
from typing import Any, NamedTuple


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"


class Anchor(str, enum.Enum):
    """Which part of a mapping entry a finding points at: an unknown key points at the key, a bad value at the value."""

    KEY = "key"
    VALUE = "value"


class Finding(NamedTuple):
    """A problem found in plain data, located only by a JSON pointer (RFC 6901)."""

    code: str
    severity: Severity
    message: str
    pointer: str
    anchor: Anchor = Anchor.VALUE
    hint: str | None = None
    #: The exact text to point at inside the located value (a placeholder inside a long command), if known.
    excerpt: str | None = None


class _DiagnosticFields(NamedTuple):
    code: str
    severity: Severity
    message: str
    file: str
    line: int | None = None
    column: int | None = None
    #: Last column of the offending text on `line`, when known (editors underline line:column..end_column).
    end_column: int | None = None
    pointer: str = ""
    hint: str | None = None
    source_line: str | None = None


class Diagnostic(_DiagnosticFields):
    """A located problem: what `paictl validate` prints, one line per problem. Built by keyword only."""

    __slots__ = ()

    def __new__(cls, **fields: Any) -> Diagnostic:
        record = _DiagnosticFields(**fields)  # a missing or unknown field is a TypeError, as for any record
        # One line per problem, whatever the document holds: a key such as "a\nb" is shown escaped. No terminal
        # escape sequences from a hostile file in the source line either; its tabs stay for the caret.
        source_line = record.source_line
        return super().__new__(cls, *record._replace(
            message=one_line(record.message), hint=None if record.hint is None else one_line(record.hint),
            source_line=source_line if source_line is None or _plain(source_line.replace("\t", " "))
            else source_line.translate(_CONTROL_KEEPING_TABS)))

    def _replace(self, **changes: Any) -> Diagnostic:
        return Diagnostic(**{**self._asdict(), **changes})

    def __getnewargs_ex__(self) -> tuple[tuple[()], dict[str, Any]]:  # copy and pickle build it by keyword too
        return (), self._asdict()

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def to_dict(self) -> dict[str, Any]:
        record = self._asdict()
        record["severity"] = self.severity.value
        return record


# C0 and C1 controls (U+0080-U+009F: a terminal reads U+009B as CSI and U+009D as OSC, so a crafted name could set
# the window title), DEL, the Unicode line and paragraph separators and bidirectional overrides, and the characters
# that print as nothing (zero-width spaces and joiners, soft hyphen, word joiner, BOM, invisible operators, tag
# characters): without them `tiny` and `ti\u200bny` would print alike, and a look-alike name could pass for another.
_INVISIBLE = (0x00AD, 0x034F, 0x061C, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180E, *range(0x200B, 0x2010),
              *range(0x2060, 0x2065), 0x3164, 0xFEFF, 0xFFA0, *range(0xE0000, 0xE0080))
_CONTROL = {code: f"\\x{code:02x}" for code in [*range(0x20), *range(0x7F, 0xA0)]} | {
    0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"} | {
    code: f"\\u{code:04x}" for code in (0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A))} | {
    code: f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}" for code in _INVISIBLE}


_CONTROL_KEEPING_TABS = {code: escaped for code, escaped in _CONTROL.items() if code != 0x09}


def one_line(text: str) -> str:
    """`text` with every line break and control character escaped, so a message stays on one line."""
    return text if _plain(text) else text.translate(_CONTROL)


def one_line_keeping_tabs(text: str) -> str:
    """`one_line` for a line of a program's output, whose tabs (a traceback's, a table's) are layout, not danger."""
    return text if _plain(text.replace("\t", " ")) else text.translate(_CONTROL_KEEPING_TABS)


def _plain(text: str) -> bool:
    """Printable ASCII only, which no escape changes: two C-speed tests instead of a dict lookup per character (a
    translation is ~3 us for a message, three per diagnostic)."""
    return text.isascii() and text.isprintable()


def escape_pointer_token(token: object) -> str:
    text = str(token)
    if "~" in text or "/" in text:
        return text.replace("~", "~0").replace("/", "~1")
    return text


def pointer_of(*tokens: object) -> str:
    """Build a JSON pointer from path tokens: pointer_of("taskRoles", "a/b") == "/taskRoles/a~1b"."""
    return "".join(["/" + escape_pointer_token(t) for t in tokens])


def split_pointer(pointer: str) -> list[str]:
    if not pointer:
        return []
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def kind_of(value: object) -> str:
    """A value's YAML kind as messages say it: "a list", "a mapping", "a number", "null"..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    for kind, name in ((str, "a string"), (list, "a list"), (dict, "a mapping")):
        if isinstance(value, kind):
            return name
    return "a " + type(value).__name__
