"""The client of an OpenPAI marketplace server (microsoft/openpaimarketplace `rest_server`), over httpx.

What the real server does and this client works around (`../shared/reference/marketplace-server.md`; the tests
run this client against a double held to the unchanged server's recorded answers, `tests/marketplace_double`):
- `?tag=a,b` answers nothing: several tags or categories are asked one at a time and intersected;
- `keyword` is a SQL LIKE pattern: `%`, `_` and `\\` are escaped, so a keyword is a plain substring (`query.py`);
- errors are plain text, or express' HTML page for an unknown route: each becomes one line;
- publishing (checks before the first write, undo, concurrent publishers) is `server_publish.py`.

The token is sent in the Authorization header only; it is never part of a message, and a server that echoes
it back gets it replaced by `***`.
"""

from __future__ import annotations

import base64
import json
import time
from typing import Any

from paictl.errors import ClusterError, NotFoundError, display_url
from paictl.http_answers import decoded, page_text, read_within
from paictl.protocol.diagnostics import one_line

from .query import ItemQuery, in_listing_order
from .wire import BODY_LIMIT_BYTES, encode_body

#: Long enough for a slow cluster proxy, short enough that CI does not hang on a dead one.
TIMEOUT_SECONDS = 30.0


class ServerError(ClusterError):
    """An error answer of the server, with its status (the publisher decides on it: 404 on a re-link is success)."""

    def __init__(self, message: str, status: int, text: str):
        super().__init__(message)
        self.status = status
        self.text = text


class NotFoundAnswer(ServerError, NotFoundError):
    pass


class MarketplaceServer:
    def __init__(self, base_url: str, token: str, *, timeout: float = TIMEOUT_SECONDS):
        import httpx

        self.base_url = base_url.rstrip("/")
        self.shown = display_url(self.base_url)  # what messages name: never user:password@ or ?token=
        self._token = token
        self._client = httpx.Client(base_url=self.base_url + "/", timeout=timeout, follow_redirects=False,
                                    headers={"Authorization": f"Bearer {token}", "Accept": "application/json"})

    def __str__(self) -> str:
        return self.shown

    def close(self) -> None:
        self._client.close()

    # -- HTTP ------------------------------------------------------------------------------------------------

    def call(self, method: str, route: str, *, params: dict[str, str] | None = None, body: Any = None) -> Any:
        import httpx

        content = None if body is None else encode_body(body)
        headers = None if body is None else {"Content-Type": "application/json"}
        timeout = self._client.timeout.read
        deadline = time.monotonic() + timeout  # the whole answer's: a server trickling bytes is no answer
        try:
            request = self._client.build_request(method, route.lstrip("/"), params=params, content=content,
                                                 headers=headers)
            response = self._client.send(request, stream=True)
            try:
                answer = decoded(response, read_within(response, deadline))
            finally:
                response.close()
        except httpx.TimeoutException:
            raise ClusterError(f"marketplace {self.shown}: {method} {route} timed out (no answer within "
                               f"{timeout:g} s; --request-timeout sets the limit)") from None
        except httpx.HTTPError as exc:
            reason = self._redacted(str(exc)) or type(exc).__name__
            raise ClusterError(f"marketplace {self.shown}: cannot reach the server: {reason}") from None
        if response.status_code >= 400:
            raise self._error(method, route, response, answer)
        if response.status_code >= 300:  # not followed: a redirected POST or PUT would lose its body
            where = self._redacted(response.headers.get("location", "elsewhere"))
            raise ClusterError(f"marketplace {self.shown}: {method} {route} answered {response.status_code}, "
                               f"a redirect to {one_line(where)}; give that URL as the target")
        if "json" not in response.headers.get("content-type", ""):
            return answer
        try:
            return json.loads(answer)
        except ValueError:
            raise ClusterError(f"marketplace {self.shown}: {method} {route} answered invalid JSON") from None

    def _error(self, method: str, route: str, response, answer: str) -> ServerError:
        text = self._redacted(answer_text(answer))[:300] or response.reason_phrase
        message = f"marketplace {self.shown}: {method} {route} answered {response.status_code}: {text}"
        if response.status_code == 401:
            message += (" (check the token; reading needs the JWT token OpenPAI issues, which the server decodes "
                        "to find the user)")
        elif response.status_code == 413:
            message += f" (the server takes request bodies up to {BODY_LIMIT_BYTES} bytes)"
        elif response.status_code == 404 and "<" in answer[:200]:
            message += " (no such route: is the URL the marketplace's API root, e.g. https://CLUSTER/marketplace/api?)"
        kind = NotFoundAnswer if response.status_code == 404 else ServerError
        return kind(message, response.status_code, text)

    def _redacted(self, text: str) -> str:
        return text.replace(self._token, "***") if self._token else text

    # -- who is calling --------------------------------------------------------------------------------------

    def username(self) -> str | None:
        """The user the token names: the server decodes the JWT itself for reads (without checking it)."""
        parts = self._token.split(".")
        if len(parts) != 3:
            return None
        try:
            claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
        except ValueError:
            return None
        name = claims.get("username") if isinstance(claims, dict) else None
        return name if isinstance(name, str) and name else None

    def is_admin(self) -> bool | None:
        """Whether the token's user is a marketplace admin, asked without writing anything.

        `PUT /categories/<an id that cannot exist>` answers 403 "forbidden" to a non-admin before looking the
        category up, and 404 to an admin (nothing to update); both go through the IDP's token check, as every
        write does. None when the server answers anything else.
        """
        import uuid

        try:
            self.call("PUT", f"/categories/paictl-probe-{uuid.uuid4()}", body={})
        except ServerError as error:
            if error.status == 403:
                return False
            if error.status == 404:
                return True
            if error.status == 401:
                raise
            return None
        return None

    # -- reading ---------------------------------------------------------------------------------------------

    def query(self, query: ItemQuery) -> list[dict[str, Any]]:
        """Items matching every filter, sorted. One request per tag and category beyond the first of each."""
        plain = query.server_params()
        tags, categories = list(query.tags), list(query.categories)
        first: dict[str, str] = dict(plain)
        if tags:
            first["tag"] = tags.pop(0)
        if categories:
            first["category"] = categories.pop(0)
        found = {d["id"]: d for d in self.items(first)}
        for name, values in (("tag", tags), ("category", categories)):
            for value in values:
                ids = {d["id"] for d in self.items({**plain, name: value})}
                found = {key: d for key, d in found.items() if key in ids}
        # The server's keyword is case-folded by PostgreSQL; the final word is the same rule as the local index's.
        return in_listing_order([d for d in found.values() if query.matches_keyword(d)])

    def items(self, params: dict[str, str]) -> list[dict[str, Any]]:
        answer = self.call("GET", "/items", params=params)
        if not isinstance(answer, list):
            raise ClusterError(f"marketplace {self.shown}: GET /items did not answer a list")
        return [d for d in answer if isinstance(d, dict) and isinstance(d.get("id"), str)]

    def named(self, collection: str) -> dict[str, str]:
        """`GET /tags` or `/categories` as name -> id (the first of duplicate names: the server allows them)."""
        answer = self.call("GET", collection)
        known: dict[str, str] = {}
        for entry in answer if isinstance(answer, list) else []:
            if isinstance(entry, dict) and isinstance(entry.get("name"), str) and isinstance(entry.get("id"), str):
                known.setdefault(entry["name"], entry["id"])
        return known

    def links(self, item_id: str, kind: str) -> list[tuple[str, str]]:
        """The tags (kind "tag") or categories linked to an item, (name, id), sorted: names may repeat, as the
        server allows several tags of one name (concurrent publishers may each have created it)."""
        answer = self.call("GET", f"/items/{item_id}/{kind}")
        return sorted((e["name"], e["id"]) for e in answer if isinstance(e, dict) and isinstance(e.get("name"), str)
                      and isinstance(e.get("id"), str)) if isinstance(answer, list) else []

    def find(self, name: str, author: str | None = None) -> list[dict[str, Any]]:
        params = {"name": name, **({"author": author} if author else {})}
        return [d for d in self.items(params) if d.get("name") == name and (author is None or d.get("author") == author)]

    def fetch(self, name: str, author: str | None = None) -> dict[str, Any]:
        from paictl.errors import UsageError

        found = self.find(name, author)
        if not found:
            by = f" by {author}" if author else ""
            raise NotFoundError(f"marketplace {self.shown}: no item named {name!r}{by} that this token can see")
        authors = sorted({str(d.get("author")) for d in found})
        if len(authors) > 1:
            raise UsageError(f"marketplace {self.shown}: several items are named {name!r} (authors: "
                             f"{', '.join(authors)}); give --author")
        return oldest(found)


def oldest(documents: list[dict[str, Any]]) -> dict[str, Any]:
    """Of several items with one name and author (the server allows it), the first created is the item."""
    return min(documents, key=lambda d: (str(d.get("createdAt") or ""), str(d.get("id"))))


def answer_text(text: str) -> str:
    """An error answer as one line: express' HTML error page becomes its message ("Cannot GET /x"), a proxy's page
    its title; the server's own plain-text answers stay whole."""
    text = text.strip()
    return page_text(text) if text.startswith("<") else one_line(text)
