"""Every name the item schema allows makes a local index the next command can read: the writer's file names and the
reader's check follow one rule (local_index.ITEM_FILE). `a..b` once made a file name the reader refused, and every
command on the folder then failed until index.json was edited by hand."""

from __future__ import annotations

import json

import pytest

from marketplace_helpers import write_item

from paictl.marketplace.local_index import ITEM_FILE, item_file

NAMES = ["a..b", "../up", "x/../y", "..", "...", "./.", "é..ü", "a" * 200 + "..", "-.-..-", "tab\tname"]


@pytest.mark.parametrize("name", NAMES)
def test_every_allowed_name_gives_a_file_the_reader_accepts(name):
    assert ITEM_FILE.fullmatch(item_file("alice", name))
    assert ITEM_FILE.fullmatch(item_file(name, "x"))


@pytest.mark.parametrize("name", ["a..b", "../up", "x/../y"])
def test_publish_then_list_and_pull_an_item_with_dots_and_slashes_in_its_name(tmp_path, run_cli, name):
    index = tmp_path / "index"
    item = write_item(tmp_path / "item", json.dumps(name))
    code, out, err = run_cli("marketplace", "publish", str(item), "--to", str(index))
    assert code == 0, err
    assert out.split()[0] == "created"
    code, out, err = run_cli("marketplace", "list", "--from", str(index), "-o", "json")
    assert code == 0, err
    assert [record["name"] for record in json.loads(out)] == [name]
    code, out, err = run_cli("marketplace", "pull", name, "--from", str(index))
    assert code == 0, err
    assert "echo hello" in out
    files = [entry["file"] for entry in json.loads((index / "index.json").read_text())["items"]]
    assert all((index / file).resolve().parent == (index / "items").resolve() for file in files)


def test_an_index_the_old_writer_left_with_dots_in_a_file_name_reads_and_takes_the_next_publish(tmp_path, run_cli):
    index = tmp_path / "index"
    first = write_item(tmp_path / "first", "a..b")
    assert run_cli("marketplace", "publish", str(first), "--to", str(index))[0] == 0
    data = json.loads((index / "index.json").read_text())
    entry = data["items"][0]
    old = "items/alice--a..b-0123456789abcdef.json"  # what the old writer named it: `..` kept
    (index / entry["file"]).rename(index / old)
    entry["file"] = old
    (index / "index.json").write_text(json.dumps(data))

    code, out, err = run_cli("marketplace", "list", "--from", str(index), "-o", "json")
    assert code == 0, err
    assert [record["name"] for record in json.loads(out)] == ["a..b"]
    second = write_item(tmp_path / "second", "other")
    code, out, err = run_cli("marketplace", "publish", str(second), "--to", str(index))
    assert code == 0, err
    code, out, err = run_cli("marketplace", "pull", "a..b", "--from", str(index))
    assert code == 0 and "echo hello" in out, err


def test_a_file_outside_items_is_still_refused(tmp_path, run_cli):
    index = tmp_path / "index"
    assert run_cli("marketplace", "publish", str(write_item(tmp_path / "i", "ok")), "--to", str(index))[0] == 0
    data = json.loads((index / "index.json").read_text())
    data["items"][0]["file"] = "items/../../outside.json"
    (index / "index.json").write_text(json.dumps(data))
    code, _, err = run_cli("marketplace", "list", "--from", str(index))
    assert code == 2 and "items[0]" in err
