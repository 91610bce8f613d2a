"""The typed marketplace item and its document form: the JSON object the marketplace server stores.

The document uses the server's key names (`isPublic`, `groupList`, `dataUrl`...) in one fixed order, and the job as
YAML text under `protocol`, because that is what the server keeps (a TEXT column it parses on create). Packing,
the local index and the server client all exchange this one form.
"""

from __future__ import annotations

import dataclasses
from typing import Any

ITEM_TYPES = ("template", "data", "old")
SOURCES = ("marketplace", "pai")

#: The keys of a packed item, in the order they are written (and the only keys sent to a server).
DOCUMENT_KEYS = ("name", "author", "type", "source", "isPublic", "isPrivate", "groupList", "dataType", "dataUrl",
                 "useBlob", "categories", "tags", "summary", "description", "protocol")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Item:
    """A marketplace item with everything inlined; visibility already normalised the way the server does it."""

    name: str
    author: str
    type: str
    protocol: str
    source: str = "marketplace"
    is_public: bool = True
    is_private: bool = False
    group_list: tuple[str, ...] = ()
    data_type: str | None = None
    data_url: str | None = None
    use_blob: bool = False
    categories: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    summary: str = ""
    description: str = ""

    @property
    def key(self) -> tuple[str, str]:
        """What identifies an item for publishing: the same name and author is the same item."""
        return self.name, self.author

    def to_document(self) -> dict[str, Any]:
        values = {
            "name": self.name, "author": self.author, "type": self.type, "source": self.source,
            "isPublic": self.is_public, "isPrivate": self.is_private, "groupList": list(self.group_list),
            "dataType": self.data_type, "dataUrl": self.data_url, "useBlob": self.use_blob or None,
            "categories": list(self.categories), "tags": list(self.tags), "summary": self.summary,
            "description": self.description, "protocol": self.protocol,
        }
        # Unset optional columns (and useBlob's default, false) are left out: the server fills in its defaults.
        return {key: values[key] for key in DOCUMENT_KEYS if values[key] is not None}


def visibility(data: dict[str, Any]) -> tuple[bool, bool, tuple[str, ...]]:
    """(isPublic, isPrivate, groupList) as the server stores them on create.

    isPrivate wins and clears the rest; otherwise isPublic (true unless said otherwise, the column's default) clears
    the group list; only an item that is explicitly neither keeps its groups.
    """
    groups = tuple(g for g in data.get("groupList") or () if isinstance(g, str))
    if data.get("isPrivate") is True:
        return False, True, ()
    if data.get("isPublic", True) is not False:
        return True, False, ()
    return False, False, groups


def item_from_document(document: dict[str, Any]) -> Item:
    """An Item from a packed document (or a server's answer, whose extra columns are ignored)."""
    is_public, is_private, groups = visibility(document)
    optional = {"data_type": document.get("dataType"), "data_url": document.get("dataUrl"),
                "use_blob": document.get("useBlob")}
    return Item(
        name=str(document.get("name") or ""), author=str(document.get("author") or ""),
        type=str(document.get("type") or ""), protocol=str(document.get("protocol") or ""),
        source=str(document.get("source") or "marketplace"), is_public=is_public, is_private=is_private,
        group_list=groups, categories=tuple(document.get("categories") or ()), tags=tuple(document.get("tags") or ()),
        summary=str(document.get("summary") or ""), description=str(document.get("description") or ""),
        **{k: v for k, v in optional.items() if v is not None},
    )
