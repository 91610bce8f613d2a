"""Loading: every way a file can be broken is a located diagnostic, never a traceback or a hang."""

from __future__ import annotations

import time

import pytest

from paictl.protocol.loading import (MAX_FILE_BYTES, DocumentError, decode_source, load_fast, load_located)


def codes_of(text: str) -> list[str]:
    with pytest.raises(DocumentError) as caught:
        load_located(text, "job.yaml")
    return [d.code for d in caught.value.diagnostics]


def only(text: str):
    with pytest.raises(DocumentError) as caught:
        load_located(text, "job.yaml")
    (diagnostic,) = caught.value.diagnostics
    return diagnostic


def test_positions_are_one_based_for_keys_values_and_items():
    doc = load_located("name: x\ntaskRoles:\n  a:\n    commands:\n      - echo 1\n      - echo 2\n", "j.yaml")
    assert doc.positions["/name"] == (1, 1, 1, 7)
    assert doc.positions["/taskRoles/a"][:2] == (3, 3)
    assert doc.positions["/taskRoles/a/commands/1"] == (6, 9, 6, 9)


def test_pointer_tokens_are_escaped():
    doc = load_located("parameters:\n  a/b: 1\n  c~d: 2\n", "j.yaml")
    assert "/parameters/a~1b" in doc.positions and "/parameters/c~0d" in doc.positions


def test_duplicate_key_is_located_at_the_second_occurrence():
    d = only("name: a\ntype: job\nname: b\n")
    assert (d.code, d.line, d.column) == ("E102", 3, 1)
    assert "'name'" in d.message


def test_multiple_documents():
    d = only("name: a\n---\nname: b\n")
    assert d.code == "E103" and d.line == 2


@pytest.mark.parametrize("text, kind", [("", "empty"), ("- a\n- b\n", "a list"), ("hello\n", "a string"),
                                        ("42\n", "a number")])
def test_root_must_be_a_mapping(text, kind):
    d = only(text)
    assert d.code == "E104" and kind in d.message


def test_tab_indentation_points_at_the_tab():
    d = only("name: a\ntaskRoles:\n\tworker: {}\n")
    assert (d.code, d.line, d.column) == ("E105", 3, 1)


def test_syntax_error_is_located():
    d = only("name: [a, b\ntype: job\n")
    assert d.code == "E101" and d.line is not None and d.column is not None


def test_unknown_tag_is_an_error_not_a_silent_string():
    d = only("name: !custom x\n")
    assert d.code == "E101" and "!custom" in d.message and d.line == 1


def test_an_unquoted_date_is_a_timestamp_and_the_fast_path_defers():
    from paictl.protocol.timestamps import Timestamp

    text = "version: 2020-01-01\nname: '2020-01-01'\n"
    data = load_located(text, "j").data
    assert isinstance(data["version"], Timestamp) and data["version"] == "2020-01-01"
    assert type(data["name"]) is str  # quoted: a string for js-yaml too
    assert load_fast(text) is None


def test_non_string_keys_become_their_yaml_text():
    doc = load_located("parameters:\n  2: a\n  true: b\n  null: c\n", "j")
    assert doc.data["parameters"] == {"2": "a", "true": "b", "null": "c"}


def test_merge_keys_are_merged_like_openpai_does():
    doc = load_located("base: &b {cpu: 1, gpu: 0}\nres:\n  <<: *b\n  memoryMB: 5\n", "j")
    assert doc.data["res"] == {"cpu": 1, "gpu": 0, "memoryMB": 5}
    assert load_fast("base: &b {cpu: 1}\nres:\n  <<: *b\n") is None  # the fast loader defers


BOMB = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8))


def test_alias_bomb_is_refused_quickly():
    started = time.perf_counter()
    d = only(BOMB)
    assert time.perf_counter() - started < 1.0
    assert d.code == "E106"
    assert load_fast(BOMB) is None


def test_alias_bomb_through_the_whole_validator_is_quick():
    from paictl.protocol.validate import validate_text

    started = time.perf_counter()
    result = validate_text(BOMB, "bomb.yaml")
    assert time.perf_counter() - started < 1.0
    assert [d.code for d in result.diagnostics] == ["E106"]


def test_non_utf8_is_located():
    with pytest.raises(DocumentError) as caught:
        decode_source(b"name: ok\ndescription: caf\xe9\n", "j.yaml")
    (d,) = caught.value.diagnostics
    assert (d.code, d.line, d.column) == ("E100", 2, 17)


def test_bom_is_tolerated():
    assert decode_source(b"\xef\xbb\xbfname: x\n", "j") == "name: x\n"


@pytest.mark.parametrize("body, line, column, byte", [
    (b"a: \xff\n", 1, 4, "0xff"), (b"a: 1\nb: x\xfe\n", 2, 5, "0xfe"), (b"\x80", 1, 1, "0x80")])
def test_a_bad_byte_after_a_bom_is_named_and_located_in_the_text_after_it(body, line, column, byte):
    """The BOM is no character of the text: the byte and its place are the same with and without it (the BOM's
    three bytes once shifted both: `a: \xff` read "byte 0x61")."""
    for raw in (body, b"\xef\xbb\xbf" + body):
        with pytest.raises(DocumentError) as caught:
            decode_source(raw, "j")
        (d,) = caught.value.diagnostics
        assert (d.code, d.line, d.column) == ("E100", line, column) and f"byte {byte} " in d.message, raw


def test_size_limit():
    with pytest.raises(DocumentError) as caught:
        decode_source(b"#" * (MAX_FILE_BYTES + 1), "big.yaml")
    assert caught.value.diagnostics[0].code == "E107"


def test_deep_nesting_is_a_diagnostic():
    text = "a: " + "[" * 5000 + "]" * 5000 + "\n"
    assert codes_of(text)[0] in ("E101", "E106")
