"""The marketplace server's identity provider: the session's real OpenPAI rest-server, behind a fault proxy.

The marketplace calls two routes of OpenPAI's rest-server (`IDP_URL`): `GET /api/v2/tokens/check` and
`GET /api/v2/users/NAME`. Both are answered by the unchanged rest-server of `tests/openpai_peer` (the test session's
one `Stack`, not a second one), and users, groups and tokens are made through its API as OpenPAI makes them: an
admin creates the user (`POST /api/v2/users`, `admin: true` puts them in `admingroup`, whose `extension.acls.admin`
makes them an admin), creates a missing group (`POST /api/v2/groups`) and adds the user to it
(`PUT /api/v2/users/NAME/group`); the user logs in for a token (`POST /api/v2/authn/basic/login`) and revokes one
with `DELETE /api/v2/tokens/TOKEN`.

No stand-in remains. What the real server cannot be made to do on demand, answer 500 or answer late, is done by
`faults.FaultProxy` between the marketplace and the rest-server (`faults`): every other request reaches the real
server unchanged. `test_an_identity_provider_that_fails_or_is_slow` uses it.
"""

from __future__ import annotations

import secrets
from typing import Any

import httpx

from .faults import FaultProxy


class IdpError(RuntimeError):
    pass


class OpenPaiIdentity:
    """Users of the real rest-server for marketplace tests; `url` is what the marketplace's `IDP_URL` names."""

    def __init__(self, stack: Any) -> None:
        self.stack = stack
        self.faults = FaultProxy(stack.rest_url)
        self._passwords: dict[str, str] = {}

    @property
    def url(self) -> str:
        return self.faults.url

    def __enter__(self) -> "OpenPaiIdentity":
        self.faults.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.faults.__exit__(*exc)

    def _admin(self, method: str, path: str, **options: Any) -> httpx.Response:
        return self.stack.rest(method, path, **options)

    def _ensure_group(self, group: str) -> None:
        if self._admin("GET", f"/api/v2/groups/{group}").status_code == 200:
            return
        reply = self._admin("POST", "/api/v2/groups", json={
            "groupname": group, "description": f"{group} (paictl marketplace tests)", "externalName": "",
            "extension": {"acls": {"admin": False, "virtualClusters": ["default"], "storageConfigs": []}}})
        if reply.status_code != 201:
            raise IdpError(f"create group {group}: HTTP {reply.status_code} {reply.text[:300]}")

    def add_user(self, username: str, *, admin: bool = False, groups: list[str] | None = None) -> str:
        """Create the user (or reuse one the stack made), put them in `groups`, and return a fresh token of theirs."""
        from openpai_peer.stack import USERS

        password = USERS.get(username) or self._passwords.get(username)
        if password is None:
            password = self._passwords[username] = f"pw-{secrets.token_hex(8)}"
            reply = self._admin("POST", "/api/v2/users", json={
                "username": username, "password": password, "admin": admin, "email": f"{username}@example.com",
                "virtualCluster": ["default"]})
            if reply.status_code != 201:
                raise IdpError(f"create user {username}: HTTP {reply.status_code} {reply.text[:300]}")
        for group in groups or []:
            self._ensure_group(group)
            reply = self._admin("PUT", f"/api/v2/users/{username}/group", json={"groupname": group})
            if reply.status_code not in (200, 201):
                raise IdpError(f"group {group} of {username}: HTTP {reply.status_code} {reply.text[:300]}")
        return self.stack.login(username, password)

    def revoke(self, token: str) -> None:
        """`DELETE /api/v2/tokens/TOKEN`, as the token's own user (the rest-server lets no one else)."""
        reply = httpx.delete(f"{self.stack.rest_url}/api/v2/tokens/{token}",
                             headers={"Authorization": f"Bearer {token}"}, timeout=30)
        if reply.status_code != 200:
            raise IdpError(f"revoke: HTTP {reply.status_code} {reply.text[:300]}")
