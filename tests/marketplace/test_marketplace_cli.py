"""The marketplace commands' conventions: `-o` is the format everywhere (never a file), `--output-file` writes,
`--format` is an alias; `marketplace validate DIR` searches folders; the server's rules known at validation."""

from __future__ import annotations

import json

import pytest
import yaml
from marketplace_helpers import EXAMPLE_ITEMS, VALID_JOB, paictl, write_item

from paictl.cli.entry import parse_marketplace_validate

ITEM_WITH_FILES = EXAMPLE_ITEMS / "text-classifier" / "item.yaml"


def test_o_is_the_format_and_never_a_file(tmp_path, run_cli):
    for value in ("json", "yaml"):
        code, out, err = run_cli("marketplace", "pack", str(ITEM_WITH_FILES), "-o", value)
        assert code == 0 and not (tmp_path / value).exists()
        packed = json.loads(out) if value == "json" else yaml.safe_load(out)
        assert packed["name"] == "text-classifier-finetune"
    code, _, err = run_cli("marketplace", "pack", str(ITEM_WITH_FILES), "-o", str(tmp_path / "out.yaml"))
    assert code == 2 and not (tmp_path / "out.yaml").exists()
    code, out, _ = run_cli("marketplace", "pack", str(ITEM_WITH_FILES), "--format", "json")
    assert code == 0 and json.loads(out)["name"] == "text-classifier-finetune"
    code, out, _ = run_cli("marketplace", "pack", str(ITEM_WITH_FILES), "-o", "json", "--output-file",
                           str(tmp_path / "packed.json"))
    assert code == 0 and out == "" and json.loads((tmp_path / "packed.json").read_text())["type"] == "template"


def test_pull_prints_to_standard_output_in_each_format(tmp_path, run_cli):
    index = str(tmp_path / "index")
    assert run_cli("marketplace", "publish", str(ITEM_WITH_FILES), "--to", index)[0] == 0
    code, out, _ = run_cli("marketplace", "pull", "text-classifier-finetune", "--from", index)
    assert code == 0 and out == (ITEM_WITH_FILES.parent / "job.yaml").read_text()
    code, out, _ = run_cli("marketplace", "pull", "text-classifier-finetune", "--from", index, "-o", "json")
    assert code == 0 and json.loads(out)["protocol"] == (ITEM_WITH_FILES.parent / "job.yaml").read_text()
    code, out, _ = run_cli("marketplace", "pull", "text-classifier-finetune", "--from", index, "--item", "-o", "yaml")
    assert code == 0 and yaml.safe_load(out)["author"] == "alice"


def test_list_and_validate_formats(tmp_path, run_cli):
    index = str(tmp_path / "index")
    assert run_cli("marketplace", "publish", str(ITEM_WITH_FILES), "--to", index)[0] == 0
    assert run_cli("marketplace", "list", "--from", index, "-o", "name")[1] == "text-classifier-finetune\n"
    assert yaml.safe_load(run_cli("marketplace", "list", "--from", index, "-o", "yaml")[1])[0]["author"] == "alice"
    code, out, _ = run_cli("marketplace", "validate", str(ITEM_WITH_FILES), "-o", "yaml")
    assert code == 0 and yaml.safe_load(out)["summary"]["files"] == 1
    code, out, _ = run_cli("marketplace", "validate", str(ITEM_WITH_FILES), "-o", "json")
    assert code == 0 and json.loads(out)["results"][0]["valid"] is True


def test_validate_a_folder_searches_it_for_items(tmp_path):
    (tmp_path / "nested" / ".hidden").mkdir(parents=True)
    write_item(tmp_path / "nested", "found", extra="protocol_notes: no\n" if False else "")
    (tmp_path / "nested" / "job.yaml").write_text(VALID_JOB)  # a job beside the items: skipped
    (tmp_path / "nested" / ".hidden" / "item.yaml").write_text("name: [broken")  # hidden folders are skipped
    (tmp_path / "config.yaml").write_text("repos: []\n")  # not an item
    bad = write_item(tmp_path / "bad", "bad", extra="tags: ['a,b']\n")
    run = paictl("marketplace", "validate", str(tmp_path))
    assert run.returncode == 1 and "2 files" in run.stdout and "E883" in run.stdout and str(bad) in run.stdout
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "job.yaml").write_text(VALID_JOB)
    run = paictl("marketplace", "validate", str(empty))
    assert run.returncode == 2 and "no marketplace items in this directory" in run.stderr
    run = paictl("marketplace", "publish", str(tmp_path / "nested"), "--to", str(tmp_path / "index"))
    assert run.returncode == 0 and run.stdout.startswith("created found")


@pytest.mark.parametrize("extra, code", [
    ("tags: ['nlp,english']\n", "E883"),
    ("categories: ['a,b']\n", "E883"),
    ("summary2: x\n", "E202"),
    ('tags: ["evil\\e]0;title\\a"]\n', "E884"),
])
def test_server_rules_are_known_when_validating(tmp_path, run_cli, extra, code):
    item = write_item(tmp_path, "ruled", extra=extra)
    result, out, _ = run_cli("marketplace", "validate", str(item))
    assert result == 1 and code in out


@pytest.mark.parametrize("field", ["name", "author"])
def test_nul_and_control_characters_in_names_are_refused(tmp_path, run_cli, field):
    item = write_item(tmp_path, "named")
    text = item.read_text()
    for bad in ('"na\\0me"', '"na\\x1bme"'):
        item.write_text(text.replace(f"{field}: {'named' if field == 'name' else 'alice'}", f"{field}: {bad}", 1))
        code, out, _ = run_cli("marketplace", "validate", str(item))
        assert code == 1 and "E884" in out, out
        code, _, err = run_cli("marketplace", "publish", str(item), "--to", str(tmp_path / "index"))
        assert code == 1 and "E884" in err and not (tmp_path / "index").exists()


def test_the_fast_path_and_typer_print_the_same(tmp_path):
    bad = write_item(tmp_path / "bad", "bad", extra="tags: ['a,b']\n")
    args = ["marketplace", "validate", str(tmp_path), "-o", "json"]
    assert parse_marketplace_validate(args[1:]) is not None
    fast = paictl(*args)
    slow = paictl(*args[:-2], "--format", "json", "--strict")  # both parse this too; compare the exact output
    typer_run = paictl(*args, env={"_PAICTL_COMPLETE": ""})
    assert fast.stdout == typer_run.stdout and fast.returncode == typer_run.returncode == 1 and str(bad) in fast.stdout
    assert json.loads(slow.stdout)["results"][0]["valid"] is False
    assert parse_marketplace_validate(["validate", "--help"]) is None


@pytest.mark.parametrize("url, said", [
    ("http://[::1", "the marketplace server URL is not a valid http(s) URL"),
    ("https://h:port/", "the marketplace server URL is not a valid http(s) URL"),
    ("http://", "http://: the marketplace server URL names no host"),
])
@pytest.mark.parametrize("command", [("list", "--from"), ("search", "x", "--from"), ("pull", "x", "--from")])
def test_a_server_url_that_says_no_server_is_said_so_before_the_token(run_cli, monkeypatch, url, said, command):
    monkeypatch.delenv("PAICTL_MARKETPLACE_TOKEN", raising=False)
    code, out, err = run_cli("marketplace", *command, url)
    assert (code, out) == (2, "") and err.startswith(f"paictl: error: {said}") and "token" not in err, err
