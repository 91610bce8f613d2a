"""Reading a job file into plain data, safely, and remembering where every value came from.

Two loaders, one meaning. `load_fast` (yaml-rs, Rust) only answers "here is the plain data" for ordinary files and
gives up on anything unusual (and on anything whose depth it has not first been shown to be safe for: it recurses);
`load_located` (libyaml's event stream, protocol/yamlevents.py) is the authority: it keeps the line and column of
every key and value, enforces the depth and expanded-size limits while reading, and turns every way a file can be
broken into a located diagnostic. ruamel.yaml is used only for the wording of syntax errors in files small enough for
it. Both read scalars as js-yaml (OpenPAI) does: the fast path leaves any file with a date-like scalar to the
located loader, which reads an unquoted `2020-01-01` as a timestamp (protocol/timestamps.py), as js-yaml does.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Callable

from .diagnostics import Diagnostic, Severity, escape_pointer_token, kind_of
from .jsstring import js_numeric
from .document import LINE_BREAK, Document, DocumentError, Position, source_lines  # noqa: F401 - the loaders' API
from .source import MAX_DEPTH, MAX_EXPANDED_NODES, MAX_FILE_BYTES

#: ruamel.yaml words syntax errors best but is superlinear (in the file's length, and quadratic in flow nesting:
#: 1,000 nested `[` take it 6 s); beyond these bounds libyaml's own wording is used. Real jobs are under 10 KB.
_RUAMEL_WORDING_MAX_CHARS = 64 * 1024
_RUAMEL_WORDING_MAX_FLOW = 64

def _error(path: str, code: str, message: str, line: int | None, column: int | None, hint: str | None = None,
           text: str | None = None) -> DocumentError:
    source_line = None
    if text is not None and line is not None:
        from .redaction import redact_unparsed_line

        lines = source_lines(text)
        if 0 < line <= len(lines):
            source_line = redact_unparsed_line(lines, line - 1)
    return DocumentError([Diagnostic(code=code, severity=Severity.ERROR, message=message, file=path, line=line,
                                     column=column, pointer="", hint=hint, source_line=source_line)])


_BOM = b"\xef\xbb\xbf"


def decode_source(raw: bytes, path: str) -> str:
    """Bytes to text: UTF-8 only (a BOM is tolerated), within the size limit."""
    if len(raw) > MAX_FILE_BYTES:
        raise _error(path, "E107", f"file is larger than the limit of {MAX_FILE_BYTES} bytes", None, None,
                     hint="OpenPAI job files are small; is this the right file?")
    # "utf-8-sig" itself, minus its Python-level codec function: the BOM is dropped, the rest decoded in C (an
    # error's offset is into the rest, whose first character is the file's column 1)
    body = raw[3:] if raw.startswith(_BOM) else raw
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = body[: exc.start]
        line = before.count(b"\n") + 1
        column = exc.start - (before.rfind(b"\n") + 1) + 1
        raise _error(path, "E100", f"not valid UTF-8: byte 0x{body[exc.start]:02x} cannot start a character",
                     line, column, hint="save the file as UTF-8") from None


# ----------------------------------------------------------------------------------------------------------------
# Fast path

# yaml-rs ignores unknown tags and treats `<<` as a plain key; it recurses (deep nesting crashes the interpreter) and
# counts aliases by node, not by size; its YAML 1.2 reading of numbers with leading zeros, `0o`, underscores,
# sexagesimal `1:30` or `+.5` differs from js-yaml's; the two also disagree on tabs as separators, control characters
# and NEL/LS/PS. A file that might contain any of these goes straight to the located loader. Over-matching only
# costs speed.
# Several simple searches, not one alternation: on 2 MiB of text each costs 10-80 ms, the alternation 0.6 s. Each
# search starts with the character class its match must begin with and checks what precedes it afterwards (a
# two-character lookbehind, `(?<!X.)`): re then skips ahead with that class instead of trying every position, which
# made the guards four times faster (tests/test_loading_guards.py holds each to the plain form it replaces).
_NEEDS_LOCATED_LOADER = (
    re.compile("[\x00-\x09\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]"),  # controls, breaks
    # tags, anchors, aliases where a node can start (not `!=`, `&&`, `* `): after a bracket, a comma or a line
    # break, or after blanks that follow an indicator, a bracket, a comma or another blank (indentation). After a
    # word and a blank (`python x.py &` in a description) the character is inside a plain or block scalar, which
    # yaml-rs and js-yaml read alike (tests/test_loading_parity.py)
    re.compile(r"[!&*](?<=[\s\[{,].)(?<![^\s\[{,:?-][^\S\r\n].)(?:(?<=!)[^\s=]|(?<=[&*])(?![\s&*>|=]))"),
    # leading zeros, 0o, 0b, signed hex, hex with underscores, at the start of a word (no plain scalar starts
    # after a `/`: `/0bf02015a` in a URL is inside one, as are the words after `/` in the guards below)
    re.compile(r"[-+0](?<![\w./-].)(?:(?<=0)(?:[0-9ob_]|x[0-9a-fA-F]*_)|(?<=[-+])0[0-9obx_])"),
    re.compile(r"[0-9](?<=[0-9]{16})"),  # integers beyond int64 (yaml-rs and js-yaml disagree on their precision)
    # a plain scalar that is a number with underscores (`1_000`) or sexagesimal (`1:30`), not `cifar10_vgg16`,
    # `python_3.6`, `master-0:2` or an address `10.0.0.1:9000`; also as a key (`1:30: v`, `1_0: v`)
    re.compile(r"[-+0-9](?<![\w./:-].)(?:(?<=[-+])[0-9]|(?<=[0-9]))[0-9_]*(?:_|:[0-5]?[0-9])[0-9_:]*(?:\.[0-9_]*)?"
               r"(?![\w./-]|:\S)"),
    re.compile(r"\.(?<=[-+]\.)[0-9]"),  # +.5
    # any number-like word with an underscore (`_1`, `2._`, `5.9_`): js-yaml and yaml-rs each have their own rules
    re.compile(r"[-+0-9.eE:_](?<![\w./:-].)(?:(?<=_)|[-+0-9.eE:]*_)[-+0-9._eE:]*(?![\w./-]|:\S)"),
    # dates, which js-yaml reads as timestamps: every one has `-M-D` or `-MM-DD`; matching on the `-` is 40 times
    # faster than on the year (1 ms on 2 MiB), and over-matching (`v-1-2`) only costs speed
    # an escaped line break in a double-quoted scalar followed by an empty line: js-yaml skips the empty lines after
    # it, YAML 1.2 keeps them (without one, both join the lines alike; a `\` ending a line of a block or plain
    # scalar, a shell's line continuation, is no escape at all)
    re.compile(r"\\(?=(?:\r\n?|\n)[ \t]*[\r\n])"),
    # upper-case radix prefixes (`0X1f`, `0O17`, `0B11`: strings to js-yaml 3 and YAML 1.2, numbers to yaml-rs) and
    # `.inf`/`.nan` in any case (js-yaml takes three spellings of each)
    re.compile(r"0(?<![\w./].)[XOB]"),
    re.compile(r"\.(?<![\w./]\.)(?:[iI][nN][fF]|[nN][aA][nN])"),
    # a `:` opening a plain scalar or an empty key in a flow collection (`[:x]`, `{:: v}`): libyaml refuses it,
    # yaml-rs and js-yaml read it, each its own way
    re.compile(r":(?:(?<=[\[{,]:)|(?<=[\[{,] :))"),
    DATE_LIKE := re.compile(r"-[0-9]{1,2}-[0-9]"),
)


#: The guards `_needs_located_loader` runs as they are, each only where its first character is.
_TAGS_ANCHORS, _SIGNED_FRACTION, _ESCAPED_BREAK, _INF_NAN = (_NEEDS_LOCATED_LOADER[i] for i in (1, 5, 7, 9))

#: The guards that look at a number-like word, for an ASCII text, each found from a character that is rare in jobs
#: (`re` then skips ahead to it, where a search anchored on "the character before a word" stopped at every blank):
#: leading zeros, radix prefixes and upper-case radix prefixes from their `0` (with the guards' own conditions on
#: what precedes it), and the words with an underscore or a sexagesimal `:` from that character: its word's start,
#: back to the character before the word, is searched for in the reversed text (only number characters between),
#: and its end forward, as the guards end it. tests/test_loading_guards.py holds these to the plain forms.
_ZERO_WORDS = re.compile(r"0(?:(?<![\w./-]0)(?:[0-9ob_]|x[0-9a-fA-F]*_)|(?<![\w./]0)[XOB]"
                         r"|(?<=[-+]0)(?<![\w./-].0)[0-9obx_])")
_UNDERSCORE_START = re.compile(r"_[-+0-9.eE:]*?(?:[^\w./:-]|\Z)")  # in the reversed text
_UNDERSCORE_END = re.compile(r"_[-+0-9._eE:]*(?![\w./-]|:\S)")
_SEXAGESIMAL_START = re.compile(r":[0-9]+[-+]?(?:[^\w./:-]|\Z)")  # in the reversed text
_SEXAGESIMAL_END = re.compile(r":[0-5]?[0-9][0-9_:]*(?:\.[0-9_]*)?(?![\w./-]|:\S)")


def _number_word_with_separator(text: str, *, sexagesimal: bool) -> bool:
    """A number-like word with an underscore (`1_000`, `_1`, `5.9_`) or, where `sexagesimal` says a digit precedes
    some `:`, a sexagesimal one (`1:30`)."""
    reversed_text = text[::-1]
    last = len(text) - 1
    searches = ((_UNDERSCORE_START, _UNDERSCORE_END), (_SEXAGESIMAL_START, _SEXAGESIMAL_END))
    for start, end in searches if sexagesimal else searches[:1]:
        for found in start.finditer(reversed_text):
            if end.match(text, last - found.start()):
                return True
    return False


#: For an ASCII text, one translation of its bytes finds what four of the guards look for, exactly, with substring
#: searches (C's memchr speed, where `re` tests every character against a class): a control character or tab ("C"),
#: a run of 16 digits ("9" * 16), a flow collection's `:` ("F:", "F :"), a date's `-M-D` ("-9-9", "-99-9"); and
#: whether a sexagesimal number can be there at all (a digit before a `:`).
_ASCII_CLASSES = bytes(ord("C") if byte < 32 and byte not in (10, 13) or byte == 127 else
                       ord("9") if 48 <= byte <= 57 else
                       byte if byte in b" :-" else
                       ord("F") if byte in b"[{," else ord("x") for byte in range(256))
_SIXTEEN_DIGITS = b"9" * 16


def _needs_located_loader(text: str) -> bool:
    """Does any guard match? Every guard read the whole text, testing each character against a class: now one
    translation of the bytes and substring searches find the rare characters some guards start with (a guard runs
    only where its character is), and the number-like-word guards start from rare characters. A non-ASCII text
    (rare) is searched guard by guard."""
    # A two-character needle is searched at about 1 ns a character, a single character at memchr's speed (25 ns
    # for 6 kB): the rare character of each pair is looked for first.
    if text[:1] in ("!", "&", "*", "%") or ("<" in text and "<<" in text) or \
            ("%" in text and ("\n%" in text or "\r%" in text)):  # directives
        return True
    if not text.isascii():
        return any(guard.search(text) for guard in _NEEDS_LOCATED_LOADER)
    classes = text.encode("ascii").translate(_ASCII_CLASSES)
    return (b"C" in classes or _SIXTEEN_DIGITS in classes or b"F:" in classes or b"F :" in classes
            or (b"9-9" in classes and (b"-9-9" in classes or b"-99-9" in classes))
            or (("!" in text or "&" in text or "*" in text) and _TAGS_ANCHORS.search(text) is not None)
            or (("-." in text or ("+" in text and "+." in text)) and _SIGNED_FRACTION.search(text) is not None)
            or ("\\" in text and _ESCAPED_BREAK.search(text) is not None)
            or _ZERO_WORDS.search(text) is not None or _INF_NAN.search(text) is not None
            or _number_word_with_separator(text, sexagesimal=b"9:" in classes))


#: Nesting deeper than a conservative bound from these cheap counts is measured exactly by the located loader first.
_DEEP_INDENT = " " * 30
_DEEP_LINE, _DEEP_LINE_CR = "\n" + _DEEP_INDENT, "\r" + _DEEP_INDENT
#: 16 indicators in a row (`- - - ...`, `? : - ...`), found from the blank after the first one.
_STACKED_INDICATORS = re.compile(r"[ \t](?<=[-?:][ \t])(?:[ \t]*[-?:][ \t]+){15}")
#: Its necessary condition, found at memchr speed: with the blanks taken out and every indicator made "-", 16
#: indicators in a row are 16 "-" in a row (a line of dashes too, which the search above then rules out).
_INDICATORS_AS_DASHES = bytes(ord("-") if byte in b"-?:" else ord("x") for byte in range(256))
_SIXTEEN_INDICATORS = b"-" * 16


def _small_enough(text: str) -> bool:
    """True when the node count is within a few times the limit, so yaml-rs's work is bounded: every node but the
    first needs a line break, a comma or an indicator before it, or is the value of such a key. The exact count is
    taken on yaml-rs's data (`_as_js`); a file over the limit goes to the located loader, which stops at it."""
    if len(text) < MAX_EXPANDED_NODES * 2:
        return True  # each counted occurrence starts at its own character: the bound is at most len(text) + 1
    bound = text.count("\n") + text.count(",") + text.count("- ") + text.count(": ") + 1
    return bound <= MAX_EXPANDED_NODES * 2


def _shallow_enough(text: str) -> bool:
    """True when nesting is certainly within MAX_DEPTH: each block level needs more indentation (a sequence in a
    mapping may share it), a line can open a few levels with `- - -`, and flow levels need a bracket each."""
    if text.count("[") + text.count("{") > 20:
        return False
    if text.startswith(_DEEP_INDENT) or _DEEP_LINE in text or _DEEP_LINE_CR in text:
        return False
    if _SIXTEEN_INDICATORS not in text.encode("utf-8", "surrogatepass").translate(_INDICATORS_AS_DASHES, b" \t"):
        return True
    return _STACKED_INDICATORS.search(text) is None


def load_fast(text: str) -> dict[str, Any] | None:
    """Plain data for an ordinary single-document mapping, or None when the located loader must decide."""
    # Cheapest first: the counts take 6 ms on 2 MiB, the guards' searches up to 0.4 s on hostile text.
    if (len(text) > MAX_FILE_BYTES or not _small_enough(text) or not _shallow_enough(text)
            or _needs_located_loader(text)):
        return None
    try:
        data = _fast_loads()(text)
    except Exception:  # noqa: BLE001 - any failure of the fast path defers to the authoritative loader
        return None
    if not isinstance(data, dict):
        return None
    return _as_js(data)


@functools.lru_cache(maxsize=1)
def _fast_loads() -> Callable[[str], Any]:
    """yaml-rs's `loads` with the fast path's settings, built once (imported on first use)."""
    import yaml_rs

    return functools.partial(yaml_rs.loads, parse_datetime=False, duplicate_key_policy=yaml_rs.DuplicateKeyPolicy.Error,
                             alias_limits=yaml_rs.AliasLimits(max_total_replayed_events=1000))


_PLAIN_TYPES = frozenset({str, int, bool, type(None)})
_TEXT_ONLY = frozenset({str})


def _as_js(data: dict[str, Any]) -> dict[str, Any] | None:
    """The data as js-yaml holds it (an integral float is an integer), or None if it holds anything else.

    yaml-rs's objects are ours: floats are replaced in place, in one loop without recursion, checking types
    exactly (yaml-rs returns no subclasses). Nodes are counted as the located loader counts them (every
    collection, key and scalar: the root, and each mapping's keys and values and each list's items): a document
    over MAX_EXPANDED_NODES is left to it, which refuses it (E106). The types of a collection's keys and values
    are checked in C (`issuperset` over `map(type, ...)`); only a collection holding collections or floats is
    walked entry by entry in Python."""
    pending: list[Any] = [data]
    nodes = 1
    while pending:
        node = pending.pop()
        if type(node) is dict:
            nodes += 2 * len(node)
            if not _TEXT_ONLY.issuperset(map(type, node)):
                return None
            values = node.values()
        else:
            nodes += len(node)
            values = node
        if nodes > MAX_EXPANDED_NODES:
            return None
        if _PLAIN_TYPES.issuperset(map(type, values)):
            continue
        for key, value in node.items() if type(node) is dict else enumerate(node):
            kind = type(value)
            if kind is dict or kind is list:
                pending.append(value)
            elif kind is float:
                node[key] = js_numeric(value)
            elif kind not in _PLAIN_TYPES:
                return None
    return data


def load_data(text: str, path: str) -> dict[str, Any]:
    """The plain data of a job text: the fast path's when it can read it (both loaders read the same data), else the
    located loader's; raises DocumentError as `load_located` does."""
    data = load_fast(text)
    return data if data is not None else load_located(text, path).data


# ----------------------------------------------------------------------------------------------------------------
# Located path

#: What each kind of document paictl reads is called where a problem is its shape (E103, E104, E106): the job, or
#: another file read through the same loader (by its schema's name), which must not be told to be a job.
DOCUMENT_NOUNS = {"job": ("a job", "a job file"), "profile": ("a profile", "a profile"),
                  "grass-cluster": ("a cluster file", "a cluster file"), "exit-rules": ("an exit-rules file",) * 2,
                  "search-space": ("a search space", "a search space file"), "marketplace-item": ("an item",) * 2}


def load_located(text: str, path: str, *, kind: str = "job") -> Document:
    """Load `text` as one YAML mapping with positions, or raise DocumentError with located diagnostics. `kind`: what
    the document is (a key of DOCUMENT_NOUNS), for the problems that say what it should be.

    The last document is kept: `compile` validates, then needs the located document of the same text, and a second
    parse of a 2 MiB job would cost 0.5 s of the 2 s bound. Nothing mutates a Document's data.
    """
    if kind == "job":
        return _load_located(text, path)
    try:
        return _load_located(text, path)
    except DocumentError as error:
        raise DocumentError([_said_of(d, *DOCUMENT_NOUNS[kind]) for d in error.diagnostics]) from None


def _said_of(diagnostic: Diagnostic, noun: str, file_noun: str) -> Diagnostic:
    """A shape problem worded for a document that is not a job; any other problem as it is."""
    what, _, said = diagnostic.message.partition("; ")
    if diagnostic.code == "E104":
        return diagnostic._replace(message=f"{what}; {noun} is a YAML mapping", hint=None)
    if diagnostic.code == "E103":
        return diagnostic._replace(message=f"{what}; {file_noun} holds exactly one")
    if diagnostic.code == "E106" and said == "a job never does":
        return diagnostic._replace(message=f"{what}; {noun} never does")
    return diagnostic


@functools.lru_cache(maxsize=1)
def _load_located(text: str, path: str) -> Document:
    import yaml

    from .yamlreader import LoadProblem, position

    if len(text) > MAX_FILE_BYTES:
        raise _error(path, "E107", f"file is larger than the limit of {MAX_FILE_BYTES} bytes", None, None)
    # A leading byte-order mark (a text not read by decode_source) is skipped by both readers, and libyaml's marks
    # do not count it: without it, every offset (a rewritten tab, a secret's span) is an offset into the text kept.
    text = text.removeprefix("\ufeff")
    try:
        root, positions, secret_spans, stringified_keys = _events_as_js_yaml_reads(text)
    except LoadProblem as problem:
        raise _error(path, problem.code, problem.message, problem.line, problem.column, hint=problem.hint,
                     text=text) from None
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        raise _error(path, "E101", f"character U+{_codepoint(exc.character):04X} is not allowed in YAML", line, column,
                     text=text, hint="remove control characters from the file") from None
    except yaml.MarkedYAMLError as exc:
        if "exceeded maximum nesting depth" in (exc.problem or ""):
            # libyaml's scanner looks ahead through a run of `[`/`{` before the builder sees their events, and stops
            # at its own bound (1,000 levels) before the builder's MAX_DEPTH could
            line, column = position(exc.problem_mark)
            raise _error(path, "E106", f"the document nests more than {MAX_DEPTH} levels deep; a job never does",
                         line, column, text=text) from None
        raise _syntax_error(exc, path, text) from None
    except yaml.YAMLError as exc:  # unmarked errors are rare; still a diagnostic, never a traceback
        raise _error(path, "E101", f"YAML error: {' '.join(str(exc).split())}", None, None, text=text) from None
    if root is None:
        raise _error(path, "E104", "the document is empty; a job is a YAML mapping", 1, 1,
                     hint="start with `protocolVersion: 2`")
    if not isinstance(root, dict):
        raise _error(path, "E104", f"the document is {kind_of(root)}; a job is a YAML mapping", 1, 1, text=text)
    return Document(path=path, text=text, data=root, positions=positions, secret_spans=tuple(secret_spans),
                    stringified_keys=tuple(stringified_keys))


#: How many tab separators one file may have rewritten (each costs a parse; a file with more is refused, E105).
_MAX_TAB_RETRIES = 20
_YAML_DIRECTIVE = re.compile(r"%YAML[ \t]+1\.([0-9]+)(?=[ \t]*(?:#.*)?$)")


def _events_as_js_yaml_reads(text: str):
    """`load_events` on what js-yaml reads the same but libyaml refuses, each rewritten in place (same length, so
    every position holds; the document keeps the text as written):
    - a `%YAML 1.x` directive of another minor version than 1.1 and 1.2 (js-yaml warns and reads on; libyaml stops);
    - a tab separating a block indicator (`-`, `?`, `:`) from what follows (`-\t|`): js-yaml takes it for the space
      it is; libyaml's scanner stops on it ("cannot start any token"). Only the tab libyaml stops at is rewritten,
      and only there, so a tab inside a value never changes;
    - a tab on a line holding only blanks (or blanks and a comment) between block nodes: an empty line to YAML 1.2
      and js-yaml, a token libyaml cannot start.
    """
    import yaml

    from .yamlevents import load_events

    readable = _directive_read_as_1_1(text)
    for _ in range(_MAX_TAB_RETRIES):
        try:
            return load_events(readable)
        except yaml.MarkedYAMLError as exc:
            at = _separating_tab(readable, exc)
            if at is None:
                raise
            end = at
            while end < len(readable) and readable[end] in " \t":
                end += 1
            readable = readable[:at] + " " * (end - at) + readable[end:]
    return load_events(readable)


_LINES_WITH_ENDS = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def _directive_read_as_1_1(text: str) -> str:
    if not text.startswith("%"):
        return text
    out, position = [], 0
    for line in _LINES_WITH_ENDS.findall(text):
        stripped = line.strip()
        if stripped and not stripped.startswith(("%", "#")):
            break  # directives come before the document
        found = _YAML_DIRECTIVE.match(line)
        if found and found.group(1) not in ("1", "2"):
            line = line[:found.start(1)] + "1" + " " * (len(found.group(1)) - 1) + line[found.end(1):]
        out.append(line)
        position += len(line)
    return "".join(out) + text[position:]


def _separating_tab(text: str, exc) -> int | None:
    """The offset of the tab libyaml stopped at, when blanks and a block indicator precede it on its line, or when
    its line holds only blanks (and perhaps a comment): YAML 1.2 reads such a line as empty, as js-yaml does."""
    mark = exc.problem_mark
    problem = exc.problem or ""
    if mark is None or mark.index >= len(text) or text[mark.index] != "\t":
        return None
    start = text.rfind("\n", 0, mark.index) + 1
    before = text[start:mark.index].rstrip(" \t")
    if before.endswith(("-", "?", ":")) and "cannot start any token" in problem:
        return mark.index
    after = LINE_BREAK.split(text[mark.index:], maxsplit=1)[0].lstrip(" \t")
    blank_line = not before and (not after or after.startswith("#"))
    # libyaml: "cannot start any token" after a complete node, "violates indentation" inside a plain scalar's lines
    return mark.index if blank_line and ("cannot start any token" in problem or "violates indentation" in problem) \
        else None


def _syntax_error(exc, path: str, text: str) -> DocumentError:
    """A syntax error in ruamel.yaml's wording when the file is small enough for it, else in libyaml's."""
    tab = _leading_tab(text)
    # ruamel.yaml (YAML 1.1) takes NEL, LS and PS for line breaks: its error would lie elsewhere, on another line
    if len(text) <= _RUAMEL_WORDING_MAX_CHARS and text.count("[") + text.count("{") <= _RUAMEL_WORDING_MAX_FLOW \
            and not any(c in text for c in _BREAKS_OF_YAML_1_1):
        from ruamel.yaml import YAML
        from ruamel.yaml.error import MarkedYAMLError, YAMLError

        try:
            for _ in YAML(typ="safe", pure=True).parse(text):
                pass
        except MarkedYAMLError as worded:
            return _yaml_error(worded, path, text, tab)
        except Exception:  # noqa: BLE001 - ruamel only words the error; libyaml's own report stands if it fails
            pass
    return _yaml_error(exc, path, text, tab)


#: Characters YAML 1.1 readers (ruamel.yaml, libyaml) take for line breaks, and js-yaml and YAML 1.2 do not.
_BREAKS_OF_YAML_1_1 = "\x85\u2028\u2029"
_LEADING_TAB = re.compile(r"^ *\t", re.MULTILINE)


def _leading_tab(text: str) -> tuple[int, int] | None:
    found = _LEADING_TAB.search(text)
    if found is None:
        return None
    return text.count("\n", 0, found.start()) + 1, found.end() - found.start()


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
        lines = source_lines(text)
        source = lines[line - 1] if line and line <= len(lines) else ""
        name = re.split(r"\s*:(?:\s|$)", source[(column or 1) - 1:], maxsplit=1)[0].strip("'\"")
        return _error(path, "E102", f"duplicate key '{name}'", line, column, text=text,
                      hint="a mapping needs unique keys (OpenPAI rejects the file too); merge or rename one")
    if isinstance(exc, ComposerError) and "single document" in (exc.context or "") + (exc.problem or ""):
        return _error(path, "E103", "more than one YAML document; a job file holds exactly one", line, column,
                      text=text, hint="remove the `---` separator, or split the file")
    if any(words in problem for words in _LONG_KEY_PROBLEMS) and line is not None \
            and column is not None and _implicit_key_length(text, line, column) > _MAX_IMPLICIT_KEY:
        return _error(path, "E101", f"a key written without `?` is longer than {_MAX_IMPLICIT_KEY:,} characters, "
                      "the limit the YAML spec sets for an implicit key", line, column, text=text,
                      hint="shorten the key, or write it as an explicit key: `? <key>` on one line, `: <value>` on "
                      "the next")
    if "\\t" in problem or "\t" in problem or (tab is not None and tab[0] == line):
        tab_line, tab_column = tab if tab is not None else (line, column)
        return _error(path, "E105", "tab character used for indentation; YAML indents with spaces", tab_line,
                      tab_column, text=text, hint="replace the tab with spaces")
    return _error(path, "E101", f"YAML syntax error: {problem}", line, column, text=text)


#: How libyaml and ruamel.yaml word the `:` of a key too long to be implicit (block, then flow collections).
_LONG_KEY_PROBLEMS = ("mapping values are not allowed", "could not find expected ':'", "expected ',' or")
#: YAML 1.2, 7.4: "the key is restricted to a single line ... and to at most 1024 Unicode characters".
_MAX_IMPLICIT_KEY = 1024


def _implicit_key_length(text: str, line: int, column: int) -> int:
    """The length of the would-be key before the `:` at (line, column): its line's text up to there, without the
    indentation and block indicators before it or a flow collection's opening."""
    lines = source_lines(text)
    if not 0 < line <= len(lines):
        return 0
    before = lines[line - 1][:column - 1]
    return len(re.split(r"[\[{,]", before)[-1].lstrip(" -?").rstrip())


def _codepoint(character: str | int) -> int:
    return character if isinstance(character, int) else ord(character)
