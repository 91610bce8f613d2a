"""An item as a marketplace server takes it over the wire: the body publishing sends, byte for byte, and the limit
the server puts on it. Checking (rules), reading (server) and publishing (server_publish) must agree on these bytes,
or an item the checker passed would be refused 413 halfway through a publication."""

from __future__ import annotations

from typing import Any

from paictl.protocol.jsonout import strict_json

from .item import DOCUMENT_KEYS

#: express' JSON body limit ('100kb', in bytes): a larger body is answered 413 before the server reads it.
BODY_LIMIT_BYTES = 100 * 1024
#: What an update sends for a field the item does not have: the column's empty value, so that it is removed.
EMPTY_COLUMNS = {"groupList": [], "useBlob": False, "categories": [], "tags": []}


def encode_body(body: Any) -> bytes:
    """The exact bytes publishing sends (compact UTF-8 JSON), so that their size is known before sending."""
    return strict_json(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def full_document(document: dict[str, Any]) -> dict[str, Any]:
    """Every column an item sets, absent ones as their empty value or null: a PUT of it replaces the item."""
    return {key: document.get(key, EMPTY_COLUMNS.get(key)) for key in DOCUMENT_KEYS}
