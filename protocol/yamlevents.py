"""The located loader: plain data and the position of every value, built from libyaml's event stream in one pass.

Why events: libyaml's parser (PyYAML's C extension) is a state machine with its own stack, so no input can overflow
the interpreter's or the C stack, and it is linear in the input; building the data here, one event at a time, lets
every limit be checked *while* reading, before anything large exists: nesting depth, and the size the document has
once its aliases are expanded, counted in nodes and in bytes (an alias of a 100 KB string costs 100 KB, not one
node). The ruamel.yaml round-trip loader this replaces was superlinear (2 MiB of newlines took over a minute).

Scalars are resolved as js-yaml 3 (the OpenPAI rest-server's reader) resolves them (protocol/yamlscalars.py:
`0o2` is a string, `010` octal 8, `2020-01-01` a Date), and `<<` merges as js-yaml merges (explicit keys win, the
first merged mapping wins over later ones).
"""

from __future__ import annotations

import re
from typing import Any

from .diagnostics import escape_pointer_token, kind_of
from .source import MAX_DEPTH, MAX_EXPANDED_BYTES, MAX_EXPANDED_NODES  # noqa: F401 - the limits enforced here
from .yamlreader import LoadProblem, event_parser, position
from .yamlscalars import MAX_DIGITS, NON_STRING_STARTS, NON_STRING_WORDS, explicit_tag, key_text, resolve, tag_problem
from .yamltags import PAIR_LIST_TAGS, pair_list


# Characters libyaml (YAML 1.1) takes for line breaks but js-yaml (YAML 1.2) keeps inside values, and the byte-order
# mark, which libyaml skips at the start of any line and js-yaml only at the start of the input (elsewhere, and a
# second one there, it is text).
_HIDDEN = "\x85\u2028\u2029\ufeff"


def load_events(text: str) -> tuple[Any, dict[str, tuple[int, int, int, int]], list[tuple[int, int]], list[str]]:
    """(data, positions, secret spans, stringified keys) for one YAML document, or LoadProblem; yaml.YAMLError
    escapes for syntax errors. The secret spans are the (start, end) character offsets of the values of `secrets`
    and of every prerequisite's `auth`, which diagnostics must never show; the stringified keys are the pointers of
    the entries whose key was written as a list or a mapping (js-yaml's text of it is the key)."""
    restore = None
    if any(c in text for c in _HIDDEN):  # (loading.load_located has taken off the text's own leading mark)
        text, restore = _hide(text)
    loader = event_parser(text)
    try:
        return _Builder(loader, restore, text).build()
    finally:
        loader.dispose()


def _hide(text: str) -> tuple[str, dict[int, str]]:
    """Stand-ins (private-use characters absent from the text) for NEL/LS/PS and the byte-order mark, so libyaml
    reads them as js-yaml does: as characters of the values they stand in (the same length: positions hold)."""
    spare = (chr(c) for c in range(0xE000, 0xF900) if chr(c) not in text)
    swap = {}
    for original in _HIDDEN:
        stand_in = next(spare, None)
        if stand_in is None:
            raise LoadProblem("E101", "the file uses every private-use character; it is not a job", 1, 1)
        swap[original] = stand_in
    return text.translate({ord(k): v for k, v in swap.items()}), {ord(v): k for k, v in swap.items()}


class _Frame:
    __slots__ = ("kind", "value", "pointer", "anchor", "nodes", "bytes", "key", "key_mark", "merged", "tag", "mark",
                 "block")

    def __init__(self, kind, value, pointer, anchor, tag, mark, block=False):
        self.kind, self.value, self.pointer, self.anchor, self.tag, self.mark = kind, value, pointer, anchor, tag, mark
        self.block = block
        self.nodes, self.bytes = 1, 0
        self.key = _NO_KEY
        self.key_mark = None
        self.merged: list = []


_NO_KEY = object()
_MAPPING_START: type = type(None)  # yaml.MappingStartEvent, set on first use (yaml is imported lazily)
_MERGE = object()
#: The pointer suffix of the nodes inside a complex key: no JSON pointer token holds U+0000 (YAML text cannot).
_IN_KEY = "/\x00key"
#: An escaped line break (an odd number of backslashes, then a break) followed by lines holding only blanks.
_EMPTY_LINES_AFTER_ESCAPED_BREAK = re.compile(r"(?<!\\)((?:\\\\)*\\)(\r\n|\r|\n)(?:[ \t]*(?:\r\n|\r|\n))+")
#: Where a job keeps values no diagnostic may show: its secrets and every prerequisite's registry credentials.
_SECRET_POINTER = re.compile(r"/secrets(?:/|$)|/prerequisites/[0-9]+/auth(?:/|$)")
_SECRET_PREFIXES = ("/secrets", "/prerequisites/")


#: A registry credential written as `<% $secrets.name %>` only names a secret; it is shown like any other text.
_REFERENCE_ONLY = re.compile(r"\s*(?:<%\s*\$secrets\.[^%]*%>\s*)+")


def counted_secret(pointer: str) -> bool:
    return _SECRET_POINTER.match(pointer) is not None


def is_reference_only(value: Any) -> bool:
    return isinstance(value, str) and _REFERENCE_ONLY.fullmatch(value) is not None


class _Builder:
    def __init__(self, loader, restore, text):
        self.loader = loader
        self.restore = restore
        self.text = text  # as libyaml reads it (stand-ins in place): a double-quoted scalar's source is read again
        self.anchors: dict[str, tuple[Any, int, int]] = {}  # name -> (value, expanded nodes, expanded bytes)
        self.open_anchors: set[str] = set()
        self.positions: dict[str, tuple[int, int, int, int]] = {"": (1, 1, 1, 1)}
        self.stack: list[_Frame] = []
        self.nodes = 0
        self.bytes = 0
        self.secret_spans: list[tuple[int, int]] = []
        self.stringified_keys: list[str] = []

    def build(self):
        import yaml

        global _MAPPING_START
        _MAPPING_START = yaml.MappingStartEvent

        loader = self.loader
        root = _NO_KEY
        documents = 0
        handlers = {yaml.ScalarEvent: self._scalar, yaml.MappingStartEvent: self._start,
                    yaml.SequenceStartEvent: self._start, yaml.MappingEndEvent: self._end,
                    yaml.SequenceEndEvent: self._end, yaml.AliasEvent: self._alias}
        get_event = loader.get_event
        while True:
            event = get_event()
            handler = handlers.get(event.__class__)
            if handler is not None:
                done = handler(event)
                if done is not _NO_KEY:
                    root = done
                continue
            if isinstance(event, yaml.StreamEndEvent):
                break
            if isinstance(event, yaml.DocumentStartEvent):
                documents += 1
                if documents > 1:
                    raise LoadProblem("E103", "more than one YAML document; a job file holds exactly one",
                                      *position(event.start_mark), hint="remove the `---` separator, or split the file")
        if root is _NO_KEY:
            raise LoadProblem("E104", "the document is empty; a job is a YAML mapping", 1, 1,
                              hint="start with `protocolVersion: 2`")
        return root, self.positions, self.secret_spans, self.stringified_keys

    # -- one event ------------------------------------------------------------------------------------------------

    # Each handler consumes one node event and returns the root once it is complete, else _NO_KEY.

    def _start(self, event) -> Any:
        if event.anchor is not None or event.tag is not None:
            self._check_first_key_properties(event)
        if len(self.stack) >= MAX_DEPTH:
            raise LoadProblem("E106", f"the document nests more than {MAX_DEPTH} levels deep; a job never does",
                              *position(event.start_mark))
        pointer = self._child_pointer(event.start_mark)
        is_map = event.__class__ is _MAPPING_START
        tag = explicit_tag(event.tag) if event.tag is not None else None
        if tag is not None and tag != ("map" if is_map else "seq") and not (is_map and tag == "set") \
                and not (not is_map and tag in PAIR_LIST_TAGS):
            raise tag_problem(event.tag, event.start_mark)
        frame = _Frame("map" if is_map else "seq", {} if is_map else [], pointer, event.anchor, tag,
                       event.start_mark, block=is_map and not event.flow_style)
        if event.anchor is not None:
            self.open_anchors.add(event.anchor)
        self.nodes += 1
        if self.nodes > MAX_EXPANDED_NODES:
            self._count(0, 0, event.start_mark)
        self.stack.append(frame)
        return _NO_KEY

    def _end(self, event) -> Any:
        frame = self.stack.pop()
        value = frame.value
        if frame.kind == "map":
            value = self._apply_merges(frame)
            if frame.tag == "set" and any(v is not None for v in value.values()):
                raise LoadProblem("E101", "a !!set holds keys only; a value is set here", *position(frame.mark))
        elif frame.tag in PAIR_LIST_TAGS:
            value = pair_list(frame.tag, value, position(frame.mark))
        if frame.anchor is not None:
            self.open_anchors.discard(frame.anchor)
            self.anchors[frame.anchor] = (value, frame.nodes, frame.bytes)
        return self._deliver(value, frame.nodes, frame.bytes, frame.mark, event)

    def _alias(self, event) -> Any:
        if event.anchor in self.open_anchors:
            raise LoadProblem("E106", f"alias *{event.anchor} refers to a collection that contains it",
                              *position(event.start_mark), hint="a job never needs a recursive alias; remove it")
        if event.anchor not in self.anchors:  # libyaml's composer would say so; the event parser does not
            raise LoadProblem("E101", f"found undefined alias *{event.anchor}", *position(event.start_mark))
        value, nodes, size = self.anchors[event.anchor]
        self._count(nodes, size, event.start_mark)
        return self._deliver(value, nodes, size, event.start_mark, event, counted=True)

    def _scalar(self, event) -> Any:
        # The hot path (every key and most values): a few hundred thousand calls for a 2 MiB file, so attribute
        # look-ups are kept few and a mapping key, the commonest scalar, is handled here without _deliver.
        raw = event.value
        if event.style == '"' and "\n" in raw:
            raw = self._double_quoted_as_js_yaml_reads(event)
        if self.restore is not None:
            raw = raw.translate(self.restore)
        if event.anchor is not None or event.tag is not None:
            self._check_first_key_properties(event)
        if event.tag is None:
            if not event.implicit[0]:
                value = raw  # quoted or a block scalar: a string
            elif raw[:1] in NON_STRING_STARTS or raw in NON_STRING_WORDS:
                if raw.isdigit() and raw[0] != "0" and len(raw) <= MAX_DIGITS:
                    value = int(raw)
                else:
                    value = resolve(raw, event)
            else:
                value = raw
        else:
            value = resolve(raw, event)
        size = len(raw)
        if event.anchor is not None:
            self.anchors[event.anchor] = (value, 1, size)
        self.nodes += 1
        self.bytes += size
        if self.bytes > MAX_EXPANDED_BYTES or self.nodes > MAX_EXPANDED_NODES:
            self._count(0, 0, event.start_mark)
        stack = self.stack
        if not stack:
            return value
        parent = stack[-1]
        key = parent.key
        if parent.kind == "map":
            if key is _NO_KEY:
                if value.__class__ is not str or value == "<<":
                    return self._deliver(value, 1, size, event.start_mark, event, counted=True)
                parent.key = value
                parent.key_mark = event.start_mark
            else:
                if key is _MERGE or parent.pointer.startswith(_SECRET_PREFIXES) or key == "secrets" or key == "auth":
                    return self._deliver(value, 1, size, event.start_mark, event, counted=True)
                target = parent.value
                if key in target:
                    return self._deliver(value, 1, size, event.start_mark, event, counted=True)  # E102
                target[key] = value
                parent.key = _NO_KEY
                key_mark, mark = parent.key_mark, event.start_mark
                token = key if "~" not in key and "/" not in key else escape_pointer_token(key)
                self.positions[f"{parent.pointer}/{token}"] = (key_mark.line + 1, key_mark.column + 1,
                                                               mark.line + 1, mark.column + 1)
        else:
            if parent.pointer.startswith(_SECRET_PREFIXES):
                return self._deliver(value, 1, size, event.start_mark, event, counted=True)
            items = parent.value
            mark = event.start_mark
            line, column = mark.line + 1, mark.column + 1
            self.positions[f"{parent.pointer}/{len(items)}"] = (line, column, line, column)
            items.append(value)
        parent.nodes += 1
        parent.bytes += size
        return _NO_KEY

    # -- helpers --------------------------------------------------------------------------------------------------

    def _double_quoted_as_js_yaml_reads(self, event) -> str:
        """js-yaml 3 skips every empty line after an escaped line break in a double-quoted scalar (`"x\\` and two
        line breaks, then `y"` is "xy"); YAML 1.2 and libyaml keep each as a line feed ("x\ny"). The scalar's source
        is read again without those lines (libyaml decodes the rest: escapes, folding)."""
        source = self.text[event.start_mark.index:event.end_mark.index]
        if "\\" not in source:
            return event.value
        rewritten = _EMPTY_LINES_AFTER_ESCAPED_BREAK.sub(r"\1\2", source)
        if rewritten == source:
            return event.value
        import yaml

        return yaml.load(rewritten, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))

    def _explicit_block_key(self, parent: _Frame, mark) -> bool:
        """Whether the key at `mark` is a block mapping's `? key`: js-yaml passes no tag for such a key, so a
        `? !!merge <<` there is the plain key "<<", not a merge."""
        if not parent.block:
            return False
        before = self.text[self.text.rfind("\n", 0, mark.index) + 1:mark.index].rstrip(" \t")
        return before.endswith("?")

    def _check_first_key_properties(self, event) -> None:
        """js-yaml 3 reads a tag or an anchor written before the first key of a block mapping, on the mapping's own
        line (`&a k: v`, `!!str 1: v`), as the mapping's and then fails ("end of the stream or a document separator
        is expected"): the rest-server answers 500. libyaml gives them to the key; refused here as there."""
        if not self.stack:
            return
        parent = self.stack[-1]
        if parent.block and parent.key is _NO_KEY and not parent.value and not parent.merged \
                and event.start_mark.index == parent.mark.index:
            raise LoadProblem("E101", "a tag or an anchor before the first key of a mapping, on its line: OpenPAI's "
                              "YAML reader (js-yaml) fails on it", *position(event.start_mark),
                              hint="write the key as `? !!tag key` on its own line, or remove the tag or anchor")

    def _child_pointer(self, mark) -> str:
        """The pointer of the node that starts now (and record its position)."""
        if not self.stack:
            return ""
        parent = self.stack[-1]
        if parent.kind == "seq":
            pointer = f"{parent.pointer}/{len(parent.value)}"
            self.positions[pointer] = (*position(mark), *position(mark))
            return pointer
        if parent.key is _MERGE:
            return parent.pointer + "/<<"
        if parent.key is _NO_KEY:  # a mapping or a list as a key (js-yaml makes it a string): positions unneeded
            return parent.pointer + _IN_KEY
        pointer = f"{parent.pointer}/{escape_pointer_token(parent.key)}"
        self.positions[pointer] = (*position(parent.key_mark), *position(mark))
        return pointer

    def _count(self, nodes: int, size: int, mark) -> None:
        self.nodes += nodes
        self.bytes += size
        if self.nodes > MAX_EXPANDED_NODES:
            raise LoadProblem("E106", f"the document expands to more than {MAX_EXPANDED_NODES} values (an alias "
                              "bomb?)", *position(mark), hint="a job never needs this many values; remove the aliases")
        if self.bytes > MAX_EXPANDED_BYTES:
            raise LoadProblem("E106", f"the document expands to more than {MAX_EXPANDED_BYTES} bytes of text (an "
                              "alias bomb?)", *position(mark), hint="a job never needs this much text; remove the aliases")

    def _deliver(self, value: Any, nodes: int, size: int, mark, event, counted: bool = False) -> Any:
        """Hand a complete node to its parent (or return it as the root)."""
        if not self.stack:
            return value
        parent = self.stack[-1]
        parent.nodes += nodes
        parent.bytes += size
        if parent.kind == "seq":
            if counted:  # scalars and aliases did not go through _child_pointer
                self.positions[f"{parent.pointer}/{len(parent.value)}"] = (*position(mark), *position(mark))
                if parent.pointer.startswith(_SECRET_PREFIXES):
                    self._note_secret(f"{parent.pointer}/{len(parent.value)}", mark, event)
            parent.value.append(value)
            return _NO_KEY
        if parent.key is _NO_KEY:
            if value == "<<" and event.__class__.__name__ == "ScalarEvent" and (
                    event.implicit[0] or explicit_tag(event.tag) == "merge" and not self._explicit_block_key(parent, mark)):
                parent.key = _MERGE
            else:
                try:
                    parent.key = key_text(value)
                except LoadProblem as problem:
                    problem.line, problem.column = position(mark)
                    raise
                if isinstance(value, (dict, list)) and not parent.pointer.endswith(_IN_KEY):
                    self.stringified_keys.append(f"{parent.pointer}/{escape_pointer_token(parent.key)}")
            parent.key_mark = mark
            return _NO_KEY
        key, key_mark = parent.key, parent.key_mark
        parent.key = _NO_KEY
        if counted and (parent.pointer.startswith(_SECRET_PREFIXES) or key in ("secrets", "auth")):
            self._note_secret(f"{parent.pointer}/{key}", mark, event)
        if key is _MERGE:
            sources = value if isinstance(value, list) else [value]
            if not sources or not all(isinstance(s, dict) for s in sources):
                raise LoadProblem("E101", "a merge key `<<` takes a mapping or a list of mappings", *position(mark))
            parent.merged.extend((s, key_mark) for s in sources)
            return _NO_KEY
        if key in parent.value:
            raise LoadProblem("E102", f"duplicate key '{key}'", *position(key_mark),
                              hint="a mapping needs unique keys (OpenPAI rejects the file too); merge or rename one")
        parent.value[key] = value
        if counted:
            token = key if "~" not in key and "/" not in key else escape_pointer_token(key)
            self.positions[f"{parent.pointer}/{token}"] = (key_mark.line + 1, key_mark.column + 1, mark.line + 1,
                                                           mark.column + 1)
        return _NO_KEY

    def _note_secret(self, pointer: str, mark, event) -> None:
        """Remember where a scalar (or alias) under `secrets` or an `auth` sits, so no diagnostic shows it."""
        if counted_secret(pointer) and not is_reference_only(getattr(event, "value", None)):
            self.secret_spans.append((mark.index, event.end_mark.index))

    def _apply_merges(self, frame: _Frame) -> dict:
        """js-yaml's merge: explicit keys win wherever they stand; among merged mappings the first one wins."""
        if not frame.merged:
            return frame.value
        merged: dict[str, Any] = {}
        for source, key_mark in frame.merged:
            for key, item in source.items():
                if key not in merged:
                    merged[key] = item
                    pointer = f"{frame.pointer}/{escape_pointer_token(key)}"
                    self.positions.setdefault(pointer, (*position(key_mark), *position(key_mark)))
        merged.update(frame.value)
        return merged


def describe_root(value: Any) -> str:
    return kind_of(value)
