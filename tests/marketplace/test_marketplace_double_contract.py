"""The marketplace double against the unchanged server's recordings: every recorded request is sent to the double,
and its answer must be the recorded one (status, the kept headers, the body), run-dependent fields aside.

The recordings (`../shared/reference/recordings/marketplace`, README.md there) are one session against one server,
split into files by flow; the flows share state (the item `item-crud` creates is tagged in `tags`, linked in
`categories`, edited by the admin in `item-admin`...). `SESSION` is that session's order, read from the
recordings' timestamps: each file's test replays the session up to that file's last exchange on a fresh double,
compares that file's exchanges in full and the others' status. What varies from run to run:
- ids: the double is given the recorded ids, in creation order, as the ids it mints (`new_id`), so paths, bodies
  and the id-ordered listings compare exactly (a double that creates one row too many or too few fails);
- timestamps (`createdAt`, `updatedAt`): masked; they have one length, so the etag's length part still compares;
- tokens: `<TOKEN:user>` placeholders become tokens of the double's identity provider (alice and bob ordinary users
  of group `default`, admin an admin, `alice-app` an application token of alice, revoked where the session
  revoked it);
- elided texts: a request's elided string is sent in full (`x` * 150000); the double's answer is elided by the
  same rule before comparing; an etag over a body holding upstream's shortened seed texts compares by form only.
"""

from __future__ import annotations

import http.client
import json
import re
from pathlib import Path
from typing import Any

import pytest
from marketplace_double import MarketplaceDouble
from marketplace_double.express import etag

ROOT = Path(__file__).resolve().parents[2]
RECORDINGS = ROOT.parent / "shared" / "reference" / "recordings" / "marketplace"
KEPT_HEADERS = ("content-type", "etag", "retry-after", "location", "content-range")
TIMESTAMPS = ("createdAt", "updatedAt")
ELIDED = re.compile(r"^(.{40})\.\.\.<(\d+) characters in all>$", re.S)
REVOKE = "revoke alice-app"

#: The recorded session in the order it ran: (file, first line, end line), or an action between exchanges.
SESSION: list[tuple[str, int, int] | str] = [
    ("items-list", 0, 10),
    ("item-crud", 0, 18),
    ("tags", 0, 16),
    ("categories", 0, 14),
    ("item-admin", 0, 5),
    ("item-visibility", 0, 7),
    ("body-limit", 0, 2),
    ("auth-errors", 0, 5),
    REVOKE,  # OpenPAI's DELETE /api/v2/tokens/<alice-app> (not a marketplace exchange)
    ("auth-errors", 5, 9),
    ("item-crud", 18, 21),  # deleting the item the other flows used, last
]

pytestmark = pytest.mark.skipif(not RECORDINGS.is_dir(), reason="../shared/reference/recordings is not beside "
                                                                 "this checkout")


def recording(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (RECORDINGS / f"{name}.jsonl").read_text().splitlines() if line.strip()]


def files() -> list[str]:
    return sorted(path.stem for path in RECORDINGS.glob("*.jsonl")) if RECORDINGS.is_dir() else []


def test_the_session_order_replays_every_recorded_exchange_once():
    replayed = [(step[0], line) for step in SESSION if isinstance(step, tuple) for line in range(step[1], step[2])]
    recorded = [(name, line) for name in files() for line in range(len(recording(name)))]
    assert len(recorded) == 84 and sorted(replayed) == sorted(recorded)


# -- what the replay compares --------------------------------------------------------------------------------------

def expanded(value: Any) -> Any:
    """A request's elided string in full: the recordings shorten only runs of one character in requests."""
    if isinstance(value, dict):
        return {key: expanded(item) for key, item in value.items()}
    if isinstance(value, list):
        return [expanded(item) for item in value]
    if isinstance(value, str) and (match := ELIDED.match(value)) and len(set(match.group(1))) == 1:
        return match.group(1)[0] * int(match.group(2))
    return value


def comparable(value: Any) -> Any:
    """Timestamps masked; strings over 20,000 characters shortened as the recordings shorten them."""
    if isinstance(value, dict):
        return {key: "<time>" if key in TIMESTAMPS and isinstance(item, str) else comparable(item)
                for key, item in value.items()}
    if isinstance(value, list):
        return [comparable(item) for item in value]
    if isinstance(value, str) and len(value) > 20_000:
        return f"{value[:40]}...<{len(value)} characters in all>"
    return value


def holds_seed_texts(value: Any) -> bool:
    """Whether a recorded body holds upstream's seed items, whose long texts the recordings shortened."""
    return "OpenPAI" in json.dumps(value)


def differences(exchange: dict[str, Any], status: int, headers: dict[str, str], payload: bytes) -> list[str]:
    """How the double's answer differs from the recorded one (empty: it does not)."""
    expected = exchange["response"]
    found = []
    if status != expected["status"]:
        found.append(f"status {status}, recorded {expected['status']}")
    for name in KEPT_HEADERS:
        if name != "etag" and headers.get(name) != expected["headers"].get(name):
            found.append(f"{name} {headers.get(name)!r}, recorded {expected['headers'].get(name)!r}")
    recorded_tag, tag = expected["headers"].get("etag"), headers.get("etag")
    if (recorded_tag is None) != (tag is None):
        found.append(f"etag {tag!r}, recorded {recorded_tag!r}")
    elif tag is not None and tag != etag(payload):
        found.append(f"etag {tag!r} is not the body's ({etag(payload)!r})")
    elif tag is not None and not holds_seed_texts(expected["body"]):
        # the same length (timestamps and ids have one length), and the very tag when nothing in it varies
        if tag.split("-")[0] != recorded_tag.split("-")[0]:
            found.append(f"etag {tag!r}: a body of another length than the recorded {recorded_tag!r}")
        elif comparable(expected["body"]) == expected["body"] and tag != recorded_tag:
            found.append(f"etag {tag!r}, recorded {recorded_tag!r}")
    text = payload.decode()
    if "json" in (headers.get("content-type") or ""):
        try:
            body = json.loads(text)
        except ValueError:
            return [*found, f"body is not JSON: {text[:200]!r}"]
        if text != json.dumps(body, separators=(",", ":"), ensure_ascii=False):
            found.append("body is not JSON.stringify's text (spaces or escapes)")
        mine = json.dumps(comparable(body), ensure_ascii=False)  # key order counts
        theirs = json.dumps(comparable(expected["body"]), ensure_ascii=False)
        if mine != theirs:
            at = next((i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b), min(len(mine), len(theirs)))
            found.append(f"body differs at {at}: {mine[max(0, at - 80):at + 80]!r} != "
                         f"recorded {theirs[max(0, at - 80):at + 80]!r}")
    elif text != expected["body"]:
        found.append(f"body {text[:300]!r}, recorded {str(expected['body'])[:300]!r}")
    return found


# -- the replay ----------------------------------------------------------------------------------------------------

class Replay:
    """One fresh double, its users, and the recorded session sent to it."""

    def __init__(self, double: MarketplaceDouble):
        self.double = double
        identity = double.identity
        self.tokens = {"alice": identity.add_user("alice", groups=["default"]),
                       "bob": identity.add_user("bob", groups=["default"]),
                       "admin": double.admin_token}
        self.tokens["alice-app"] = identity.token("alice", application=True)
        host, port = double.url.removeprefix("http://").split(":")
        self.connection = http.client.HTTPConnection(host, int(port), timeout=30)

    def send(self, exchange: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        request = exchange["request"]
        headers = {}
        for name, value in request["headers"].items():
            headers[name] = re.sub(r"<TOKEN:([\w-]+)>", lambda m: self.tokens[m.group(1)], value)
        body = request["body"]
        if isinstance(body, (dict, list)):
            payload = json.dumps(expanded(body)).encode()
        else:
            payload = body.encode()
        target = request["path"] + (f"?{request['query']}" if request["query"] else "")
        self.connection.request(request["method"], target, body=payload or None, headers=headers)
        answer = self.connection.getresponse()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()

    def act(self, action: str) -> None:
        assert action == REVOKE
        self.double.identity.revoke(self.tokens["alice-app"])


def recorded_ids() -> list[str]:
    """The ids the server minted, in the session's order: the `{id}` of each 201 answer."""
    ids = []
    for step in SESSION:
        if isinstance(step, tuple):
            for exchange in recording(step[0])[step[1]:step[2]]:
                if exchange["response"]["status"] == 201:
                    ids.append(exchange["response"]["body"]["id"])
    return ids


@pytest.mark.parametrize("name", files())
def test_the_double_answers_as_the_server_did(name):
    minted = iter(recorded_ids())
    last = max(i for i, step in enumerate(SESSION) if isinstance(step, tuple) and step[0] == name)
    problems = []
    with MarketplaceDouble(new_id=lambda: next(minted)) as double:
        replay = Replay(double)
        for step in SESSION[:last + 1]:
            if isinstance(step, str):
                replay.act(step)
                continue
            flow, first, end = step
            for line, exchange in enumerate(recording(flow)[first:end], start=first):
                status, headers, payload = replay.send(exchange)
                where = f"{flow}.jsonl line {line + 1} ({exchange['request']['method']} {exchange['request']['path']})"
                if flow == name:
                    problems += [f"{where}: {problem}" for problem in differences(exchange, status, headers, payload)]
                elif status != exchange["response"]["status"]:  # an earlier flow, run for the state it leaves
                    problems.append(f"{where} (setting up): status {status}, recorded {exchange['response']['status']}")
        replay.connection.close()
    assert problems == []


def test_the_comparison_fails_on_an_answer_that_differs():
    """The checks above can fail: a recorded exchange compared with answers that differ in one thing each."""
    exchange = recording("item-crud")[1]  # GET of alice's new item: 200, JSON, an etag
    payload = json.dumps(exchange["response"]["body"], separators=(",", ":")).encode()
    headers = {"content-type": "application/json; charset=utf-8", "etag": etag(payload)}
    assert differences(exchange, 200, headers, payload) == []
    assert differences(exchange, 201, headers, payload)
    assert differences(exchange, 200, {**headers, "content-type": "text/html; charset=utf-8"}, payload)
    changed = payload.replace(b'"rec-item summary"', b'"rec-item summarY"')
    assert differences(exchange, 200, {**headers, "etag": etag(changed)}, changed)
    reordered = json.dumps(dict(reversed(list(exchange["response"]["body"].items()))), separators=(",", ":")).encode()
    assert differences(exchange, 200, {**headers, "etag": etag(reordered)}, reordered)
    spaced = json.dumps(exchange["response"]["body"]).encode()
    assert differences(exchange, 200, {**headers, "etag": etag(spaced)}, spaced)
    assert differences(exchange, 200, {"content-type": headers["content-type"]}, payload)  # no etag
