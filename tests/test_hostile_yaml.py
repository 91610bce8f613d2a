"""The located loader under hostile YAML: js-yaml's reading of scalars and tags, limits enforced while reading, and
property tests that no text makes validation raise, whatever it holds."""

from __future__ import annotations

import datetime
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paictl.protocol.codes import CODES
from paictl.protocol.loading import DocumentError, load_fast, load_located
from paictl.protocol.timestamps import Timestamp
from paictl.protocol.validate import validate_text
from paictl.protocol.yamlevents import MAX_DEPTH, MAX_EXPANDED_BYTES


def value(text: str):
    return load_located(f"v: {text}\n", "j").data["v"]


@pytest.mark.parametrize("text, expected", [
    ("0o2", "0o2"), ("08192", "08192"), ("010", 8), ("0x1F", 31), ("0b101", 5), ("1_000", 1000), ("1:30", 90),
    ("-1:30", -90), ("2.0", 2), ("1e3", 1000), ("1.5", 1.5), (".5", 0.5), ("+.5", "+.5"), ("01.5", "01.5"),
    ("yes", "yes"), ("on", "on"), ("True", True), ("FALSE", False), ("~", None), ("Null", None), ("", None),
    # js-yaml's YAML 1.1 timestamp: a Date (a Timestamp here), unless quoted
    ("2020-01-01", Timestamp("2020-01-01", datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc))),
    ("'2020-01-01'", "2020-01-01"), ("'010'", "010"), ("!!str 010", "010"), ("!!int '7'", 7), ("!!float 1", 1),
    ("!!bool true", True), ("!!null", None), ("!!null ~", None), ("!!map {a: 1}", {"a": 1}), ("!!seq [1]", [1]),
    ("!!set {a, b}", {"a": None, "b": None}), ("1_", "1_"), ("_1", "_1"),  # no leading `_` (js-yaml int.js)
])
def test_scalars_read_as_js_yaml_reads_them(text, expected):
    assert value(text) == expected and type(value(text)) is type(expected)


def test_infinity_and_nan():
    assert value(".inf") == math.inf and value("-.Inf") == -math.inf and math.isnan(value(".NaN"))


@pytest.mark.parametrize("text", ["!!int ''", "!!int abc", "!!null value", "!!bool yes", "!!python/tuple [1]",
                                  "!!binary aGk", "!!timestamp soon", "!!pairs [a, b]", "!!omap [{a: 1, b: 2}]",
                                  "!custom x", "!!set {a: 1}", "!!merge x", "!!int 1.0", "!!float 0x1F",
                                  "!!null ''"])  # js-yaml resolves !!null from the text, and '' is none of its texts
def test_unreadable_or_unsupported_values_are_located_errors(text):
    with pytest.raises(DocumentError) as caught:
        load_located(f"a: 1\nv: {text}\n", "j")
    [d] = caught.value.diagnostics
    assert d.code == "E101" and d.line == 2


def test_fast_path_defers_whatever_it_would_read_differently():
    for text in ("0o2", "08192", "010", "1_000", "1:30", "+.5", "&a x", "!!str 1", "*a"):
        assert load_fast(f"v: {text}\n") is None, text
    assert load_fast("v: 2.0\n") == {"v": 2}


def test_merges_follow_js_yaml_explicit_keys_win_first_merge_wins():
    doc = load_located("a: &a {x: 1, y: 1}\nb: &b {x: 2, z: 2}\nc:\n  <<: [*a, *b]\n  y: 3\n", "j")
    assert doc.data["c"] == {"x": 1, "y": 3, "z": 2}


@pytest.mark.parametrize("text, code", [
    ("a: &a\n  <<: *a\n", "E106"), ("a: &a [*a]\n", "E106"), ("a: *nope\n", "E101"),
    ("- " * (MAX_DEPTH + 1) + "x\n", "E106"), ("a: " + "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5), "E106"),
    ("a: &a " + "x" * 10_000 + "\nb: [" + ", ".join(["*a"] * (MAX_EXPANDED_BYTES // 10_000 + 1)) + "]\n", "E106"),
    ("%YAML 2.0\n---\na: 1\n", "E101"), ("? [a, [b]]\n: 1\n", "E101"),
    ("a: 1\n---\nb: 2\n", "E103"), ("a: 1\na: 2\n", "E102"),
])
def test_limits_and_shapes_are_located_diagnostics(text, code):
    [d] = validate_text(text, "j.yaml").diagnostics
    assert d.code == code and d.line is not None


def test_a_tab_after_a_colon_is_a_separator_not_indentation():
    assert load_located("name:\tx\nother: \t y\n", "j").data == {"name": "x", "other": "y"}


def test_nel_ls_ps_stay_inside_values_and_lines_stay_counted():
    doc = load_located("a: x\u0085y\nb: p\u2028q\u2029r\nc: 1\n", "j")
    assert doc.data == {"a": "x\u0085y", "b": "p\u2028q\u2029r", "c": 1}
    assert doc.positions["/c"][0] == 3 and doc.lines[2] == "c: 1"


FRAGMENTS = st.sampled_from([
    "a", "b: ", "- ", "? ", ": ", "[", "]", "{", "}", ",", "&x ", "*x", "<<: ", "!!str ", "!!int ", "!!set ",
    "!!python/tuple ", "!x ", "%YAML 1.1\n", "---\n", "...\n", "'", '"', "|\n", ">-\n", "#", "\t", "\n", "  ",
    "\u0085", "\u2028", "\x9b", "\x00", "0o7", "08", "1:30", "1e400", "9" * 50, ".nan", "~", "<% $x %>",
    "protocolVersion: 2\n", "taskRoles:\n", "secrets:\n", "\ufeff", "\\", "@", "`",
])


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.lists(FRAGMENTS, max_size=60).map("".join))
def test_no_text_makes_validation_raise(text):
    result = validate_text(text, "j.yaml")
    for d in result.diagnostics:
        assert d.code in CODES
        if d.is_error and d.code not in ("E107",):
            assert d.line is not None and d.column is not None
        assert d.source_line is None or not any(0x80 <= ord(c) <= 0x9f or ord(c) < 0x09 for c in d.source_line)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.integers(1, 3 * MAX_DEPTH), st.sampled_from(["- ", "[", "{a: ", "k:\n"]))
def test_any_depth_is_a_verdict_not_a_crash(depth, opener):
    collections = depth + 1  # the root mapping, then one per opener
    if opener == "k:\n":
        text = "".join("  " * i + "k:\n" for i in range(depth))
        collections = depth
    else:
        closer = {"- ": "", "[": "]", "{a: ": "}"}[opener]
        text = "v: " + opener * depth + "x" + closer * depth + "\n"
    result = validate_text(text, "j.yaml")
    codes = {d.code for d in result.diagnostics}
    assert ("E106" in codes) == (collections > MAX_DEPTH) or "E101" in codes


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.integers(1, 2000), st.integers(1, 20_000))
def test_aliases_are_counted_by_size(copies, length):
    text = f"a: &a {'x' * length}\nb: [{', '.join(['*a'] * copies)}]\n"
    codes = {d.code for d in validate_text(text, "j.yaml").diagnostics}
    assert ("E106" in codes) == (length * (copies + 1) > MAX_EXPANDED_BYTES)


def test_differences_from_openpai_fixed_where_upstream_is_right(run_cli, tmp_path):
    """`ports: null` passes upstream's schema; `cpu: 2.0` is the number 2 in JavaScript, so limits say `2`."""
    job = tmp_path / "job.yaml"
    job.write_text("protocolVersion: 2\nname: diff\ntype: job\nprerequisites:\n  - {type: dockerimage, name: img, "
                   "uri: ubuntu}\ntaskRoles:\n  w:\n    dockerImage: img\n    resourcePerInstance: {cpu: 2.0, "
                   "memoryMB: 100, gpu: 0, ports: null}\n    commands: ['echo <% $parameters.n %>']\n"
                   "parameters:\n  n: 0o2\n")
    assert run_cli("validate", str(job))[0] == 0
    code, out, _ = run_cli("compile", str(job), "--format", "json")
    framework = json.loads(out)["items"][-1]
    container = framework["spec"]["taskRoles"][0]["task"]["pod"]["spec"]["containers"][0]
    assert code == 0 and container["resources"]["limits"]["cpu"] == 2
    assert "echo 0o2" in json.dumps(framework)


SCALAR_TOKENS = st.text(st.sampled_from("0123456789+-._:xobeEaf~nNulTrsI ,/"), min_size=1, max_size=14)


@settings(max_examples=3000, deadline=None, derandomize=True)
@given(st.lists(SCALAR_TOKENS, min_size=1, max_size=4))
def test_fast_path_reads_every_scalar_as_the_located_loader_does(tokens):
    """Whenever the Rust fast path answers, it must agree with the authoritative (js-yaml) reading."""
    text = "".join(f"k{i}: {token}\n" for i, token in enumerate(tokens))
    fast = load_fast(text)
    if fast is None:
        return
    try:
        located = load_located(text, "j").data
    except DocumentError:
        pytest.fail(f"fast path accepted what the located loader refuses: {text!r}")
    assert json.dumps(fast, sort_keys=True) == json.dumps(located, sort_keys=True), text


@pytest.mark.parametrize("separator", ["\u2028", "\u0085", "\u2029"])
def test_nel_ls_ps_before_an_error_do_not_shift_its_line(separator):
    """Only LF, CRLF and CR break YAML lines (issue 38, point 7): the error in line 4 of a 4-line file is reported
    there, whichever reader words it (ruamel.yaml, a YAML 1.1 reader, counted these as line breaks)."""
    text = f"x: |\n  a{separator}b{separator}c\ny: 1\n  z: 2\n"
    [d] = validate_text(text, "j.yaml").diagnostics
    assert (d.code, d.line, d.column) == ("E101", 4, 4)
    assert d.source_line == "  z: 2"
    from paictl.lsp.server import diagnostic_span
    from paictl.protocol.loading import source_lines

    assert diagnostic_span(d, source_lines(text))[:2] == (3, 3)  # the editor's 0-based place, not 0:0
    text = f"# {separator * 3}\nname: a\nname: b\n"
    [d] = validate_text(text, "j.yaml").diagnostics
    assert (d.code, d.line) == ("E102", 3)


@pytest.mark.parametrize("text", ["a: 1\n\t\nb: 2\n", "a: 1\n \t \nb: 2\n", "a: 1\n\t# note\nb: 2\n",
                                  "a:\n  - x\n\t\n  - y\n", "a: x\n\t\n  y\n"])
def test_a_line_of_blanks_with_a_tab_is_an_empty_line(text):
    """YAML 1.2 and js-yaml read a line holding only blanks as empty, tabs included (issue 37); libyaml does not."""
    data = load_located(text, "j").data
    assert data in ({"a": 1, "b": 2}, {"a": ["x", "y"]}, {"a": "x\ny"})


@pytest.mark.parametrize("text", ["a:\n\tb: 2\n", "a: |\n  x\n\t\n  y\n"])
def test_a_tab_indenting_a_node_stays_refused(text):
    with pytest.raises(DocumentError) as caught:
        load_located(text, "j")
    assert caught.value.diagnostics[0].code == "E105"


@pytest.mark.parametrize("text", ["k" * 1025 + ": v\n", "a:\n  - " + "k" * 1100 + ": v\n",
                                  "a: {" + "k" * 1100 + ": v}\n", "a: [" + "k" * 1100 + ": v]\n",
                                  "a:\n  b: 1\n  " + "k" * 1100 + ": v\n  c: 2\n"])
def test_an_implicit_key_past_the_spec_limit_says_so(text):
    [d] = validate_text(text, "j.yaml").diagnostics
    assert d.code == "E101" and "1,024 characters" in d.message and "YAML spec" in d.message
    assert validate_text("? " + "k" * 1100 + "\n: v\n", "j.yaml").diagnostics[0].code != "E101"


def test_a_long_key_that_is_not_the_problem_keeps_the_syntax_error():
    [d] = validate_text("a: {" + "k" * 10 + ": v\n", "j.yaml").diagnostics
    assert d.code == "E101" and "1,024" not in d.message


@pytest.mark.parametrize("opening", ["[", "{a: "])
def test_a_thousand_flow_levels_are_e106(opening):
    """docs/hostile-input.md: nesting past the bound is E106, also where libyaml's own bound (1,000) stops first."""
    closing = "]" if opening == "[" else "}"
    [d] = validate_text("a: " + opening * 1000 + "x" + closing * 1000 + "\n", "j.yaml").diagnostics
    assert d.code == "E106" and d.line == 1


JOB = """\
protocolVersion: 2
name: keys
type: job
prerequisites:
  - {name: img, type: dockerimage, uri: ubuntu}
taskRoles:
  worker:
    instances: 1
    dockerImage: img
    resourcePerInstance: {cpu: 1, memoryMB: 1024, gpu: 0}
    commands: [echo hi]
"""


@pytest.mark.parametrize("extra", [
    "extras: {!!binary aGk=: v}\n", "extras: {[a, b]: v}\n", "extras:\n  ? {x: 1}\n  : v\n",
    "extras: {? !!binary aGk= : v}\n", "extras: {!!timestamp 2020-01-01: v}\n", "extras: {[a, [b]]: v}\n",
    "parameters: {!!binary //4=: v}\n", "extras: {&k [a]: 1, *k : 2}\n",
])
def test_no_key_makes_validate_or_compile_crash_and_json_stays_json(extra, run_cli, tmp_path):
    """A !!binary mapping key reached the schema checker as a Buffer and every command died with a traceback
    (issue 37). Whatever the key, `validate -o json` prints JSON and `compile` answers with a documented code."""
    path = tmp_path / "job.yaml"
    path.write_text(JOB + extra)
    code, out, err = run_cli("validate", "-o", "json", str(path))
    assert code in (0, 1) and "Traceback" not in out + err
    report = json.loads(out)
    assert report["summary"]["files"] == 1
    for target in ("framework", "jobset", "local", "grass", "openpai"):
        code, out, err = run_cli("compile", "--target", target, str(path))
        assert code in (0, 1) and "Traceback" not in out + err, (target, err)


def test_upper_case_radix_is_a_string_so_instances_0X1_fails_the_schema():
    result = validate_text(JOB.replace("instances: 1", "instances: 0X1"), "j.yaml")
    assert [d.code for d in result.errors] == ["E203"]
    assert validate_text(JOB.replace("instances: 1", "instances: 0x1"), "j.yaml").ok
