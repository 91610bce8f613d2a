"""A stand-in for OpenPAI's log-manager (microsoft/pai `src/log-manager`, an openresty app; in no registry).

Its API, as upstream's nginx.conf.default and lua files define it (read at a95d9420; behaviour re-implemented, no
code copied):
- `GET /healthz` → 200 "Log manager ready.";
- `POST /api/v1/tokens` with JSON `{username, password}` → `{"token": JWT}` (HS256, `sub: log-manager-NODE`,
  `exp` after TOKEN_EXPIRED_SECOND); a body that is not JSON → 400, wrong credentials → 401, both with no body;
  any other method → 403 (`limit_except POST { deny all; }`);
- `GET /api/v1/logs?username&framework-name&taskrole&pod-uid&token` → a JSON map from log name to the link of
  its content: `user-X` folders become `X` (and `X.1` when a rotated `@*.s` file exists), `user.pai.X` files `X`,
  other files their own name; every link is `/api/v1/logs/<file>?<the same query>`. Missing or invalid token →
  403; a missing parameter or one outside `[A-Za-z0-9_.~-]` → 400; no such folder → 404;
- `GET /api/v1/logs/<name>?...` → the text of `<folder>/<name>` (`user-X` → `user-X/current`, `user-X.1` → the
  rotated file), `tail-mode=true` → its last 16384 bytes; same 403/400/404 rules.
Logs live in a folder laid out as on a node: `<root>/<user>/<framework>/<taskrole>/<pod-uid>/...`.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Optional
from urllib.parse import parse_qs, urlsplit

from .accounts import jwt_payload, jwt_sign
from .loopback import LoopbackHandler, LoopbackServer

VALID = re.compile(r"^[\w\-.~]+$", re.ASCII)   # lua's ^[%w_%-%.~]+$
TAIL_BYTES = 16384
PARAMS = ("username", "framework-name", "taskrole", "pod-uid")


def jwt_verify(secret: str, token: str, subject: str) -> bool:
    payload = jwt_payload(secret, token)
    return payload is not None and payload.get("sub") == subject and "exp" in payload


class LogManager(LoopbackServer):
    """`with LogManager(root, admin=..., password=...) as lm:` serves on `lm.port` (127.0.0.1)."""

    def __init__(self, root: Path, *, admin: str, password: str, node: str = "node-0",
                 jwt_secret: str = "log-manager-jwt-secret", token_seconds: int = 3600, port: int = 0):
        self.root, self.admin, self.password, self.node = root, admin, password, node
        self.jwt_secret, self.token_seconds, self.want_port = jwt_secret, token_seconds, port
        self.requests: list[tuple[str, str, dict[str, str]]] = []   # (method, path with query, headers)

    def folder(self, user: str, framework: str, taskrole: str, pod_uid: str) -> Path:
        return self.root / user / framework / taskrole / pod_uid

    def write(self, user: str, framework: str, taskrole: str, pod_uid: str, *, stdout: str = "", stderr: str = "",
              rotated: Optional[str] = None) -> None:
        """Append to a container's logs as the runtime writes them on a node: `user.pai.stdout`, `user.pai.stderr`
        and `user.pai.all` (both streams), the three files the REST server's log links name (recordings/openpai
        logs.jsonl); `rotated` goes into a `user-all` folder's rotated file."""
        base = self.folder(user, framework, taskrole, pod_uid)
        base.mkdir(parents=True, exist_ok=True)
        for name, text in (("user.pai.stdout", stdout), ("user.pai.stderr", stderr), ("user.pai.all", stdout + stderr)):
            with open(base / name, "a", encoding="utf-8") as out:
                out.write(text)
        if rotated is not None:
            (base / "user-all").mkdir(exist_ok=True)
            (base / "user-all" / "@4000000000000000.s").write_text(rotated, encoding="utf-8")

    def token(self) -> str:
        now = int(time.time())
        return jwt_sign(self.jwt_secret, {"sub": f"log-manager-{self.node}", "iat": now,
                                          "exp": now + self.token_seconds})


class _Handler(LoopbackHandler):
    owner: LogManager

    def _send(self, status: int, body: bytes = b"", content_type: str = "application/json",
              extra: Optional[dict[str, str]] = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Access-Control-Allow-Origin", "*")
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def _record(self) -> tuple[str, dict[str, str]]:
        self.owner.requests.append((self.command, self.path, dict(self.headers.items())))
        parts = urlsplit(self.path)
        args = {key: values[0] for key, values in parse_qs(parts.query, keep_blank_values=True).items()}
        return parts.path, args

    def do_POST(self) -> None:
        path, _ = self._record()
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if path != "/api/v1/tokens":
            return self._send(403 if path.startswith("/api/v1/logs") else 404)
        try:
            data = json.loads(body)
            assert isinstance(data, dict)
        except (ValueError, AssertionError):
            return self._send(400)
        if data.get("username") != self.owner.admin or data.get("password") != self.owner.password:
            return self._send(401)
        self._send(200, (json.dumps({"token": self.owner.token()}) + "\n").encode())

    def do_GET(self) -> None:
        path, args = self._record()
        if path == "/healthz":
            return self._send(200, b"Log manager ready.", "text/plain")
        if path == "/api/v1/tokens":
            return self._send(403)
        if not path.startswith("/api/v1/logs"):
            return self._send(404, b"<html>404 Not Found</html>", "text/html")
        token = args.get("token")
        if not token or not jwt_verify(self.owner.jwt_secret, token, f"log-manager-{self.owner.node}"):
            return self._send(403)
        if any(not args.get(key) for key in PARAMS) or any(not VALID.match(args[key]) for key in PARAMS):
            return self._send(400)
        folder = self.owner.folder(*(args[key] for key in PARAMS))
        if path in ("/api/v1/logs", "/api/v1/logs/"):
            return self._list(folder, args)
        return self._content(folder, path[len("/api/v1/logs/"):], args)

    def _list(self, folder: Path, args: dict[str, str]) -> None:
        if not folder.is_dir():
            return self._send(404)
        query = "?" + "&".join(f"{key}={args[key]}" for key in PARAMS) + f"&token={args['token']}"
        found: dict[str, str] = {}
        for entry in sorted(folder.iterdir()):
            link = f"/api/v1/logs/{entry.name}{query}"
            if entry.is_file():
                found[entry.name[len("user.pai."):] if entry.name.startswith("user.pai.") else entry.name] = link
            elif entry.name.startswith("user-"):
                found[entry.name[len("user-"):]] = link
                if any(re.match(r"^@.*\.s", f.name) for f in entry.iterdir()):
                    found[entry.name[len("user-"):] + ".1"] = f"/api/v1/logs/{entry.name}.1{query}"
        self._send(200, (json.dumps(found) + "\n").encode())

    def _content(self, folder: Path, name: str, args: dict[str, str]) -> None:
        from urllib.parse import unquote

        name = unquote(name)
        if not name or not VALID.match(name) or name in (".", ".."):
            return self._send(400)
        path = folder / name
        if name.startswith("user-"):
            if name.endswith(".1"):
                parent = folder / name[:-2]
                rotated = [f for f in parent.iterdir() if re.match(r"^@.*\.s", f.name)] if parent.is_dir() else []
                if not rotated:
                    return self._send(404)
                path = rotated[0]
            else:
                path = folder / name / "current"
        if not path.is_file():
            return self._send(404)
        data = path.read_bytes()
        if args.get("tail-mode") == "true":
            data = data[-TAIL_BYTES:]
        disposition = f'attachment; filename="{name}.log"' if name.startswith("user-") else "attachment"
        self._send(200, data, "text/plain", {"Content-Disposition": disposition, "Accept-Ranges": "bytes"})


LogManager.handler = _Handler
