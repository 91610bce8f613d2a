"""One text, one meaning: the fast path (yaml-rs) and the located loader (libyaml events) read every job text to the
same data, and both read it as js-yaml 3 (OpenPAI's reader) does.

Why: `load_data` takes the fast path's data when it reads a file, else the located loader's; which one runs depends on
unrelated text (a comment with a date sends a file down the located loader). A scalar the two read differently would
give one job two meanings (issue 37: `0X1f` was 31 on one path and "0X1f" on the other). The scalars are generated in
every case and radix, as values, keys and flow items; where node and the provisioned js-yaml (npm) are present, the
located loader's data is also compared with js-yaml's own.
"""

from __future__ import annotations

import math
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import every_corpus_job
from openpai_oracle.npm_peers import JsYaml, plain_of, required
from paictl.protocol.loading import DocumentError, load_fast, load_located

EXAMPLES = int(os.environ.get("PAICTL_PARITY_EXAMPLES", "600"))


def _cased(word: str) -> st.SearchStrategy[str]:
    """`word` in any mix of upper and lower case."""
    return st.lists(st.booleans(), min_size=len(word), max_size=len(word)).map(
        lambda upper: "".join(c.upper() if u else c.lower() for c, u in zip(word, upper)))


DIGITS = st.text("0123456789abcdefABCDEF_", min_size=0, max_size=6)
NUMBER_LIKE = st.builds(
    lambda sign, prefix, digits, dot, fraction, exponent: f"{sign}{prefix}{digits}{dot}{fraction}{exponent}",
    st.sampled_from(["", "+", "-"]),
    st.sampled_from(["", "0", "0x", "0X", "0o", "0O", "0b", "0B", "1", "9"]),
    DIGITS,
    st.sampled_from(["", "", ".", ":"]),
    st.text("0123456789_", max_size=3),
    st.sampled_from(["", "e3", "E3", "e+2", "E-2", "e", "e1_0"]),
)
SPECIAL_WORDS = st.one_of(*(_cased(w) for w in [
    "true", "false", "yes", "no", "y", "n", "on", "off", "null", "nan", "inf"]), st.just("~"))
SPECIAL = st.builds(lambda sign, dot, word: f"{sign}{dot}{word}", st.sampled_from(["", "+", "-"]),
                    st.sampled_from(["", "."]), SPECIAL_WORDS)
DATES = st.sampled_from(["2020-01-01", "2020-1-1", "2020-01-01 12:30:00", "2020-01-01t12:30:00.5Z",
                         "2001-12-14 21:59:43.10 -5", "20-01-01", "2020-13-01", "0001-01-01"])
TAGGED = st.sampled_from(["!!str 1", "!!int 0x1F", "!!float 1", "!!bool true", "!!null ''", "!!null ~", "!!null",
                          "!!binary aGk=", "!!timestamp 2020-01-01", "!!str ''", "!!int 0X1F", "!!int '0o7'",
                          "!!float 0x1F", "!!int 1.0", "!!float 010", "!!float 1e3", "!!int 1:30", "!!merge <<",
                          "!!float .iNf", "!!bool yes"])
SCALARS = st.one_of(NUMBER_LIKE, SPECIAL, DATES, st.sampled_from([
    "1:30", "190:20:30", "-1:0", "1_000", "0.", ".5", "+.5", "1e309", "0" * 20 + "1", "9" * 20, "1:30.5", "-1:30.5",
    "+.inf", "-.NaN", ".NaN", "0x_", "0b", "0o", "1e+3", "1.5e3", "1.", "-1_0.5", "0b1_0", "0x_1F", "1__0", "._5",
    "1e3_", "_1", "-_1", "_1:30", "1_:30", "+0", "-0x1", "+0b1", "0.0", "-.0", "1E-3", "12e03", "0xFFFFFFFFFFFFFFFFF", "0b" + "1" * 70]))


def documents(scalar: str) -> list[str]:
    """The scalar as a block value, a key (first and later), a flow item, a flow key, and in a nested block.

    Not in a flow collection: an empty scalar, one that starts or ends with `:`, a lone `-`, a bare tag. There
    libyaml's syntax differs from js-yaml's (`[, x]` is [null, "x"] to js-yaml, an error to libyaml; `[!!str, x]`
    the reverse), which is no question of what a scalar means (docs/hostile-input.md lists it)."""
    texts = [f"a: {scalar}\n", f"{scalar}: v\n", f"a: 1\n{scalar}: v\n", f"a:\n  - {scalar}\n  - b: {scalar}\n"]
    flow_safe = scalar not in ("", "-") and not scalar.startswith(":") and not scalar.endswith(":") \
        and (not scalar.startswith("!") or " " in scalar)
    if flow_safe:
        texts += [f"a: [{scalar}, x]\n", f"a: {{{scalar}: v}}\n"]
    return texts


def located(text: str):
    try:
        return load_located(text, "job.yaml").data
    except DocumentError as error:
        return ("refused", [d.code for d in error.diagnostics])


def same(a, b) -> bool:
    """Equal data, NaN equal to NaN, and types exact (True is not 1, 1.5 not a str)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def assert_parity(text: str) -> None:
    fast = load_fast(text)
    if fast is not None:
        slow = located(text)
        assert same(fast, slow), f"{text!r}: the fast path reads {fast!r}, the located loader {slow!r}"


@settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(st.one_of(SCALARS, TAGGED))
def test_fast_path_and_located_loader_read_every_scalar_alike(scalar):
    for text in documents(scalar):
        assert_parity(text)


@pytest.mark.parametrize("scalar, value", [
    ("0X1f", "0X1f"), ("0O17", "0O17"), ("0B11", "0B11"), ("0x1F", 31), ("0b11", 3), ("0o17", "0o17"), ("017", 15),
    (".iNf", ".iNf"), (".Inf", math.inf), ("-.INF", -math.inf), ("nUll", "nUll"), ("NULL", None), ("Yes", "Yes"),
    ("on", "on"), ("y", "y"), ("TRUE", True), ("tRUE", "tRUE"), ("1:30", 90), ("1_0", 10), ("0x_1", 1),
    # a decimal never starts with `_` (after its sign), but may end its first part with one before a `:`
    ("_1", "_1"), ("-_1", "-_1"), ("+_1", "+_1"), ("_0", "_0"), ("_1:30", "_1:30"), ("1_:30", 90), ("1__:30", 90),
    ("-1_:30", -90), ("1_", "1_"), ("1_:3_0", "1_:3_0"),
    ("+_1_0", "+_1_0"),
])
def test_scalars_read_as_js_yaml_3_reads_them_on_both_paths(scalar, value):
    """Read by js-yaml 3.14.2 (npm) for this table; both paths must give it, whatever else the file holds."""
    for text in (f"odd: {scalar}\n", f"# 2020-01-01\nodd: {scalar}\n"):
        assert same(located(text), {"odd": value}), text
        fast = load_fast(text)
        assert fast is None or same(fast, {"odd": value}), text


@pytest.mark.parametrize("text, data", [
    ("extras: {!!binary aGk=: v}\n", {"extras": {"hi": "v"}}),
    ("[a, b]: v\n", {"a,b": "v"}),
    ("? {x: 1}\n: v\n", {"[object Object]": "v"}),
    ("? [a, [b]]\n: v\n", ("refused", ["E101"])),  # js-yaml: "nested arrays are not supported inside keys"
    ("1.5: x\n", {"1.5": "x"}),
    ("0x1F: x\n", {"31": "x"}),
    (".inf: x\n", {"Infinity": "x"}),
    ("~: x\n", {"null": "x"}),
    ("? !!binary aGk=\n: v\n", {"hi": "v"}),
    ("---\n\ufeffa: 1\n", {"\ufeffa": 1}),  # a byte-order mark past the start is text to js-yaml (libyaml skips it)
    ("a:\n  __proto__: 1\n", {"a": {"__proto__": 1}}),  # js-yaml 3.14 keeps it as an own key
    ("b: {z: 0, !!merge <<: {y: 1}}\n", {"b": {"y": 1, "z": 0}}),  # an explicit merge key merges in flow
    ("b:\n  ? !!merge <<\n  : {y: 1}\n", {"b": {"<<": {"y": 1}}}),  # js-yaml passes no tag for a block `?` key
    # js-yaml skips the empty lines after an escaped line break in a double-quoted scalar (YAML 1.2 keeps them)
    ('a: "x\\\n\n  y"\n', {"a": "xy"}), ('a: "x\\\r\r\n  y"\n', {"a": "xy"}), ('a: "x\\\\\n\n  y"\n', {"a": "x\\\ny"}),
])
def test_complex_and_non_string_keys_are_stringified_as_js_yaml_does(text, data):
    assert same(located(text), data)
    assert_parity(text)


def test_the_corpus_reads_alike_on_both_paths():
    files = every_corpus_job()
    read_fast = 0
    for path in files:
        text = path.read_text(encoding="utf-8")
        read_fast += load_fast(text) is not None
        assert_parity(text)
    assert read_fast >= len(files) // 2  # the comparison is not vacuous: most of the corpus takes the fast path


@pytest.fixture(scope="module")
def js_yaml():
    peer = JsYaml(required())
    yield peer
    peer.close()


def js_yaml_agrees(peer: JsYaml, texts: list[str]) -> list[str]:
    """The texts paictl reads differently from js-yaml (refusing what js-yaml reads, or reading another value)."""
    found = []
    for text, answer in zip(texts, peer.load_many(texts)):
        ours = located(text)
        if not answer["ok"]:
            if not (isinstance(ours, tuple) and ours[0] == "refused"):
                found.append(f"{text!r}: js-yaml fails ({answer['error']}), paictl reads {ours!r}")
            continue
        if isinstance(ours, tuple):
            found.append(f"{text!r}: js-yaml reads {answer['data']!r}, paictl refuses {ours[1]}")
        elif plain_of(ours) != answer["data"]:
            found.append(f"{text!r}: js-yaml reads {answer['data']!r}, paictl {plain_of(ours)!r}")
    return found


def test_generated_scalars_read_as_js_yaml_reads_them(js_yaml):
    texts: list[str] = []

    @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(st.one_of(SCALARS, TAGGED))
    def collect(scalar):
        texts.extend(documents(scalar))

    collect()
    found = js_yaml_agrees(js_yaml, texts)
    assert not found, f"{len(found)} of {len(texts)} texts read differently:\n" + "\n".join(found[:40])
