"""The OpenPAI REST server double (test code, never shipped), held to recordings/openpai by test_contract.py.

It answers as the unchanged rest-server (microsoft/pai a95d9420) answered in the recordings: routes, status codes,
error codes and messages, body shapes and key order, express's weak ETags (`W/"<length hex>-<sha1 base64>"`) and
304 on `If-None-Match`, the content types (JSON `application/json; charset=utf-8`; `/config` is `text/yaml` with a
JSON body; 429 and `/api/v2/` text), the rate limiters (429 with `retry-after`, `x-ratelimit-*`), and HiveD mode
(`hived=True`: the `hived` task fields, JOB_HISTORY=false so `/job-attempts` is 500 "Unexpected Call", the HiveD
virtual clusters and low limits when asked). What it adds for the tests, not in any recording (said where it is
done): faults queued by path prefix (drop the connection, answer a status, echo the credential, answer as a proxy
or login page in front would: PROXY_FAULTS), the password length rule (Joi's message, as the real server answered
an earlier test of this project), the log-manager stand-in that serves log text (logmanager.py), the pylon stand-in
in front (pylon.py: `site_url`, `api_url`), and FrameworkController's moves (jobs.py). Every request is recorded
(method, path, headers, body, monotonic time).
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import re
import shutil
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Optional, Union
from urllib.parse import parse_qs, unquote, urlsplit

import yaml

from .accounts import DEFAULT_VCS, HIVED_VCS, Accounts
from .jobs import Job, Step, now_ms, scenario
from .logmanager import LogManager
from .pylon import Pylon

MAX_LIMIT, DEFAULT_LIMIT = 50000, 5000
TOO_MANY = "Too many requests, please try again later."
JSON_TYPE, TEXT_TYPE = "application/json; charset=utf-8", "text/plain; charset=utf-8"
YAML_TYPE, HTML_TYPE = "text/yaml; charset=utf-8", "text/html; charset=utf-8"


@dataclasses.dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    at: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class Limits:
    """The rate limiters (RATE_LIMIT_*): per minute for the API (per client) and job lists (per user), per hour
    for submissions (per user). The HiveD server of the recordings had 40, 3 and 3."""
    api_per_min: int = 6000
    list_per_min: int = 600
    submit_per_hour: int = 36000


HIVED_LIMITS = Limits(api_per_min=40, list_per_min=3, submit_per_hour=3)


class Cluster:
    """What the servers of one cluster share (the database): accounts and jobs."""

    def __init__(self) -> None:
        self.accounts = Accounts()
        self.jobs: dict[str, Job] = {}
        self.lock = threading.RLock()
        self.clock: Callable[[], int] = now_ms   # a job's submission time (a test may set it, in milliseconds)

    def bulk_insert(self, user: str, count: int, *, newest: Optional[int] = None) -> None:
        """`count` finished jobs of `user` written straight into the database (as recordings/openpai
        job-list-5012 was made: not submitted): `j00000` is the newest, each next one a second older."""
        newest = newest if newest is not None else int(time.time() * 1000)
        for number in range(count):
            name = f"j{number:05d}"
            job = Job(user=user, protocol={"name": name, "taskRoles": {"main": {"instances": 1}}},
                      virtual_cluster="default", submitted=newest - number * 1000)
            job.retry_delay = 0
            job.fc_succeed()
            for attempt in job.attempts:
                attempt.created = attempt.launched = attempt.completed = job.submitted
                if attempt.completion is not None:
                    attempt.completion.at = job.submitted
            self.jobs[job.full_name] = job


class _Limiter:
    def __init__(self, limit: int, window: int):
        self.limit, self.window = limit, window
        self.hits: dict[str, list[float]] = {}

    def hit(self, key: str) -> tuple[bool, dict[str, str]]:
        now = time.monotonic()
        hits = [t for t in self.hits.get(key, []) if now - t < self.window]
        hits.append(now)
        self.hits[key] = hits
        headers = {"X-RateLimit-Limit": str(self.limit),
                   "X-RateLimit-Remaining": str(max(0, self.limit - len(hits)))}
        return len(hits) <= self.limit, headers

    def exhaust(self, key: str) -> None:
        self.hits[key] = [time.monotonic()] * self.limit


class OpenPaiServer:
    """`with OpenPaiServer() as server:` serves the REST API on `server.url`, the log-manager on
    `server.log_manager.url` and pylon on `server.site_url` (the REST API through it: `server.api_url`).
    `OpenPaiServer(hived=True, cluster=other.cluster)` is the HiveD-scheduler server over the same database."""

    def __init__(self, *, hived: bool = False, job_history: Optional[bool] = None, limits: Optional[Limits] = None,
                 cluster: Optional[Cluster] = None, virtual_clusters: Optional[dict[str, Any]] = None) -> None:
        self.cluster = cluster or Cluster()
        self.hived = hived
        self.job_history = (not hived) if job_history is None else job_history
        self.limits = limits or Limits()
        self.virtual_clusters = dict(virtual_clusters or (HIVED_VCS if hived else DEFAULT_VCS))
        self.limiters = {"api": _Limiter(self.limits.api_per_min, 60), "list": _Limiter(self.limits.list_per_min, 60),
                         "submit": _Limiter(self.limits.submit_per_hour, 3600)}
        #: job name -> how a job of that name will move once submitted: a name of jobs.SCENARIOS, or the steps
        self.scenarios: dict[str, Union[str, list[Step]]] = {}
        #: (path prefix, "drop" | "echo401" | a PROXY_FAULTS name | an HTTP status)
        self.faults: list[tuple[str, str]] = []
        self.requests: list[Recorded] = []
        self._httpd: Optional[ThreadingHTTPServer] = None
        self._logs_root = Path(tempfile.mkdtemp(prefix="paictl-openpai-logs-"))
        self.log_manager = LogManager(self._logs_root, admin="log-admin", password="log-admin-password-77aa")
        self.pylon: Optional[Pylon] = None

    # -- shared state, for tests ------------------------------------------------------------------------------

    @property
    def accounts(self) -> Accounts:
        return self.cluster.accounts

    @property
    def jobs(self) -> dict[str, Job]:
        return self.cluster.jobs

    @property
    def lock(self) -> threading.RLock:
        return self.cluster.lock

    def issue_token(self, user: str, token: str) -> str:
        return self.accounts.issue(user, token)

    def job(self, full_name: str) -> Job:
        return self.jobs[full_name]

    def job_reads(self, full_name: str) -> list[Recorded]:
        return [r for r in self.requests if r.method == "GET" and r.path.split("?")[0] == f"/api/v2/jobs/{full_name}"]

    # -- lifecycle --------------------------------------------------------------------------------------------

    def __enter__(self) -> "OpenPaiServer":
        self.log_manager.__enter__()
        handler = type("Handler", (_Handler,), {"api": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self.pylon = Pylon(self.url).__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.pylon is not None:
            self.pylon.__exit__(None, None, None)
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        self.log_manager.__exit__(None, None, None)
        shutil.rmtree(self._logs_root, ignore_errors=True)

    @property
    def url(self) -> str:
        """The REST server itself (a deployment's REST_SERVER_URI)."""
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def site_url(self) -> str:
        """The cluster's site root, pylon in front of everything."""
        assert self.pylon is not None
        return self.pylon.url

    @property
    def api_url(self) -> str:
        """The REST API through pylon: `https://HOST/rest-server`."""
        return f"{self.site_url}/rest-server"

    # -- jobs -------------------------------------------------------------------------------------------------

    def add_job(self, user: str, protocol: dict[str, Any], *, virtual_cluster: str = "default",
                script: Optional[list[Step]] = None) -> Job:
        with self.lock:
            job = Job(user=user, protocol=protocol, virtual_cluster=virtual_cluster, hived=self.hived,
                      script=script, submitted=self.cluster.clock())
            job.log_writer = self.log_manager.write
            self.jobs[job.full_name] = job
            job.begin()
            return job


def etag_of(payload: bytes) -> str:
    """express's weak ETag: the body's length in hex and the first 27 characters of its SHA-1 in base64."""
    digest = base64.b64encode(hashlib.sha1(payload).digest()).decode()[:27]
    return f'W/"{len(payload):x}-{digest}"'


def js_json(body: Any) -> bytes:
    """JSON.stringify's text: no spaces, non-ASCII kept."""
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


class _Reply(Exception):
    """An answer decided in the middle of routing."""

    def __init__(self, status: int, body: Any = None, *, content_type: str = JSON_TYPE,
                 headers: Optional[dict[str, str]] = None):
        super().__init__(status)
        self.status, self.body, self.content_type, self.headers = status, body, content_type, dict(headers or {})


def _error(status: int, code: str, message: str) -> _Reply:
    return _Reply(status, {"code": code, "message": message})


class _Handler(BaseHTTPRequestHandler):
    api: OpenPaiServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # TCP_NODELAY, as Go's and Node's servers: no ~40 ms wait per keep-alive request

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _send(self, reply: _Reply) -> None:
        if reply.body is None:
            payload = b""
        elif reply.content_type == JSON_TYPE:
            payload = js_json(reply.body)
        else:
            payload = str(reply.body).encode()
        headers = dict(reply.headers)
        status = reply.status
        if payload:
            tag = etag_of(payload)
            if (self.command == "GET" and 200 <= status < 300
                    and self.headers.get("If-None-Match") == tag):
                status, payload = 304, b""
                headers["ETag"] = tag
            else:
                headers["Content-Type"] = reply.content_type
                headers["ETag"] = tag
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _dispatch(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        api = self.api
        with api.lock:
            api.requests.append(Recorded(self.command, self.path, dict(self.headers.items()), body,
                                         time.monotonic()))
            fault = next((f for f in api.faults if self.path.startswith(f[0])), None)
            if fault is not None:
                api.faults.remove(fault)
        if fault is not None and fault[1] == "drop":
            self.close_connection = True
            self.connection.shutdown(2)  # no status line at all: the client sees the connection dropped
            return
        if fault is not None and fault[1] == "echo401":  # a careless server quoting the credential back
            return self._send(_error(401, "UnauthorizedUserError",
                                     f"bad credential {self.headers.get('Authorization')}"))
        if fault is not None and fault[1] in PROXY_FAULTS:  # what a proxy or login page in front may answer
            return self._proxy_fault(fault[1])
        if fault is not None:
            return self._send(_error(int(fault[1]), "UnknownError", "Internal error message."))
        parts = urlsplit(self.path)
        with api.lock:
            try:
                _Routes(self, parts.path, parse_qs(parts.query, keep_blank_values=True), body).route()
            except _Reply as reply:
                return self._send(reply)
            except Exception as error:  # a fault of the double's own: an answer that says so, not a dropped line
                return self._send(_error(500, "UnknownError", f"the OpenPAI double failed: {error!r}"))
        raise AssertionError("every route answers with a _Reply")  # pragma: no cover

    def _proxy_fault(self, kind: str) -> None:
        """Answers no OpenPAI REST server gives, from something in front of it: a single sign-on login page (200, or
        a 302 to it, the token in its query), an empty 200, nginx's 502 page, or a 200 whose body never ends (a
        byte every 0.1 s for a minute: each read well within any read timeout)."""
        self.close_connection = True
        if kind == "trickle":
            self.send_response(200)
            self.send_header("Content-Type", JSON_TYPE)
            self.send_header("Content-Length", "1000000")
            self.end_headers()
            ends = time.monotonic() + 60
            try:
                while time.monotonic() < ends:
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.1)
            except OSError:
                pass
            return
        status, headers, payload = PROXY_FAULTS[kind]
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value.replace("TOKEN", self.headers.get("Authorization", "")[len("Bearer "):]))
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_DELETE = _dispatch


NGINX_502 = (b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1>"
             b"</center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")
LOGIN_PAGE = (b"<!DOCTYPE html>\n<html>\n<head>\n<title>Sign in</title>\n<script>var next = '/';</script>\n</head>\n"
              b"<body><form method=\"post\"><input name=\"user\"></form></body>\n</html>\n")
#: fault -> (status, headers, body); TOKEN in a header is replaced by the request's bearer token.
PROXY_FAULTS: dict[str, tuple[int, dict[str, str], bytes]] = {
    "login": (200, {"Content-Type": "text/html; charset=utf-8"}, LOGIN_PAGE),
    "sso": (302, {"Location": "https://sso.example.invalid/login?next=%2F&token=TOKEN"}, b""),
    "empty": (200, {}, b""),
    "nginx502": (502, {"Content-Type": "text/html"}, NGINX_502),
    "trickle": (200, {}, b""),
}


_JOB = re.compile(r"^/api/v2/jobs/([^/]+)(/.*)?$")
_TASK = re.compile(r"^/attempts/(\d+)/taskRoles/([^/]+)/taskIndex/(\d+)/attempts(?:/(\d+)/logs)?$")


class _Routes:
    """One request: `route` raises the _Reply to send."""

    def __init__(self, handler: _Handler, path: str, query: dict[str, list[str]], body: bytes):
        self.h, self.api, self.method = handler, handler.api, handler.command
        self.raw_path, self.path, self.query, self.body = path, unquote(path), query, body
        self.accounts = self.api.accounts
        self.limit_headers: dict[str, str] = {}

    def arg(self, name: str) -> Optional[str]:
        values = self.query.get(name)
        return values[0] if values else None

    def ok(self, status: int, body: Any, content_type: str = JSON_TYPE) -> _Reply:
        return _Reply(status, body, content_type=content_type, headers=self.limit_headers)

    def not_found(self) -> _Reply:
        return _error(404, "NoApiError", f"API {self.raw_path} is not found.")

    def limit(self, limiter: str, key: str) -> None:
        allowed, headers = self.api.limiters[limiter].hit(key)
        self.limit_headers = headers
        if not allowed:
            window = self.api.limiters[limiter].window
            raise _Reply(429, TOO_MANY, content_type=HTML_TYPE, headers={**headers, "Retry-After": str(window)})

    # -- routing ----------------------------------------------------------------------------------------------

    def route(self) -> None:
        method, path = self.method, self.path
        if path.startswith("/api/"):
            self.limit("api", self.h.client_address[0])
        if path == "/api/v2/info" and method == "GET":
            raise self.ok(200, {"name": "PAI RESTful API", "version": None, "launcherType": "k8s",
                                "authnMethod": "basic"})
        if path in ("/api/v2", "/api/v2/") and method == "GET":
            raise self.ok(200, "PAI RESTful API v2 (beta version)", TEXT_TYPE)
        if path == "/api/v2/authn/basic/login" and method == "POST":
            self.login()
        table = {
            ("GET", "/api/v2/users"): self.list_users, ("POST", "/api/v2/users"): self.create_user,
            ("GET", "/api/v2/groups"): self.list_groups, ("GET", "/api/v2/tokens"): self.list_tokens,
            ("POST", "/api/v2/tokens/application"): self.application_token,
            ("GET", "/api/v2/tokens/check"): self.check_token,
            ("GET", "/api/v2/virtual-clusters"): lambda user: self.ok(200, self.api.virtual_clusters),
            ("GET", "/api/v2/storages"): self.list_storages,
            ("GET", "/api/v2/jobs"): self.list_jobs, ("POST", "/api/v2/jobs"): self.submit,
        }
        handler = table.get((method, path))
        prefixed = [("GET", "/api/v2/users/", self.user_info), ("DELETE", "/api/v2/tokens/", self.revoke),
                    ("GET", "/api/v2/virtual-clusters/", self.virtual_cluster),
                    ("GET", "/api/v2/storages/", self.storage)]
        rest = ""
        if handler is None:
            for verb, prefix, candidate in prefixed:
                if method == verb and path.startswith(prefix) and path[len(prefix):] and "/" not in path[len(prefix):]:
                    handler, rest = candidate, path[len(prefix):]
                    break
        # express matches a route on the path as sent and decodes each parameter: `alice~a%2Fb` is the job `a/b`
        job = _JOB.match(self.raw_path)
        if handler is None and job is not None:
            return self.job_route(unquote(job.group(1)), job.group(2) or "")
        if handler is None:
            raise self.not_found()
        user = self.authenticate()
        raise handler(user, rest) if rest else handler(user)

    def authenticate(self) -> tuple[str, dict[str, Any]]:
        header = self.h.headers.get("Authorization") or ""
        scheme, _, token = header.partition(" ")
        if not header:
            raise _error(401, "UnauthorizedUserError", "Guest is not allowed to do this operation.")
        found = self.accounts.owner(token) if scheme.lower() == "bearer" else None
        if found is None:
            raise _error(401, "UnauthorizedUserError", "Your token is invalid.")
        return found

    def not_an_application(self, who: tuple[str, dict[str, Any]]) -> str:
        if who[1].get("application"):
            raise _error(403, "ForbiddenUserError", "Applications are not allowed to do this operation.")
        return who[0]

    # -- accounts ---------------------------------------------------------------------------------------------

    def form(self) -> dict[str, Any]:
        content_type = (self.h.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if content_type == "application/json":
            try:
                data = json.loads(self.body or b"{}")
            except ValueError:
                raise _Reply(400, {"message": "Unexpected end of JSON input"}) from None
            return data if isinstance(data, dict) else {}
        return {key: values[0] for key, values in parse_qs(self.body.decode()).items()}

    def login(self) -> None:
        form = self.form()
        for field in ("username", "password"):
            if not form.get(field):
                raise _error(400, "InvalidParametersError", f'child "{field}" fails because ["{field}" is required]')
        if len(str(form["password"])) < 6:  # Joi's rule, as the real server answered (not recorded)
            raise _error(400, "InvalidParametersError", 'child "password" fails because ["password" length must be '
                                                        'at least 6 characters long]')
        name = str(form["username"])
        user = self.accounts.users.get(name)
        if user is None:
            raise _error(400, "NoUserError", f"User {name} is not found.")
        if user.password != form["password"]:
            raise _error(400, "IncorrectPasswordError", "Password is incorrect.")
        raise self.ok(200, {"user": name, "token": self.accounts.login(name), "admin": self.accounts.is_admin(name)})

    def list_users(self, who) -> _Reply:
        return self.ok(200, [self.accounts.user_body(name) for name in self.accounts.users])

    def create_user(self, who) -> _Reply:
        if not self.accounts.is_admin(who[0]):
            return _error(403, "ForbiddenUserError", f"User {who[0]} is not allowed to do this operation.")
        form = self.form()
        name = str(form.get("username") or "")
        if name in self.accounts.users:
            return _error(409, "ConflictUserError", f"User name {name} already exists.")
        groups = ["default"] + [g.name for g in self.accounts.groups.values() if g.name != "default"
                                and set(g.virtual_clusters) & set(form.get("virtualCluster") or [])]
        if form.get("admin"):
            groups.append("admingroup")
        self.accounts.add_user(name, str(form.get("password") or ""), email=str(form.get("email") or ""),
                               groups=groups)
        return self.ok(201, {"message": "User is created successfully"})

    def list_groups(self, who) -> _Reply:
        return self.ok(200, [group.body() for group in self.accounts.groups.values()])

    def user_info(self, who, name: str) -> _Reply:
        if name not in self.accounts.users:
            return _error(400, "NoUserError", f"User {name} is not found.")
        return self.ok(200, self.accounts.user_body(name))

    def list_tokens(self, who) -> _Reply:
        user = self.not_an_application(who)
        return self.ok(200, {"tokens": list(self.accounts.tokens.get(user, []))})

    def application_token(self, who) -> _Reply:
        user = self.not_an_application(who)
        return self.ok(200, {"token": self.accounts.application_token(user), "application": True})

    def check_token(self, who) -> _Reply:
        user, payload = who
        body = {"username": user, "application": bool(payload.get("application")), "jobSpecific": False,
                "encodedFrameworkName": ""}
        body.update({key: payload[key] for key in ("iat", "exp") if key in payload})
        body["admin"] = self.accounts.is_admin(user)
        return self.ok(200, body)

    def revoke(self, who, token: str) -> _Reply:
        if not self.accounts.revoke(who[0], token):
            return _error(403, "ForbiddenUserError", f"User {who[0]} is not allowed to do this operation.")
        return self.ok(200, {"message": "revoke successfully"})

    def virtual_cluster(self, who, name: str) -> _Reply:
        if name not in self.api.virtual_clusters:
            return _error(404, "NoVirtualClusterError", f"Vc {name} not found")
        return self.ok(200, self.api.virtual_clusters[name])

    def list_storages(self, who) -> _Reply:
        names = self.accounts.user_storages(who[0])
        return self.ok(200, {"storages": [self.accounts.storages[n].listed() for n in names
                                          if n in self.accounts.storages]})

    def storage(self, who, name: str) -> _Reply:
        if name not in self.accounts.storages:
            return _error(404, "NoStorageError", f"Storage {name} is not found.")
        if name not in self.accounts.user_storages(who[0]):
            return _error(403, "ForbiddenUserError", f"User {who[0]} is not allowed to access {name}.")
        return self.ok(200, self.accounts.storages[name].body())

    # -- jobs -------------------------------------------------------------------------------------------------

    def list_jobs(self, who) -> _Reply:
        self.limit("list", who[0])
        rows = _newest_first(list(self.api.jobs.values()))
        if self.arg("username"):
            rows = [job for job in rows if job.user == self.arg("username")]
        if self.arg("keyword"):
            rows = [job for job in rows if str(self.arg("keyword")).lower() in job.name.lower()]
        if self.arg("state"):
            wanted = str(self.arg("state")).split(",")
            rows = [job for job in rows if job.state()[0] in wanted]
        order = (self.arg("order") or "").split(",")
        if order[0] == "submissionTime" and order[-1].upper() == "ASC":
            rows = list(reversed(rows))
        limit = DEFAULT_LIMIT
        if self.arg("limit") is not None:
            try:
                limit = int(str(self.arg("limit")))
            except ValueError:
                return _Reply(500, {"message": 'column "nan" does not exist'})
            if limit > MAX_LIMIT:
                return _error(400, "InvalidParametersError", f"Limit exceeds max number {MAX_LIMIT}.")
        offset = int(self.arg("offset") or 0)
        page = [job.summary() for job in rows[offset:offset + limit]]
        if self.arg("withTotalCount") == "true":
            return self.ok(200, {"totalCount": len(rows), "data": page})
        return self.ok(200, page)

    def submit(self, who) -> _Reply:
        user = who[0]
        self.limit("submit", user)
        protocol = self.parse_protocol()
        vc = str((protocol.get("defaults") or {}).get("virtualCluster") or "default")
        allowed = self.accounts.virtual_clusters(user)
        if vc not in allowed and not (self.accounts.is_admin(user) and vc in self.api.virtual_clusters):
            return _error(403, "ForbiddenUserError", f"User {user} is not allowed to do operation in {vc}")
        name = str(protocol["name"])
        if f"{user}~{name}" in self.api.jobs:
            return _error(409, "ConflictJobError", f"Job {user}~{name} already exists.")
        chosen = self.api.scenarios.get(name)
        self.api.add_job(user, protocol, virtual_cluster=vc,
                         script=scenario(chosen) if isinstance(chosen, str) else chosen)
        return self.ok(202, {"status": 202, "message": f"Update job {name} for user {user} successfully."})

    def parse_protocol(self) -> dict[str, Any]:
        """The body as the server reads it: JSON through body-parser (strict), anything else as YAML (js-yaml,
        whose errors are not wrapped: 500 with the bare message), then the schema's first complaint (ajv)."""
        content_type = (self.h.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        text = self.body.decode("utf-8", errors="replace")
        if content_type == "application/json":
            stripped = text.lstrip()
            if stripped[:1] not in ("{", "["):
                first = stripped[:1] or ""
                raise _Reply(400, {"message": f"Unexpected token '{first}', \"{first}\" is not valid JSON"})
            try:
                protocol = json.loads(text)
            except ValueError as error:
                raise _Reply(400, {"message": str(error)}) from None
        else:
            try:
                protocol = yaml.safe_load(text) if text.strip() else None
            except yaml.YAMLError as error:
                raise _Reply(500, {"message": js_yaml_message(error, text)}) from None
        problem = first_schema_error(protocol)
        if problem is not None:
            raise _error(400, "InvalidProtocolError", js_json([problem]).decode())
        return protocol

    def job_route(self, full: str, rest: str) -> None:
        method = self.method
        match = _TASK.match(rest)
        known = (rest in ("", "/config", "/events", "/job-attempts", "/executionType")
                 or re.fullmatch(r"/attempts/\d+|/job-attempts/\d+", rest) or match)
        if not known or (method == "PUT") != (rest == "/executionType") or method not in ("GET", "PUT"):
            raise self.not_found()
        user = self.authenticate()
        if rest == "/executionType":
            raise self.execution_type(user[0], full)
        job = self.api.jobs.get(full)
        if job is None:
            raise _error(404, "NoJobError", f"Job {full} is not found.")
        if rest == "":
            body = job.detail()
            job.tick()
            raise self.ok(200, body)
        if rest == "/config":
            raise self.ok(200, js_json(job.protocol).decode(), YAML_TYPE)
        if rest == "/events":
            raise self.ok(200, {"totalCount": 0, "data": []})
        if rest.startswith("/job-attempts"):
            if not self.api.job_history:
                raise _Reply(500, {"message": "Unexpected Call"})
            if rest == "/job-attempts":
                latest = job.attempt
                raise self.ok(200, [job.job_attempt(a, is_latest=a is latest) for a in reversed(job.attempts)])
            number = int(rest.rsplit("/", 1)[1])
            if number >= len(job.attempts):
                raise _error(404, "NoJobError", f"JobAttemptId {number} is not found in {full}.")
            raise self.ok(200, job.job_attempt(job.attempts[number], is_latest=True))
        if match is None:
            number = int(rest.rsplit("/", 1)[1])
            latest = len(job.attempts) - 1
            if number > latest or (number < latest and not self.api.job_history):
                raise _error(404, "NoJobError", f"JobAttemptId {number} is not found in {full}.")
            raise self.ok(200, job.detail(job.attempts[number]))
        job_attempt, role, index, task_attempt = match.groups()
        role = unquote(role)
        found = job.find_task(int(job_attempt), role, int(index))
        if found is None:
            raise _error(500, "UnknownError", "Failed to get log list")
        attempt, task = found
        if task_attempt is None:
            raise self.ok(200, job.task_attempts(attempt, role, task))
        chosen = next((a for a in task.attempts if a.id == int(task_attempt)), None)
        if chosen is None:
            raise _error(404, "NoTaskLogError", "Log of task is not found.")
        if not self.api.log_manager.folder(job.user, job.framework, role, chosen.pod).is_dir():
            # the server lists a task's logs by asking the node's log-manager, which has none before the
            # container starts: the recorded answer for a job with no pod yet (logs.jsonl, st-wait)
            raise _error(500, "UnknownError", "Failed to get log list")
        raise self.ok(200, {"locations": self.log_links(job, role, chosen.pod)})

    def log_links(self, job: Job, role: str, pod: str) -> list[dict[str, str]]:
        manager = self.api.log_manager
        tail = "&tail-mode=true" if self.arg("tail-mode") == "true" else ""
        query = (f"?username={job.user}&framework-name={job.framework}&pod-uid={pod}&taskrole={role}"
                 f"&token={manager.token()}{tail}")
        return [{"name": name, "uri": f"/log-manager/127.0.0.1:{manager.port}/api/v1/logs/user.pai.{name}{query}"}
                for name in ("all", "stderr", "stdout")]

    def execution_type(self, user: str, full: str) -> _Reply:
        try:
            value = json.loads(self.body or b"{}").get("value")
        except (ValueError, AttributeError):
            value = None
        if value not in ("STOP", "START"):
            return _error(400, "InvalidParametersError",
                          'child "value" fails because ["value" must be one of [STOP, START]]')
        job = self.api.jobs.get(full)
        if job is None:
            return _error(404, "NoJobError", f"Job {full} is not found.")
        if job.user != user and not self.accounts.is_admin(user):
            return _error(403, "ForbiddenUserError", f"User {user} is not allowed to execute job {full}.")
        if value == "STOP":
            job.request_stop()
        return self.ok(202, {"status": 202, "message": f"Execute job {full} successfully."})


def _newest_first(jobs: list[Job]) -> list[Job]:
    """Newest first by submission time, which the database keeps in whole seconds; jobs of the same second in the
    order they were stored (recordings/openpai rate-limit.jsonl: rec-rl-2, then rec-rl-0 and rec-rl-1 of one
    second)."""
    return [job for _, job in sorted(enumerate(jobs), key=lambda pair: (-pair[1].submitted, pair[0]))]


def js_yaml_message(error: Any, text: str) -> str:
    """A YAML error worded as js-yaml words it: `<reason> at line L, column C:` and the line with a caret under the
    column (recordings/openpai submit.jsonl: an unclosed flow sequence). PyYAML's reasons are mapped where js-yaml's
    differ; the line and column are PyYAML's mark (1-based, as js-yaml prints them)."""
    mark = getattr(error, "problem_mark", None)
    problem = str(getattr(error, "problem", "") or error)
    if "<stream end>" in problem or "end of stream" in problem:
        problem = ("unexpected end of the stream within a flow collection"
                   if "flow" in str(getattr(error, "context", "")) else "unexpected end of the stream")
    if mark is None:
        return problem
    lines = text.split("\n")
    line = lines[mark.line] if mark.line < len(lines) else ""
    return f"{problem} at line {mark.line + 1}, column {mark.column + 1}:\n    {line}\n    {' ' * mark.column}^"


_NAME = re.compile(r"^[a-zA-Z0-9_-]+$")


def first_schema_error(protocol: Any) -> Optional[dict[str, Any]]:
    """The first error ajv reports (it stops at the first) for the checks the double makes: the top level's type
    and required keys, `protocolVersion`, `name`'s pattern and `type`. Deeper rules are not checked here: the
    job's own validation is paictl's, tested against upstream's schema elsewhere."""
    if not isinstance(protocol, dict):
        return {"keyword": "type", "dataPath": "", "schemaPath": "#/type", "params": {"type": "object"},
                "message": "should be object"}
    for key in ("protocolVersion", "name", "type", "taskRoles"):
        if key not in protocol:
            return {"keyword": "required", "dataPath": "", "schemaPath": "#/required",
                    "params": {"missingProperty": key}, "message": f"should have required property '{key}'"}
    if protocol["protocolVersion"] not in (2, "2"):
        return {"keyword": "enum", "dataPath": ".protocolVersion",
                "schemaPath": "base.json#/properties/protocolVersion/enum", "params": {"allowedValues": ["2", 2]},
                "message": "should be equal to one of the allowed values"}
    if not isinstance(protocol["name"], str):
        return {"keyword": "type", "dataPath": ".name", "schemaPath": "base.json#/properties/name/type",
                "params": {"type": "string"}, "message": "should be string"}
    if not _NAME.match(protocol["name"]):
        return {"keyword": "pattern", "dataPath": ".name", "schemaPath": "base.json#/properties/name/pattern",
                "params": {"pattern": "^[a-zA-Z0-9_-]+$"}, "message": 'should match pattern "^[a-zA-Z0-9_-]+$"'}
    if protocol["type"] != "job":
        return {"keyword": "enum", "dataPath": ".type", "schemaPath": "#/properties/type/enum",
                "params": {"allowedValues": ["job"]}, "message": "should be equal to one of the allowed values"}
    return None
