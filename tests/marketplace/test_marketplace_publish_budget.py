"""What publishing costs a marketplace server, counted at the wire (a counting proxy in front of the double, which
answers as the recorded server does): each request is an identity-provider round trip on the server, so a folder of
items must not cost ~15 requests an item. Run-wide facts (tags, categories, admin or not) are read once per run; the
listings before and after writing carry each item's links, so an update costs at most 5 requests an item."""

from __future__ import annotations

import json
import re

from marketplace_double import FaultProxy
from marketplace_helpers import write_item

ITEMS = 10
NAMES = ["a..b", "../up", "x/../y"] + [f"item-{n}" for n in range(ITEMS - 3)]


def publish_folder(run_cli, token, url, folder):
    with FaultProxy(url) as proxy:
        code, out, err = run_cli("marketplace", "publish", str(folder), "--to", proxy.url, "--token", token,
                                 "-o", "json")
        sent = list(proxy.requests)
    assert code == 0, err
    return [json.loads(line) for line in out.splitlines()], sent


def test_a_folder_is_created_and_updated_within_the_request_budget(peer, run_cli, tmp_path):
    user, token = peer.user("budget")
    folder = tmp_path / "items"
    for number, name in enumerate(NAMES):
        write_item(folder / f"i{number}", json.dumps(name), author=user,
                   extra=f"tags: [budget-{number % 3}, shared]\n")
    records, created = publish_folder(run_cli, token, peer.url, folder)
    assert sorted(r["name"] for r in records) == sorted(NAMES)
    assert {r["action"] for r in records} == {"created"}
    # per item: list, POST, two links, list again; per run: tags, categories, the admin probe, new tags (4)
    assert len(created) <= 5 * ITEMS + 3 + 4, created

    for path in folder.rglob("*.yaml"):
        path.write_text(path.read_text().replace("A tiny job", "A renamed job"))
    records, updated = publish_folder(run_cli, token, peer.url, folder)
    assert {r["action"] for r in records} == {"updated"}
    assert len(updated) / ITEMS <= 5, updated
    rows = peer.items_of(user)
    assert sorted(r["name"] for r in rows) == sorted(NAMES)
    assert all(r["summary"] == "A renamed job for tests" for r in rows)
    assert all(sorted(r["linked_tags"]) == sorted(r["tags"]) for r in rows)


def test_an_update_that_changes_the_tags_links_and_unlinks_only_the_difference(peer, run_cli, tmp_path):
    user, token = peer.user("retag")
    item = write_item(tmp_path / "i", "retagged", author=user, extra="tags: [keep, drop]\n")
    publish_folder(run_cli, token, peer.url, item)
    item.write_text(item.read_text().replace("tags: [keep, drop]", "tags: [keep, add]"))
    _, sent = publish_folder(run_cli, token, peer.url, item)
    writes = [(method, re.sub(r"/[0-9a-f-]{36}", "/ID", path)) for method, path, _ in sent
              if method in ("POST", "DELETE")]
    # unlink `drop`, create the tag `add` and link it: nothing else is written
    assert sorted(writes) == [("DELETE", "/items/ID/tag/ID"), ("POST", "/items/ID/tag/ID"), ("POST", "/tags")]
    (row,) = peer.items_of(user)
    assert row["tags"] == ["keep", "add"] and sorted(row["linked_tags"]) == ["add", "keep"]


def test_a_failed_record_names_the_item_left_on_the_server(peer, run_cli, tmp_path):
    user, token = peer.user("leftover")
    item = write_item(tmp_path / "i", "left-over", author=user, extra="tags: [one]\n")
    (first,), _ = publish_folder(run_cli, token, peer.url, item)
    item.write_text(item.read_text().replace("tags: [one]", "tags: [one, two]"))
    with FaultProxy(peer.url) as proxy:
        proxy.fail("POST", r"/items/[^/]+/tag/", status=500)
        code, out, err = run_cli("marketplace", "publish", str(item), "--to", proxy.url, "--token", token,
                                 "-o", "json")
    (record,) = [json.loads(line) for line in out.splitlines()]
    assert code == 3 and record["action"] == "failed"
    assert record["id"] == first["id"]  # the item exists, partly updated: the record says which one
