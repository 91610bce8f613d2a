"""OpenPAI's `<% ... %>` templates: where the tags are, and what a tag's name looks up.

OpenPAI renders with mustache.js 2.3.2 (rest-server) and pystache (runtime), both with `<%` `%>` as delimiters.
Which tags exist, and where, must match mustache.js exactly: a `<%` with no `%>` makes the rest-server's render
throw, a section swallows the text inside it, a delimiter change turns later `<%` into plain text. So the scanner
below is a line-for-line port of mustache.js `parseTemplate`, not a regular expression over `<%.*?%>`.

The module is pure (strings and plain data in, plain values out) because the compiler renders with it too.
"""

from __future__ import annotations

import enum
import functools
import re
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

#: OpenPAI's delimiters (rest-server `protocolRender` and runtime `render_string_with_secrets`).
DELIMITERS = ("<%", "%>")

#: JavaScript's `\s` (and what `String.prototype.trim` removes). Python's `\s` and `str.strip()` differ (no U+FEFF,
#: but U+001C..U+001F and U+0085), and the scanner must split exactly where mustache.js does.
JS_WHITESPACE = ("\t\n\v\f\r \u00a0\u1680" + "".join(map(chr, range(0x2000, 0x200B)))
                 + "\u2028\u2029\u202f\u205f\u3000\ufeff")
_JS_SPACE = re.escape(JS_WHITESPACE)
_WS = f"[{_JS_SPACE}]*"
_WHITE_RE = re.compile(_WS)
_SPACE_RE = re.compile(f"[{_JS_SPACE}]+")
_EQUALS_RE = re.compile(_WS + "=")
_CURLY_RE = re.compile(_WS + r"\}")
_TYPE_CHARS = "#^/>{&=!"

#: Object.prototype's members in Node (and `__proto__`): what a plain JavaScript object answers for any of these keys.
OBJECT_PROTOTYPE_NAMES = frozenset({
    "__proto__", "constructor", "__defineGetter__", "__defineSetter__", "hasOwnProperty", "__lookupGetter__",
    "__lookupSetter__", "isPrototypeOf", "propertyIsEnumerable", "toString", "valueOf", "toLocaleString"})

#: The extras key of the runtime plugins, whose parameters the runtime renders (protocol/placeholders.py).
PLUGIN_KEY = "com.microsoft.pai.runtimeplugin"

#: `$data.uri[0]` is looked up as `$data.uri.0` (rest-server and runtime both rewrite it).
_INDEX_RE = re.compile(r"\[([0-9]+)\]")  # JavaScript's `\d` is ASCII only; Python's also matches e.g. `١`


class TagKind(str, enum.Enum):
    """The mustache tag types. OpenPAI's renderer emits only NAME tags; every other kind is dropped."""

    NAME = "name"
    SECTION = "#"
    INVERTED = "^"
    CLOSE = "/"
    UNESCAPED = "&"  # both `<%& x %>` and `<%{ x }%>`
    COMMENT = "!"
    PARTIAL = ">"
    DELIMITERS = "="


class Tag(NamedTuple):
    """One tag as mustache.js sees it. `start`/`end` are offsets into the scanned string (end exclusive). A named
    tuple, not a dataclass (see protocol/diagnostics.py)."""

    kind: TagKind
    raw: str
    name: str
    path: tuple[str, ...]
    start: int
    end: int


class TemplateError(ValueError):
    """The template is one mustache.js refuses to parse, so OpenPAI's rest-server fails rendering it."""

    def __init__(self, message: str, offset: int):
        super().__init__(message)
        self.message = message
        self.offset = offset


def name_path(name: str) -> tuple[str, ...]:
    """The lookup path of a tag name, as mustache.js walks it after OpenPAI's `[n]` to `.n` rewrite.

    mustache.js splits on dots only when the first dot is not the first character (`indexOf('.') > 0`), and `.`
    alone is the context itself (the empty path).
    """
    name = rewrite_indexes(name)
    if name == ".":
        return ()
    if name.find(".") > 0:
        return tuple(name.split("."))
    return (name,)


def rewrite_indexes(name: str) -> str:
    return _INDEX_RE.sub(r".\1", name) if "[" in name else name


@functools.lru_cache(maxsize=16)  # called once per scanned text: 130,000 commands, 130,000 re.escape pairs
def _compile(delimiters: Sequence[str]) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    opening, closing = delimiters
    return (re.compile(re.escape(opening) + _WS), re.compile(_WS + re.escape(closing)),
            re.compile(_WS + re.escape("}" + closing)))


def _until(pattern: re.Pattern[str], text: str, pos: int) -> int:
    """mustache.js `Scanner.scanUntil`: the offset of the next match, or the end of the text."""
    found = pattern.search(text, pos)
    return found.start() if found else len(text)


def scan_tags(template: str, delimiters: Sequence[str] = DELIMITERS) -> Iterator[Tag]:
    """Yield every tag of `template` in order, exactly where mustache.js `parseTemplate` finds them.

    Raises TemplateError where mustache.js throws (unclosed tag, unbalanced sections, bad delimiter change), after
    yielding the tags before the failure; callers that want to report both iterate and catch.
    """
    if len(template) < _CACHED_FROM:
        yield from _scan(template, delimiters)
        return
    tags, error = _scanned(template, tuple(delimiters))
    yield from tags
    if error is not None:
        raise error


#: Texts this long are scanned once and remembered (a few of them); shorter ones cost less to scan again than to
#: hash, and would push the long ones out.
_CACHED_FROM = 4096


@functools.lru_cache(maxsize=8)
def _scanned(template: str, delimiters: tuple[str, ...]) -> tuple[tuple[Tag, ...], TemplateError | None]:
    """The tags of a text, scanned once: validate's checks, compile's checks and the renderer each scan the same
    commands (a 2 MiB command of 110,000 tags took 0.7 s per scan)."""
    tags: list[Tag] = []
    try:
        for tag in _scan(template, delimiters):
            tags.append(tag)
    except TemplateError as error:
        return tuple(tags), error
    return tuple(tags), None


def _scan(template: str, delimiters: Sequence[str]) -> Iterator[Tag]:
    opening_re, closing_re, closing_curly_re = _compile(tuple(delimiters))
    sections: list[Tag] = []
    pos = 0
    while pos < len(template):
        found = opening_re.search(template, pos)
        if found is None:
            break
        start, pos = found.start(), found.end()
        kind = TagKind.NAME
        if pos < len(template) and template[pos] in _TYPE_CHARS:
            kind = TagKind(template[pos]) if template[pos] != "{" else TagKind.UNESCAPED
            curly = template[pos] == "{"
            pos += 1
        else:
            curly = False
        pos = _WHITE_RE.match(template, pos).end()
        if kind is TagKind.DELIMITERS:
            end = _until(_EQUALS_RE, template, pos)
            value = template[pos:end]
            equals = _EQUALS_RE.match(template, end)
            pos = _until(closing_re, template, equals.end() if equals else end)
        elif curly:
            end = _until(closing_curly_re, template, pos)
            value = template[pos:end]
            brace = _CURLY_RE.match(template, end)
            pos = _until(closing_re, template, brace.end() if brace else end)
        else:
            end = _until(closing_re, template, pos)
            value = template[pos:end]
            pos = end
        closed = closing_re.match(template, pos)
        if closed is None:
            raise TemplateError(f"unclosed tag {template[start:].partition(chr(10))[0][:40]!r}", start)
        pos = closed.end()
        path = () if kind in (TagKind.COMMENT, TagKind.DELIMITERS) else name_path(value)
        tag = Tag(kind, template[start:pos], value, path, start, pos)
        yield tag
        if kind in (TagKind.SECTION, TagKind.INVERTED):
            sections.append(tag)
        elif kind is TagKind.CLOSE:
            if not sections:
                raise TemplateError(f"section close {tag.raw!r} has no opening tag", start)
            opened = sections.pop()
            if opened.name != value:
                raise TemplateError(f"section {opened.raw!r} is closed by {tag.raw!r}", start)
        elif kind is TagKind.DELIMITERS:
            # JavaScript's split(re, 2) truncates instead of joining the rest: 'a b c' gives ['a', 'b'].
            parts = _SPACE_RE.split(value)[:2]
            if len(parts) != 2:
                raise TemplateError(f"invalid delimiter change {tag.raw!r}", start)
            opening_re, closing_re, closing_curly_re = _compile(tuple(parts))
    if sections:
        raise TemplateError(f"section {sections[-1].raw!r} is never closed", sections[-1].start)


def js_trim(text: str) -> str:
    """JavaScript `String.prototype.trim`, which the rest-server applies to every command before joining them."""
    return text.strip(JS_WHITESPACE)


def has_tags(template: str) -> bool:
    """A cheap pre-check: could this string hold a tag at all (before any delimiter change)?"""
    return DELIMITERS[0] in template


def lookup(path: Sequence[str], context: Any) -> tuple[int, Any]:
    """Walk `path` from `context`; return how many segments resolved and the value reached.

    Mappings are looked up by key and lists by a canonical decimal index (`"0"`, `"12"`, not `"01"`), the
    subset of JavaScript property access that plain job data can reach. A None on the way stops the walk.
    """
    value = context
    for depth, segment in enumerate(path):
        if isinstance(value, dict):
            if segment not in value:
                return depth, None
            value = value[segment]
        elif isinstance(value, list) and _is_index(segment) and int(segment) < len(value):
            value = value[int(segment)]
        else:
            return depth, None
        if value is None:
            return depth + 1, None
    return len(path), value


def resolve(path: Sequence[str], context: Any) -> tuple[bool, Any]:
    """Mustache dotted-name lookup. A None value counts as not found: OpenPAI writes such a tag back literally."""
    depth, value = lookup(path, context)
    if depth < len(path) or value is None:
        return False, None
    return True, value


def _is_index(segment: str) -> bool:
    return segment.isascii() and segment.isdigit() and (segment == "0" or not segment.startswith("0"))
