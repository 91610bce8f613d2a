"""Who may do what on the OpenPAI double: users, groups, tokens, virtual clusters and storages, and the bodies the
server answers about them (recordings/openpai users-admin, login, user-info, tokens, virtual-clusters, storages).

Users and groups are the recorded server's: `admin` (groups default and admingroup), alice and bob (group default,
virtual cluster `default`, storage `confignfs`), plus the group `vc1` that the HiveD server's start adds. Tokens are
HS256 JWTs signed with the server's secret, valid only while listed for their user (so a forged token that was never
issued, an expired one, and a revoked one are all "Your token is invalid."). Login tokens expire after 7 days
(`JWT_TOKEN_EXPIRE_TIME=7d`); two application tokens made in the same second are the same JWT, listed twice.
A test may also register an opaque token for a user (`issue`): not a JWT, accepted the same way while listed.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import json
import time
from typing import Any, Callable, Optional

LOGIN_SECONDS = 7 * 24 * 3600
PASSWORDS = {"admin": "admin-password-1f2e", "alice": "alice-password-9c1d", "bob": "bob-password-2b7e"}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt_sign(secret: str, payload: dict) -> str:
    head = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
    body = _b64(json.dumps(payload, separators=(",", ":")).encode())
    signature = hmac.new(secret.encode(), f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{_b64(signature)}"


def jwt_payload(secret: str, token: str) -> Optional[dict[str, Any]]:
    """The payload of a JWT signed with `secret` and not expired, else None."""
    try:
        head, body, signature = token.split(".")
        expected = hmac.new(secret.encode(), f"{head}.{body}".encode(), hashlib.sha256).digest()
        if not hmac.compare_digest(_b64(expected), signature):
            return None
        payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    except (ValueError, TypeError):
        return None
    if not isinstance(payload, dict) or ("exp" in payload and float(payload["exp"]) <= time.time()):
        return None
    return payload


def vc_info(capacity: int, cpu: int, memory: int, gpu: int) -> dict[str, Any]:
    """A virtual cluster as `/api/v2/virtual-clusters` shows it (nothing running: nothing used)."""
    resources = {"cpu": cpu, "memory": memory, "gpu": gpu, "vCores": cpu, "GPUs": gpu}
    return {"capacity": capacity, "usedCapacity": 0, "dedicated": False,
            "resourcesUsed": {"cpu": 0, "memory": 0, "gpu": 0, "vCores": 0, "GPUs": 0},
            "resourcesGuaranteed": dict(resources), "resourcesTotal": dict(resources), "maxCapacity": capacity}


#: The recorded clusters: one node of 16 CPUs, 64 GiB and 4 GPUs under the default scheduler; HiveD's spec (2 K80
#: cells for `default`, 2 K80 + 4 M60 for `vc1`).
DEFAULT_VCS = {"default": vc_info(100, 16, 65536, 4)}
HIVED_VCS = {"default": vc_info(25, 8, 61440, 2), "vc1": vc_info(75, 32, 286720, 6)}


@dataclasses.dataclass
class Group:
    name: str
    description: str = ""
    virtual_clusters: tuple[str, ...] = ()
    storages: Optional[tuple[str, ...]] = None
    admin: bool = False
    acl_admin_first: bool = False   # how the HiveD server's own groups order their acls

    def body(self) -> dict[str, Any]:
        acls: dict[str, Any] = ({"admin": self.admin, "virtualClusters": list(self.virtual_clusters)}
                                if self.acl_admin_first else
                                {"virtualClusters": list(self.virtual_clusters), "admin": self.admin})
        if self.storages is not None:
            acls["storageConfigs"] = list(self.storages)
        return {"groupname": self.name, "description": self.description, "externalName": "",
                "extension": {"acls": acls}}


@dataclasses.dataclass
class User:
    name: str
    password: str
    email: str = ""
    groups: list[str] = dataclasses.field(default_factory=lambda: ["default"])
    ssh: dict[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Storage:
    name: str
    server: str
    path: str

    def listed(self) -> dict[str, Any]:
        return {"name": self.name, "share": True, "volumeName": f"{self.name}-pv", "default": True}

    def body(self) -> dict[str, Any]:
        return {"name": self.name, "share": True, "volumeName": f"{self.name}-pv", "type": "nfs",
                "data": {"server": self.server, "path": self.path}, "readOnly": False}


class Accounts:
    """Users, groups, storages and tokens of one cluster (shared by its default and HiveD servers)."""

    def __init__(self, *, secret: str = "openpai-double-jwt-secret") -> None:
        self.secret = secret
        self.clock: Callable[[], float] = time.time   # what `iat` is read from (a test may hold it still)
        self.groups: dict[str, Group] = {
            "admingroup": Group("admingroup", "admin's group", (), None, admin=True),
            "default": Group("default", "group for default vc", ("default",), ("confignfs",)),
            "vc1": Group("vc1", "", ("vc1",), None, acl_admin_first=True),
        }
        self.storages = {s.name: s for s in (Storage(name="confignfs", server="10.0.0.1", path="/data/confignfs"),
                                             Storage(name="nfs-storage", server="10.0.0.2", path="/data/nfs"),
                                             Storage(name="confignfs-data", server="10.0.0.1",
                                                     path="/data/confignfs-data"))}
        self.users: dict[str, User] = {}
        self.tokens: dict[str, list[str]] = {}        # user -> the tokens the server issued, in order
        self.add_user("admin", PASSWORDS["admin"], groups=["default", "admingroup"])
        self.add_user("alice", PASSWORDS["alice"], email="alice@example.com")
        self.add_user("bob", PASSWORDS["bob"], email="bob@example.com")

    # -- users ------------------------------------------------------------------------------------------------

    def add_user(self, name: str, password: str, *, email: str = "", groups: Optional[list[str]] = None) -> User:
        key = hashlib.sha256(f"{name}-ssh".encode()).hexdigest()
        user = User(name, password, email, list(groups or ["default"]),
                    {"key": f"-----BEGIN RSA PRIVATE KEY-----\n{key}\n-----END RSA PRIVATE KEY-----\n",
                     "pubKey": f"ssh-rsa {key} {name}@openpai"})
        self.users[name] = user
        self.tokens.setdefault(name, [])
        return user

    def add_group(self, group: Group, *members: str) -> None:
        self.groups[group.name] = group
        for member in members:
            if group.name not in self.users[member].groups:
                self.users[member].groups.append(group.name)

    def is_admin(self, name: str) -> bool:
        return any(self.groups[g].admin for g in self.users[name].groups if g in self.groups)

    def virtual_clusters(self, name: str) -> list[str]:
        found: list[str] = []
        for group in self.users[name].groups:
            for vc in self.groups[group].virtual_clusters if group in self.groups else ():
                if vc not in found:
                    found.append(vc)
        return found

    def user_storages(self, name: str) -> list[str]:
        found: list[str] = []
        for group in self.users[name].groups:
            for storage in (self.groups[group].storages or ()) if group in self.groups else ():
                if storage not in found:
                    found.append(storage)
        return found

    def user_body(self, name: str) -> dict[str, Any]:
        user = self.users[name]
        return {"username": name, "grouplist": list(user.groups), "email": user.email,
                "extension": {"jobSSH": dict(user.ssh)}, "admin": self.is_admin(name),
                "virtualCluster": self.virtual_clusters(name), "storageConfig": self.user_storages(name)}

    # -- tokens -----------------------------------------------------------------------------------------------

    def login(self, name: str) -> str:
        now = int(self.clock())
        return self._keep(name, jwt_sign(self.secret, {"username": name, "application": False, "iat": now,
                                                       "exp": now + LOGIN_SECONDS}))

    def application_token(self, name: str) -> str:
        return self._keep(name, jwt_sign(self.secret, {"username": name, "application": True,
                                                       "iat": int(self.clock())}))

    def issue(self, name: str, token: str) -> str:
        """Register `token` (any text) as a login token of `name`: tests choose their canary tokens."""
        return self._keep(name, token)

    def _keep(self, name: str, token: str) -> str:
        self.tokens.setdefault(name, []).append(token)
        return token

    def owner(self, token: str) -> Optional[tuple[str, dict[str, Any]]]:
        """(user, JWT payload) of a token the server issued and has not revoked; None for any other."""
        for name, tokens in self.tokens.items():
            if token in tokens:
                payload = jwt_payload(self.secret, token) if token.count(".") == 2 else None
                if payload is None and token.count(".") == 2:
                    return None  # expired
                return name, payload or {"username": name, "application": False}
        return None

    def revoke(self, name: str, token: str) -> bool:
        if token not in self.tokens.get(name, []):
            return False
        self.tokens[name] = [t for t in self.tokens[name] if t != token]
        return True
