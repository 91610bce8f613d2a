"""Where items are published to and read from: TARGET is a local index folder or a marketplace server URL.

Both kinds answer the same three calls (`publish(document)`, `query(ItemQuery)`, `fetch(name, author)`), so the
commands never ask which one they hold. Publishing always goes through `publish` here, which validates the packed
document once more right before writing it: the server itself validates on create only, never on update.
"""

from __future__ import annotations

import os
from typing import Any, Protocol

from paictl.errors import InvalidJobError, UsageError, display_url

from .item import Item

#: The environment variable holding the marketplace server's bearer token (the `--token` option wins).
TOKEN_VARIABLE = "PAICTL_MARKETPLACE_TOKEN"


class ItemStore(Protocol):
    def publish(self, document: dict[str, Any]) -> tuple[str, str]: ...

    def query(self, query: Any) -> list[dict[str, Any]]: ...

    def fetch(self, name: str, author: str | None = None) -> dict[str, Any]: ...


def is_server(target: str) -> bool:
    return target.startswith(("http://", "https://"))


def open_target(target: str, token: str | None = None, *, timeout: float = 30.0) -> ItemStore:
    """A LocalIndex for a folder path, a ServerItemStore for an http(s) URL (which needs a token)."""
    if not target:
        raise UsageError("no target: give a local index folder or a marketplace server URL")
    if is_server(target):
        _check_server_url(target)
        token = token or os.environ.get(TOKEN_VARIABLE) or None
        if not token:
            raise UsageError(f"{display_url(target)}: a marketplace server needs a token: --token, or the environment variable "
                             f"{TOKEN_VARIABLE}")
        if not all(33 <= ord(ch) < 127 for ch in token):
            # Said without the token: httpx would put the header value, token and all, into its own error.
            raise UsageError("the marketplace token has spaces, line breaks or non-ASCII characters; an HTTP "
                             "header cannot carry it (was a second line pasted in?)")
        from .server_publish import ServerItemStore

        return ServerItemStore(target, token, timeout=timeout)
    if "://" in target:
        raise UsageError(f"{display_url(target)}: a target is a folder or an http(s):// URL")
    from .local_index import LocalIndex

    return LocalIndex(target)


def _check_server_url(url: str) -> None:
    """A server URL must say where the server is before anything else is asked of it (a token, a request)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        parts.port  # a port that is not a number raises here
    except ValueError:
        raise UsageError("the marketplace server URL is not a valid http(s) URL (e.g. "
                         "https://marketplace.example.com)") from None
    if not parts.hostname:
        raise UsageError(f"{display_url(url)}: the marketplace server URL names no host")


def publish(store: ItemStore, item: Item) -> tuple[str, str]:
    """Validate the packed item (schema and job), then create or update it: ("created" | "updated", id)."""
    document = item.to_document()
    check_packed(document)
    return store.publish(document)


def check_packed(document: dict[str, Any]) -> None:
    """InvalidJobError unless the packed document is a valid item whose job is valid: checked before every write."""
    from paictl.protocol import validate_text
    from paictl.schemas import fast_validator

    from .rules import name_findings

    protocol = document.get("protocol")
    if (fast_validator("marketplace-item").is_valid(document) and isinstance(protocol, str)
            and not name_findings(document) and validate_text(protocol, "<protocol>").ok):
        return  # the common case: both fast paths say valid, in about a millisecond
    from .checking import check_item_text
    from .yamltext import dump_yaml

    origin = f"{document.get('name')} (packed item)"
    result = check_item_text(dump_yaml(document), origin).result
    if not result.ok:
        raise InvalidJobError(list(result.diagnostics))
