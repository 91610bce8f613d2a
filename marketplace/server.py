"""The client of an OpenPAI marketplace server (microsoft/openpaimarketplace `rest_server`), over httpx.

It lives with the server as it behaves (`marketplace-server.md`), not as its API description says:
- the server validates the protocol on create only: `publish` is given items paictl has just validated, and
  `targets.publish` validates again right before every create *and* every update;
- names are not unique: publishing finds the item by name and author and updates it (`PUT`) instead of creating a
  duplicate;
- tags and categories in the item body do not make it findable: each is found (`GET /tags`) or created, then linked
  (`POST /items/:id/tag/:tagId`), and links the item no longer has are removed;
- `?tag=a,b` always answers `[]`: a query with several tags or categories asks once per tag and intersects;
- errors are plain text: each becomes one line with the route and the status, exit code 3 (404: also 3).
httpx rather than urllib: timeouts for every phase of a request, one connection reused for the dozen calls a
publish makes, and exception classes that separate "unreachable" from "timed out" for the one-line errors.
The bearer token goes into the Authorization header only; it is never part of a message, and a server that echoes
it back gets it replaced by `***`.
"""

from __future__ import annotations

from typing import Any

from paictl.errors import ClusterError, NotFoundError
from paictl.protocol.diagnostics import one_line

from .query import ItemQuery, in_listing_order

#: Long enough for a slow cluster proxy, short enough that CI does not hang on a dead one.
TIMEOUT_SECONDS = 30.0


class MarketplaceServer:
    def __init__(self, base_url: str, token: str, *, timeout: float = TIMEOUT_SECONDS):
        import httpx

        self.base_url = base_url.rstrip("/")
        self._token = token
        self._client = httpx.Client(base_url=self.base_url + "/", timeout=timeout, follow_redirects=False,
                                    headers={"Authorization": f"Bearer {token}", "Accept": "application/json"})

    def __str__(self) -> str:
        return self.base_url

    def close(self) -> None:
        self._client.close()

    # -- HTTP ------------------------------------------------------------------------------------------------

    def _call(self, method: str, route: str, *, params: dict[str, str] | None = None,
              body: dict[str, Any] | None = None) -> Any:
        import httpx

        try:
            response = self._client.request(method, route.lstrip("/"), params=params, json=body)
        except httpx.TimeoutException:
            raise ClusterError(f"marketplace {self.base_url}: {method} {route} timed out") from None
        except httpx.HTTPError as exc:
            reason = self._redacted(str(exc)) or type(exc).__name__
            raise ClusterError(f"marketplace {self.base_url}: cannot reach the server: {reason}") from None
        if response.status_code >= 400:
            raise self._error(method, route, response)
        if response.status_code >= 300:  # not followed: a redirected POST or PUT would lose its body
            where = self._redacted(response.headers.get("location", "elsewhere"))
            raise ClusterError(f"marketplace {self.base_url}: {method} {route} answered {response.status_code}, "
                               f"a redirect to {where}; give that URL as the target")
        if "json" not in response.headers.get("content-type", ""):
            return response.text
        try:
            return response.json()
        except ValueError:
            raise ClusterError(f"marketplace {self.base_url}: {method} {route} answered invalid JSON") from None

    def _error(self, method: str, route: str, response) -> ClusterError:
        text = self._redacted(one_line(response.text.strip()))[:300] or response.reason_phrase
        message = f"marketplace {self.base_url}: {method} {route} answered {response.status_code}: {text}"
        if response.status_code == 401:
            message += (" (check the token; reading needs the JWT token OpenPAI issues, which the server decodes "
                        "to find the user)")
        if response.status_code == 404:
            return NotFoundError(message)
        return ClusterError(message)

    def _redacted(self, text: str) -> str:
        return text.replace(self._token, "***") if self._token else text

    # -- items ---------------------------------------------------------------------------------------------

    def query(self, query: ItemQuery) -> list[dict[str, Any]]:
        """Items matching every filter, sorted. One request per tag and category beyond the first of each."""
        plain = query.plain_params()
        tags, categories = list(query.tags), list(query.categories)
        first: dict[str, str] = dict(plain)
        if tags:
            first["tag"] = tags.pop(0)
        if categories:
            first["category"] = categories.pop(0)
        found = {d["id"]: d for d in self._items(first)}
        for name, values in (("tag", tags), ("category", categories)):
            for value in values:
                ids = {d["id"] for d in self._items({**plain, name: value})}
                found = {key: d for key, d in found.items() if key in ids}
        return in_listing_order(list(found.values()))

    def _items(self, params: dict[str, str]) -> list[dict[str, Any]]:
        answer = self._call("GET", "/items", params=params)
        if not isinstance(answer, list):
            raise ClusterError(f"marketplace {self.base_url}: GET /items did not answer a list")
        return [d for d in answer if isinstance(d, dict) and isinstance(d.get("id"), str)]

    def find(self, name: str, author: str | None = None) -> list[dict[str, Any]]:
        params = {"name": name, **({"author": author} if author else {})}
        return [d for d in self._items(params) if d.get("name") == name and (author is None or d.get("author") == author)]

    def fetch(self, name: str, author: str | None = None) -> dict[str, Any]:
        from paictl.errors import UsageError

        found = self.find(name, author)
        if not found:
            by = f" by {author}" if author else ""
            raise NotFoundError(f"marketplace {self.base_url}: no item named {name!r}{by} that this token can see")
        authors = sorted({str(d.get("author")) for d in found})
        if len(authors) > 1:
            raise UsageError(f"marketplace {self.base_url}: several items are named {name!r} (authors: "
                             f"{', '.join(authors)}); give --author")
        return _oldest(found)

    def publish(self, document: dict[str, Any]) -> tuple[str, str]:
        """Create the item, or update the one with the same name and author: ("created" | "updated", id).

        The caller has validated `document` (targets.publish does, right before this).
        """
        existing = self.find(document["name"], document["author"])
        if existing:
            item_id = _oldest(existing)["id"]
            self._call("PUT", f"/items/{item_id}", body=document)
            action = "updated"
        else:
            answer = self._call("POST", "/items", body=document)
            item_id = answer.get("id") if isinstance(answer, dict) else None
            if not isinstance(item_id, str):
                raise ClusterError(f"marketplace {self.base_url}: POST /items did not answer an id")
            action = "created"
        self._link(item_id, "tag", "/tags", document.get("tags") or [])
        self._link(item_id, "category", "/categories", document.get("categories") or [])
        return action, item_id

    def _link(self, item_id: str, kind: str, collection: str, wanted: list[str]) -> None:
        """Make the item findable by `?tag=`/`?category=`: find or create each one, link it, unlink the rest."""
        linked = self._call("GET", f"/items/{item_id}/{kind}")
        linked_ids = {entry.get("name"): entry.get("id") for entry in linked if isinstance(entry, dict)} \
            if isinstance(linked, list) else {}
        known: dict[str, str] | None = None
        for name in wanted:
            if name in linked_ids:
                continue
            if known is None:
                every = self._call("GET", collection)
                known = {}
                for entry in every if isinstance(every, list) else []:
                    if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                        known.setdefault(entry["name"], entry.get("id"))
            if name not in known:
                created = self._call("POST", collection, body={"name": name})
                known[name] = created.get("id") if isinstance(created, dict) else None
            if not isinstance(known[name], str):
                raise ClusterError(f"marketplace {self.base_url}: POST {collection} did not answer an id")
            self._call("POST", f"/items/{item_id}/{kind}/{known[name]}")
        for name, link_id in sorted(linked_ids.items(), key=lambda pair: str(pair[0])):
            if name not in wanted and isinstance(link_id, str):
                self._call("DELETE", f"/items/{item_id}/{kind}/{link_id}")


def _oldest(documents: list[dict[str, Any]]) -> dict[str, Any]:
    """Of several items with one name and author (the server allows it), the first created is the one to update."""
    return min(documents, key=lambda d: (str(d.get("createdAt") or ""), str(d.get("id"))))

