"""Emitting objects: YAML that kubectl and any YAML reader read back as exactly the same data, deterministically."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paictl.compiler.emit import file_name, to_json_list, to_yaml, to_yaml_document, write_files

texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)
values = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), texts,
                                  st.sampled_from(["0o17", "1e3", "yes", "2020-01-01", "NaN", "~"])),
                      lambda inner: st.one_of(st.lists(inner, max_size=3),
                                              st.dictionaries(texts, inner, max_size=3)), max_leaves=10)


@settings(max_examples=500, deadline=None, derandomize=True)
@given(st.dictionaries(texts, values, max_size=5))
def test_yaml_reads_back_as_the_same_data_in_yaml_1_1_and_1_2(obj):
    import yaml
    from ruamel.yaml import YAML

    text = to_yaml([obj])
    (as_12,) = [d for d in YAML(typ="safe", pure=True).load_all(text)]
    (as_11,) = [d for d in yaml.safe_load_all(text)]  # kubectl's reader is YAML 1.1
    assert as_12 == obj and as_11 == obj


@settings(max_examples=500, deadline=None, derandomize=True)
@given(st.lists(st.dictionaries(texts, values, max_size=5), max_size=3))
def test_output_is_byte_identical_to_the_reference_emitter(objects):
    from emit_reference import to_yaml as reference

    assert to_yaml(objects) == reference(objects)


def test_shared_entries_at_several_depths_and_streaming_match_the_reference():
    """The cached paths: one flat entry object in lists at two indentations, repeated strings, multi-line values
    at two depths, and output big enough to be written in many pieces."""
    from emit_reference import to_yaml as reference

    entry = {"name": "PAI_X", "value": "a: b"}
    nested = {"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}
    block = {"name": "CMD", "value": "echo 1\necho 2\n"}
    env = [entry, nested, block] * 3000
    objects = [{"kind": "A", "env": env, "deeper": {"containers": [{"env": env}, {"env": [entry, 1, None, []]}]}},
               {"kind": "B", "env": env}]
    pieces: list[str] = []
    from paictl.compiler.emit import write_yaml

    write_yaml(objects, pieces.append)
    assert len(pieces) > 2 and "".join(pieces) == reference(objects) == to_yaml(objects)


def test_strings_that_look_like_other_things_are_quoted():
    values = ["0o17", "1e3", "yes", "on", "null", "~", "2020-01-01", "0x1F", ".inf", "12", "1.5", "true", ""]
    text = to_yaml([{"v": values}])
    assert all(line.lstrip("- ").startswith(("'", '"')) for line in text.splitlines()[2:])


def test_shared_objects_are_written_out_not_aliased():
    shared = {"a": 1}
    assert "&" not in to_yaml([{"x": shared, "y": shared}])


def test_multiline_strings_are_literal_blocks_and_documents_are_separated():
    text = to_yaml([{"kind": "A", "cmd": "echo 1\necho 2"}, {"kind": "B"}])
    assert text == "---\nkind: A\ncmd: |-\n  echo 1\n  echo 2\n---\nkind: B\n"


def test_json_is_a_kubectl_list():
    assert json.loads(to_json_list([{"kind": "A"}])) == {"apiVersion": "v1", "kind": "List", "items": [{"kind": "A"}]}


def test_write_files_one_per_object_or_none(tmp_path):
    objects = [{"kind": "Secret", "metadata": {"name": "s"}}, {"kind": "Framework", "metadata": {"name": "f"}}]
    written = write_files(objects, tmp_path / "out")
    assert [p.name for p in written] == ["secret-s.yaml", "framework-f.yaml"]
    assert file_name(objects[1]) == "framework-f.yaml"
    with pytest.raises(ValueError):
        write_files(objects + objects[:1], tmp_path / "dupes")
    assert not (tmp_path / "dupes").exists()


def test_characters_outside_yamls_printable_set_are_escaped():
    """U+FFFE and U+FFFF may appear in a job's strings; a YAML reader refuses them raw, even inside quotes."""
    from ruamel.yaml import YAML

    text = to_yaml([{"\ufffe": None, "value": "x\uffffy", "lines": "a\n\ufffe\n"}])
    assert "\ufffe" not in text and "\uffff" not in text
    assert YAML(typ="safe").load(text) == {"\ufffe": None, "value": "x\uffffy", "lines": "a\n\ufffe\n"}


def _instant(value):
    """A read-back timestamp as an aware UTC datetime (PyYAML keeps the zone, ruamel drops it for `Z`)."""
    import datetime

    if isinstance(value, datetime.datetime) and value.tzinfo is None:
        return value.replace(tzinfo=datetime.timezone.utc)
    if isinstance(value, dict):
        return {k: _instant(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_instant(v) for v in value]
    return value


instants = st.datetimes(min_value=__import__("datetime").datetime(1, 1, 1),
                        timezones=st.just(__import__("datetime").timezone.utc)).map(
    lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000))
document_values = st.recursive(
    st.one_of(values, st.floats(allow_nan=False), instants),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(texts, inner, max_size=3)), max_leaves=10)


@settings(max_examples=500, deadline=None, derandomize=True)
@given(st.dictionaries(texts, document_values, max_size=5))
def test_a_document_with_floats_and_instants_reads_back_in_yaml_1_1_and_1_2(data):
    """`to_yaml_document` writes a job's secrets (read by the runtime's YAML 1.1 reader) and the masked job: every
    float, including exponents and infinities, and every instant must read back as itself."""
    import yaml
    from ruamel.yaml import YAML

    text = to_yaml_document(data)
    assert not text.startswith("---")
    assert _instant(YAML(typ="safe", pure=True).load(text)) == data
    assert _instant(yaml.safe_load(text)) == data


def test_floats_are_written_for_yaml_1_1_readers_and_nan_reads_back_as_nan():
    import math

    import yaml

    text = to_yaml_document({"big": 1e16, "small": 1.5e-07, "one": 1.0, "low": float("-inf"), "none": float("nan")})
    assert text == "big: 1.0e+16\nsmall: 1.5e-07\none: 1.0\nlow: -.inf\nnone: .nan\n"
    assert math.isnan(yaml.safe_load(text)["none"])


def test_a_document_keeps_keys_as_strings_and_an_empty_one_is_a_mapping():
    import yaml

    assert to_yaml_document({1: "a", 2.5: "b"}) == '"1": a\n"2.5": b\n'
    assert yaml.safe_load(to_yaml_document({})) == {}
