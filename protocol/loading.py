"""Reading a job file into plain data, safely, and remembering where every value came from.

Two loaders, one meaning. `load_fast` (yaml-rs, Rust) only answers "here is the plain data" for ordinary files and
gives up on anything unusual; `load_located` (ruamel.yaml round-trip) is the authority: it keeps the line and column
of every key and value and turns every way a file can be broken into a located diagnostic. Both follow YAML 1.2 with
one deliberate choice: timestamps stay strings (JSON has no dates, and a job's `version: 2020-01-01` means a string).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from typing import Any

from .diagnostics import Diagnostic, Severity, escape_pointer_token, kind_of

#: Job files larger than this are refused before parsing (real OpenPAI jobs are a few KB; the largest in the
#: upstream corpus is under 10 KB). It bounds memory and time for hostile input.
MAX_FILE_BYTES = 2 * 1024 * 1024

#: A document whose aliases expand to more nodes than this is refused (a "billion laughs" bomb).
MAX_EXPANDED_NODES = 100_000

#: (key line, key column, value line, value column), all 1-based.
Position = tuple[int, int, int, int]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Document:
    """A loaded job document: plain JSON-like data, plus where each JSON pointer sits in the text (when known)."""

    path: str
    text: str
    data: dict[str, Any]
    positions: dict[str, Position] | None = None

    @functools.cached_property
    def lines(self) -> list[str]:
        return self.text.splitlines()


class DocumentError(Exception):
    """The bytes could not become a single YAML mapping; `diagnostics` says why, located."""

    def __init__(self, diagnostics: list[Diagnostic]):
        super().__init__("; ".join(d.message for d in diagnostics))
        self.diagnostics = diagnostics


def _error(path: str, code: str, message: str, line: int | None, column: int | None, hint: str | None = None,
           text: str | None = None) -> DocumentError:
    source_line = None
    if text is not None and line is not None:
        lines = text.splitlines()
        if 0 < line <= len(lines):
            source_line = lines[line - 1]
    return DocumentError([Diagnostic(code=code, severity=Severity.ERROR, message=message, file=path, line=line,
                                     column=column, pointer="", hint=hint, source_line=source_line)])


def decode_source(raw: bytes, path: str) -> str:
    """Bytes to text: UTF-8 only (a BOM is tolerated), within the size limit."""
    if len(raw) > MAX_FILE_BYTES:
        raise _error(path, "E107", f"file is {len(raw)} bytes; the limit is {MAX_FILE_BYTES} bytes", None, None,
                     hint="OpenPAI job files are small; is this the right file?")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        before = raw[: exc.start]
        line = before.count(b"\n") + 1
        column = exc.start - (before.rfind(b"\n") + 1) + 1
        raise _error(path, "E100", f"not valid UTF-8: byte 0x{raw[exc.start]:02x} cannot start a character",
                     line, column, hint="save the file as UTF-8") from None


# ----------------------------------------------------------------------------------------------------------------
# Fast path

# yaml-rs ignores unknown tags and treats `<<` as a plain key, where ruamel rejects the one and merges the other;
# the two also disagree on tabs as separators, control characters and NEL/LS/PS as line breaks. A file that might
# contain any of these goes straight to the located loader. Over-matching only costs speed.
_NEEDS_LOCATED_LOADER = re.compile(
    r"(?:^|[\s\[{,])!\S|<<|[\x00-\x09\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]")


def load_fast(text: str) -> dict[str, Any] | None:
    """Plain data for an ordinary single-document mapping, or None when the located loader must decide."""
    if _NEEDS_LOCATED_LOADER.search(text):
        return None
    import yaml_rs

    try:
        data = yaml_rs.loads(text, parse_datetime=False, alias_limits=_fast_alias_limits(),
                             duplicate_key_policy=yaml_rs.DuplicateKeyPolicy.Error)
    except Exception:  # noqa: BLE001 - any failure of the fast path defers to the authoritative loader
        return None
    if not isinstance(data, dict) or not _is_plain(data):
        return None
    return data


@functools.lru_cache(maxsize=1)
def _fast_alias_limits():
    import yaml_rs

    return yaml_rs.AliasLimits(max_total_replayed_events=MAX_EXPANDED_NODES)


_PLAIN_SCALARS = (str, int, float, bool, type(None))


def _is_plain(value: Any) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_is_plain(v) for v in value)
    return isinstance(value, _PLAIN_SCALARS)


# ----------------------------------------------------------------------------------------------------------------
# Located path

def _yaml():
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = False
    # Timestamps stay the text the user wrote (see module docstring).
    constructors = yaml.constructor.yaml_constructors
    constructors["tag:yaml.org,2002:timestamp"] = constructors["tag:yaml.org,2002:str"]
    return yaml


def load_located(text: str, path: str) -> Document:
    """Load `text` as one YAML mapping with positions, or raise DocumentError with located diagnostics."""
    from ruamel.yaml.error import MarkedYAMLError, YAMLError
    from ruamel.yaml.reader import ReaderError

    tab = _leading_tab(text)
    try:
        root = _yaml().load(text)
    except MarkedYAMLError as exc:
        raise _yaml_error(exc, path, text, tab) from None
    except ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        raise _error(path, "E101", f"character U+{_codepoint(exc.character):04X} is not allowed in YAML", line, column,
                     text=text, hint="remove control characters from the file") from None
    except YAMLError as exc:  # unmarked errors are rare; still a diagnostic, never a traceback
        raise _error(path, "E101", f"YAML error: {' '.join(str(exc).split())}", None, None, text=text) from None
    except (TypeError, ValueError):
        # ruamel cannot construct a mapping or list used as a mapping key (`? [a, b]`); find it in the node graph.
        line, column = _complex_key_position(text)
        raise _error(path, "E101", "a mapping key must be a plain scalar, not a mapping or a list", line, column,
                     text=text, hint="a job's keys are names; remove the `?` complex key") from None
    except RecursionError:
        raise _error(path, "E106", "document nests too deeply to be a job", None, None) from None

    from ruamel.yaml.comments import CommentedMap

    if root is None:
        raise _error(path, "E104", "the document is empty; a job is a YAML mapping", 1, 1,
                     hint="start with `protocolVersion: 2`")
    if not isinstance(root, CommentedMap):
        kind = kind_of(root)
        raise _error(path, "E104", f"the document is {kind}; a job is a YAML mapping", 1, 1, text=text)
    expanded = _expanded_size(root, {}, 0)
    if expanded > MAX_EXPANDED_NODES:
        raise _error(path, "E106", f"aliases expand to more than {MAX_EXPANDED_NODES} nodes (an alias bomb?)",
                     1, 1, hint="a job never needs this many values; remove the anchors and aliases")
    positions: dict[str, Position] = {"": (1, 1, 1, 1)}
    try:
        data = _to_plain(root, "", positions)
    except _UnsupportedValue as exc:
        line, column = exc.position
        raise _error(path, "E101", exc.message, line, column, text=text) from None
    return Document(path=path, text=text, data=data, positions=positions)


def _leading_tab(text: str) -> tuple[int, int] | None:
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip(" ")
        if stripped.startswith("\t"):
            return number, len(line) - len(stripped) + 1
    return None


def _yaml_error(exc, path: str, text: str, tab: tuple[int, int] | None) -> DocumentError:
    from ruamel.yaml.constructor import DuplicateKeyError
    from ruamel.yaml.composer import ComposerError

    mark = exc.problem_mark or exc.context_mark
    if exc.context_mark is not None and mark is not None and mark.index >= len(text.rstrip()):
        mark = exc.context_mark  # "but got <stream end>": the unclosed bracket or quote is the useful place
    line = mark.line + 1 if mark is not None else None
    column = mark.column + 1 if mark is not None else None
    problem = " ".join((exc.problem or exc.context or "invalid YAML").split())
    if exc.context and exc.problem and "<stream end>" in exc.problem:
        problem = f"{' '.join(exc.context.split())}: {problem}"
    if isinstance(exc, DuplicateKeyError):
        source = text.splitlines()[line - 1] if line else ""
        name = re.split(r"\s*:(?:\s|$)", source[(column or 1) - 1:], maxsplit=1)[0].strip("'\"")
        return _error(path, "E102", f"duplicate key '{name}'", line, column, text=text,
                      hint="a mapping needs unique keys (OpenPAI rejects the file too); merge or rename one")
    if isinstance(exc, ComposerError) and "single document" in (exc.context or "") + (exc.problem or ""):
        return _error(path, "E103", "more than one YAML document; a job file holds exactly one", line, column,
                      text=text, hint="remove the `---` separator, or split the file")
    if "\\t" in problem or "\t" in problem or (tab is not None and tab[0] == line):
        tab_line, tab_column = tab if tab is not None else (line, column)
        return _error(path, "E105", "tab character used for indentation; YAML indents with spaces", tab_line,
                      tab_column, text=text, hint="replace the tab with spaces")
    return _error(path, "E101", f"YAML syntax error: {problem}", line, column, text=text)


def _expanded_size(node: Any, memo: dict[int, int], depth: int) -> int:
    """Nodes in the tree once aliases are expanded, computed without expanding them (shared nodes are memoised)."""
    key = id(node)
    if key in memo:
        return memo[key]
    if depth > 200:
        return MAX_EXPANDED_NODES + 1
    if isinstance(node, dict):
        size = 1 + sum(_expanded_size(v, memo, depth + 1) for v in node.values())
    elif isinstance(node, list):
        size = 1 + sum(_expanded_size(v, memo, depth + 1) for v in node)
    else:
        size = 1
    memo[key] = min(size, MAX_EXPANDED_NODES + 1)
    return memo[key]


class _UnsupportedValue(Exception):
    def __init__(self, message: str, position: tuple[int, int]):
        self.message = message
        self.position = position


def _to_plain(node: Any, pointer: str, positions: dict[str, Position]) -> Any:
    """Round-trip objects to plain JSON-like data, recording 1-based positions of every entry by JSON pointer."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq, TaggedScalar

    if isinstance(node, CommentedMap):
        result: dict[str, Any] = {}
        for key in node:
            kl, kc, vl, vc = _entry_position(node, key)
            if not isinstance(key, str):
                if key is None or isinstance(key, (bool, int, float)):
                    text_key = _scalar_text(key)
                else:
                    raise _UnsupportedValue("a mapping key must be a plain scalar", (kl, kc))
            else:
                text_key = str(key)
            child = f"{pointer}/{escape_pointer_token(text_key)}"
            positions[child] = (kl, kc, vl, vc)
            result[text_key] = _to_plain(node[key], child, positions)
        return result
    if isinstance(node, CommentedSeq):
        items = []
        for index, item in enumerate(node):
            line, column = _lc(node.lc.item(index))
            child = f"{pointer}/{index}"
            positions[child] = (line, column, line, column)
            items.append(_to_plain(item, child, positions))
        return items
    if isinstance(node, TaggedScalar):
        position = positions.get(pointer, (1, 1, 1, 1))
        raise _UnsupportedValue(f"unsupported YAML tag {node.tag.value!r}", position[2:])
    if isinstance(node, bool) or node is None:
        return node
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    if isinstance(node, str):
        return str(node)
    position = positions.get(pointer, (1, 1, 1, 1))
    raise _UnsupportedValue(f"unsupported YAML value of type {type(node).__name__}", position[2:])


def _entry_position(node: Any, key: Any) -> Position:
    """Where a mapping entry sits; an entry that came in through a `<<` merge sits where its mapping starts."""
    if key in (node.lc.data or {}):
        kl, kc = _lc(node.lc.key(key))
        vl, vc = _lc(node.lc.value(key))
        return kl, kc, vl, vc
    line, column = _lc((node.lc.line, node.lc.col))
    return line, column, line, column


def _scalar_text(key: Any) -> str:
    # js-yaml (OpenPAI) turns non-string keys into their JSON text: `1: x` is key "1", `true: x` is key "true".
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    return str(key)


def _lc(pair: Any) -> tuple[int, int]:
    line, column = pair
    return line + 1, column + 1


def _codepoint(character: str | int) -> int:
    return character if isinstance(character, int) else ord(character)


def _complex_key_position(text: str) -> tuple[int, int]:
    from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode

    pending, seen = [_yaml().compose(text)], set()
    while pending:
        node = pending.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, MappingNode):
            for key, value in node.value:
                if not isinstance(key, ScalarNode):
                    return key.start_mark.line + 1, key.start_mark.column + 1
                pending.append(value)
        elif isinstance(node, SequenceNode):
            pending.extend(node.value)
    return 1, 1
