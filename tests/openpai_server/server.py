"""A test OpenPAI REST server on 127.0.0.1, written from the swagger (src/rest-server/docs/swagger.yaml).

Routes, status codes and `{code, message}` error bodies follow the swagger; behaviour follows openpai.md (409
`Job user~name already exists.`, 403 for a virtual cluster the user may not use, 404 for an unknown storage, a
weak ETag on JSON bodies as express sends). Jobs move on a scripted clock (jobs.py). Faults can be queued: drop
the connection without an answer, or answer 500/503, for the next request whose path starts with a prefix.
Every request is recorded (method, path, headers, body, monotonic time) for the tests to inspect.
"""

from __future__ import annotations

import dataclasses
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional
from urllib.parse import parse_qs, unquote, urlsplit

import yaml

from .jobs import SCENARIOS, Job, etag

LOG_TOKEN = "log-manager-token-5d2e"


@dataclasses.dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    at: float


@dataclasses.dataclass
class User:
    password: str
    admin: bool = False
    virtual_clusters: tuple[str, ...] = ("default",)
    storages: tuple[str, ...] = ("confignfs",)


class OpenPaiServer:
    """`with OpenPaiServer() as server:` serves on `server.url` until the block ends."""

    def __init__(self) -> None:
        self.users: dict[str, User] = {"alice": User(password="wonderland", virtual_clusters=("default", "gpu")),
                                       "bob": User(password="builder")}
        self.virtual_clusters = ("default", "gpu", "restricted")
        self.tokens: dict[str, str] = {}
        self.jobs: dict[str, Job] = {}
        self.scenarios: dict[str, str] = {}       # job name -> scenario name (default "succeed")
        self.faults: list[tuple[str, str]] = []    # (path prefix, "drop" | "500" | "503" | "echo401")
        self.requests: list[Recorded] = []
        self.lock = threading.Lock()
        self._httpd: Optional[ThreadingHTTPServer] = None

    # -- lifecycle --------------------------------------------------------------------------------------------

    def __enter__(self) -> "OpenPaiServer":
        handler = type("Handler", (_Handler,), {"api": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        assert self._httpd is not None
        self._httpd.shutdown()
        self._httpd.server_close()

    @property
    def url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def issue_token(self, user: str, token: str) -> str:
        self.tokens[token] = user
        return token

    def job_reads(self, full_name: str) -> list[Recorded]:
        return [r for r in self.requests if r.method == "GET" and r.path.split("?")[0] == f"/api/v2/jobs/{full_name}"]


class _Handler(BaseHTTPRequestHandler):
    api: OpenPaiServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # TCP_NODELAY, as Go's and Node's servers: no ~40 ms wait per keep-alive request

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    # -- plumbing ---------------------------------------------------------------------------------------------

    def _send(self, status: int, body: Any = None, *, headers: Optional[dict[str, str]] = None,
              text: Optional[str] = None) -> None:
        payload = (text if text is not None else json.dumps(body)).encode() if (body is not None or text) else b""
        self.send_response(status)
        self.send_header("Content-Type", "text/plain" if text is not None else "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(payload)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(payload)

    def _error(self, status: int, code: str, message: str) -> None:
        self._send(status, {"code": code, "message": message})

    def _dispatch(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        api = self.api
        with api.lock:
            api.requests.append(Recorded(method, self.path, dict(self.headers.items()), body, time.monotonic()))
            fault = next((f for f in api.faults if self.path.startswith(f[0])), None)
            if fault is not None:
                api.faults.remove(fault)
        if fault is not None and fault[1] == "drop":
            self.close_connection = True
            self.connection.shutdown(2)  # no status line at all: the client sees the connection dropped
            return
        if fault is not None and fault[1] == "echo401":  # a careless server quoting the credential back
            self._error(401, "UnauthorizedUserError", f"bad credential {self.headers.get('Authorization')}")
            return
        if fault is not None:
            self._error(int(fault[1]), "UnknownError", "Internal error message.")
            return
        parts = urlsplit(self.path)
        with api.lock:
            _Routes(self, method, unquote(parts.path), parse_qs(parts.query), body).route()

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")


_JOB = re.compile(r"^/api/v2/jobs/([^/~]+)~([^/]+)(/.*)?$")
_LOGS = re.compile(r"^/attempts/(\d+)/taskRoles/([^/]+)/taskIndex/(\d+)/attempts/(\d+)/logs$")


class _Routes:
    def __init__(self, handler: _Handler, method: str, path: str, query: dict[str, list[str]], body: bytes):
        self.h, self.api, self.method, self.path, self.query, self.body = (handler, handler.api, method, path, query,
                                                                           body)

    def route(self) -> None:
        if self.path.startswith("/log-manager/"):
            return self.log_content()
        if self.path == "/api/v2/info":
            return self.h._send(200, {"name": "PAI RESTful API", "version": "v1.8.0", "launcherType": "k8s",
                                      "authnMethod": "basic"})
        if self.path == "/api/v2/authn/basic/login" and self.method == "POST":
            return self.login()
        user = self.authenticated()
        if user is None:
            return self.h._error(401, "UnauthorizedUserError", "Guest is not allowed to do this operation.")
        if self.path == "/api/v2/virtual-clusters" and self.method == "GET":
            return self.h._send(200, {vc: {"capacity": 50, "usedCapacity": 0, "maxCapacity": 100,
                                           "resourcesUsed": {}, "resourcesGuaranteed": {}, "resourcesTotal": {}}
                                      for vc in self.api.virtual_clusters})
        if self.path.startswith("/api/v2/users/") and self.method == "GET":
            return self.user_info(self.path.rsplit("/", 1)[1])
        if self.path == "/api/v2/storages" and self.method == "GET":
            return self.h._send(200, {"storages": [{"name": s, "share": True, "volumeName": f"{s}-pv",
                                                    "default": True} for s in self.api.users[user].storages]})
        if self.path == "/api/v2/jobs":
            return self.submit(user) if self.method == "POST" else self.list_jobs()
        match = _JOB.match(self.path)
        if match:
            return self.job_route(match.group(1), match.group(2), match.group(3) or "")
        return self.h._error(404, "NoApiError", f"{self.method} {self.path} is not an API of this server.")

    def authenticated(self) -> Optional[str]:
        header = self.h.headers.get("Authorization") or ""
        scheme, _, token = header.partition(" ")
        return self.api.tokens.get(token) if scheme.lower() == "bearer" else None

    def login(self) -> None:
        form = {k: v[0] for k, v in parse_qs(self.body.decode()).items()}
        user = self.api.users.get(form.get("username", ""))
        if user is None:
            return self.h._error(404, "NoUserError", f"User {form.get('username')} is not found.")
        if user.password != form.get("password"):
            return self.h._error(400, "IncorrectPasswordError", "Password is incorrect.")
        token = self.api.issue_token(form["username"], f"jwt-{form['username']}-{len(self.api.tokens) + 1}-9c41")
        self.h._send(200, {"token": token, "user": form["username"], "admin": user.admin})

    def user_info(self, name: str) -> None:
        user = self.api.users.get(name)
        if user is None:
            return self.h._error(404, "NoUserError", f"User {name} is not found.")
        self.h._send(200, {"username": name, "admin": user.admin, "virtualCluster": list(user.virtual_clusters),
                           "storageConfig": [], "email": f"{name}@example.org", "extension": {}})

    def submit(self, user: str) -> None:
        if not (self.h.headers.get("Content-Type") or "").startswith("text/"):
            return self.h._error(400, "InvalidProtocolError", "the job must be sent as text/yaml")
        try:
            protocol = yaml.safe_load(self.body.decode())
        except yaml.YAMLError as exc:  # upstream does not wrap js-yaml errors: HTTP 500, no code
            return self.h._send(500, {"message": str(exc)})
        vc = (protocol.get("defaults") or {}).get("virtualCluster") or "default"
        if vc not in self.api.virtual_clusters:
            return self.h._error(400, "NoVirtualClusterError", f"Virtual cluster {vc} is not found.")
        if vc not in self.api.users[user].virtual_clusters and not self.api.users[user].admin:
            return self.h._error(403, "ForbiddenUserError", f"User {user} is not allowed to do operation in {vc}")
        for storage in (protocol.get("extras") or {}).get("storages") or []:
            if storage.get("name") not in self.api.users[user].storages:
                return self.h._error(404, "NoStorageError", f"Storage {storage.get('name')} is not found.")
        full = f"{user}~{protocol['name']}"
        if full in self.api.jobs:
            return self.h._error(409, "ConflictJobError", f"Job {full} already exists.")
        scenario = SCENARIOS[self.api.scenarios.get(protocol["name"], "succeed")]
        self.api.jobs[full] = Job(user=user, protocol=protocol, text=self.body.decode(), virtual_cluster=vc,
                                  scenario=scenario, submitted_ms=1_700_000_000_000 + len(self.api.jobs))
        self.h._send(202, {"status": 202,
                           "message": f"Update job {protocol['name']} for user {user} successfully."})

    def list_jobs(self) -> None:
        wanted = (self.query.get("username") or [None])[0]
        self.h._send(200, [job.summary() for job in self.api.jobs.values() if wanted in (None, job.user)])

    def job_route(self, user: str, name: str, rest: str) -> None:
        job = self.api.jobs.get(f"{user}~{name}")
        if job is None:
            return self.h._error(404, "NoJobError", f"Job {user}~{name} is not found.")
        if rest == "" and self.method == "GET":
            body = job.detail()
            job.advance()
            tag = etag(body)
            if self.h.headers.get("If-None-Match") == tag:
                return self.h._send(304, headers={"ETag": tag})
            return self.h._send(200, body, headers={"ETag": tag})
        if rest == "/executionType" and self.method == "PUT":
            try:
                value = json.loads(self.body or b"{}").get("value")
            except ValueError:
                value = None
            if value not in ("START", "STOP"):
                return self.h._error(400, "InvalidParametersError", "Invalid request parameters.")
            if value == "STOP":
                job.stop()
            return self.h._send(202, {"message": f"execute job {name} successfully"})
        match = _LOGS.match(rest)
        if match and self.method == "GET":
            role, index = match.group(2), int(match.group(3))
            if role not in dict(job.roles()) or not job.started(job.phase()):
                return self.h._error(404, "NoTaskLogError", "Log of task is not found.")
            base = f"{self.h.api.url}/log-manager/node1/api/v1/logs/{user}~{name}/{role}/{index}"
            return self.h._send(200, {"locations": [
                {"name": kind, "uri": f"{base}/user.pai.{kind}?username={user}&token={LOG_TOKEN}"}
                for kind in ("stderr", "all", "stdout")]})
        return self.h._error(404, "NoApiError", f"{self.method} {self.path} is not an API of this server.")

    def log_content(self) -> None:
        if (self.query.get("token") or [None])[0] != LOG_TOKEN:
            return self.h._send(403, text="forbidden")
        match = re.match(r"^/log-manager/[^/]+/api/v1/logs/([^/]+)/([^/]+)/(\d+)/user\.pai\.(\w+)$", self.path)
        job = self.api.jobs.get(match.group(1)) if match else None
        if job is None:
            return self.h._send(404, text="no such log")
        self.h._send(200, text=job.log_text() if match.group(4) in ("all", "stdout") else "")
