"""The marketplace's identity provider, in process: the users and tokens OpenPAI's rest-server would know.

The real marketplace asks OpenPAI (`IDP_URL`): `GET /api/v2/tokens/check` on write routes, and, on read routes,
`GET /api/v2/users/<the username decoded from the JWT>` with the caller's token (so a token OpenPAI no longer
accepts is 401 there too). What it uses of the answers is the user name, `admin` (OpenPAI's `admin: true` makes a
marketplace admin) and the group list. This table answers the same questions; `fail` makes it answer as an
identity provider that is down or refuses every token, which the marketplace turns into 500 `Something wrong with
token idp api` or 401.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import secrets
import threading
import time


class IdentityError(Exception):
    """The marketplace's answer when its identity provider fails: (status, text)."""

    def __init__(self, status: int, text: str):
        super().__init__(text)
        self.status = status
        self.text = text


UNAUTHENTICATED = "Authentication token is missing or invalid"
IDP_BROKEN = "Something wrong with token idp api"


@dataclasses.dataclass(frozen=True, kw_only=True)
class Caller:
    username: str
    admin: bool
    groups: tuple[str, ...]


def jwt(claims: dict[str, object]) -> str:
    """A token shaped as OpenPAI's (HS256 JWT); the marketplace decodes it without checking the signature."""
    def part(value: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value, separators=(",", ":")).encode()).decode().rstrip("=")

    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part(claims)}.{secrets.token_urlsafe(32)}"


def jwt_username(token: str) -> str | None:
    """What the marketplace's `jwt.decode(token)` (no verification) gives as `username`, or None."""
    header, _, rest = token.partition(".")
    payload, dot, signature = rest.partition(".")
    if not header or not dot or "." in signature:
        return None
    padded = payload + "=" * (-len(payload) % 4)
    try:
        claims = json.loads(base64.urlsafe_b64decode(padded).decode())
    except ValueError:
        return None
    username = claims.get("username") if isinstance(claims, dict) else None
    return username or None if isinstance(username, str) else None


class IdentityProvider:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users: dict[str, Caller] = {}
        self._tokens: dict[str, str] = {}  # token -> username
        self._failure: int | None = None
        #: How many times the marketplace consulted its identity provider (a test can tell it asked).
        self.calls = 0

    def add_user(self, username: str, *, admin: bool = False, groups: list[str] | None = None) -> str:
        """Create (or redefine) the user; a fresh login token of theirs."""
        with self._lock:
            self._users[username] = Caller(username=username, admin=admin, groups=tuple(groups or ["default"]))
        return self.token(username)

    def token(self, username: str, *, application: bool = False) -> str:
        """Another token of an existing user: a login token, or an application token (`application: true`)."""
        now = int(time.time())
        claims: dict[str, object] = {"username": username, "application": application, "iat": now}
        if not application:
            claims["exp"] = now + 7 * 24 * 3600
        token = jwt(claims)
        with self._lock:
            if username not in self._users:
                raise KeyError(username)
            self._tokens[token] = username
        return token

    def revoke(self, token: str) -> None:
        """OpenPAI's `DELETE /api/v2/tokens/<token>`: from now on the token is refused."""
        with self._lock:
            self._tokens.pop(token, None)

    def fail(self, status: int | None) -> None:
        """Every consultation answers `status` (500: down; 401: refuses the token) until `fail(None)`."""
        with self._lock:
            self._failure = status

    def check(self, authorization: str | None, *, read: bool) -> Caller:
        """The caller of a request: a write route's token check, or a read route's JWT decode and user lookup."""
        token = authorization.split(" ", 1)[1] if authorization and " " in authorization else ""
        if not token:
            raise IdentityError(401, UNAUTHENTICATED)
        if read and jwt_username(token) is None:
            raise IdentityError(401, UNAUTHENTICATED)  # decoded by the marketplace itself, before asking
        with self._lock:
            self.calls += 1
            if self._failure is not None:
                raise IdentityError(401, UNAUTHENTICATED) if self._failure == 401 else \
                    IdentityError(500, IDP_BROKEN)
            username = self._tokens.get(token)
            if username is None or (read and jwt_username(token) != username):
                raise IdentityError(401, UNAUTHENTICATED)
            return self._users[username]
