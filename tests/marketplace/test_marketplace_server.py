"""paictl against the marketplace double (tests/marketplace_double, held to the unchanged server's recordings), as an
admin and as an ordinary user: the README's examples, every list filter, search, pull, every error answer, a server
down, a failing identity provider, a slow server."""

from __future__ import annotations

import json
import socket

import httpx
import pytest
from marketplace_helpers import EXAMPLE_ITEMS, paictl, write_item

from paictl.marketplace.checking import check_item_file

EXAMPLES = [EXAMPLE_ITEMS / "text-classifier" / "item.yaml", EXAMPLE_ITEMS / "queue-smoke-test.yaml",
            EXAMPLE_ITEMS / "street-signs-data.yaml"]


def names(run_cli, *args: str) -> list[str]:
    code, out, err = run_cli("marketplace", *args, "-o", "json")
    assert code == 0, err
    return [record["name"] for record in json.loads(out)]


@pytest.fixture
def alice(peer):
    """The README's author: an ordinary user named alice, with nothing published yet."""
    assert peer.items_of("alice") == []
    return peer.user("alice", exact=True, groups=["team"])[1]


def test_the_readme_examples_publish_as_an_ordinary_user_and_round_trip(peer, alice, run_cli, tmp_path):
    code, out, err = run_cli("marketplace", "publish", *map(str, EXAMPLES), "--to", peer.url, "--token", alice)
    assert code == 0, err
    assert [line.split()[:2] for line in out.splitlines()] == [
        ["created", "text-classifier-finetune"], ["created", "queue-smoke-test"], ["created", "street-signs-dataset"]]
    rows = {row["name"]: row for row in peer.items_of("alice")}
    for path in EXAMPLES:
        item = check_item_file(path).item
        stored = rows[item.name]
        assert {k: stored[k] for k in item.to_document()} == item.to_document()  # what pack makes, stored as is
        assert stored["linked_tags"] == sorted(item.tags) and stored["linked_categories"] == []

    url, token = peer.url, ("--token", alice)
    mine = ("--author", "alice")
    assert names(run_cli, "list", "--from", url, *token, *mine) == [
        "queue-smoke-test", "street-signs-dataset", "text-classifier-finetune"]
    assert names(run_cli, "list", "--from", url, *token, *mine, "--type", "data") == ["street-signs-dataset"]
    assert names(run_cli, "list", "--from", url, *token, *mine, "--type", "all") == names(
        run_cli, "list", "--from", url, *token, *mine)
    assert names(run_cli, "list", "--from", url, *token, "--tag", "pytorch", *mine) == ["text-classifier-finetune"]
    assert names(run_cli, "list", "--from", url, *token, "--tag", "pytorch", "--tag", "fine-tuning", *mine) == [
        "text-classifier-finetune"]  # the server alone answers [] to ?tag=pytorch,fine-tuning
    assert names(run_cli, "list", "--from", url, *token, "--tag", "pytorch", "--tag", "images") == []
    assert names(run_cli, "search", "VIRTUAL CLUSTER", "--from", url, *token) == ["queue-smoke-test"]
    assert names(run_cli, "list", "--from", url, *token, "--keyword", "ALICE", "--type", "template") == [
        "queue-smoke-test", "text-classifier-finetune"]
    assert names(run_cli, "list", "--from", url, *token, "--author", "Alice") == []  # exact
    seeded = names(run_cli, "list", "--from", url, *token, "--category", "official example", "--author", "OpenPAI")
    assert len(seeded) == peer.seeds == 30
    assert names(run_cli, "list", "--from", url, *token, "--category", "official example", "--tag", "PyTorch",
                 "--type", "old") == sorted(r["name"] for r in peer.items_of("OpenPAI")
                                            if r["type"] == "old" and "PyTorch" in r["linked_tags"]) != []

    job = tmp_path / "job.yaml"
    code, _, _ = run_cli("marketplace", "pull", "text-classifier-finetune", "--from", url, *token,
                         "--output-file", str(job))
    assert code == 0 and job.read_text() == (EXAMPLES[0].parent / "job.yaml").read_text()
    assert paictl("validate", "--strict", str(job)).returncode == 0
    assert paictl("compile", str(job)).returncode == 0
    code, out, _ = run_cli("marketplace", "pull", "queue-smoke-test", "--from", url, *token, "--item")
    (tmp_path / "item.yaml").write_text(out)
    assert code == 0 and check_item_file(tmp_path / "item.yaml").item == check_item_file(EXAMPLES[1]).item
    code, out, _ = run_cli("marketplace", "pull", "queue-smoke-test", "--from", url, *token, "-o", "json")
    assert code == 0 and json.loads(out)["id"] == rows["queue-smoke-test"]["id"]

    code, out, err = run_cli("marketplace", "publish", *map(str, EXAMPLES), "--to", url, *token, "-o", "json")
    records = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [r["action"] for r in records] == ["updated"] * 3
    assert {r["id"] for r in records} == {row["id"] for row in rows.values()} and len(peer.items_of("alice")) == 3


def test_the_same_listing_as_the_local_index(peer, alice, run_cli, tmp_path):
    index = str(tmp_path / "index")
    for target in (peer.url, index):
        assert run_cli("marketplace", "publish", *map(str, EXAMPLES), "--to", target, "--token", alice)[0] == 0
    for filters in ([], ["--type", "template"], ["--tag", "images"], ["--tag", "images", "--tag", "dataset"],
                    ["--keyword", "SMOKE"], ["--keyword", "_"], ["--keyword", "%"]):
        code, out, err = run_cli("marketplace", "list", "--from", peer.url, "--token", alice, "--author", "alice",
                                 *filters, "-o", "json")
        assert code == 0, err
        from_index = json.loads(run_cli("marketplace", "list", "--from", index, *filters, "-o", "json")[1])
        strip = [{k: v for k, v in record.items() if k != "id"} for record in json.loads(out)]
        assert strip == [{k: v for k, v in record.items() if k != "id"} for record in from_index], filters


def test_search_is_a_plain_substring_on_the_server_too(peer, run_cli, tmp_path):
    """The server reads `keyword` as a LIKE pattern: `_` alone matched every item. Now each character is itself."""
    user, token = peer.user("searcher")
    for name, summary in (("plain-item", "100% synthetic"), ("under_score", "a_b"), ("back-slash", "C:\\data")):
        item = write_item(tmp_path / name, name, author=user, summary=f"'{summary}'")
        assert run_cli("marketplace", "publish", str(item), "--to", peer.url, "--token", token)[0] == 0
    everyone = ("--from", peer.url, "--token", token)
    assert names(run_cli, "search", "_", *everyone, "--author", user) == ["under_score"]
    assert names(run_cli, "search", "%", *everyone, "--author", user) == ["plain-item"]
    assert names(run_cli, "search", "\\", *everyone, "--author", user) == ["back-slash"]
    assert names(run_cli, "search", "A_B", *everyone) == ["under_score"]
    assert names(run_cli, "search", "covid_", *everyone) == sorted(
        r["name"] for r in peer.items_of("OpenPAI") if "covid_" in r["name"].lower())


def test_an_admin_creates_categories_and_ordinary_users_then_use_them(peer, run_cli, tmp_path):
    admin, admin_token = peer.user("admin", admin=True)
    user, token = peer.user("member")
    category = f"cat-{user}"
    first = write_item(tmp_path / "a", "categorised", author=admin, extra=f"categories: ['{category}']\n")
    code, out, err = run_cli("marketplace", "publish", str(first), "--to", peer.url, "--token", admin_token)
    assert code == 0, err
    assert [r["linked_categories"] for r in peer.items_of(admin)] == [[category]]
    second = write_item(tmp_path / "b", "also-categorised", author=user, extra=f"categories: ['{category}']\n")
    code, out, err = run_cli("marketplace", "publish", str(second), "--to", peer.url, "--token", token)
    assert code == 0, err
    assert names(run_cli, "list", "--from", peer.url, "--token", token, "--category", category) == [
        "also-categorised", "categorised"]
    official = write_item(tmp_path / "c", "admins-example", author=admin, extra="categories: ['official example']\n")
    assert run_cli("marketplace", "publish", str(official), "--to", peer.url, "--token", admin_token)[0] == 0
    assert [r["linked_categories"] for r in peer.items_of(admin) if r["name"] == "admins-example"] == [
        ["official example"]]


def test_server_errors_become_one_line_errors(peer, run_cli, tmp_path):
    alice_name, alice_token = peer.user("alice")
    item = write_item(tmp_path, "alices-item", author=alice_name)
    revoked = peer.user("revoked")[1]
    peer.identity.revoke(revoked)
    code, out, err = run_cli("marketplace", "publish", str(item), "--to", peer.url, "--token", revoked)
    assert code == 3 and out == "" and err.count("\n") == 1 and "answered 401" in err
    opaque = "opaque-token-not-a-jwt"
    code, _, err = run_cli("marketplace", "list", "--from", peer.url, "--token", opaque)
    assert code == 3 and err.count("\n") == 1 and "answered 401" in err and "JWT" in err
    code, _, err = run_cli("marketplace", "list", "--from", peer.url)
    assert code == 2 and "PAICTL_MARKETPLACE_TOKEN" in err
    code, _, err = run_cli("marketplace", "pull", "no-such-item", "--from", peer.url, "--token", alice_token)
    assert code == 3 and err == f"paictl: error: marketplace {peer.url}: no item named 'no-such-item' that this " \
                                "token can see\n"
    # express' HTML 404 page (a URL that is not the API root) is one line with its message
    code, _, err = run_cli("marketplace", "list", "--from", peer.url + "/marketplace/api", "--token", alice_token)
    assert code == 3 and err.count("\n") == 1 and "\\n" not in err and "answered 404: Cannot GET" in err
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    code, _, err = run_cli("marketplace", "publish", str(item), "--to", closed, "--token", alice_token)
    assert code == 3 and err.count("\n") == 1 and "cannot reach the server" in err
    code, _, err = run_cli("marketplace", "list", "--from", "ftp://example.org", "--token", alice_token)
    assert code == 2


def test_an_identity_provider_that_fails_or_is_slow(peer, run_cli, tmp_path):
    from marketplace_double import FaultProxy

    user, token = peer.user("slow")
    item = write_item(tmp_path, "slow-item", author=user)
    asked = peer.identity.calls
    peer.identity.fail(500)  # OpenPAI's rest-server behind the marketplace answers 500 to every call
    try:
        code, _, err = run_cli("marketplace", "publish", str(item), "--to", peer.url, "--token", token)
    finally:
        peer.identity.fail(None)
    assert peer.identity.calls > asked  # the marketplace did ask its IDP
    assert code == 3 and "answered 500: Something wrong with token idp api" in err and err.count("\n") == 1
    assert peer.items_of(user) == []
    peer.identity.fail(401)  # the identity provider refuses the token: the marketplace says 401
    try:
        code, _, err = run_cli("marketplace", "publish", str(item), "--to", peer.url, "--token", token)
    finally:
        peer.identity.fail(None)
    assert code == 3 and "answered 401: Authentication token is missing or invalid" in err and err.count("\n") == 1
    assert peer.items_of(user) == []
    with FaultProxy(peer.url) as proxy:
        proxy.slow(3.0)
        code, _, err = run_cli("marketplace", "list", "--from", proxy.url, "--token", token, "--request-timeout", "0.5")
    assert code == 3 and "timed out" in err and err.count("\n") == 1


def test_a_server_that_never_finishes_its_answer_times_out(peer, run_cli):
    """A byte every 0.1 s keeps every read within any read timeout: --request-timeout bounds the whole answer."""
    import time

    from marketplace_double import FaultProxy

    _, token = peer.user("patient")
    with FaultProxy(peer.url) as proxy:
        proxy.trickle("GET", r"^/items")
        started = time.monotonic()
        code, _, err = run_cli("marketplace", "list", "--from", proxy.url, "--token", token,
                               "--request-timeout", "1")
        took = time.monotonic() - started
    assert code == 3 and err.count("\n") == 1, err
    assert err == (f"paictl: error: marketplace {proxy.url}: GET /items timed out (no answer within 1 s; "
                   "--request-timeout sets the limit)\n")
    assert took < 10  # the deadline plus one read, and the command's own start


def test_the_server_refuses_large_bodies_and_paictl_knows_before_sending(peer, run_cli, tmp_path):
    from paictl.marketplace.server import MarketplaceServer, ServerError

    user, token = peer.user("verbose")
    item = write_item(tmp_path, "big", author=user, extra="description: {file: README.md}\n")
    (tmp_path / "README.md").write_text("# big\n" + "All work and no play. " * 7000)
    code, out, err = run_cli("marketplace", "validate", str(item))
    assert code == 0 and "W883" in out
    code, out, err = run_cli("marketplace", "publish", str(item), "--to", peer.url, "--token", token)
    assert code == 3 and "W883" in err and "up to 102400 bytes" in err and "nothing was written" in err
    assert peer.items_of(user) == []
    code, _, err = run_cli("marketplace", "publish", str(item), "--to", str(tmp_path / "index"))
    assert code == 0 and "W883" in err  # a local index takes it
    server = MarketplaceServer(peer.url, token)
    with pytest.raises(ServerError) as answered:  # the server's own answer, had paictl sent it
        server.call("POST", "/items", body={"author": user, "description": "x" * 150_000})
    assert answered.value.status == 413


CANARY = "CANARY-7f3b9d"


def test_the_token_never_appears_in_output_or_files(peer, tmp_path):
    user, token = peer.user("canary")
    item = write_item(tmp_path, "canary-item", author=user)
    wrong = token[:-4] + CANARY
    env = {"PAICTL_MARKETPLACE_TOKEN": token}
    runs = [
        paictl("marketplace", "publish", str(item), "--to", peer.url, env=env),
        paictl("marketplace", "publish", str(item), "--to", peer.url, "-o", "json", env=env),
        paictl("marketplace", "list", "--from", peer.url, "-o", "json", env=env),
        paictl("marketplace", "pull", "canary-item", "--from", peer.url, "--output-file", str(tmp_path / "j.yaml"),
               env=env),
        paictl("marketplace", "list", "--from", peer.url, "--token", wrong),
        paictl("marketplace", "publish", str(item), "--to", peer.url, "--token", wrong),
        paictl("marketplace", "list", "--from", peer.url, "--token", wrong + "\nsecond line"),
    ]
    assert [r.returncode for r in runs] == [0, 0, 0, 0, 3, 3, 2]
    for run in runs:
        assert CANARY not in run.stdout + run.stderr and token not in run.stdout + run.stderr
        assert "Traceback" not in run.stderr
    for path in tmp_path.rglob("*"):
        assert not path.is_file() or CANARY.encode() not in path.read_bytes()


def test_the_double_has_the_upstream_quirks_paictl_works_around(peer):
    """What the README says the server does, checked on the double (the recordings hold it to the server)."""
    user, token = peer.user("quirks")
    headers = {"Authorization": f"Bearer {token}"}
    job = (EXAMPLE_ITEMS / "text-classifier" / "job.yaml").read_text()
    created = httpx.post(f"{peer.url}/items", headers=headers, json={
        "name": "q", "author": user, "type": "template", "protocol": job, "tags": [f"t-{user}"]}).json()
    assert httpx.get(f"{peer.url}/items", params={"tag": f"t-{user}"}, headers=headers).json() == []  # not linked
    tag = httpx.post(f"{peer.url}/tags", headers=headers, json={"name": f"t-{user}"}).json()["id"]
    link = f"{peer.url}/items/{created['id']}/tag/{tag}"
    assert httpx.post(link, headers=headers).text == "added"
    assert httpx.post(link, headers=headers).status_code == 404  # re-linking
    forbidden = httpx.post(f"{peer.url}/categories", headers=headers, json={"name": "x"})
    assert (forbidden.status_code, forbidden.text) == (403, "The create category is forbidden")
    assert httpx.put(f"{peer.url}/items/nope", headers=headers, json={}).status_code == 500
    admin = {"Authorization": f"Bearer {peer.admin_token}"}
    assert httpx.put(f"{peer.url}/items/nope", headers=admin, json={}).status_code == 404
    assert httpx.put(f"{peer.url}/items/{created['id']}", headers=headers,
                     json={"protocol": "not: [a job"}).text == "updated"  # PUT validates nothing
    assert len(httpx.get(f"{peer.url}/items", params={"keyword": "_"}, headers=headers).json()) >= peer.seeds


def test_every_error_answer_of_the_server_is_one_line(peer):
    """The answers paictl's own checks keep it from causing, caused directly, as the client reports them."""
    from paictl.marketplace.server import MarketplaceServer, ServerError

    user, token = peer.user("errors")
    job = (EXAMPLE_ITEMS / "text-classifier" / "job.yaml").read_text()
    server = MarketplaceServer(peer.url, token)
    cases = [
        ("POST", "/items", {"name": "q", "author": user, "protocol": "not: [a job"}, 400, "The protocol is not valid"),
        ("POST", "/items", {"name": "q", "author": user, "protocol": ""}, 400, "Empty protocol is not allowed"),
        ("POST", "/items", {"name": "q", "protocol": job}, 400, "Author info is missing in require body"),
        ("POST", "/items", {"name": "q", "author": "someone", "protocol": job}, 403,
         "You are not allowed to create item with author someone"),
        ("POST", "/items", {"name": "q", "author": user, "protocol": job, "source": "elsewhere"}, 500,
         "Database error"),
        ("POST", "/categories", {"name": "c"}, 403, "The create category is forbidden"),
        ("GET", "/items/no-such-id", None, 404, "Result not found"),
        ("PUT", "/items/no-such-id", {}, 500, "Unexpected internal error"),
        ("GET", "/no/such/route", None, 404, "Cannot GET /no/such/route"),
    ]
    for method, route, body, status, text in cases:
        with pytest.raises(ServerError) as answered:
            server.call(method, route, body=body)
        message = str(answered.value)
        assert (answered.value.status, answered.value.text) == (status, text), (route, message)
        assert "\n" not in message and message.startswith(f"marketplace {peer.url}: {method} {route} answered {status}")
