"""The local index target: publish, update, list, search and pull round-trip; concurrent publishers lose nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from marketplace_helpers import EXAMPLE_ITEMS, ROOT, paictl, write_item

from paictl.marketplace.checking import check_item_file

EXAMPLES = [EXAMPLE_ITEMS / "text-classifier" / "item.yaml", EXAMPLE_ITEMS / "queue-smoke-test.yaml",
            EXAMPLE_ITEMS / "street-signs-data.yaml"]


def names(run_cli, *args: str) -> list[str]:
    code, out, err = run_cli("marketplace", *args, "-o", "json")
    assert code == 0, err
    return [record["name"] for record in json.loads(out)]


def test_publish_list_search_pull_round_trip(tmp_path, run_cli):
    index = str(tmp_path / "index")
    code, out, _ = run_cli("marketplace", "publish", *map(str, EXAMPLES), "--to", index)
    assert code == 0
    assert [line.split()[0] for line in out.splitlines()] == ["created"] * 3

    assert names(run_cli, "list", "--from", index) == ["queue-smoke-test", "street-signs-dataset",
                                                       "text-classifier-finetune"]
    assert names(run_cli, "list", "--from", index, "--type", "data") == ["street-signs-dataset"]
    assert names(run_cli, "list", "--from", index, "--type", "all") == names(run_cli, "list", "--from", index)
    assert names(run_cli, "list", "--from", index, "--tag", "pytorch", "--tag", "fine-tuning") == [
        "text-classifier-finetune"]
    assert names(run_cli, "list", "--from", index, "--tag", "pytorch", "--tag", "images") == []
    assert names(run_cli, "list", "--from", index, "--category", "vision") == []
    categorised = write_item(tmp_path / "categorised", "categorised", extra="categories: [vision, tools]\n")
    assert run_cli("marketplace", "publish", str(categorised), "--to", index)[0] == 0
    assert names(run_cli, "list", "--from", index, "--category", "vision") == ["categorised"]
    assert names(run_cli, "list", "--from", index, "--category", "vision", "--category", "nlp") == []
    assert names(run_cli, "search", "VIRTUAL CLUSTER", "--from", index) == ["queue-smoke-test"]
    assert names(run_cli, "search", "ALICE", "--from", index, "--type", "template") == [
        "categorised", "queue-smoke-test", "text-classifier-finetune"]
    assert names(run_cli, "list", "--from", index, "--author", "Alice") == []  # exact, as the server

    job = tmp_path / "pulled.yaml"
    code, out, _ = run_cli("marketplace", "pull", "text-classifier-finetune", "--from", index, "--output-file", str(job))
    assert code == 0 and job.read_text() == (EXAMPLES[0].parent / "job.yaml").read_text()
    assert paictl("validate", "--strict", str(job)).returncode == 0
    compiled = paictl("compile", str(job))
    assert compiled.returncode == 0 and "kind: Framework" in compiled.stdout

    whole = tmp_path / "pulled-item.yaml"
    code, _, _ = run_cli("marketplace", "pull", "street-signs-dataset", "--from", index, "--item", "--output-file", str(whole))
    check = check_item_file(whole)
    assert code == 0 and check.result.diagnostics == () and check.item == check_item_file(EXAMPLES[2]).item


def test_publishing_again_updates_in_place(tmp_path, run_cli):
    index = tmp_path / "index"
    item = write_item(tmp_path / "item", "evolving", extra="tags: [one]\n")
    code, out, _ = run_cli("marketplace", "publish", str(item), "--to", str(index), "-o", "json")
    first = json.loads(out)
    item.write_text(item.read_text().replace("tags: [one]", "tags: [two]"))
    code, out, _ = run_cli("marketplace", "publish", str(item), "--to", str(index), "--format", "json")
    second = json.loads(out)  # --format: the alias of -o
    assert (first["action"], second["action"]) == ("created", "updated") and first["id"] == second["id"]
    entries = json.loads((index / "index.json").read_text())["items"]
    assert [(e["name"], e["tags"]) for e in entries] == [("evolving", ["two"])]
    assert len(list((index / "items").iterdir())) == 1
    assert names(run_cli, "list", "--from", str(index), "--tag", "one") == []


def test_a_name_used_by_two_authors_needs_author_to_pull(tmp_path, run_cli):
    index = str(tmp_path / "index")
    for author in ("alice", "bob"):
        item = write_item(tmp_path / author, "shared-name", author=author)
        assert run_cli("marketplace", "publish", str(item), "--to", index)[0] == 0
    code, _, err = run_cli("marketplace", "pull", "shared-name", "--from", index)
    assert code == 2 and "authors: alice, bob" in err and "--author" in err
    code, out, _ = run_cli("marketplace", "pull", "shared-name", "--from", index, "--author", "bob", "-o", "json")
    assert code == 0 and json.loads(out)["author"] == "bob"
    code, _, err = run_cli("marketplace", "pull", "nobody", "--from", index)
    assert code == 3 and err.count("\n") == 1 and "no item named 'nobody'" in err


def test_reading_a_missing_or_foreign_index(tmp_path, run_cli):
    code, _, err = run_cli("marketplace", "list", "--from", str(tmp_path / "none"))
    assert code == 2 and "no marketplace index here" in err
    (tmp_path / "index.json").write_text("[1, 2")
    code, _, err = run_cli("marketplace", "list", "--from", str(tmp_path))
    assert code == 2 and "not a paictl marketplace index" in err and err.count("\n") == 1


PUBLISHER = """
import sys
from paictl.marketplace.item import Item
from paictl.marketplace.local_index import LocalIndex
from paictl.marketplace.targets import publish
job = open(sys.argv[3]).read()
index = LocalIndex(sys.argv[1])
worker = sys.argv[2]
for number in range(50):
    publish(index, Item(name=f"item-{worker}-{number:02d}", author=f"user{worker}", type="template", protocol=job,
                        tags=(f"w{worker}",), summary=f"number {number}"))
    publish(index, Item(name="contended", author="everyone", type="template", protocol=job, summary=worker))
"""

READER = """
import json, sys, time, pathlib
path = pathlib.Path(sys.argv[1]) / "index.json"
reads = 0
deadline = time.monotonic() + 600
while not pathlib.Path(sys.argv[2]).exists() and time.monotonic() < deadline:
    if path.exists():
        json.loads(path.read_text())  # a half-written file would not parse
        reads += 1
    time.sleep(0.005)
print(reads)
"""


def test_eight_processes_publishing_fifty_items_each_lose_nothing(tmp_path):
    index = tmp_path / "index"
    job = tmp_path / "job.yaml"
    job.write_text((EXAMPLE_ITEMS / "text-classifier" / "job.yaml").read_text())
    done_flag = tmp_path / "done"
    reader = subprocess.Popen([sys.executable, "-c", READER, str(index), str(done_flag)], stdout=subprocess.PIPE,
                              text=True, cwd=ROOT)
    publishers = [subprocess.Popen([sys.executable, "-c", PUBLISHER, str(index), str(worker), str(job)],
                                   stderr=subprocess.PIPE, text=True, cwd=ROOT) for worker in range(8)]
    failures = [p.communicate(timeout=600)[1] for p in publishers if p.wait(timeout=600) != 0]
    done_flag.touch()
    reads = reader.communicate(timeout=60)[0]
    assert failures == [] and reader.returncode == 0 and int(reads) > 0

    entries = json.loads((index / "index.json").read_text())["items"]
    expected = {(f"user{w}", f"item-{w}-{n:02d}") for w in range(8) for n in range(50)} | {("everyone", "contended")}
    assert {(e["author"], e["name"]) for e in entries} == expected and len(entries) == 401
    for entry in entries:
        stored = json.loads((index / entry["file"]).read_text())
        assert (stored["name"], stored["author"], stored["summary"]) == (entry["name"], entry["author"],
                                                                         entry["summary"])
    assert sorted(p.name for p in (index / "items").iterdir() if not p.name.endswith(".json")) == []
    assert sorted(p.name for p in index.iterdir()) == [".lock", "index.json", "items"]
    assert len(list((index / "items").iterdir())) == 401
