"""Where a few nodes of a job sit, for a file the fast path has already read: what a warning needs to be located.

A file with warnings and no error is read by the fast path (yaml-rs), which keeps no positions; reading it again
with the located loader (yamlevents.py) builds the whole document a second time and cost as much again as the
clean file's whole check. Here libyaml's event stream is only walked, noting where the wanted nodes sit, and the
walk stops once all of them are seen.

Only for texts the fast path accepted (loading.load_fast): no tags, anchors, aliases, merge keys, directives or
NEL/LS/PS, nesting within the limits, string keys only. So nothing needs checking here, and a key is the text
libyaml gives; anything else makes `locate_pointers` return None and the caller use the located loader. The
positions are exactly those yamlevents records (tests/test_yamlpositions.py compares them).
"""

from __future__ import annotations

from typing import Any, Iterable

from .diagnostics import escape_pointer_token, pointer_of, split_pointer
from .loading import Position


def locate_pointers(text: str, data: Any, pointers: Iterable[str]) -> dict[str, Position] | None:
    """Positions of `pointers` that exist in `data` (what the fast path read from `text`) and of their ancestors;
    None when the text is not one the walk may read (the caller then loads it with the located loader)."""
    import yaml

    from .yamlreader import LoadProblem, event_parser
    from .yamlscalars import NON_STRING_STARTS, NON_STRING_WORDS, key_text, resolve

    wanted: set[str] = set()
    for pointer in pointers:
        tokens = _existing_tokens(data, split_pointer(pointer))
        wanted.update(pointer_of(*tokens[:depth]) for depth in range(1, len(tokens) + 1))
    positions: dict[str, Position] = {"": (1, 1, 1, 1)}
    if not wanted:
        return positions
    scalar, mapping, sequence = yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent
    ends = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
    # The collections on the way to a wanted node; in any other, no pointer is built for the entries (most of a
    # job's keys are passed over on the way to a few findings).
    on_the_way = set(wanted)
    # One frame per open collection: [is a mapping, pointer (None off the way), next index (sequence) or key
    # (mapping), key's mark]
    stack: list[list[Any]] = []
    loader = event_parser(text)
    try:
        while wanted:
            event = loader.get_event()
            kind = event.__class__
            if kind in ends:
                stack.pop()
                continue
            if kind is not scalar and kind is not mapping and kind is not sequence:
                if kind is yaml.StreamEndEvent or kind is yaml.AliasEvent:
                    return None  # a wanted node never came, or an alias (the fast path refuses those)
                continue  # stream and document start and end
            if not stack:
                if kind is not mapping:
                    return None
                stack.append([True, "", None, None])
                continue
            frame = stack[-1]
            if frame[0]:
                if frame[2] is None:  # this node is a key
                    if kind is not scalar:
                        return None  # a complex key (the fast path refuses those)
                    key = event.value
                    if frame[1] is not None and event.implicit[0] and (
                            key[:1] in NON_STRING_STARTS or key in NON_STRING_WORDS):
                        key = key_text(resolve(key, event))  # `.5`, `~`...: as the located loader reads it
                    frame[2], frame[3] = key, event.start_mark
                    continue
                pointer = None if frame[1] is None else f"{frame[1]}/{escape_pointer_token(frame[2])}"
                if pointer in wanted:
                    key_mark, mark = frame[3], event.start_mark
                    positions[pointer] = (key_mark.line + 1, key_mark.column + 1, mark.line + 1, mark.column + 1)
                    wanted.discard(pointer)
                frame[2] = None
            else:
                pointer = None if frame[1] is None else f"{frame[1]}/{frame[2]}"
                frame[2] += 1
                if pointer in wanted:
                    mark = event.start_mark
                    positions[pointer] = (mark.line + 1, mark.column + 1, mark.line + 1, mark.column + 1)
                    wanted.discard(pointer)
            if kind is mapping:
                stack.append([True, pointer if pointer in on_the_way else None, None, None])
            elif kind is sequence:
                stack.append([False, pointer if pointer in on_the_way else None, 0, None])
    except (yaml.YAMLError, LoadProblem):
        return None
    finally:
        loader.dispose()
    return positions


def _existing_tokens(data: Any, tokens: list[str]) -> list[str]:
    """The longest prefix of `tokens` that names a node of `data` (a finding may point at a missing key)."""
    found: list[str] = []
    node = data
    for token in tokens:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isascii() and token.isdigit() and int(token) < len(node) and str(int(token)) == token:
            node = node[int(token)]
        else:
            break
        found.append(token)
    return found
