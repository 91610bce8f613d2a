"""The fast path's guards (protocol/loading.py) against the plain regular expressions they were written from.

The guards decide which files the Rust fast path may read; each is written in a form that lets `re` skip ahead
(first the character class the match begins with, then a lookbehind for what precedes it). That form is hard to
read, so every guard is held here to the plain form it replaces, on random texts over the characters that matter.
A guard that matched less would let a file through whose reading differs between yaml-rs and js-yaml.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paictl.protocol import loading

#: The plain forms, in the order of loading._NEEDS_LOCATED_LOADER (written to be read, not to be fast).
PLAIN_GUARDS = (
    re.compile("[\x00-\x09\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]"),
    re.compile(r"(?:[\[{,\r\n]|(?:^|[\s\[{,:?-])[^\S\r\n])(?:![^\s=]|[&*](?![\s&*>|=]))"),
    re.compile(r"(?<![\w./-])(?:[-+]?0[0-9ob_]|[-+]0x|0x[0-9a-fA-F]*_)"),
    re.compile(r"[0-9]{16}"),
    re.compile(r"(?<![\w./:-])[-+]?[0-9][0-9_]*(?:_|:[0-5]?[0-9])[0-9_:]*(?:\.[0-9_]*)?(?![\w./-]|:\S)"),
    re.compile(r"[-+]\.[0-9]"),
    re.compile(r"(?<![\w./:-])[-+0-9.eE:]*_[-+0-9._eE:]*(?![\w./-]|:\S)"),
    re.compile(r"\\(?:\r\n?|\n)[ \t]*[\r\n]"),
    re.compile(r"(?<![\w./])0[XOB]"),
    re.compile(r"(?<![\w./])\.(?:[iI][nN][fF]|[nN][aA][nN])"),
    re.compile(r"[\[{,]:|[\[{,] :"),
    re.compile(r"-[0-9]{1,2}-[0-9]"),  # dates: already in the fast form
)
PLAIN_DIRECTIVE = re.compile(r"^%", re.MULTILINE)
PLAIN_DEEP_INDENT = re.compile(r"^ {30}", re.MULTILINE)
PLAIN_STACKED = re.compile(r"(?:[-?:][ \t]+){16}")

#: Every character some guard looks at, plus ordinary ones.
ALPHABET = " \n\r\t-+0123456789._eExXobOBiInNfFaA:!&*[]{},=>|/aZ_%?#'\"\\\x85\u2028"
ASCII_ALPHABET = ALPHABET.replace("\x85", "\x1f").replace("\u2028", "<")
texts = st.text(alphabet=ALPHABET, max_size=40)


def test_the_guards_are_the_plain_ones_in_number() -> None:
    assert len(loading._NEEDS_LOCATED_LOADER) == len(PLAIN_GUARDS)


@pytest.mark.parametrize("index", range(len(PLAIN_GUARDS)))
@settings(max_examples=3000, deadline=None, derandomize=True)
@given(text=texts)
def test_each_guard_matches_where_its_plain_form_does(index: int, text: str) -> None:
    fast, plain = loading._NEEDS_LOCATED_LOADER[index], PLAIN_GUARDS[index]
    assert bool(fast.search(text)) == bool(plain.search(text))


@settings(max_examples=6000, deadline=None, derandomize=True)
@given(text=st.one_of(texts, st.text(alphabet=ASCII_ALPHABET, max_size=40)))
def test_the_combined_guard_matches_where_any_plain_form_does(text: str) -> None:
    """_needs_located_loader reads the text once (a byte translation, substring searches, one search for the
    number-like words) instead of a search per guard: it must answer as the plain forms together do."""
    directive = text[:1] == "%" or "\n%" in text or "\r%" in text
    plain = text[:1] in ("!", "&", "*") or "<<" in text or any(guard.search(text) for guard in PLAIN_GUARDS)
    assert loading._needs_located_loader(text) == (directive or plain)


@settings(max_examples=3000, deadline=None, derandomize=True)
@given(text=texts)
def test_directives_go_to_the_located_loader(text: str) -> None:
    if PLAIN_DIRECTIVE.search(text):
        assert loading._needs_located_loader(text)


@settings(max_examples=3000, deadline=None, derandomize=True)
@given(prefix=texts, depth=st.integers(0, 40), suffix=texts)
def test_deep_or_stacked_text_is_never_called_shallow(prefix: str, depth: int, suffix: str) -> None:
    for text in (prefix + "\n" + " " * depth + suffix, prefix + "- " * depth + suffix, prefix + ": \t" * depth):
        if PLAIN_DEEP_INDENT.search(text) or PLAIN_STACKED.search(text):
            assert not loading._shallow_enough(text)


@pytest.mark.parametrize("text", ["a: 0o2\n", "a: 08192\n", "a: 1_000\n", "a: 1:30\n", "a: +.5\n",
                                  "a: 12345678901234567\n", "a: !!str x\n", "%YAML 1.1\n---\na: 1\n",
                                  "a: &x 1\nb: *x\n", "a: 0x1_0\n", "a: -0x10\n", "a: 5.9_\n",
                                  "1:30: v\n", "1_0: v\n", "1:30.5: v\n", "a: 0X1f\n", "a: 0O17\n",
                                  "a: 0B11\n", "a: .iNf\n", "a: [:x]\n", "a: {:: v}\n"])
def test_texts_js_yaml_reads_otherwise_are_not_read_fast(text: str) -> None:
    assert loading.load_fast(text) is None


@pytest.mark.parametrize("text", ["a: cifar10_vgg16\n", "a: python_3.6\n", "a: master-0:2\n",
                                  "a: 10.0.0.1:9000\n", "a: x != y && z\n", "a: 100\n"])
def test_ordinary_texts_are_read_fast(text: str) -> None:
    assert loading.load_fast(text) is not None


_keys = st.text(alphabet="abc_-.", min_size=1, max_size=4)
_values = st.recursive(st.one_of(st.integers(-3, 3), st.floats(-2, 2), st.none(), st.text(alphabet="ab ", max_size=3)),
                       lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_keys, inner, max_size=4)),
                       max_leaves=25)


@settings(max_examples=500, deadline=None, derandomize=True)
@given(data=st.dictionaries(_keys, _values, min_size=1, max_size=5), flow=st.booleans(), limit=st.integers(1, 60))
def test_the_fast_path_counts_nodes_as_the_located_loader_does(data, flow, limit):
    """yaml-rs's data is counted in `_as_js`: the fast path reads a document exactly when the located loader finds
    it within the node limit (else the located loader refuses it, E106)."""
    import yaml

    from paictl.protocol import yamlevents
    from paictl.protocol.loading import DocumentError, load_located

    text = yaml.safe_dump(data, default_flow_style=flow, sort_keys=False)
    if loading.load_fast(text) is None:
        return  # refused for another reason (a guard)
    saved = loading.MAX_EXPANDED_NODES, yamlevents.MAX_EXPANDED_NODES
    loading.MAX_EXPANDED_NODES = yamlevents.MAX_EXPANDED_NODES = limit
    try:
        try:
            loading._load_located.cache_clear()  # it keeps the last document, read under another limit
            load_located(text, "<t>")
            within = True
        except DocumentError as error:
            assert error.diagnostics[0].code == "E106"
            within = False
        assert (loading.load_fast(text) is not None) == within
    finally:
        loading.MAX_EXPANDED_NODES, yamlevents.MAX_EXPANDED_NODES = saved
