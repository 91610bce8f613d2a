"""List and search filters, meaning what the marketplace server's `GET /items` query means.

`type`, `name` and `author` are exact and case-sensitive (`type=all` is no filter); `keyword` is a
case-insensitive plain substring of the name, the author or the summary (every character means itself: the server
reads its `keyword` as a SQL LIKE pattern, so `%`, `_` and `\\` are escaped before it is sent); a tag or a category
must be one of the item's. The local index applies these in Python; the server client sends them, working around
the server's multi-tag bug (see `server.py`).
"""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True, kw_only=True)
class ItemQuery:
    name: str | None = None
    author: str | None = None
    type: str | None = None
    keyword: str | None = None
    tags: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for option, values in (("--tag", self.tags), ("--category", self.categories)):
            if any(not value for value in values):
                # The server drops an empty `?tag=` and lists everything; a local index would list nothing. Neither
                # is what the user meant, and the two targets must not disagree.
                from paictl.errors import UsageError

                raise UsageError(f"{option} '' names nothing: an empty {option[2:]} matches no item; leave the "
                                 "option out to list every item")

    def matches(self, document: dict[str, Any]) -> bool:
        if self.name and document.get("name") != self.name:
            return False
        if self.author and document.get("author") != self.author:
            return False
        if self.type and self.type != "all" and document.get("type") != self.type:
            return False
        if not self.matches_keyword(document):
            return False
        if self.tags and not set(self.tags) <= set(tag_names(document)):
            return False
        return not self.categories or set(self.categories) <= set(category_names(document))

    def matches_keyword(self, document: dict[str, Any]) -> bool:
        if not self.keyword:
            return True
        needle = self.keyword.lower()
        return any(needle in str(document.get(key) or "").lower() for key in ("name", "author", "summary"))

    def server_params(self) -> dict[str, str]:
        """The query parameters other than tag and category, as the server reads them (keyword escaped)."""
        values = {"name": self.name, "author": self.author, "type": self.type,
                  "keyword": like_escaped(self.keyword) if self.keyword else None}
        return {key: value for key, value in values.items() if value}


def like_escaped(keyword: str) -> str:
    """A plain substring as the server's LIKE pattern: PostgreSQL's default escape character is the backslash."""
    return keyword.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def tag_names(document: dict[str, Any]) -> list[str]:
    """An item's tags: those it stores, in its order, then any other the server has linked to it (`ItemTags`)."""
    return _names(document.get("tags"), document.get("ItemTags"))


def category_names(document: dict[str, Any]) -> list[str]:
    return _names(document.get("categories"), document.get("ItemCategories"))


def _names(stored: Any, linked: Any) -> list[str]:
    names = [n for n in stored or () if isinstance(n, str)]
    if not linked:
        return names  # a local index entry, or a server item without links: no set or sort per item
    extra = {entry.get("name") for entry in linked or () if isinstance(entry, dict)} - set(names)
    return names + sorted(n for n in extra if isinstance(n, str))


#: What a listing shows of an item (the full document, protocol included, is what `pull` is for).
SUMMARY_KEYS = ("id", "name", "author", "type", "source", "isPublic", "isPrivate", "summary", "tags", "categories")


def summary_of(document: dict[str, Any]) -> dict[str, Any]:
    record = {key: document.get(key) for key in SUMMARY_KEYS}
    record["tags"] = tag_names(document)
    record["categories"] = category_names(document)
    return record


def in_listing_order(documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The server answers in no particular order; listings are sorted so that they can be diffed."""
    return sorted(documents, key=lambda d: (str(d.get("name")), str(d.get("author")), str(d.get("id"))))
