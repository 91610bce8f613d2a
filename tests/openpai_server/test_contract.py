"""The OpenPAI double against the real server's recordings (../shared/reference/recordings/openpai): every recorded
request of every file is sent to the double, in order, and its answer compared with the recorded one: the status,
the headers the recordings keep (content-type, etag, retry-after, location, content-range; x-ratelimit-* in
rate-limit.jsonl), and the body, key order included.

Each file is one flow, replayed on a fresh cluster (a default-scheduler server and a HiveD-scheduler server over
the same database) set up as the flow found it: the jobs it reads, in the states it read them. What the real
session's stand-ins did between two requests (FrameworkController writing a job's status, rows written into the
database) is done here through the double's stand-in part (jobs.py `fc_*`, `Cluster.bulk_insert`) before the
request that saw it (`STEPS`). Placeholders are bound to the double's own values: `<TOKEN:user>` to a token the double
issued to that user (a login token is minted when a request needs one before any answer gave one),
`<TOKEN:alice-expired>` / `<TOKEN:alice-forged-unknown>` to JWTs made with the double's secret as the README says,
`<PASSWORD>` to the user's password (a wrong one where the server answered IncorrectPasswordError: the placeholder
hides which was sent), an `If-None-Match` to the ETag the double gave for the recorded one. The run-dependent fields
the README lists are compared by kind only (timestamps: a number or null as recorded; uids, taskUid: strings;
containerPorts: the same keys; the log-manager's host:port; SSH keys; tokens), and an ETag exactly whenever nothing
in its body was masked. Lists the recordings elided are compared as elided: their length, first two and last two.
Skipped when ../shared is not beside the checkout.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from pathlib import Path
from typing import Any, Callable, Optional

import httpx
import pytest

from .accounts import jwt_sign
from .logmanager import jwt_verify
from .server import HIVED_LIMITS, Cluster, OpenPaiServer

RECORDINGS = Path(__file__).resolve().parents[2].parent / "shared" / "reference" / "recordings" / "openpai"
FILES = sorted(p.name for p in RECORDINGS.glob("*.jsonl")) if RECORDINGS.is_dir() else []
HIVED_FILES = {"submit-hived.jsonl", "hived-job.jsonl", "rate-limit.jsonl"}
TIME_KEYS = {"createdTime", "submissionTime", "launchedTime", "completedTime", "currentAttemptCreatedTime",
             "currentAttemptLaunchedTime", "currentAttemptCompletedTime", "appCreatedTime", "appLaunchedTime",
             "appCompletedTime", "jobStartedTime", "attemptStartedTime", "attemptCompletedTime", "iat", "exp"}
UID_KEYS = {"uid", "taskUid"}
KEPT_HEADERS = ("content-type", "etag", "retry-after", "location", "content-range")
PLACEHOLDER = re.compile(r"<(TOKEN:[\w-]+|SSH_PRIVATE_KEY|SSH_PUBLIC_KEY|PASSWORD|JWT_SECRET)>")
LOG_MANAGER = re.compile(r"/log-manager/127\.0\.0\.1:\d+/")
ELIDED = re.compile(r"JSON list of (\d+) elements: the first 2 and the last 2 are kept")

pytestmark = pytest.mark.skipif(not FILES, reason="../shared/reference/recordings/openpai is not beside this checkout")


def load(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (RECORDINGS / name).read_text(encoding="utf-8").splitlines() if line]


@dataclasses.dataclass
class World:
    """One flow's cluster: the default server, the HiveD server, and the placeholders bound so far."""
    default: OpenPaiServer
    hived: OpenPaiServer
    bound: dict[str, str] = dataclasses.field(default_factory=dict)
    etags: dict[str, str] = dataclasses.field(default_factory=dict)   # recorded ETag -> the double's

    @property
    def cluster(self) -> Cluster:
        return self.default.cluster

    def token(self, name: str) -> str:
        if name not in self.bound:
            accounts = self.cluster.accounts
            user = name.split("-")[0]
            if name.endswith("-expired"):
                past = int(time.time()) - 7200
                self.bound[name] = jwt_sign(accounts.secret, {"username": user, "application": False, "iat": past,
                                                              "exp": past + 3600})
            elif name.endswith("-forged-unknown"):
                now = int(time.time())
                self.bound[name] = jwt_sign(accounts.secret, {"username": user, "application": False,
                                                              "iat": now, "exp": now + 3600, "forged": True})
            elif name.endswith("-app"):
                self.bound[name] = accounts.application_token(user)
            else:
                self.bound[name] = accounts.login(user)
        return self.bound[name]

    def submit_recorded(self, name: str, *, user: str = "alice", server: Optional[OpenPaiServer] = None):
        """A job as the recorded session submitted it (its YAML from submit.jsonl), stored without a request."""
        import yaml

        for exchange in load("submit.jsonl") + load("submit-hived.jsonl"):
            body = exchange["request"]["body"]
            if isinstance(body, str) and f"\nname: {name}\n" in body:
                protocol = yaml.safe_load(body)
                vc = (protocol.get("defaults") or {}).get("virtualCluster") or "default"
                return (server or self.default).add_job(user, protocol, virtual_cluster=vc)
        raise AssertionError(f"no recorded submission of {name}")


def pods(prefix: str) -> Callable[[int, str, int], str]:
    """The pod names the recorded session's FrameworkController stand-in gave (they show as `containerId`)."""
    return lambda attempt, role, index: prefix.format(attempt=attempt, role=role, index=index)


def _succeeded(world: World, name: str) -> None:
    job = world.submit_recorded(name)
    job.fc_prepare()
    job.fc_run()
    job.fc_succeed()


def _retried(world: World) -> Any:
    job = world.submit_recorded("st-retry")
    job.fc_prepare(pods("p-a{attempt}-{role}-{index}"))
    job.fc_run()
    return job


def _task_retried(world: World) -> Any:
    job = world.submit_recorded("st-tretry")
    job.fc_prepare(pods("t0-{role}-{index}"))
    job.fc_run()
    job.fc_retry_task("main", 0, 1, pod="t1-main-0")
    return job


def _list_setup(world: World) -> None:
    """The jobs alice had when job-list.jsonl was recorded, oldest first, in the states the list shows."""
    world.submit_recorded("rec-hello")
    world.submit_recorded("rec-vc-default")
    world.submit_recorded("rec-h-ok", server=world.hived)
    _succeeded(world, "st-succ")
    failed = world.submit_recorded("st-fail")
    failed.fc_run()
    failed.fc_fail("main", 0, 231)
    world.submit_recorded("st-wait")
    stopped = world.submit_recorded("st-stop")
    stopped.fc_run()
    stopped.request_stop()
    stopped.fc_stop()
    stopped.fc_finish()
    world.submit_recorded("st-stopwait").request_stop()
    retried = _retried(world)
    retried.fc_fail("main", 0, 1, phrase="PAIRuntimeUnknownFailed", retry=True)
    retried.fc_run()
    retried.fc_succeed()
    _task_retried(world)
    for number, job in enumerate(world.cluster.jobs.values()):
        job.submitted = job.created = job.submitted + number * 1000  # one a second, as they were sent


def _job(world: World, name: str) -> Any:
    return world.cluster.jobs[name]


#: Per file: the setup before its first request, and FrameworkController's (or the database's) moves before the
#: request of the given index.
SETUP: dict[str, Callable[[World], Any]] = {
    "users-admin.jsonl": lambda w: [w.cluster.accounts.users.pop(name) for name in ("alice", "bob")],
    # both application tokens in one second, as recorded (the same JWT twice): the clock held still
    "tokens.jsonl": lambda w: setattr(w.cluster.accounts, "clock", lambda now=time.time(): now),
    "job-succeeded.jsonl": lambda w: w.submit_recorded("st-succ"),
    "job-failed.jsonl": lambda w: w.submit_recorded("st-fail").fc_run(),
    "job-stopped.jsonl": lambda w: (w.submit_recorded("st-stop").fc_run(), w.submit_recorded("st-stopwait")),
    "job-retried.jsonl": _retried,
    "task-retried.jsonl": _task_retried,
    "job-detail-misc.jsonl": lambda w: _succeeded(w, "st-succ"),
    "job-config.jsonl": lambda w: _succeeded(w, "st-succ"),
    "logs.jsonl": lambda w: (_succeeded(w, "st-succ"), w.submit_recorded("st-wait")),
    "job-list.jsonl": _list_setup,
    "job-list-5012.jsonl": lambda w: w.cluster.bulk_insert("dave", 5012),
}
STEPS: dict[str, dict[int, Callable[[World], Any]]] = {
    "job-succeeded.jsonl": {2: lambda w: _job(w, "alice~st-succ").fc_prepare(),
                            3: lambda w: _job(w, "alice~st-succ").fc_run(),
                            5: lambda w: _job(w, "alice~st-succ").fc_succeed()},
    "job-failed.jsonl": {1: lambda w: _job(w, "alice~st-fail").fc_fail("main", 0, 231)},
    "job-stopped.jsonl": {6: lambda w: _job(w, "alice~st-stop").fc_stop(),
                          7: lambda w: _job(w, "alice~st-stop").fc_finish()},
    "job-retried.jsonl": {
        1: lambda w: _job(w, "alice~st-retry").fc_fail("main", 0, 1, phrase="PAIRuntimeUnknownFailed", retry=True),
        2: lambda w: (_job(w, "alice~st-retry").fc_prepare(pods("p-a{attempt}-{role}-{index}")),
                      _job(w, "alice~st-retry").fc_run()),
        3: lambda w: _job(w, "alice~st-retry").fc_succeed()},
    "hived-job.jsonl": {2: lambda w: _job(w, "admin~rec-h-job").fc_run(),
                        3: lambda w: _job(w, "admin~rec-h-job").fc_fail("main", 0, 1)},
    # rec-rl-0 and rec-rl-1 were submitted in one second, rec-rl-2 in the next (the list's order shows it)
    "rate-limit.jsonl": {0: lambda w: setattr(w.cluster, "clock", lambda: 1796164217000),
                         2: lambda w: setattr(w.cluster, "clock", lambda: 1796164218000),
                         8: lambda w: w.hived.limiters["api"].exhaust("127.0.0.1")},
}


class Comparison:
    """Compares a recorded body with the double's, binding placeholders; `differences` lists what differs."""

    def __init__(self, world: World):
        self.world = world
        self.differences: list[str] = []
        self.masked = False

    def differ(self, where: str, recorded: Any, actual: Any) -> None:
        self.differences.append(f"{where or 'body'}: recorded {json.dumps(recorded)[:300]}, "
                                f"double {json.dumps(actual)[:300]}")

    def value(self, recorded: Any, actual: Any, where: str = "", key: str = "") -> None:
        if key in TIME_KEYS and recorded is not None:
            self.masked = True
            if not isinstance(actual, int) or isinstance(actual, bool):
                self.differ(where, recorded, actual)
        elif key in UID_KEYS and isinstance(recorded, str):
            self.masked = True
            if not isinstance(actual, str):
                self.differ(where, recorded, actual)
        elif key == "containerPorts" and isinstance(recorded, dict):
            self.masked = True
            if not isinstance(actual, dict) or list(actual) != list(recorded):
                self.differ(where, recorded, actual)
        elif isinstance(recorded, dict):
            if not isinstance(actual, dict) or list(actual) != list(recorded):
                return self.differ(where + " (keys)", list(recorded), list(actual) if isinstance(actual, dict)
                                   else actual)
            for name, item in recorded.items():
                self.value(item, actual[name], f"{where}.{name}", name)
        elif isinstance(recorded, list):
            if not isinstance(actual, list) or len(actual) != len(recorded):
                return self.differ(where + " (length)", len(recorded), len(actual) if isinstance(actual, list)
                                   else actual)
            for number, (item, other) in enumerate(zip(recorded, actual)):
                self.value(item, other, f"{where}[{number}]")
        elif isinstance(recorded, str) and isinstance(actual, str):
            self.text(recorded, actual, where)
        elif recorded != actual or type(recorded) is not type(actual):
            self.differ(where, recorded, actual)

    def text(self, recorded: str, actual: str, where: str) -> None:
        if LOG_MANAGER.search(recorded):
            self.masked = True
            recorded, actual = LOG_MANAGER.sub("/log-manager/HOST/", recorded), LOG_MANAGER.sub("/log-manager/HOST/",
                                                                                                 actual)
        if not PLACEHOLDER.search(recorded):
            if recorded != actual:
                self.differ(where, recorded, actual)
            return
        self.masked = True
        names: list[str] = []
        pattern, position = "", 0
        for found in PLACEHOLDER.finditer(recorded):
            pattern += re.escape(recorded[position:found.start()])
            names.append(found.group(1))
            pattern += r'([^&\s"]+)' if found.group(1).startswith("TOKEN:") else r"([\s\S]+?)"
            position = found.end()
        pattern += re.escape(recorded[position:])
        match = re.fullmatch(pattern, actual)
        if match is None:
            return self.differ(where, recorded, actual)
        for name, value in zip(names, match.groups()):
            if name.startswith("TOKEN:"):
                self.bind(name[len("TOKEN:"):], value, where)

    def bind(self, name: str, value: str, where: str) -> None:
        """A token placeholder stands for one token; a later login of the same user gives another, equally his."""
        bound = self.world.bound.get(name)
        if bound is None or bound == value:
            self.world.bound[name] = value
            return
        if name == "log-manager":  # any token the log-manager accepts (its tokens carry their second)
            manager = self.world.default.log_manager
            if not jwt_verify(manager.jwt_secret, value, f"log-manager-{manager.node}"):
                self.differ(where, f"<TOKEN:{name}>", value)
        elif value not in self.world.cluster.accounts.tokens.get(name.split("-")[0], []):
            self.differ(where, f"<TOKEN:{name}>", value)


def substitute(world: World, text: str, body: Any = None, answer: Optional[dict[str, Any]] = None) -> str:
    def token(match: re.Match) -> str:
        name = match.group(1)
        if name.startswith("TOKEN:"):
            return world.token(name[len("TOKEN:"):])
        if name == "PASSWORD":
            user = world.cluster.accounts.users.get(str((body or {}).get("username")))
            wrong = answer is not None and "IncorrectPasswordError" in json.dumps(answer.get("body"))
            return "not-the-password" if wrong or user is None else user.password
        raise AssertionError(f"placeholder {name} in a request")

    return PLACEHOLDER.sub(token, text)


def send(world: World, server: OpenPaiServer, request: dict[str, Any], answer: dict[str, Any]) -> httpx.Response:
    headers = {}
    for key, value in request["headers"].items():
        if key == "if-none-match":
            value = world.etags.get(value, value)
        headers[key] = substitute(world, value)
    body = request["body"]
    if isinstance(body, (dict, list)):
        content = substitute(world, json.dumps(body), body, answer).encode()
    else:
        content = substitute(world, body).encode() if body else None
    url = server.url + substitute(world, request["path"]) + (f"?{request['query']}" if request["query"] else "")
    return httpx.request(request["method"], url, headers=headers, content=content, timeout=60)


def compare(world: World, name: str, number: int, exchange: dict[str, Any], reply: httpx.Response) -> list[str]:
    recorded = exchange["response"]
    where = f"{name} #{number} {exchange['request']['method']} {exchange['request']['path']}"
    problems = []
    if reply.status_code != recorded["status"]:
        problems.append(f"status: recorded {recorded['status']}, double {reply.status_code}")
    content_type = reply.headers.get("content-type", "")
    text = reply.text
    actual: Any = text
    if "json" in content_type and text:
        actual = json.loads(text)
    comparison = Comparison(world)
    body = recorded["body"]
    elided = ELIDED.search(str((exchange.get("elided") or {}).get("response", "")))
    if elided:
        count = int(elided.group(1))
        if not isinstance(actual, list) or len(actual) != count:
            problems.append(f"elided list: recorded {count} elements, double "
                            f"{len(actual) if isinstance(actual, list) else actual!r}")
        else:
            comparison.value(body, actual[:2] + actual[-2:])
        comparison.masked = True
    else:
        comparison.value(body, actual)
    problems += comparison.differences
    kept = KEPT_HEADERS + (("x-ratelimit-limit", "x-ratelimit-remaining") if name == "rate-limit.jsonl" else ())
    for header in kept:
        want, got = recorded["headers"].get(header), reply.headers.get(header)
        if header == "etag" and reply.status_code == 304:
            want = world.etags.get(want or "", want)  # the ETag the double gave for the recorded one, sent back
        elif header == "etag" and want is not None and got is not None:
            world.etags[want] = got
            if comparison.masked:
                if not re.fullmatch(r'W/"[0-9a-f]+-[A-Za-z0-9+/]{27}"', got):
                    problems.append(f"etag: {got!r} is not express's weak ETag")
                continue
        if want != got:
            problems.append(f"header {header}: recorded {want!r}, double {got!r}")
    return [f"{where}: {problem}" for problem in problems]


def replay(name: str) -> tuple[int, list[str]]:
    cluster = Cluster()
    with OpenPaiServer(cluster=cluster) as default, \
            OpenPaiServer(cluster=cluster, hived=True, limits=HIVED_LIMITS) as hived:
        world = World(default=default, hived=hived)
        if name in SETUP:
            SETUP[name](world)
        exchanges = load(name)
        problems: list[str] = []
        for number, exchange in enumerate(exchanges):
            if number in STEPS.get(name, {}):
                with cluster.lock:
                    STEPS[name][number](world)
            server = hived if name in HIVED_FILES or (name == "virtual-clusters.jsonl" and number >= 3) else default
            reply = send(world, server, exchange["request"], exchange["response"])
            problems += compare(world, name, number, exchange, reply)
        return len(exchanges), problems


@pytest.mark.parametrize("name", FILES)
def test_the_double_answers_every_recorded_request_as_the_real_server_did(name):
    count, problems = replay(name)
    assert count > 0
    assert not problems, "\n".join(problems)


def test_every_recording_is_replayed():
    assert len(FILES) == 22
    assert sum(len(load(name)) for name in FILES) == 158


def test_the_comparison_fails_when_the_double_answers_differently(monkeypatch):
    """The replay can fail: the 409's wording changed by one character, the comparison says where."""
    from . import server as double

    original = double._error

    def changed(status: int, code: str, message: str):
        return original(status, code, message.replace("already exists.", "already exists!"))

    monkeypatch.setattr(double, "_error", changed)
    _, problems = replay("submit.jsonl")
    assert problems == [
        'submit.jsonl #1 POST /api/v2/jobs: .message: recorded "Job alice~rec-hello already exists.", double '
        '"Job alice~rec-hello already exists!"',
        'submit.jsonl #1 POST /api/v2/jobs: header etag: recorded \'W/"4b-Hl4+0tMHUGYJCEhG4F8OOCmBOPQ"\', double '
        '\'W/"4b-oei5wzpVMA4X5ykpHRE3BD7dBCc"\'']
