"""Publishing one item to a marketplace server: never half-done, right for ordinary users, safe when concurrent.

The server has no transaction across the calls a publication needs (create or replace the item, find or create
each tag and category, link them, unlink the rest), and several of them are refused to non-admins. So:

1. **Everything is checked before the first write.** The item's body against the server's size limit; the caller
   (a write-route call that writes nothing, `MarketplaceServer.is_admin`, which also proves the token is good for
   writes); the author against the token's user; for an update, that the caller may change the item (an
   `official example` item is admin-only); every category the item names exists, or the caller is an admin (only
   admins create categories or use `official example`). A refusal is one line naming what is missing and who can
   fix it, and nothing has been written.
2. **A write that still fails midway is undone**: an item this run created is deleted again (and the categories it
   created, which only an admin could). When the undo itself fails, or the failed run was an update, the item
   exists under its name and author, so **the next run completes it**: it finds the item and replaces it whole.
   Tags this run created stay (any user may create one, only admins delete them); the next run reuses them.
3. **Linking is idempotent**: a tag or category already linked is success (the server answers 404 to a re-link,
   or 400 "The item has already exists" when two publishers' inserts of one link race);
   the links are then made those of the content the item holds, and read back with it until both agree.
4. **Concurrent publishers converge**: after writing, the publisher lists the items of that name and author; the
   oldest is the item, every other one is deleted, and if the item is not the one this run wrote, this run's
   content is written into it. After any number of simultaneous publishes, one item remains, holding the content
   of the publisher that finished last. A publisher whose item a peer deleted under it starts over.
5. An update **replaces every field**: fields the item no longer has are sent as null (the server's PUT merges).
6. **Few requests** (each one is an identity-provider round trip on the server): what holds for the whole run (the
   tags, the categories, whether the caller is an admin) is read once per run (`RunFacts`); a listing by name and
   author carries each item's content and its links (`ItemTags`, `ItemCategories`), so the listing before writing
   tells what to link and unlink, and the listing after writing (the convergence check) is the read-back. An update
   that changes nothing costs 3 requests (list, PUT, list); a link or unlink costs one each. Only when that listing
   shows links that disagree with the content (a concurrent publisher) does the read-back loop of point 3 run.
"""

from __future__ import annotations

import random
import time
from typing import Any

from paictl.errors import ClusterError

from .server import MarketplaceServer, NotFoundAnswer, ServerError, oldest
from .wire import BODY_LIMIT_BYTES, encode_body, full_document

OFFICIAL_EXAMPLE = "official example"
_ATTEMPTS = 3
_CONVERGE_ROUNDS = 4
#: Reading back until content and links agree; other publishers' writes end, so this ends (about 5 s at most).
_SETTLE_ROUNDS = 20


class PublishRefused(ClusterError):
    """The server would refuse a write of this publication; nothing has been written."""


class PublishFailed(ClusterError):
    """A publication failed after something was written: `item_id` names the item left on the server (None when
    it was deleted again), so that a record of the failure can say which item the next run will complete."""

    def __init__(self, message: str, item_id: str | None):
        super().__init__(message)
        self.item_id = item_id


class RunFacts:
    """What holds for a whole publishing run, read on first use and kept: name -> id of the server's tags and of its
    categories (updated as this run creates some), and whether the caller is a marketplace admin."""

    def __init__(self, server: MarketplaceServer):
        self.server = server
        self._tags: dict[str, str] | None = None
        self._categories: dict[str, str] | None = None
        self._admin: tuple[bool | None] | None = None

    @property
    def tags(self) -> dict[str, str]:
        if self._tags is None:
            self._tags = self.server.named("/tags")
        return self._tags

    @property
    def categories(self) -> dict[str, str]:
        if self._categories is None:
            self._categories = self.server.named("/categories")
        return self._categories

    def reread_categories(self) -> dict[str, str]:
        self.categories.update(self.server.named("/categories"))
        return self.categories

    @property
    def admin(self) -> bool | None:
        if self._admin is None:
            self._admin = (self.server.is_admin(),)
        return self._admin[0]


class ServerItemStore(MarketplaceServer):
    """A marketplace server as an item store: reading is the client's own, publishing is a Publication."""

    def publish(self, document: dict[str, Any]) -> tuple[str, str]:
        """Create the item, or replace the one with its name and author: ("created" | "updated", id).

        The caller has validated `document` (targets.publish does, right before this)."""
        if not hasattr(self, "_facts"):
            self._facts = RunFacts(self)
        return Publication(self, document, self._facts).run()


def listed_links(document: dict[str, Any], kind: str) -> list[tuple[str, str]] | None:
    """The (name, id) links a listing shows for an item, sorted as `MarketplaceServer.links` answers them; None when
    the document does not carry them (`GET /items/:id` answers an item without its links)."""
    entries = document.get("ItemTags" if kind == "tag" else "ItemCategories")
    if not isinstance(entries, list):
        return None
    return sorted((e["name"], e["id"]) for e in entries if isinstance(e, dict) and isinstance(e.get("name"), str)
                  and isinstance(e.get("id"), str))


class _ItemVanished(Exception):
    """A concurrent publisher deleted the item this run was writing: start over."""


class Publication:
    def __init__(self, server: MarketplaceServer, document: dict[str, Any], facts: RunFacts | None = None):
        self.server = server
        self.facts = facts if facts is not None else RunFacts(server)
        self.document = full_document(document)
        self.name, self.author = document["name"], document["author"]
        self.what = f"item {self.name!r} by {self.author}"

    def run(self) -> tuple[str, str]:
        size = len(encode_body(self.document))
        if size > BODY_LIMIT_BYTES:
            raise PublishRefused(f"marketplace {self.server}: {self.what} is {size} bytes as JSON; the server takes "
                                 f"request bodies up to {BODY_LIMIT_BYTES} bytes (it answers 413): shorten the "
                                 "description or the job; nothing was written")
        for _ in range(_ATTEMPTS):
            try:
                return self._attempt()
            except _ItemVanished:
                continue
        raise ClusterError(f"marketplace {self.server}: {self.what}: other publishers kept deleting the item this "
                           "run wrote; publish it again")

    # -- one attempt -----------------------------------------------------------------------------------------

    def _attempt(self) -> tuple[str, str]:
        server, facts = self.server, self.facts
        existing = server.find(self.name, self.author)
        admin = facts.admin
        target = oldest(existing) if existing else None
        self._check(target, facts.categories, admin)

        created_item: str | None = None
        created_categories: list[str] = []
        item_id = target["id"] if target else None
        written = target is not None
        try:
            category_ids = self._ensure(facts.categories, self.document["categories"], "/categories",
                                        created_categories)
            tag_ids = self._ensure(facts.tags, self.document["tags"], "/tags", [])
            if target is not None:
                server.call("PUT", f"/items/{item_id}", body=self.document)
                action = "updated"
                linked = {kind: listed_links(target, kind) for kind in ("tag", "category")}
            else:
                answer = server.call("POST", "/items", body=self.document)
                item_id = answer.get("id") if isinstance(answer, dict) else None
                if not isinstance(item_id, str):
                    raise ClusterError(f"marketplace {server}: POST /items did not answer an id")
                created_item, action = item_id, "created"
                linked = {"tag": [], "category": []}  # a new item has no links: the POST body's tags link nothing
            self._link(item_id, tag_ids, category_ids, linked)
            # From here on the item may be the one every concurrent publisher writes into: never undone.
            created_item, created_categories, written = None, [], True
            action, item_id, listed = self._converge(item_id, action)
            if listed is None or not self._agrees(listed):
                self._settle(item_id)
            return action, item_id
        except ClusterError as error:
            if item_id is not None and self._vanished(item_id):
                raise _ItemVanished() from None
            raise self._undone(error, created_item, created_categories, updated=written,
                               item_id=item_id) from None

    def _check(self, target: dict[str, Any] | None, categories: dict[str, str], admin: bool | None) -> None:
        server, user = self.server, self.server.username()

        def refuse(reason: str) -> PublishRefused:
            return PublishRefused(f"marketplace {server}: cannot publish {self.what}: {reason}; nothing was written")

        if target is None and user is not None and user != self.author:
            raise refuse(f"the token is {user}'s, and the server creates items only under the caller's own name "
                         f"(set `author: {user}`, or publish with {self.author}'s token)")
        if admin is False and target is not None:
            if user is not None and user != target.get("author"):
                raise refuse(f"it is {target.get('author')}'s; only they or a marketplace admin can update it")
            categories_linked = listed_links(target, "category")
            if categories_linked is None:
                categories_linked = server.links(target["id"], "category")
            if any(name == OFFICIAL_EXAMPLE for name, _ in categories_linked):
                raise refuse(f"it is in the category {OFFICIAL_EXAMPLE!r}, which only a marketplace admin can change")
        if admin is False:
            wanted = self.document["categories"]
            if OFFICIAL_EXAMPLE in wanted:
                raise refuse(f"only a marketplace admin can put an item in the category {OFFICIAL_EXAMPLE!r} "
                             "(remove it from `categories`)")
            missing = [name for name in wanted if name not in categories]
            if missing:
                names = ", ".join(repr(name) for name in missing)
                known = ", ".join(sorted(repr(name) for name in categories)[:12]) or "none"
                raise refuse(f"the category {names} does not exist on the server, and only a marketplace admin can "
                             f"create categories: ask an admin to create it, or leave it out of `categories` "
                             f"(existing: {known})")

    def _ensure(self, known: dict[str, str], wanted: list[str], collection: str, created: list[str]) -> dict[str, str]:
        """name -> id of every wanted tag or category, creating the missing ones."""
        ids = {}
        for name in wanted:
            if name not in known:
                answer = self.server.call("POST", collection, body={"name": name})
                new_id = answer.get("id") if isinstance(answer, dict) else None
                if not isinstance(new_id, str):
                    raise ClusterError(f"marketplace {self.server}: POST {collection} did not answer an id")
                known[name] = new_id
                created.append(new_id)
            ids[name] = known[name]
        return ids

    def _link(self, item_id: str, tag_ids: dict[str, str], category_ids: dict[str, str],
              linked: dict[str, list[tuple[str, str]] | None] | None = None) -> None:
        """Link each wanted tag and category once; unlink the others, and second links of one name. `linked`: the
        item's links as a listing just showed them (read here where it is None)."""
        for kind, wanted in (("tag", tag_ids), ("category", category_ids)):
            current = (linked or {}).get(kind)
            current = self.server.links(item_id, kind) if current is None else current
            kept = {name for name, linked_id in current if wanted.get(name) == linked_id}
            for name, linked_id in current:
                if name in wanted and name not in kept:
                    kept.add(name)  # another row of the same name: as good as the one we know
                elif wanted.get(name) != linked_id or current.count((name, linked_id)) > 1:
                    self._unlink(item_id, kind, linked_id)
            for name, wanted_id in wanted.items():
                if name not in kept:
                    try:
                        self.server.call("POST", f"/items/{item_id}/{kind}/{wanted_id}")
                    except ServerError as error:
                        # Already linked: 404 once the link exists, 400 "The item has already exists" when a
                        # concurrent publisher's insert of the same link won the race. The read-back decides.
                        if error.status != 404 and not (error.status == 400 and "already exists" in error.text):
                            raise

    def _unlink(self, item_id: str, kind: str, linked_id: str) -> None:
        try:
            self.server.call("DELETE", f"/items/{item_id}/{kind}/{linked_id}")
        except NotFoundAnswer:
            pass

    def _converge(self, item_id: str, action: str) -> tuple[str, str, dict[str, Any] | None]:
        """One item of this name and author: the oldest; the others deleted; this run's content in it. Also returns
        the item as the last listing showed it (content and links), or None when no listing showed it alone."""
        for _ in range(_CONVERGE_ROUNDS):
            found = self.server.find(self.name, self.author)
            if not found:
                return action, item_id, None  # not listed at all: shared with groups only (W881)
            if len(found) == 1 and found[0]["id"] == item_id:
                return action, item_id, found[0]
            item = oldest(found)
            for other in found:
                if other["id"] != item["id"]:
                    try:
                        self.server.call("DELETE", f"/items/{other['id']}")
                    except ServerError as error:
                        if error.status not in (404, 500):  # gone already (500: the server's answer to non-admins)
                            raise
            if item["id"] != item_id:
                self.server.call("PUT", f"/items/{item['id']}", body=self.document)
                item_id, action = item["id"], "updated"
        return action, item_id, None

    @staticmethod
    def _agrees(listed: dict[str, Any]) -> bool:
        """Whether an item's links, as one listing shows them, are exactly those of the content it holds."""
        for kind, key in (("tag", "tags"), ("category", "categories")):
            links = listed_links(listed, kind)
            content = [v for v in listed.get(key) or () if isinstance(v, str)]
            if links is None or [name for name, _ in links] != sorted(set(content)):
                return False
        return True

    def _settle(self, item_id: str) -> None:
        """Make the item's links those of the content it holds now, and read both back until they agree.

        The content may be a later publisher's (a PUT replaces it whole): whoever finishes last leaves links that
        match the final content, whatever order the publishers' link calls arrived in."""
        tags, categories = self.facts.tags, self.facts.categories
        for round_ in range(_SETTLE_ROUNDS):
            if round_:
                time.sleep(random.uniform(0, 0.05 * round_))  # publishers still writing: let them finish
            stored = self._stored(item_id)
            wanted_tags = [t for t in stored.get("tags") or () if isinstance(t, str)]
            wanted_categories = [c for c in stored.get("categories") or () if isinstance(c, str)]
            tag_ids = self._ensure(tags, wanted_tags, "/tags", [])
            if any(c not in categories for c in wanted_categories):
                categories = self.facts.reread_categories()
            category_ids = {c: categories[c] for c in wanted_categories if c in categories}
            self._link(item_id, tag_ids, category_ids)
            linked_tags = [name for name, _ in self.server.links(item_id, "tag")]
            linked_categories = [name for name, _ in self.server.links(item_id, "category")]
            again = self._stored(item_id)
            if ((again.get("tags") or [], again.get("categories") or []) == (wanted_tags, wanted_categories)
                    and linked_tags == sorted(set(wanted_tags)) and linked_categories == sorted(set(wanted_categories))):
                return
        raise ClusterError(f"marketplace {self.server}: {self.what}: its tags and categories kept changing while "
                           "linking them (other publishers of the same item); publishing it again completes it")

    def _stored(self, item_id: str) -> dict[str, Any]:
        answer = self.server.call("GET", f"/items/{item_id}")
        if not isinstance(answer, dict):
            raise ClusterError(f"marketplace {self.server}: GET /items/{item_id} did not answer an item")
        return answer

    # -- after a failed write --------------------------------------------------------------------------------

    def _vanished(self, item_id: str) -> bool:
        try:
            self.server.call("GET", f"/items/{item_id}")
        except NotFoundAnswer:
            return True
        except ClusterError:
            return False
        return False

    def _undone(self, error: ClusterError, created_item: str | None, created_categories: list[str], *,
                updated: bool, item_id: str | None) -> ClusterError:
        if created_item is None and not created_categories:
            if updated:
                return PublishFailed(f"{error}; {self.what} may be partly updated: publishing it again completes it",
                                     item_id)
            return error
        undone = []
        try:
            if created_item is not None:
                self.server.call("DELETE", f"/items/{created_item}")
                undone.append(f"the item it had created (id {created_item})")
            for category_id in created_categories:
                self.server.call("DELETE", f"/categories/{category_id}")
            if created_categories:
                undone.append(f"{len(created_categories)} categor{'y' if len(created_categories) == 1 else 'ies'}")
        except ClusterError:
            left = f"the item was created (id {created_item}) but not completed" if created_item else \
                "categories it created are left"
            still = created_item if created_item is not None and not undone else None
            return PublishFailed(f"{error}; undoing failed: {left}: publishing it again completes it", still)
        return PublishFailed(f"{error}; deleted again: {' and '.join(undone)}", None)
