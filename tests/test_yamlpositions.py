"""The warning path's positions (protocol/yamlpositions.py) against the located loader's (protocol/yamlevents.py).

A schema-valid file with warnings is located by walking libyaml's events only as far as its findings; what it
reports must be exactly what the located loader gives: every position the walk returns equals the located
loader's, and `validate_bytes` (which takes the walk) reports the very diagnostics `validate_located` does.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import OPENPAI, ROOT, needs_corpus

from paictl.protocol.diagnostics import split_pointer
from paictl.protocol.loading import DocumentError, decode_source, load_fast, load_located
from paictl.protocol.validate import validate_bytes, validate_located
from paictl.protocol.yamlpositions import locate_pointers

LOCAL = sorted((ROOT / "examples").glob("*.yaml")) + sorted((ROOT / "tests" / "cases").rglob("*.yaml"))


def corpus_files() -> list[Path]:
    return sorted(p for p in (OPENPAI / "valid").iterdir() if p.suffix in (".yaml", ".yml")) \
        if (OPENPAI / "valid").is_dir() else []


def fast_read(paths: list[Path]) -> list[tuple[str, dict, dict]]:
    """(text, fast data, located positions) of every file the fast path reads."""
    read = []
    for path in paths:
        try:
            text = decode_source(path.read_bytes(), str(path))
        except DocumentError:  # not UTF-8: never reaches a loader
            continue
        data = load_fast(text)
        if data is not None:
            read.append((text, data, load_located(text, str(path)).positions))
    return read


def check_walk(text: str, data: dict, positions: dict, wanted: list[str]) -> None:
    walked = locate_pointers(text, data, wanted)
    assert walked is not None
    expected_keys = {""} | {"/" + "/".join(p[1:].split("/")[:depth]) for p in wanted if p
                            for depth in range(1, len(split_pointer(p)) + 1)}
    assert set(walked) == expected_keys & set(positions) | {""}
    for pointer, position in walked.items():
        assert position == positions[pointer], pointer


@pytest.mark.parametrize("path", LOCAL, ids=lambda p: p.name)
def test_every_node_of_a_local_file_is_placed_where_the_located_loader_places_it(path):
    for text, data, positions in fast_read([path]):
        check_walk(text, data, positions, sorted(positions))
        for pointer in positions:  # one at a time too: the walk stops early
            check_walk(text, data, positions, [pointer])


@needs_corpus
@settings(max_examples=300, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), count=st.integers(1, 6))
def test_random_nodes_of_upstream_jobs_are_placed_as_the_located_loader_places_them(seed, count):
    files = fast_read(corpus_files())
    rng = random.Random(seed)
    text, data, positions = files[rng.randrange(len(files))]
    check_walk(text, data, positions, rng.sample(sorted(positions), min(count, len(positions))))


def test_a_missing_node_is_placed_at_its_nearest_ancestor():
    text = "protocolVersion: 2\nname: x\ntype: job\ntaskRoles:\n  a:\n    instances: 1\n"
    data = load_fast(text)
    walked = locate_pointers(text, data, ["/taskRoles/a/completion/minFailedInstances", "/nope"])
    assert walked == {"": (1, 1, 1, 1), "/taskRoles": (4, 1, 5, 3), "/taskRoles/a": (5, 3, 6, 5)}


@pytest.mark.parametrize("text", ["x: &y 1\na: *y\n", "? [a]\n: b\na: x\n", "- a\n"])
def test_texts_the_walk_may_not_read_are_left_to_the_located_loader(text):
    """Aliases, complex keys, a root that is not a mapping: the fast path refuses these files, and the walk does
    not guess either."""
    assert locate_pointers(text, {"a": "x"}, ["/a"]) is None


def test_a_key_js_yaml_reads_as_a_number_is_named_as_the_located_loader_names_it():
    text = "1.50: x\n~: y\na: z\n"
    expected = load_located(text, "<t>").positions
    assert locate_pointers(text, {"1.5": "x", "null": "y", "a": "z"}, ["/1.5", "/null", "/a"]) == expected


def test_every_file_with_warnings_reports_what_the_located_path_reports():
    """The walk is taken for schema-valid files with warnings; their whole reports must not change."""
    taken = 0
    for path in LOCAL + corpus_files():
        raw = path.read_bytes()
        try:
            text = decode_source(raw, str(path))
        except DocumentError:
            continue
        result = validate_bytes(raw, str(path))
        assert result.diagnostics == validate_located(text, str(path)).diagnostics, path
        taken += result.ok and bool(result.warnings)
    assert taken >= 5  # the comparison above did cover the walk


_keys = st.text(alphabet="abcXYZ_-./~ é", min_size=1, max_size=6)
_scalars = st.one_of(st.integers(-5, 5), st.booleans(), st.none(), st.text(alphabet="ab :#-'\"\n\\é", max_size=8))
_documents = st.dictionaries(_keys, st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(_keys, inner, max_size=3)), max_leaves=10), min_size=1, max_size=4)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(data=_documents, flow=st.sampled_from([False, True, None]), width=st.sampled_from([20, 80]),
       style=st.sampled_from([None, "'", '"']))
def test_generated_layouts_are_placed_as_the_located_loader_places_them(data, flow, width, style):
    """Block, flow and mixed layouts, quoted and folded scalars, keys that need escaping in a pointer."""
    import yaml

    text = yaml.safe_dump(data, default_flow_style=flow, width=width, default_style=style, allow_unicode=True,
                          sort_keys=False)
    fast = load_fast(text)
    if fast is None:
        return  # the fast path refused this text: the walk never sees it
    positions = load_located(text, "<generated>").positions
    check_walk(text, fast, positions, sorted(positions))
