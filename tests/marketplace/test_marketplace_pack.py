"""`paictl marketplace pack`: self-contained, deterministic, and a valid item itself."""

from __future__ import annotations

import json

import yaml as yaml11  # PyYAML: a YAML 1.1 reader, as some of the marketplace's readers are
from marketplace_helpers import EXAMPLE_ITEMS, paictl, write_item

from paictl.marketplace.checking import check_item_file
from paictl.marketplace.yamltext import dump_yaml
from paictl.protocol import validate_text

ITEM_WITH_FILES = EXAMPLE_ITEMS / "text-classifier" / "item.yaml"


def test_pack_inlines_description_and_job_text(run_cli):
    code, out, err = run_cli("marketplace", "pack", "-o", "json", str(ITEM_WITH_FILES))
    assert code == 0 and err == ""
    packed = json.loads(out)
    folder = ITEM_WITH_FILES.parent
    assert packed["description"] == (folder / "README.md").read_text()
    assert packed["protocol"] == (folder / "job.yaml").read_text()
    assert list(packed) == ["name", "author", "type", "source", "isPublic", "isPrivate", "groupList", "categories",
                            "tags", "summary", "description", "protocol"]
    assert (packed["isPublic"], packed["isPrivate"], packed["groupList"]) == (True, False, [])


def test_pack_is_deterministic_and_a_fixpoint(tmp_path):
    first = paictl("marketplace", "pack", str(ITEM_WITH_FILES))
    second = paictl("marketplace", "pack", str(ITEM_WITH_FILES))
    assert first.returncode == 0 and first.stdout == second.stdout
    packed = tmp_path / "packed.yaml"
    packed.write_text(first.stdout)
    assert check_item_file(packed).result.diagnostics == ()
    again = paictl("marketplace", "pack", str(packed))
    assert again.stdout == first.stdout
    as_json = paictl("marketplace", "pack", "--format", "json", str(ITEM_WITH_FILES))
    assert json.loads(as_json.stdout) == {k: v for k, v in yaml11.safe_load(first.stdout).items()}


def test_an_inline_job_mapping_becomes_yaml_text_with_the_same_data(run_cli):
    code, out, _ = run_cli("marketplace", "pack", "--format", "json", str(EXAMPLE_ITEMS / "queue-smoke-test.yaml"))
    protocol = json.loads(out)["protocol"]
    result = validate_text(protocol, "<packed>")
    assert code == 0 and result.ok and result.diagnostics == ()
    item = yaml11.safe_load((EXAMPLE_ITEMS / "queue-smoke-test.yaml").read_text())
    assert result.data == item["protocol"]


def test_pack_writes_a_file_with_o(tmp_path, run_cli):
    target = tmp_path / "out.yaml"
    code, out, _ = run_cli("marketplace", "pack", str(ITEM_WITH_FILES), "--output-file", str(target))
    assert code == 0 and out == ""
    assert target.read_text() == paictl("marketplace", "pack", str(ITEM_WITH_FILES)).stdout
    assert [p.name for p in tmp_path.iterdir()] == ["out.yaml"]


def test_an_invalid_item_is_not_packed(tmp_path, run_cli):
    item = write_item(tmp_path, protocol="protocolVersion: 2\nname: x\ntype: job\n")
    code, out, err = run_cli("marketplace", "pack", str(item), "--output-file", str(tmp_path / "out.yaml"))
    assert code == 1 and out == "" and "E201" in err and not (tmp_path / "out.yaml").exists()


def test_strings_a_yaml_11_reader_would_misread_are_quoted():
    data = {"a": "yes", "b": "on", "c": "1:30", "d": "2020-01-01", "e": "0x1F", "f": "1e3", "g": "~", "h": "=",
            "i": "line one\nline two\n", "j": "  leading blank\nx\n", "k": "tab\there\n", "l": "trailing \nx\n"}
    text = dump_yaml(data)
    assert yaml11.safe_load(text) == data
    assert "i: |\n  line one\n  line two\n" in text
