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
- `Range` on a log's text, as nginx's static file server answers it (the log-manager's nginx serves the files; not
  recorded, since the recordings hold no log-manager answer): one range `bytes=A-B`, `bytes=A-` or `bytes=-N` →
  206 with `Content-Range: bytes A-B/SIZE` and that slice; a start at or past the end → 416 with
  `Content-Range: bytes */SIZE` and no body; a Range header that is not one valid byte range → ignored (200, the
  whole file; the stand-in sends no multipart answer to several ranges). Every answer has `Accept-Ranges: bytes`.
  With `tail-mode=true` the Range is ignored (the tail is made by the lua code, not the file server).
- Rotation as multilog does it on a node (`rotate`: the log becomes `<log>.1`, a new empty log starts) and
  truncation (`truncate`), for tests of a follower; `sent` counts the body bytes served (the benchmark's figure).
Logs live in a folder laid out as on a node: `<root>/<user>/<framework>/<taskrole>/<pod-uid>/...`.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Optional
from urllib.parse import parse_qs, urlsplit

from loopback import LoopbackHandler, LoopbackServer

from .accounts import jwt_payload, jwt_sign

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
        self.sent = 0   # body bytes of log text served
        self.ranges = True  # False: Range headers are ignored, as a server without range support would
        self.breaks = 0     # the next this many answers with log text stop halfway and close (a connection reset)

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

    def rotate(self, user: str, framework: str, taskrole: str, pod_uid: str, name: str = "user.pai.all") -> None:
        """The log `name` becomes `name.1` (replacing an older one) and a new, empty `name` starts."""
        base = self.folder(user, framework, taskrole, pod_uid)
        (base / name).replace(base / f"{name}.1")
        (base / name).write_bytes(b"")

    def truncate(self, user: str, framework: str, taskrole: str, pod_uid: str, name: str = "user.pai.all",
                 text: str = "") -> None:
        """The log `name` is cut to nothing, then `text` is written into it."""
        (self.folder(user, framework, taskrole, pod_uid) / name).write_text(text, encoding="utf-8")

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
        size = path.stat().st_size
        disposition = f'attachment; filename="{name}.log"' if name.startswith("user-") else "attachment"
        headers = {"Content-Disposition": disposition, "Accept-Ranges": "bytes"}
        start, end, status = 0, size, 200
        if args.get("tail-mode") == "true":
            start = max(0, size - TAIL_BYTES)
        elif self.owner.ranges and self.headers.get("Range"):
            wanted = byte_range(self.headers["Range"], size)
            if wanted == "unsatisfiable":
                return self._send(416, b"", "text/html", {"Content-Range": f"bytes */{size}", "Accept-Ranges": "bytes"})
            if wanted is not None:
                start, end, status = wanted[0], wanted[1] + 1, 206
                headers["Content-Range"] = f"bytes {start}-{end - 1}/{size}"
        self._send_file(status, path, start, end, headers)

    def _send_file(self, status: int, path: Path, start: int, end: int, extra: dict[str, str]) -> None:
        """The bytes [start, end) of the file, read and written a chunk at a time."""
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(end - start))
        for key, value in extra.items():
            self.send_header(key, value)
        self.end_headers()
        with open(path, "rb") as source:
            source.seek(start)
            left = end - start
            if self.owner.breaks > 0 and left > 1:  # half the promised bytes, then the connection is gone
                self.owner.breaks -= 1
                self.wfile.write(source.read(left // 2))
                self.wfile.flush()
                self.close_connection = True
                return
            while left > 0:
                chunk = source.read(min(left, 1 << 16))
                if not chunk:
                    break
                self.wfile.write(chunk)
                self.owner.sent += len(chunk)
                left -= len(chunk)


_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


def byte_range(header: str, size: int):
    """(first, last) byte of one `Range: bytes=...` within a file of `size` bytes, as nginx reads it; the string
    "unsatisfiable" when it starts at or past the end (or asks a suffix of an empty file); None when the header is
    not one valid range (nginx then answers 200 with the whole file)."""
    match = _RANGE.match(header.strip())
    if match is None or not (match.group(1) or match.group(2)):
        return None
    first, last = match.group(1), match.group(2)
    if first == "":  # the last N bytes
        count = int(last)
        if count == 0 or size == 0:
            return "unsatisfiable"
        return max(0, size - count), size - 1
    start = int(first)
    if last and int(last) < start:
        return None
    if start >= size:
        return "unsatisfiable"
    return start, min(int(last) if last else size - 1, size - 1)


LogManager.handler = _Handler
