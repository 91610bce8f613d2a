"""Publishing to, and reading from, a marketplace server over real HTTP (tests/marketplace_server on 127.0.0.1)."""

from __future__ import annotations

import json
import socket

import httpx
import pytest
from marketplace_helpers import EXAMPLE_ITEMS, VALID_JOB, paictl, write_item
from marketplace_server import MarketplaceTestServer

from paictl.marketplace.checking import check_item_file

EXAMPLES = [EXAMPLE_ITEMS / "text-classifier" / "item.yaml", EXAMPLE_ITEMS / "queue-smoke-test.yaml",
            EXAMPLE_ITEMS / "street-signs-data.yaml"]


@pytest.fixture
def server():
    with MarketplaceTestServer() as running:
        yield running


@pytest.fixture
def alice(server, monkeypatch):
    token = server.add_user("alice", groups=["vision-team"])
    monkeypatch.setenv("PAICTL_MARKETPLACE_TOKEN", token)
    return token


def names(run_cli, *args: str) -> list[str]:
    code, out, err = run_cli("marketplace", *args, "--format", "json")
    assert code == 0, err
    return [record["name"] for record in json.loads(out)]


def test_publish_list_search_pull_round_trip(server, alice, run_cli, tmp_path):
    code, out, err = run_cli("marketplace", "publish", *map(str, EXAMPLES), "--to", server.url)
    assert code == 0, err
    assert [line.split()[0] for line in out.splitlines()] == ["created"] * 3
    assert len(server.requests_with("POST", "/items")) - len(
        [r for r in server.requests_with("POST", "/items/")]) == 3

    everything = names(run_cli, "list", "--from", server.url)
    assert everything == ["queue-smoke-test", "street-signs-dataset", "text-classifier-finetune"]
    assert names(run_cli, "list", "--from", server.url, "--type", "data") == ["street-signs-dataset"]
    assert names(run_cli, "list", "--from", server.url, "--tag", "pytorch") == ["text-classifier-finetune"]
    assert names(run_cli, "list", "--from", server.url, "--tag", "pytorch", "--tag", "fine-tuning") == [
        "text-classifier-finetune"]
    assert names(run_cli, "list", "--from", server.url, "--tag", "pytorch", "--tag", "images") == []
    assert names(run_cli, "list", "--from", server.url, "--category", "vision", "--tag", "images") == [
        "street-signs-dataset"]
    assert names(run_cli, "search", "Virtual Cluster", "--from", server.url) == ["queue-smoke-test"]

    job = tmp_path / "job.yaml"
    code, _, _ = run_cli("marketplace", "pull", "text-classifier-finetune", "--from", server.url, "-o", str(job))
    assert code == 0 and job.read_text() == (EXAMPLES[0].parent / "job.yaml").read_text()
    assert paictl("validate", "--strict", str(job)).returncode == 0
    assert paictl("compile", str(job)).returncode == 0
    whole = tmp_path / "item.yaml"
    code, _, _ = run_cli("marketplace", "pull", "queue-smoke-test", "--from", server.url, "--item", "-o", str(whole))
    assert code == 0 and check_item_file(whole).item == check_item_file(EXAMPLES[1]).item


def test_the_same_list_as_the_local_index(server, alice, run_cli, tmp_path):
    index = str(tmp_path / "index")
    for target in (server.url, index):
        assert run_cli("marketplace", "publish", *map(str, EXAMPLES), "--to", target)[0] == 0
    for filters in ([], ["--type", "template"], ["--tag", "images"], ["--category", "nlp"], ["--keyword", "SMOKE"]):
        from_server = json.loads(run_cli("marketplace", "list", "--from", server.url, *filters, "--format", "json")[1])
        from_index = json.loads(run_cli("marketplace", "list", "--from", index, *filters, "--format", "json")[1])
        strip = [{k: v for k, v in record.items() if k != "id"} for record in from_server]
        assert strip == [{k: v for k, v in record.items() if k != "id"} for record in from_index], filters


def test_publishing_twice_updates_and_relinks_tags(server, alice, run_cli, tmp_path):
    item = write_item(tmp_path, "evolving", extra="tags: [alpha, beta]\ncategories: [tools]\n")
    assert run_cli("marketplace", "publish", str(item), "--to", server.url)[0] == 0
    item.write_text(item.read_text().replace("tags: [alpha, beta]", "tags: [beta, gamma]"))
    code, out, _ = run_cli("marketplace", "publish", str(item), "--to", server.url, "--format", "json")
    (record,) = json.loads(out)
    assert code == 0 and record["action"] == "updated"
    assert len(server.items) == 1 and len(server.requests_with("PUT")) == 1
    assert sorted(t["name"] for t in server.tags.values()) == ["alpha", "beta", "gamma"]  # beta found, not re-made
    assert sorted(server.tags[t]["name"] for _, t in server.item_tags) == ["beta", "gamma"]
    assert names(run_cli, "list", "--from", server.url, "--tag", "gamma") == ["evolving"]
    assert names(run_cli, "list", "--from", server.url, "--tag", "alpha") == []
    other = write_item(tmp_path / "other", "second", extra="tags: [beta]\n")
    assert run_cli("marketplace", "publish", str(other), "--to", server.url)[0] == 0
    assert len(server.tags) == 3 and names(run_cli, "list", "--from", server.url, "--tag", "beta") == [
        "evolving", "second"]


def test_an_item_whose_protocol_turned_invalid_is_refused_before_any_put(server, alice, run_cli, tmp_path):
    item = write_item(tmp_path, "drifting")
    assert run_cli("marketplace", "publish", str(item), "--to", server.url)[0] == 0
    stored = dict(next(iter(server.items.values())))
    item.write_text(item.read_text().replace("dockerImage: base", "dockerImage: missing"))
    code, out, err = run_cli("marketplace", "publish", str(item), "--to", server.url)
    assert code == 1 and out == "" and "E304" in err and f"{item}:" in err
    assert server.requests_with("PUT") == [] and next(iter(server.items.values())) == stored
    # The server alone would have taken it: PUT does not validate.
    response = httpx.put(f"{server.url}/items/{stored['id']}", json={"protocol": "not: [a job"},
                         headers={"Authorization": f"Bearer {alice}"})
    assert (response.status_code, response.text) == (200, "updated")


def test_an_invalid_item_is_never_created(server, alice, run_cli, tmp_path):
    bad = write_item(tmp_path / "bad", "bad", protocol=VALID_JOB.replace("gpu: 0", "gpu: many"))
    good = write_item(tmp_path / "good", "good")
    code, _, err = run_cli("marketplace", "publish", str(good), str(bad), "--to", server.url)
    assert code == 1 and "E203" in err
    assert server.requests == []  # all items are validated before the first request


def test_server_errors_become_one_line_errors(server, run_cli, monkeypatch, tmp_path):
    bob = server.add_user("bob")
    item = write_item(tmp_path, "alices-item")
    code, out, err = run_cli("marketplace", "publish", str(item), "--to", server.url, "--token", bob)
    assert code == 3 and out == ""
    assert err == (f"paictl: error: marketplace {server.url}: POST /items answered 403: You are not allowed to "
                   "create item with author alice\n")
    opaque = server.add_user("carol", token="opaque-token-not-a-jwt")
    code, _, err = run_cli("marketplace", "list", "--from", server.url, "--token", opaque)
    assert code == 3 and err.count("\n") == 1 and "answered 401" in err and "JWT" in err
    code, _, err = run_cli("marketplace", "list", "--from", server.url)
    assert code == 2 and "PAICTL_MARKETPLACE_TOKEN" in err
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    code, _, err = run_cli("marketplace", "list", "--from", closed, "--token", bob)
    assert code == 3 and err.count("\n") == 1 and "cannot reach the server" in err
    code, _, err = run_cli("marketplace", "list", "--from", "ftp://example.org", "--token", bob)
    assert code == 2


def test_items_shared_with_groups_only_are_published_but_not_listed(server, alice, run_cli, tmp_path):
    item = write_item(tmp_path, "team-only", extra="isPublic: false\ngroupList: [vision-team]\n")
    code, _, err = run_cli("marketplace", "publish", str(item), "--to", server.url)
    assert code == 0 and len(server.items) == 1
    assert names(run_cli, "list", "--from", server.url) == []  # the server's groupList/grouplist mix-up


CANARY = "CANARY-7f3b9d"


def test_the_token_never_appears_in_output_or_files(server, tmp_path):
    from marketplace_server import jwt_token

    token = jwt_token({"username": "alice", "note": CANARY}) + CANARY
    server.add_user("alice", token=token)
    wrong = jwt_token({"username": "alice", "note": CANARY}) + CANARY + "-unknown"
    env = {"PAICTL_MARKETPLACE_TOKEN": token}
    runs = [
        paictl("marketplace", "publish", *map(str, EXAMPLES), "--to", server.url, env=env),
        paictl("marketplace", "publish", str(EXAMPLES[0]), "--to", server.url, "--format", "json", env=env),
        paictl("marketplace", "list", "--from", server.url, "--format", "json", env=env),
        paictl("marketplace", "search", "signs", "--from", server.url, env=env),
        paictl("marketplace", "pull", "queue-smoke-test", "--from", server.url, "-o", str(tmp_path / "j.yaml"),
               "--format", "json", env=env),
        paictl("marketplace", "pull", "queue-smoke-test", "--from", server.url, "--item", env=env),
        paictl("marketplace", "list", "--from", server.url, "--token", wrong),
        paictl("marketplace", "publish", str(EXAMPLES[1]), "--to", server.url, "--token", wrong),
        paictl("marketplace", "list", "--from", server.url, "--token", token + "\nsecond line"),
        paictl("marketplace", "pull", "nothing-such", "--from", server.url, env=env),
    ]
    assert [r.returncode for r in runs] == [0, 0, 0, 0, 0, 0, 3, 3, 2, 3]
    for run in runs:
        assert CANARY not in run.stdout + run.stderr and "Traceback" not in run.stderr
    for path in tmp_path.rglob("*"):
        assert not path.is_file() or CANARY.encode() not in path.read_bytes()
    # ...while it did reach the server, in the Authorization header only
    assert all(r.headers.get("Authorization") in (f"Bearer {token}", f"Bearer {wrong}") for r in server.requests)
    assert not any(CANARY.encode() in r.body for r in server.requests)


def test_the_test_server_keeps_the_upstream_quirks(server, alice):
    """The behaviours paictl works around, checked on the test server itself (marketplace-server.md)."""
    headers = {"Authorization": f"Bearer {alice}"}
    created = httpx.post(f"{server.url}/items", headers=headers, json={
        "name": "q", "author": "alice", "type": "template", "protocol": VALID_JOB, "tags": ["t1"]}).json()
    assert httpx.get(f"{server.url}/items", params={"tag": "t1"}, headers=headers).json() == []  # not linked
    first = httpx.post(f"{server.url}/tags", headers=headers, json={"name": "t1"}).json()["id"]
    second = httpx.post(f"{server.url}/tags", headers=headers, json={"name": "t2"}).json()["id"]
    for tag in (first, second):
        assert httpx.post(f"{server.url}/items/{created['id']}/tag/{tag}", headers=headers).text == "added"
    one = httpx.get(f"{server.url}/items", params={"tag": "t1"}, headers=headers).json()
    assert [t["name"] for t in one[0]["ItemTags"]] == ["t1"]  # trimmed to the asked tag
    assert httpx.get(f"{server.url}/items", params={"tag": "t1,t2"}, headers=headers).json() == []
    as_object = httpx.post(f"{server.url}/items", headers=headers, json={
        "name": "q", "author": "alice", "type": "template", "protocol": {"protocolVersion": 2}})
    assert (as_object.status_code, as_object.text) == (400, "The protocol is not valid")
    assert as_object.headers["content-type"].startswith("text/html")
    plain = httpx.post(f"{server.url}/items", headers={**headers, "Content-Type": "text/plain"},
                       content=json.dumps({"author": "alice"}))
    assert (plain.status_code, plain.text) == (400, "Author info is missing in require body")
    assert httpx.put(f"{server.url}/items/nope", headers=headers, json={}).status_code == 500
    admin = server.add_user("root", admin=True)
    assert httpx.put(f"{server.url}/items/nope", headers={"Authorization": f"Bearer {admin}"},
                     json={}).status_code == 404
    assert httpx.get(f"{server.url}/items", headers={"Authorization": "Bearer x"}).status_code == 401


def test_the_library_validates_right_before_each_create_and_update(server, alice):
    """`targets.publish` is the one way to write; it checks the packed item even when no item file was read."""
    import dataclasses

    from paictl.errors import InvalidJobError
    from paictl.marketplace.item import Item
    from paictl.marketplace.targets import open_target, publish

    store = open_target(server.url, alice)
    good = Item(name="library-made", author="alice", type="template", protocol=VALID_JOB)
    assert publish(store, good)[0] == "created"
    before = list(server.requests)
    broken = dataclasses.replace(good, protocol=VALID_JOB.replace("instances: 1", "instances: 0"))
    with pytest.raises(InvalidJobError) as refused:
        publish(store, broken)
    assert server.requests == before and any(d.code == "E206" for d in refused.value.diagnostics)
    with pytest.raises(InvalidJobError):
        publish(store, dataclasses.replace(good, name="", protocol=VALID_JOB))
    assert server.requests == before
