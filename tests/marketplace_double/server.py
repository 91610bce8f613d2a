"""The marketplace double: the store (items, tags, categories, their links) and its HTTP routes on 127.0.0.1."""

from __future__ import annotations

import datetime
import itertools
import json
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from loopback import LoopbackHandler, LoopbackServer

from . import express
from .identity import Caller, IdentityError, IdentityProvider

SEED = Path(__file__).resolve().parent / "seed.json"
OFFICIAL_EXAMPLE = "official example"
#: An item's columns in the order the server's JSON has them.
ITEM_KEYS = ("id", "name", "author", "type", "source", "isPublic", "isPrivate", "groupList", "dataType", "dataUrl",
             "useBlob", "categories", "tags", "summary", "description", "protocol", "useNumber", "starNumber",
             "status", "createdAt", "updatedAt")
#: Columns a create may set (Sequelize ignores the rest of the body) and their defaults.
ITEM_DEFAULTS: dict[str, Any] = {"name": None, "author": None, "type": None, "source": "marketplace",
                                 "isPublic": True, "isPrivate": False, "groupList": [], "dataType": None,
                                 "dataUrl": None, "useBlob": False, "categories": None, "tags": None,
                                 "summary": None, "description": None, "protocol": None, "useNumber": 0,
                                 "starNumber": 0, "status": None}
#: Sequelize STRING columns are VARCHAR(255): a longer value is a database error (500).
STRING_COLUMNS = ("name", "author", "type", "dataType", "dataUrl", "summary")
LIST_FILTERS = ("name", "author", "type", "source", "keyword", "tag", "category")
NOT_FOUND = "Result not found"
INTERNAL = "Unexpected internal error"


class HttpError(Exception):
    def __init__(self, status: int, text: str):
        super().__init__(text)
        self.status = status
        self.text = text


class JsonString(str):
    """A string answered with `res.json` (a JSON string), where other strings are `res.send` text."""


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Kind:
    """Tags or categories: the table, its links to items and the words of its answers."""

    def __init__(self, word: str, link_key: str, relation: str, summary_keys: tuple[str, ...]):
        self.word = word                  # "tag" | "category"
        self.link_key = link_key          # "ItemTagId" | "ItemCategoryId"
        self.relation = relation          # "ItemTagRelation" | "ItemCategoryRelation"
        self.summary_keys = summary_keys  # what a listed item shows of each link
        self.rows: dict[str, dict[str, Any]] = {}
        self.links: list[dict[str, Any]] = []  # relation rows, in the order they were written

    def linked(self, item_id: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        return [(self.rows[link[self.link_key]], link) for link in self.links if link["MarketplaceItemId"] == item_id]


class Marketplace:
    """The store and the rules of the routes; `identity` is its identity provider."""

    def __init__(self, *, seed: bool = True, new_id: Callable[[], str] | None = None) -> None:
        self.lock = threading.Lock()
        self.identity = IdentityProvider()
        self.items: dict[str, dict[str, Any]] = {}
        self.tags = Kind("tag", "ItemTagId", "ItemTagRelation", ("id", "name", "color"))
        self.categories = Kind("category", "ItemCategoryId", "ItemCategoryRelation", ("id", "name"))
        self.new_id = new_id or (lambda: str(uuid.uuid4()))
        self.seeds = self._seed() if seed else 0

    def _seed(self) -> int:
        """The 30 example items upstream seeds (texts shortened as recorded), their 26 tags and one category."""
        data = json.loads(SEED.read_text(encoding="utf-8"))
        for kind, rows in ((self.categories, data["categories"]), (self.tags, data["tags"])):
            kind.rows.update((row["id"], dict(row)) for row in rows)
        for seeded in data["items"]:
            item = {key: seeded[key] for key in ITEM_KEYS}
            self.items[item["id"]] = item
            for kind, names in ((self.tags, seeded["linkedTags"]), (self.categories, seeded["linkedCategories"])):
                for name in names:
                    (row_id,) = [row["id"] for row in kind.rows.values() if row["name"] == name]
                    kind.links.append({"createdAt": item["updatedAt"], "updatedAt": item["updatedAt"],
                                       "MarketplaceItemId": item["id"], kind.link_key: row_id})
        return len(data["items"])

    # -- items -----------------------------------------------------------------------------------------------

    def list_items(self, query: dict[str, str], caller: Caller) -> list[dict[str, Any]]:
        """`GET /items`. With any filter the database groups rows by item and link ids, so the answer comes in id
        order (links too); without one, in the order the rows were written (both as recorded)."""
        wanted = {key: query[key] for key in LIST_FILTERS if query.get(key)}
        if wanted.get("type") == "all":
            del wanted["type"]
        keyword = express.ilike(wanted["keyword"]) if "keyword" in wanted else None
        answer = []
        for item in self.items.values():
            if any(key in wanted and item.get(key) != wanted[key] for key in ("name", "author", "type", "source")):
                continue
            if keyword and not any(keyword.search(item.get(k) or "") for k in ("name", "author", "summary")):
                continue
            if not self._visible(item, caller, listing=True):
                continue
            shown = {}
            for kind, key in ((self.tags, "tag"), (self.categories, "category")):
                rows = [row for row, _ in kind.linked(item["id"])]
                if key in wanted:
                    # one row per link in the query's GROUP BY: `?tag=a,b` matches no row; one name trims the rest
                    names = wanted[key].split(",")
                    rows = [row for row in rows if len(names) == 1 and row["name"] == names[0]]
                    if not rows:
                        break
                if wanted:
                    rows.sort(key=lambda row: row["id"])
                shown[kind.word] = [{k: row[k] for k in kind.summary_keys} for row in rows]
            else:
                answer.append({**item, "ItemTags": shown["tag"], "ItemCategories": shown["category"]})
        return sorted(answer, key=lambda item: item["id"]) if wanted else answer

    def get_item(self, item_id: str, caller: Caller) -> dict[str, Any]:
        item = self.items.get(item_id)
        if item is None:
            raise HttpError(404, NOT_FOUND)
        if not self._visible(item, caller, listing=False):
            raise HttpError(403, f"The access to the item {item_id} is forbidden")
        return item

    @staticmethod
    def _visible(item: dict[str, Any], caller: Caller, *, listing: bool) -> bool:
        if caller.admin or item["isPublic"]:
            return True
        if item["isPrivate"]:
            return item["author"] == caller.username
        if listing:  # the list code reads the user's `groupList`; OpenPAI sends `grouplist`: never a match
            return False
        return item["author"] == caller.username or bool(set(caller.groups) & set(item["groupList"] or ()))

    def create_item(self, body: dict[str, Any], caller: Caller) -> dict[str, str]:
        if body.get("author") is None:
            raise HttpError(400, "Author info is missing in require body")
        if body["author"] != caller.username:
            raise HttpError(403, f"You are not allowed to create item with author {body['author']}")
        if body.get("protocol") == "":
            raise HttpError(400, "Empty protocol is not allowed")
        if not protocol_is_valid(body.get("protocol")):
            raise HttpError(400, "The protocol is not valid")
        item = {**ITEM_DEFAULTS, **{k: v for k, v in body.items() if k in ITEM_DEFAULTS}}
        if item["isPrivate"]:
            item["isPublic"], item["groupList"] = False, []
        elif item["isPublic"]:
            item["isPrivate"], item["groupList"] = False, []
        check_columns(item)
        item_id = body["id"] if "id" in body else None
        if item_id in self.items:
            raise HttpError(400, "The item has already exists")
        stamp = now()
        item = {"id": item_id if item_id is not None else self.new_id(), **item,
                "createdAt": body.get("createdAt") or stamp, "updatedAt": stamp}
        self.items[item["id"]] = {key: item[key] for key in ITEM_KEYS}
        return {"id": item["id"]}

    def writable(self, item_id: str, caller: Caller) -> dict[str, Any]:
        item = self.items.get(item_id)
        if caller.admin:
            if item is None:
                raise HttpError(404, NOT_FOUND)
            return item
        if item is None:  # upstream reads `item.author` of null for a non-admin
            raise HttpError(500, INTERNAL)
        official = any(row["name"] == OFFICIAL_EXAMPLE for row, _ in self.categories.linked(item_id))
        if official or item["author"] != caller.username:
            raise HttpError(403, f"The access to the item {item_id} is forbidden")
        return item

    def update_item(self, item_id: str, body: dict[str, Any], caller: Caller) -> str:
        """A partial update that validates nothing (not the protocol, not even a change of author)."""
        item = self.writable(item_id, caller)
        changed = {**item, **{k: v for k, v in body.items() if k in ITEM_DEFAULTS}}
        check_columns(changed)
        changed["updatedAt"] = now()
        self.items[item_id] = changed
        return "updated"

    def delete_item(self, item_id: str, caller: Caller) -> str:
        self.writable(item_id, caller)
        del self.items[item_id]
        for kind in (self.tags, self.categories):
            kind.links = [link for link in kind.links if link["MarketplaceItemId"] != item_id]
        return "deleted"

    # -- tags and categories ---------------------------------------------------------------------------------

    def item_links(self, item_id: str, kind: Kind) -> list[dict[str, Any]]:
        if item_id not in self.items:
            raise HttpError(500, INTERNAL)
        return [{**row, kind.relation: link} for row, link in kind.linked(item_id)]

    def link(self, method: str, item_id: str, kind: Kind, row_id: str, caller: Caller) -> str:
        self.writable(item_id, caller)
        row = kind.rows.get(row_id)
        if row is None:
            raise HttpError(500, INTERNAL)
        if kind is self.categories and row["name"] == OFFICIAL_EXAMPLE and not caller.admin:
            raise HttpError(403, f'Only admin can set "{OFFICIAL_EXAMPLE}" category.')
        def is_this(link: dict[str, Any]) -> bool:
            return link["MarketplaceItemId"] == item_id and link[kind.link_key] == row_id

        if method == "DELETE":  # 200 whether or not it was linked
            kind.links = [link for link in kind.links if not is_this(link)]
            return JsonString("deleted")
        if any(is_this(link) for link in kind.links):
            raise HttpError(404, NOT_FOUND)
        stamp = now()
        kind.links.append({"createdAt": stamp, "updatedAt": stamp, "MarketplaceItemId": item_id,
                           kind.link_key: row_id})
        return "added"

    def create_row(self, kind: Kind, body: dict[str, Any], caller: Caller) -> dict[str, str]:
        if kind is self.categories and not caller.admin:
            raise HttpError(403, "The create category is forbidden")
        if not isinstance(body.get("name"), str):
            raise HttpError(400, "Database validation not passed")
        stamp = now()
        row = {"id": self.new_id(), "name": body["name"], **({"color": body.get("color")} if kind is self.tags
                                                           else {}),
               "description": body.get("description"), "extras": body.get("extras"), "createdAt": stamp,
               "updatedAt": stamp}
        kind.rows[row["id"]] = row
        return {"id": row["id"]}

    def get_row(self, kind: Kind, row_id: str) -> dict[str, Any]:
        if row_id not in kind.rows:
            raise HttpError(404, NOT_FOUND)
        return kind.rows[row_id]

    def change_row(self, method: str, kind: Kind, row_id: str, body: dict[str, Any], caller: Caller) -> str:
        """Updating or deleting a tag or category: admins only (checked before the row is looked up)."""
        if not caller.admin:
            raise HttpError(403, f"The {'update' if method == 'PUT' else 'delete'} to the {kind.word} {row_id} is "
                                 "forbidden")
        row = self.get_row(kind, row_id)
        if method == "DELETE":
            del kind.rows[row_id]
            kind.links = [link for link in kind.links if link[kind.link_key] != row_id]
            return "deleted"
        row.update({k: v for k, v in body.items() if k in row and k not in ("id", "createdAt", "updatedAt")})
        row["updatedAt"] = now()
        return "updated"


def check_columns(item: dict[str, Any]) -> None:
    if item.get("source") not in ("marketplace", "pai"):
        raise HttpError(500, "Database error")
    for column in STRING_COLUMNS:
        if isinstance(item.get(column), str) and len(item[column]) > 255:
            raise HttpError(500, "Database error")
    for column in ("tags", "categories", "groupList"):
        if any(isinstance(v, str) and len(v) > 255 for v in item.get(column) or ()):
            raise HttpError(500, "Database error")


def protocol_is_valid(protocol: Any) -> bool:
    """`yaml.load(protocol)`, then OpenPAI's protocol schema (paictl's job schema gives the same verdicts)."""
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


class _Handler(LoopbackHandler):
    owner: MarketplaceDouble
    server_version = "marketplace-double"

    def _serve(self) -> None:
        method, parts = self.command, urlsplit(self.path)
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            status, answer = self._answer(method, parts.path, parts.query, raw)
        except HttpError as error:
            status, answer = error.status, error.text
        except IdentityError as error:
            status, answer = error.status, error.text
        self.owner.requests.append((method, self.path, status))
        if isinstance(answer, bytes):  # express' own 404 page: no etag
            self._send(status, "text/html; charset=utf-8", answer, tagged=False)
        elif isinstance(answer, str) and not isinstance(answer, JsonString):
            self._send(status, "text/html; charset=utf-8", answer.encode())
        else:
            self._send(status, "application/json; charset=utf-8", express.json_text(answer))

    do_GET = do_POST = do_PUT = do_DELETE = _serve

    def _send(self, status: int, content_type: str, payload: bytes, *, tagged: bool = True) -> None:
        self.send_response(status)
        self.send_header("X-Powered-By", "Express")
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        if tagged:
            self.send_header("ETag", express.etag(payload))
        self.end_headers()
        self.wfile.write(payload)

    def _body(self, raw: bytes) -> Any:
        """body-parser's `json()`: only for JSON content types; 413 over the limit; strict (an object or array)."""
        content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if content_type != "application/json" and not content_type.endswith("+json"):
            return {}
        if len(raw) > express.BODY_LIMIT_BYTES:
            raise HttpError(413, "request entity too large")
        text = raw.decode("utf-8", errors="replace")
        stripped = text.lstrip(" \t\n\r")
        if not stripped:
            return {}
        if stripped[0] not in "{[":
            partial = text[:len(text) - len(stripped)] + "#"
            message = express.parse_error(partial) or "Unexpected token"
            raise HttpError(400, message.replace("#", stripped[0], 1))
        problem = express.parse_error(text)
        if problem is not None:
            raise HttpError(400, problem)
        return json.loads(text)

    def _answer(self, method: str, path: str, query: str, raw: bytes) -> tuple[int, Any]:
        marketplace = self.owner
        segments = [unquote(s) for s in path.strip("/").split("/") if s]
        routed = _route(method, segments)
        if routed is None:
            return 404, express.cannot_route(method, path)
        if routed == "welcome":
            return 200, "Welcome to marketplace!"
        body = self._body(raw)
        body = body if isinstance(body, dict) else {}
        caller = marketplace.identity.check(self.headers.get("Authorization"), read=method == "GET")
        params = {key: values[0] for key, values in parse_qs(query, keep_blank_values=True).items()}
        kinds = {"tags": marketplace.tags, "tag": marketplace.tags, "categories": marketplace.categories,
                 "category": marketplace.categories}
        with marketplace.lock:
            match (method, segments):
                case ("GET", ["items"]):
                    return 200, marketplace.list_items(params, caller)
                case ("POST", ["items"]):
                    return 201, marketplace.create_item(body, caller)
                case ("GET", ["items", item_id]):
                    return 200, marketplace.get_item(item_id, caller)
                case ("PUT", ["items", item_id]):
                    return 200, marketplace.update_item(item_id, body, caller)
                case ("DELETE", ["items", item_id]):
                    return 200, marketplace.delete_item(item_id, caller)
                case ("GET", ["items", item_id, kind]):
                    return 200, marketplace.item_links(item_id, kinds[kind])
                case (("POST" | "DELETE"), ["items", item_id, kind, row_id]):
                    return 200, marketplace.link(method, item_id, kinds[kind], row_id, caller)
                case ("GET", [kind]):
                    return 200, list(kinds[kind].rows.values())
                case ("POST", [kind]):
                    return 201, marketplace.create_row(kinds[kind], body, caller)
                case ("GET", [kind, row_id]):
                    return 200, marketplace.get_row(kinds[kind], row_id)
                case (("PUT" | "DELETE"), [kind, row_id]):
                    return 200, marketplace.change_row(method, kinds[kind], row_id, body, caller)
        raise AssertionError(f"routed but not answered: {method} {segments}")


def _route(method: str, segments: list[str]) -> str | None:
    """The route a request takes ("welcome", "api"), or None: express' 404 page."""
    match (method, segments):
        case ("GET", []):
            return "welcome"
        case (("GET" | "POST"), ["items"]) | (("GET" | "PUT" | "DELETE"), ["items", _]):
            return "api"
        case ("GET", ["items", _, ("tag" | "category")]):
            return "api"
        case (("POST" | "DELETE"), ["items", _, ("tag" | "category"), _]):
            return "api"
        case (("GET" | "POST"), [("tags" | "categories")]):
            return "api"
        case (("GET" | "PUT" | "DELETE"), [("tags" | "categories"), _]):
            return "api"
    return None


class MarketplaceDouble(Marketplace, LoopbackServer):
    """The store served over HTTP on 127.0.0.1 (`url`), with what tests use: users, the items an author holds."""

    handler = _Handler
    thread_name = "marketplace-double"

    def __init__(self, *, seed: bool = True, new_id: Callable[[], str] | None = None) -> None:
        super().__init__(seed=seed, new_id=new_id)
        self.requests: list[tuple[str, str, int]] = []  # (method, path with query, status) of every request
        self._names = itertools.count(1)
        self.admin_token = self.identity.add_user("admin", admin=True, groups=["admingroup"])

    # -- for tests -------------------------------------------------------------------------------------------

    def user(self, prefix: str = "user", *, admin: bool = False, groups: list[str] | None = None,
             exact: bool = False) -> tuple[str, str]:
        """A user of the identity provider, unique unless `exact` (then named `prefix`): (name, token)."""
        name = prefix if exact else f"{prefix}{next(self._names)}"
        return name, self.identity.add_user(name, admin=admin, groups=groups)

    def items_of(self, author: str) -> list[dict[str, Any]]:
        """Every item of `author` as stored (private and group-only ones too), oldest first, with the sorted names
        of its linked tags and categories (`linked_tags`, `linked_categories`)."""
        with self.lock:
            rows = [dict(item) for item in self.items.values() if item["author"] == author]
            for row in rows:
                for kind, key in ((self.tags, "linked_tags"), (self.categories, "linked_categories")):
                    row[key] = sorted(linked["name"] for linked, _ in kind.linked(row["id"]))
        return sorted(rows, key=lambda row: row["createdAt"])

    def forget(self, author: str) -> None:
        """Delete every item of `author` with its links."""
        with self.lock:
            for item_id in [i for i, item in self.items.items() if item["author"] == author]:
                del self.items[item_id]
                for kind in (self.tags, self.categories):
                    kind.links = [link for link in kind.links if link["MarketplaceItemId"] != item_id]

    def count_tags(self) -> int:
        with self.lock:
            return len(self.tags.rows)

    def writes(self) -> list[tuple[str, str, int]]:
        return [r for r in self.requests if r[0] in ("POST", "PUT", "DELETE")]
