"""A stand-in for the two routes of OpenPAI's rest-server that the marketplace server calls (its IDP).

Answered as `../shared/peers/openpai/src/rest-server` answers them (read there, not guessed):

- `GET /api/v2/tokens/check` (`routes/token.js`, `middlewares/token.js` `check`): the bearer token is a JWT signed
  with the server's secret (HS256, `models/token.js` `sign`: `{username, application, jobSpecific,
  encodedFrameworkName}` plus `iat`/`exp`), and it must be one the user was issued (the rest-server keeps a user's
  tokens in a Secret; a revoked token fails). The answer is that payload plus `admin` (true when one of the user's
  groups has `extension.acls.admin`). No header: 401 "Guest is not allowed to do this operation."; any failure:
  401 "Your token is invalid.".
- `GET /api/v2/users/NAME` (`routes/v2/user.js`, `controllers/v2/user.js` `getUser`): the same token check, then the
  user's record without its password: `username`, `grouplist` (lower case: the marketplace's list code reads
  `groupList`), `email`, `extension`, `admin`, `virtualCluster`, `storageConfig`. An unknown user: 400 NoUserError.
- Errors are JSON `{code, message}` (`config/express.js`), unknown routes 404 NoApiError.

`delay` makes every answer late (a slow IDP makes a slow marketplace); `failing` answers 500 to everything.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import json
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

ADMIN_GROUP = "admingroup"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclasses.dataclass
class User:
    username: str
    grouplist: list[str]
    tokens: set[str] = dataclasses.field(default_factory=set)


class IdentityProvider:
    """OpenPAI's token check and user lookup on 127.0.0.1; `issue(user)` returns a token as `POST /tokens` would."""

    def __init__(self) -> None:
        self._secret = secrets.token_bytes(32)
        self._lock = threading.Lock()
        self.users: dict[str, User] = {}
        #: group name -> whether its `extension.acls.admin` is set
        self.groups: dict[str, bool] = {ADMIN_GROUP: True, "default": False}
        self.delay = 0.0
        self.failing = False
        self._http: ThreadingHTTPServer | None = None

    # -- test API -------------------------------------------------------------------------------------------

    def add_user(self, username: str, *, admin: bool = False, groups: list[str] | None = None) -> str:
        """Create the user (in `admingroup` when admin) and return a fresh token of theirs."""
        grouplist = ["default", *(groups or [])] + ([ADMIN_GROUP] if admin else [])
        with self._lock:
            for group in grouplist:
                self.groups.setdefault(group, False)
            self.users[username] = User(username, grouplist)
        return self.issue(username)

    def issue(self, username: str, *, expires_in: int = 7 * 24 * 3600) -> str:
        now = int(time.time())
        payload = {"username": username, "application": False, "jobSpecific": False, "encodedFrameworkName": "",
                   "iat": now, "exp": now + expires_in}
        token = self._sign(payload)
        with self._lock:
            self.users[username].tokens.add(token)
        return token

    def revoke(self, token: str) -> None:
        with self._lock:
            for user in self.users.values():
                user.tokens.discard(token)

    @property
    def url(self) -> str:
        assert self._http is not None
        host, port = self._http.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> "IdentityProvider":
        provider = self

        class Handler(_Handler):
            idp = provider

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._http.daemon_threads = True
        threading.Thread(target=self._http.serve_forever, name="openpai-idp", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._http is not None
        self._http.shutdown()
        self._http.server_close()

    # -- the rest-server's logic ----------------------------------------------------------------------------

    def _sign(self, payload: dict[str, Any]) -> str:
        head = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
        body = _b64(json.dumps(payload, separators=(",", ":")).encode())
        signature = hmac.new(self._secret, f"{head}.{body}".encode(), hashlib.sha256).digest()
        return f"{head}.{body}.{_b64(signature)}"

    def _verify(self, token: str) -> dict[str, Any]:
        """`tokenModel.verify`: a valid signature, not expired, a username, and one of the user's issued tokens."""
        head, body, signature = token.split(".")
        expected = hmac.new(self._secret, f"{head}.{body}".encode(), hashlib.sha256).digest()
        if not hmac.compare_digest(expected, _unb64(signature)):
            raise ValueError("invalid signature")
        payload = json.loads(_unb64(body))
        if payload.get("exp", 0) < time.time() or not payload.get("username"):
            raise ValueError("expired or nameless")
        with self._lock:
            user = self.users.get(payload["username"])
            if user is None or token not in user.tokens:
                raise ValueError("not issued")
        return payload

    def _admin(self, user: User) -> bool:
        return any(self.groups.get(group, False) for group in user.grouplist)

    def check(self, authorization: str | None) -> dict[str, Any]:
        if not authorization:
            raise _Error(401, "UnauthorizedUserError", "Guest is not allowed to do this operation.")
        try:
            scheme, credentials = authorization.split(" ", 1)
            if scheme.lower() != "bearer":
                raise ValueError("scheme")
            payload = self._verify(credentials)
        except (ValueError, KeyError, TypeError):
            raise _Error(401, "UnauthorizedUserError", "Your token is invalid.") from None
        return {**payload, "admin": self._admin(self.users[payload["username"]])}

    def user(self, name: str) -> dict[str, Any]:
        with self._lock:
            user = self.users.get(name)
        if user is None:
            raise _Error(400, "NoUserError", f"User {name} is not found.")
        return {"username": user.username, "grouplist": list(user.grouplist), "email": f"{name}@example.com",
                "extension": {"virtualClusters": ["default"]}, "admin": self._admin(user),
                "virtualCluster": ["default"], "storageConfig": []}


class _Error(Exception):
    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


class _Handler(BaseHTTPRequestHandler):
    idp: IdentityProvider
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        idp = self.idp
        if idp.delay:
            time.sleep(idp.delay)
        path = urlsplit(self.path).path.rstrip("/")
        try:
            if idp.failing:
                raise _Error(500, "UnknownError", "the identity provider is failing (test)")
            if path == "/api/v2/tokens/check":
                self._send(200, idp.check(self.headers.get("Authorization")))
            elif path.startswith("/api/v2/users/") and path.count("/") == 4:
                idp.check(self.headers.get("Authorization"))
                self._send(200, idp.user(unquote(path.rsplit("/", 1)[1])))
            else:
                raise _Error(404, "NoApiError", f"API {self.path} is not found.")
        except _Error as error:
            self._send(error.status, {"code": error.code, "message": error.message})

    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
