"""Emitting objects: YAML that kubectl and any YAML reader read back as exactly the same data, deterministically."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paictl.compiler.emit import file_name, to_json_list, to_yaml, write_files

texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)
values = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), texts),
                      lambda inner: st.one_of(st.lists(inner, max_size=3),
                                              st.dictionaries(texts, inner, max_size=3)), max_leaves=10)


@settings(max_examples=500, deadline=None, derandomize=True)
@given(st.dictionaries(texts, values, max_size=5))
def test_yaml_reads_back_as_the_same_data(obj):
    from ruamel.yaml import YAML

    (document,) = [d for d in YAML(typ="safe", pure=True).load_all(to_yaml([obj]))]
    assert document == obj


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
