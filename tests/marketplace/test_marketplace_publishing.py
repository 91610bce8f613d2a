"""Publishing to a marketplace server (the double, tests/marketplace_double) is never left half-done: refusals
before the first write, undo or completion after a failure midway, idempotent links, full replacement, one record
per item as it is done, warnings and --strict, and concurrent publishers that converge on one item."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from marketplace_helpers import ROOT, VALID_JOB, paictl, write_item
from marketplace_double import FaultProxy

pytestmark = pytest.mark.usefixtures("peer")


def publish(run_cli, token: str, target: str, *paths, extra: tuple[str, ...] = ()):
    return run_cli("marketplace", "publish", *map(str, paths), "--to", target, "--token", token, *extra)


def only_probe_written(proxy: FaultProxy) -> bool:
    """Nothing but the admin probe (a PUT of a category that cannot exist, which writes nothing) was sent."""
    return all(method == "PUT" and "/categories/paictl-probe-" in path and status in (403, 404)
               for method, path, status in proxy.writes())


def test_an_ordinary_user_naming_a_new_category_is_refused_before_any_write(peer, run_cli, tmp_path):
    user, token = peer.user("newcat")
    tags_before = peer.count_tags()
    item = write_item(tmp_path, "wants-category", author=user, extra=f"tags: [fresh-{user}]\ncategories: [brand-new]\n")
    with FaultProxy(peer.url) as proxy:
        code, out, err = publish(run_cli, token, proxy.url, item)
        assert only_probe_written(proxy)
    assert code == 3 and out == "" and err.count("\n") == 1
    assert "the category 'brand-new' does not exist on the server, and only a marketplace admin can create" in err
    assert "nothing was written" in err
    assert peer.items_of(user) == [] and peer.count_tags() == tags_before
    item.write_text(item.read_text().replace("categories: [brand-new]", "categories: ['official example']"))
    code, _, err = publish(run_cli, token, peer.url, item)
    assert code == 3 and "only a marketplace admin can put an item in the category 'official example'" in err
    assert peer.items_of(user) == []


def test_other_peoples_items_and_official_examples_are_refused_before_any_write(peer, run_cli, tmp_path):
    alice, alice_token = peer.user("owner")
    bob, bob_token = peer.user("other")
    item = write_item(tmp_path, "owned", author=alice)
    with FaultProxy(peer.url) as proxy:
        code, _, err = publish(run_cli, bob_token, proxy.url, item)
        assert only_probe_written(proxy)
    assert code == 3 and f"the token is {bob}'s" in err and f"author: {bob}" in err
    assert publish(run_cli, alice_token, peer.url, item)[0] == 0
    # an admin puts alice's item in 'official example': from then on only an admin may change it
    admin_item = item.read_text() + ""
    admin_copy = tmp_path / "admin" / "item.yaml"
    admin_copy.parent.mkdir()
    admin_copy.write_text(admin_item.replace("summary:", "categories: ['official example']\nsummary:"))
    assert publish(run_cli, peer.admin_token, peer.url, admin_copy)[0] == 0
    before = peer.items_of(alice)
    with FaultProxy(peer.url) as proxy:
        code, _, err = publish(run_cli, alice_token, proxy.url, item)
        assert only_probe_written(proxy)
    assert code == 3 and "it is in the category 'official example', which only a marketplace admin can change" in err
    assert peer.items_of(alice) == before


def test_a_failure_midway_undoes_what_the_run_created(peer, run_cli, tmp_path):
    user, token = peer.user("undo")
    item = write_item(tmp_path, "half", author=user, extra=f"tags: [one-{user}, two-{user}]\n")
    with FaultProxy(peer.url) as proxy:
        proxy.fail("POST", r"/items/[^/]+/tag/", status=500, body="Database error")
        code, out, err = publish(run_cli, token, proxy.url, item)
    assert code == 3 and err.count("\n") == 1 and "answered 500: Database error" in err
    assert "deleted again: the item it had created" in err
    assert peer.items_of(user) == []
    code, out, err = publish(run_cli, token, peer.url, item)
    assert code == 0 and out.startswith("created half")
    (row,) = peer.items_of(user)
    assert row["linked_tags"] == sorted([f"one-{user}", f"two-{user}"])


def test_when_the_undo_fails_too_the_next_run_completes_the_item(peer, run_cli, tmp_path):
    user, token = peer.user("resume")
    item = write_item(tmp_path, "resumed", author=user, extra=f"tags: [a-{user}, b-{user}]\n")
    with FaultProxy(peer.url) as proxy:
        proxy.fail("POST", r"/items/[^/]+/tag/", status=None)  # the connection drops
        proxy.fail("DELETE", r"/items/", status=None)
        code, _, err = publish(run_cli, token, proxy.url, item)
    assert code == 3 and "undoing failed" in err and "publishing it again completes it" in err
    (half,) = peer.items_of(user)
    assert half["linked_tags"] != sorted([f"a-{user}", f"b-{user}"])
    code, out, err = publish(run_cli, token, peer.url, item)
    assert code == 0 and out.startswith("updated resumed"), err
    (row,) = peer.items_of(user)
    assert row["id"] == half["id"] and row["linked_tags"] == sorted([f"a-{user}", f"b-{user}"])


def test_an_update_that_fails_midway_is_completed_by_the_next_run(peer, run_cli, tmp_path):
    user, token = peer.user("update")
    item = write_item(tmp_path, "updated", author=user, extra=f"tags: [old-{user}]\n")
    assert publish(run_cli, token, peer.url, item)[0] == 0
    item.write_text(item.read_text().replace(f"old-{user}", f"new-{user}"))
    with FaultProxy(peer.url) as proxy:
        proxy.fail("POST", r"/items/[^/]+/tag/", status=500)
        code, _, err = publish(run_cli, token, proxy.url, item)
    assert code == 3 and "may be partly updated: publishing it again completes it" in err
    assert publish(run_cli, token, peer.url, item)[0] == 0
    (row,) = peer.items_of(user)
    assert row["tags"] == [f"new-{user}"] and row["linked_tags"] == [f"new-{user}"]


def test_relinking_a_tag_that_is_already_linked_is_success(peer, run_cli, tmp_path):
    """The server answers 404 to a re-link; a publisher that read the links before a peer linked the tag sends one."""
    import httpx

    user, token = peer.user("relink")
    item = write_item(tmp_path, "relinked", author=user, extra=f"tags: [x-{user}]\n")
    assert publish(run_cli, token, peer.url, item)[0] == 0
    item.write_text(item.read_text().replace("A tiny job", "A tinier job"))
    listing = httpx.get(f"{peer.url}/items", params={"name": "relinked", "author": user},
                        headers={"Authorization": f"Bearer {token}"}).json()
    stale = json.dumps([{**listed, "ItemTags": []} for listed in listing])
    with FaultProxy(peer.url) as proxy:
        # the listing before writing shows no tag linked, as it would have a moment before a peer linked it
        proxy.fail("GET", r"^/items\?", status=200, body=stale, content_type="application/json")
        code, out, err = publish(run_cli, token, proxy.url, item)
        relinks = [r for r in proxy.requests if r[0] == "POST" and "/tag/" in r[1]]
    assert code == 0, err
    assert [status for *_, status in relinks] == [404]
    (row,) = peer.items_of(user)
    assert row["summary"] == "A tinier job for tests" and row["linked_tags"] == [f"x-{user}"]


def test_an_update_replaces_every_field(peer, run_cli, tmp_path):
    user, token = peer.user("replace")
    item = tmp_path / "item.yaml"
    text = (f"name: data-set\nauthor: {user}\ntype: data\ndataType: blob\ndataUrl: https://example.org/d\n"
            f"useBlob: true\nsummary: first\ndescription: long text\ntags: [t-{user}]\nprotocol: |\n")
    item.write_text(text + "".join("  " + line + "\n" for line in VALID_JOB.splitlines()))
    assert publish(run_cli, token, peer.url, item)[0] == 0
    item.write_text(f"name: data-set\nauthor: {user}\ntype: template\nprotocol: |\n" +
                    "".join("  " + line + "\n" for line in VALID_JOB.splitlines()))
    code, out, err = publish(run_cli, token, peer.url, item)
    assert code == 0 and out.startswith("updated"), err
    (row,) = peer.items_of(user)
    assert (row["type"], row["dataType"], row["dataUrl"], row["useBlob"]) == ("template", None, None, False)
    assert (row["summary"], row["description"], row["tags"], row["linked_tags"]) == ("", "", [], [])


def test_json_records_are_written_as_each_item_is_done(peer, tmp_path):
    user, token = peer.user("records")
    first = write_item(tmp_path / "first", "first", author=user)
    second = write_item(tmp_path / "second", "second", author=user, extra="categories: [no-such-category]\n")
    third = write_item(tmp_path / "third", "third", author=user)
    env = {"PAICTL_MARKETPLACE_TOKEN": token}
    with FaultProxy(peer.url) as proxy:
        proxy.fail("GET", r"/items\?name=second", status=0, delay=4.0)  # slow: the first record is out before
        process = subprocess.Popen([sys.executable, "-m", "paictl", "marketplace", "publish", str(first), str(second),
                                    str(third), "--to", proxy.url, "-o", "json"], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, env={**_clean_env(), **env}, cwd=ROOT)
        line = process.stdout.readline()
        still_running = process.poll() is None
        rest, err = process.communicate(timeout=120)
    assert still_running and json.loads(line)["action"] == "created"
    records = [json.loads(line)] + [json.loads(text) for text in rest.splitlines()]
    assert [(r["name"], r["action"]) for r in records] == [("first", "created"), ("second", "failed"),
                                                           ("third", "not attempted")]
    assert "no-such-category" in records[1]["error"] and process.returncode == 3
    assert [r["name"] for r in peer.items_of(user)] == ["first"]
    as_yaml = paictl("marketplace", "publish", str(first), "--to", peer.url, "-o", "yaml", env=env)
    assert as_yaml.returncode == 0 and as_yaml.stdout.startswith("---\naction: updated\n")


def _clean_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("PAICTL_")}


def test_publish_shows_warnings_and_strict_refuses_them_before_any_write(peer, run_cli, tmp_path):
    user, token = peer.user("warned", groups=["team"])
    item = write_item(tmp_path, "team-only", author=user, extra="isPublic: false\ngroupList: [team]\n")
    with FaultProxy(peer.url) as proxy:
        code, out, err = publish(run_cli, token, proxy.url, item, extra=("--strict",))
        assert proxy.requests == []
    assert code == 1 and "W881" in err and "--strict" in err and out == ""
    code, out, err = publish(run_cli, token, peer.url, item)
    assert code == 0 and "W881" in err and out.startswith("created")


CONCURRENT = 6


def _publishers(peer, token: str, items) -> list[subprocess.CompletedProcess]:
    env = {**_clean_env(), "PAICTL_MARKETPLACE_TOKEN": token}
    processes = [subprocess.Popen([sys.executable, "-m", "paictl", "marketplace", "publish", str(item), "--to",
                                   peer.url, "-o", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, env=env, cwd=ROOT) for item in items]
    return [(p, *p.communicate(timeout=300)) for p in processes]


@pytest.mark.parametrize("same_content", [True, False], ids=["same content", "different content"])
def test_concurrent_publishers_of_one_new_item_converge(peer, tmp_path, same_content):
    user, token = peer.user("racer")
    items = []
    for number in range(CONCURRENT):
        variant = "" if same_content else f" {number}"
        tags = f"[shared-{user}]" if same_content else f"[shared-{user}, only-{number}-{user}]"
        items.append(write_item(tmp_path / str(number), "raced", author=user, summary=f"racing{variant}",
                                extra=f"tags: {tags}\n"))
    runs = _publishers(peer, token, items)
    assert [(p.returncode, err) for p, _, err in runs] == [(0, "")] * CONCURRENT
    time.sleep(0.5)
    rows = peer.items_of(user)
    assert len(rows) == 1, [(r["id"], r["summary"]) for r in rows]
    (row,) = rows
    assert row["linked_tags"] == sorted(row["tags"])  # the links are those of the content it holds
    if not same_content:
        number = int(row["summary"].split()[-1])
        assert row["tags"] == [f"shared-{user}", f"only-{number}-{user}"]
    ids = {json.loads(out)["id"] for _, out, _ in runs}
    assert row["id"] in ids
