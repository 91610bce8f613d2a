"""The test marketplace server: a stdlib ThreadingHTTPServer on 127.0.0.1, state in memory under one lock."""

from __future__ import annotations

import base64
import dataclasses
import datetime
import json
import secrets
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

OFFICIAL_EXAMPLE = "official example"
#: Sequelize STRING columns are VARCHAR(255) in PostgreSQL; a longer value is a database error (500).
STRING_COLUMNS = ("name", "author", "type", "dataType", "dataUrl", "summary")


def jwt_token(payload: dict[str, Any]) -> str:
    """A JWT-shaped token (header.payload.signature); the server decodes it without checking the signature."""
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part(payload)}.{secrets.token_urlsafe(16)}"


@dataclasses.dataclass(frozen=True, kw_only=True)
class RecordedRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    status: int


class HttpError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


class JsonText(str):
    """A string answer sent as JSON (`res.json('deleted')`), where the others are plain text (`res.send`)."""


def _not_found() -> HttpError:
    return HttpError(404, "Result not found")


class MarketplaceTestServer:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.items: dict[str, dict[str, Any]] = {}
        self.tags: dict[str, dict[str, Any]] = {}
        self.categories: dict[str, dict[str, Any]] = {}
        self.item_tags: set[tuple[str, str]] = set()
        self.item_categories: set[tuple[str, str]] = set()
        #: The IDP: token -> user record as OpenPAI's rest-server answers it (note `grouplist`, lower case).
        self.idp_tokens: dict[str, dict[str, Any]] = {}
        self.requests: list[RecordedRequest] = []
        self._clock = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
        self._http: ThreadingHTTPServer | None = None

    # -- test API -------------------------------------------------------------------------------------------

    def add_user(self, username: str, *, admin: bool = False, groups: list[str] | None = None,
                 token: str | None = None) -> str:
        """Register a user with the IDP and return its token (JWT-shaped unless `token` is given)."""
        token = token or jwt_token({"username": username, "application": False})
        self.idp_tokens[token] = {"username": username, "admin": admin, "grouplist": list(groups or [])}
        return token

    def requests_with(self, method: str, path_prefix: str = "") -> list[RecordedRequest]:
        return [r for r in self.requests if r.method == method and r.path.startswith(path_prefix)]

    @property
    def url(self) -> str:
        assert self._http is not None
        host, port = self._http.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> "MarketplaceTestServer":
        server = self

        class Handler(_Handler):
            marketplace = server

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._http.daemon_threads = True
        threading.Thread(target=self._http.serve_forever, name="marketplace-test-server", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._http is not None
        self._http.shutdown()
        self._http.server_close()

    # -- authentication -------------------------------------------------------------------------------------

    def token_info(self, authorization: str | None) -> dict[str, Any]:
        """Write routes: the IDP's `GET /api/v2/tokens/check`."""
        if not authorization:
            raise HttpError(401, "Authentication token is missing or invalid")
        token = authorization.split(" ")[1] if " " in authorization else ""
        info = self.idp_tokens.get(token)
        if info is None:
            raise HttpError(401, "Authentication token is missing or invalid")
        return {"username": info["username"], "admin": info["admin"]}

    def user_info(self, authorization: str | None) -> dict[str, Any]:
        """Read routes: decode the token as a JWT for `username`, then the IDP's `GET /api/v2/users/<name>`."""
        if not authorization:
            raise HttpError(401, "Authentication token is missing or invalid")
        token = authorization.split(" ")[1] if " " in authorization else ""
        try:
            payload = token.split(".")[1]
            claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        except (IndexError, ValueError):
            raise HttpError(401, "Authentication token is missing or invalid") from None
        if not isinstance(claims, dict) or not claims.get("username"):
            raise HttpError(401, "Authentication token is missing or invalid")
        info = self.idp_tokens.get(token)
        if info is None or info["username"] != claims["username"]:
            raise HttpError(401, "Authentication token is missing or invalid")
        return {"username": info["username"], "admin": info["admin"], "grouplist": info["grouplist"]}

    # -- items ----------------------------------------------------------------------------------------------

    def _now(self) -> str:
        self._clock += datetime.timedelta(seconds=1)
        return self._clock.isoformat().replace("+00:00", "Z")

    def create_item(self, body: dict[str, Any], token: dict[str, Any]) -> dict[str, str]:
        if body.get("author") is None:
            raise HttpError(400, "Author info is missing in require body")
        if body["author"] != token["username"]:
            raise HttpError(403, f"You are not allowed to create item with author {body['author']}")
        if body.get("protocol") == "":
            raise HttpError(400, "Empty protocol is not allowed")
        if not _protocol_is_valid(body.get("protocol")):
            raise HttpError(400, "The protocol is not valid")
        item = {"id": str(uuid.uuid4()), "name": None, "author": None, "type": None, "source": "marketplace",
                "isPublic": True, "isPrivate": False, "groupList": [], "dataType": None, "dataUrl": None,
                "useBlob": False, "categories": None, "tags": None, "summary": None, "description": None,
                "protocol": None, "useNumber": 0, "starNumber": 0, "status": None}
        item.update({k: v for k, v in body.items() if k in item or k == "createdAt"})
        if item["isPrivate"]:
            item["isPublic"], item["groupList"] = False, []
        elif item["isPublic"]:
            item["isPrivate"], item["groupList"] = False, []
        _check_columns(item)
        if item["id"] in self.items:
            raise HttpError(400, "The item has already exists")
        now = self._now()
        item.setdefault("createdAt", now)
        item["updatedAt"] = now
        self.items[item["id"]] = item
        return {"id": item["id"]}

    def _writable(self, item_id: str, token: dict[str, Any]) -> dict[str, Any]:
        item = self.items.get(item_id)
        if token["admin"]:
            if item is None:
                raise _not_found()
            return item
        if item is None:  # upstream reads `item.author` of null for a non-admin
            raise HttpError(500, "Unexpected internal error")
        official = any(self.categories[c]["name"] == OFFICIAL_EXAMPLE for i, c in self.item_categories if i == item_id)
        if official or item["author"] != token["username"]:
            raise HttpError(403, f"The access to the item {item_id} is forbidden")
        return item

    def update_item(self, item_id: str, body: dict[str, Any], token: dict[str, Any]) -> str:
        item = self._writable(item_id, token)
        changed = {**item, **{k: v for k, v in body.items() if k in item and k != "id"}}
        _check_columns(changed)
        changed["updatedAt"] = self._now()
        self.items[item_id] = changed
        return "updated"

    def delete_item(self, item_id: str, token: dict[str, Any]) -> str:
        self._writable(item_id, token)
        del self.items[item_id]
        self.item_tags = {pair for pair in self.item_tags if pair[0] != item_id}
        self.item_categories = {pair for pair in self.item_categories if pair[0] != item_id}
        return "deleted"

    def _visible(self, item: dict[str, Any], user: dict[str, Any], *, listing: bool) -> bool:
        if user["admin"] or item["isPublic"]:
            return True
        if item["isPrivate"]:
            return item["author"] == user["username"]
        if listing:  # the list code reads userInfo.groupList; the IDP sends `grouplist`: never a match
            return False
        return item["author"] == user["username"] or bool(set(user.get("grouplist") or ()) & set(item["groupList"]))

    def list_items(self, query: dict[str, list[str]], user: dict[str, Any]) -> list[dict[str, Any]]:
        one = {key: values[0] for key, values in query.items() if values}
        tags = one["tag"].split(",") if one.get("tag") else None
        categories = one["category"].split(",") if one.get("category") else None
        answer = []
        for item in self.items.values():
            if any(one.get(k) and item.get(k) != one[k] for k in ("name", "author", "source")):
                continue
            if one.get("type") and one["type"] != "all" and item.get("type") != one["type"]:
                continue
            keyword = (one.get("keyword") or "").lower()
            if keyword and not any(keyword in (item.get(k) or "").lower() for k in ("name", "author", "summary")):
                continue
            if not self._visible(item, user, listing=True):
                continue
            linked_tags = [self.tags[t] for i, t in sorted(self.item_tags) if i == item["id"]]
            linked_categories = [self.categories[c] for i, c in sorted(self.item_categories) if i == item["id"]]
            # Upstream groups rows by tag and category, so `array_agg(name) @> [..]` sees one name per row: several
            # values never match, one value keeps only its own rows.
            if tags is not None:
                linked_tags = [t for t in linked_tags if len(tags) == 1 and t["name"] == tags[0]]
                if not linked_tags:
                    continue
            if categories is not None:
                linked_categories = [c for c in linked_categories if len(categories) == 1
                                     and c["name"] == categories[0]]
                if not linked_categories:
                    continue
            answer.append({**item, "ItemTags": [{k: t[k] for k in ("id", "name", "color")} for t in linked_tags],
                           "ItemCategories": [{k: c[k] for k in ("id", "name")} for c in linked_categories]})
        return answer

    def get_item(self, item_id: str, user: dict[str, Any]) -> dict[str, Any]:
        item = self.items.get(item_id)
        if item is None:
            raise _not_found()
        if not self._visible(item, user, listing=False):
            raise HttpError(403, f"The access to the item {item_id} is forbidden")
        return item

    # -- tags and categories --------------------------------------------------------------------------------

    def table(self, kind: str) -> dict[str, dict[str, Any]]:
        return self.tags if kind in ("tags", "tag") else self.categories

    def links(self, kind: str) -> set[tuple[str, str]]:
        return self.item_tags if kind == "tag" else self.item_categories

    def create_named(self, kind: str, body: dict[str, Any]) -> dict[str, str]:
        if not isinstance(body.get("name"), str):
            raise HttpError(400, "Database validation not passed")
        row = {"id": str(uuid.uuid4()), "name": body["name"], "description": body.get("description"),
               "extras": body.get("extras")}
        if kind == "tags":
            row["color"] = body.get("color")
        self.table(kind)[row["id"]] = row
        return {"id": row["id"]}

    def link(self, method: str, item_id: str, kind: str, row_id: str, token: dict[str, Any]) -> str:
        self._writable(item_id, token)
        table = self.table(kind)
        if row_id not in table:
            raise _not_found()
        if kind == "category" and table[row_id]["name"] == OFFICIAL_EXAMPLE and not token["admin"]:
            raise HttpError(403, f'Only admin can set "{OFFICIAL_EXAMPLE}" category.')
        if method == "POST":
            self.links(kind).add((item_id, row_id))
            return "added"
        self.links(kind).discard((item_id, row_id))
        return JsonText("deleted")  # upstream answers this one with res.json


def _check_columns(item: dict[str, Any]) -> None:
    if item.get("source") not in ("marketplace", "pai"):
        raise HttpError(500, "Database error")
    for column in STRING_COLUMNS:
        if isinstance(item.get(column), str) and len(item[column]) > 255:
            raise HttpError(500, "Database error")
    for column in ("tags", "categories", "groupList"):
        if any(isinstance(v, str) and len(v) > 255 for v in item.get(column) or ()):
            raise HttpError(500, "Database error")


def _protocol_is_valid(protocol: Any) -> bool:
    """`yaml.load(protocol)` then OpenPAI's protocol schema (paictl's job schema gives the same verdicts)."""
    if not isinstance(protocol, str):
        return False
    import jsonschema_rs
    from ruamel.yaml import YAML

    from paictl.schemas import load_schema

    try:
        job = YAML(typ="safe", pure=True).load(protocol)
    except Exception:  # noqa: BLE001 - any YAML failure is "not valid", as upstream's try/catch
        return False
    return isinstance(job, dict) and jsonschema_rs.validator_for(load_schema("job")).is_valid(job)


class _Handler(BaseHTTPRequestHandler):
    marketplace: MarketplaceTestServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet in tests
        pass

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def _serve(self, method: str) -> None:
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body: Any = {}
        if "application/json" in (self.headers.get("Content-Type") or ""):
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = None
        segments = [unquote(s) for s in parts.path.strip("/").split("/") if s]
        server = self.marketplace
        try:
            if body is None:
                raise HttpError(400, "Bad Request")
            with server.lock:
                status, answer = self._route(method, segments, query, body if isinstance(body, dict) else {})
        except HttpError as error:
            status, answer = error.status, error.message
        except Exception as error:  # noqa: BLE001 - a bug in the test server shows up as a 500 with its text
            status, answer = 500, f"test server bug: {error!r}"
        server.requests.append(RecordedRequest(method=method, path=parts.path, query=query,
                                               headers=dict(self.headers.items()), body=raw, status=status))
        if isinstance(answer, str) and not isinstance(answer, JsonText):
            payload, kind = answer.encode(), "text/html; charset=utf-8"
        else:
            payload, kind = json.dumps(answer).encode(), "application/json; charset=utf-8"
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _route(self, method: str, segments: list[str], query: dict[str, list[str]],
               body: dict[str, Any]) -> tuple[int, Any]:
        server = self.marketplace
        auth = self.headers.get("Authorization")
        match (method, segments):
            case ("GET", ["items"]):
                return 200, server.list_items(query, server.user_info(auth))
            case ("POST", ["items"]):
                return 201, server.create_item(body, server.token_info(auth))
            case ("GET", ["items", item_id]):
                return 200, server.get_item(item_id, server.user_info(auth))
            case ("PUT", ["items", item_id]):
                return 200, server.update_item(item_id, body, server.token_info(auth))
            case ("DELETE", ["items", item_id]):
                return 200, server.delete_item(item_id, server.token_info(auth))
            case ("GET", ["items", item_id, ("tag" | "category") as kind]):
                server.get_item(item_id, server.user_info(auth))
                table = server.table(kind)
                return 200, [table[r] for i, r in sorted(server.links(kind)) if i == item_id]
            case (("POST" | "DELETE"), ["items", item_id, ("tag" | "category") as kind, row_id]):
                return 200, server.link(method, item_id, kind, row_id, server.token_info(auth))
            case ("GET", [("tags" | "categories") as kind]):
                server.user_info(auth)
                return 200, list(server.table(kind).values())
            case ("POST", [("tags" | "categories") as kind]):
                server.token_info(auth)
                return 201, server.create_named(kind, body)
            case ("GET", [("tags" | "categories") as kind, row_id]):
                server.user_info(auth)
                if row_id not in server.table(kind):
                    raise _not_found()
                return 200, server.table(kind)[row_id]
        raise HttpError(404, "Not Found")
