"""Listing and pulling mean the same on every target, and show what is there: an empty tag is refused (the server
ignored it and listed everything, a local index listed nothing), invisible characters in names are escaped, and a
stored job that is not YAML is pulled with a warning."""

from __future__ import annotations

import json

import pytest

from marketplace_helpers import write_item


@pytest.mark.parametrize("option", ["--tag", "--category"])
def test_an_empty_tag_or_category_is_refused_before_anything_is_read(tmp_path, run_cli, option):
    code, out, err = run_cli("marketplace", "list", "--from", str(tmp_path / "nowhere"), option, "")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and f"{option} ''" in err


def test_a_name_with_a_zero_width_space_is_escaped_in_the_listing(tmp_path, run_cli):
    index = str(tmp_path / "index")
    for name in ("tiny", "ti\u200bny"):
        item = write_item(tmp_path / name.encode("unicode_escape").decode(), json.dumps(name))
        assert run_cli("marketplace", "publish", str(item), "--to", index)[0] == 0
    code, out, _ = run_cli("marketplace", "list", "--from", index, "-o", "name")
    assert code == 0
    assert sorted(out.split()) == ["ti\\u200bny", "tiny"]
    code, out, _ = run_cli("marketplace", "list", "--from", index)
    assert "\u200b" not in out and "ti\\u200bny" in out
    code, out, _ = run_cli("marketplace", "list", "--from", index, "-o", "json")
    assert sorted(r["name"] for r in json.loads(out)) == sorted(["ti\u200bny", "tiny"])  # JSON keeps the data


def test_pulling_a_stored_job_that_is_not_yaml_warns_and_prints_it_as_stored(tmp_path, run_cli):
    index = tmp_path / "index"
    assert run_cli("marketplace", "publish", str(write_item(tmp_path / "i", "broken")), "--to", str(index))[0] == 0
    stored = next((index / "items").iterdir())
    document = json.loads(stored.read_text())
    document["protocol"] = "name: [unclosed\n"
    stored.write_text(json.dumps(document))
    code, out, err = run_cli("marketplace", "pull", "broken", "--from", str(index))
    assert code == 0 and out == "name: [unclosed\n"
    assert err.startswith("paictl: warning: the job of item 'broken' is not a YAML job (line ")
    assert err.count("\n") == 1


def test_pulling_a_yaml_job_prints_no_warning(tmp_path, run_cli):
    index = tmp_path / "index"
    assert run_cli("marketplace", "publish", str(write_item(tmp_path / "i", "fine")), "--to", str(index))[0] == 0
    code, out, err = run_cli("marketplace", "pull", "fine", "--from", str(index))
    assert code == 0 and "echo hello" in out and err == ""
