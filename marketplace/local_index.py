"""The embedded marketplace: a folder with one JSON file per item and an `index.json` listing them.

    INDEX/index.json            {"format": 1, "items": [summary + "file", ...]} sorted by author, name
    INDEX/items/<key>.json      the packed item document plus its "id"
    INDEX/.lock                 held (fcntl.flock, exclusive) by a publisher for the whole update

Safe under concurrent publishers: every file is written to a temporary file in the same folder, flushed to disk and
renamed over the old one, all under the lock, so a reader sees the old or the new file, never half of one, and no
publication is lost. Readers take no lock: a rename is atomic.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import tempfile
import uuid
from pathlib import Path
from typing import Any, Iterator

from paictl.errors import InputError, NotFoundError, UsageError

from .query import ItemQuery, in_listing_order, summary_of

INDEX_FILE = "index.json"
ITEMS_FOLDER = "items"
LOCK_FILE = ".lock"
FORMAT = 1


class LocalIndex:
    def __init__(self, folder: str | os.PathLike[str]):
        self.folder = Path(folder)

    def __str__(self) -> str:
        return str(self.folder)

    # -- writing --------------------------------------------------------------------------------------------

    def publish(self, document: dict[str, Any]) -> tuple[str, str]:
        """Create or replace the item with this document's name and author: ("created" | "updated", id).

        The item's file is written and flushed before the lock is taken (its name depends only on name and author);
        under the lock it is renamed into place and the index rewritten, so publishers wait for each other only
        for the index.
        """
        try:
            (self.folder / ITEMS_FOLDER).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"{self.folder}: cannot create the index folder: {exc.strerror or exc}") from None
        key = (document["author"], document["name"])
        file = f"{ITEMS_FOLDER}/{_file_name(*key)}"
        staged = _staged(self.folder / file, json.dumps(document, indent=2, ensure_ascii=False) + "\n")
        try:
            with self._locked():
                entries = self._entries()
                existing = next((e for e in entries if (e.get("author"), e.get("name")) == key), None)
                item_id = existing["id"] if existing else str(uuid.uuid4())
                os.replace(staged, self.folder / file)
                entries = [e for e in entries if e is not existing]
                entries.append({**summary_of({"id": item_id, **document}), "file": file})
                entries.sort(key=lambda e: (str(e.get("author")), str(e.get("name"))))
                write_atomically(self.folder / INDEX_FILE,
                                 json.dumps({"format": FORMAT, "items": entries}, indent=2, ensure_ascii=False) + "\n")
        finally:
            with contextlib.suppress(OSError):
                os.unlink(staged)  # only left when something failed before the rename
        return ("updated" if existing else "created"), item_id

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        descriptor = os.open(self.folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            yield
        finally:
            os.close(descriptor)  # closing releases the lock

    # -- reading --------------------------------------------------------------------------------------------

    def _entries(self) -> list[dict[str, Any]]:
        path = self.folder / INDEX_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            raise InputError(f"{path}: not a paictl marketplace index ({exc})") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("items"), list):
            raise InputError(f"{path}: not a paictl marketplace index (format {FORMAT} expected)")
        return [e for e in data["items"] if isinstance(e, dict)]

    def _existing_entries(self) -> list[dict[str, Any]]:
        if not self.folder.is_dir():
            raise InputError(f"{self.folder}: no marketplace index here (publish an item to create one)")
        return self._entries()

    def query(self, query: ItemQuery) -> list[dict[str, Any]]:
        """Summaries of the matching items, sorted by name, author, id."""
        return in_listing_order([{k: v for k, v in e.items() if k != "file"}
                                 for e in self._existing_entries() if query.matches(e)])

    def fetch(self, name: str, author: str | None = None) -> dict[str, Any]:
        """The full document of the item called `name` (by `author`, required when several authors use the name)."""
        entries = [e for e in self._existing_entries()
                   if e.get("name") == name and (author is None or e.get("author") == author)]
        if not entries:
            by = f" by {author}" if author else ""
            raise NotFoundError(f"{self.folder}: no item named {name!r}{by}")
        if len(entries) > 1:
            authors = ", ".join(sorted(str(e.get("author")) for e in entries))
            raise UsageError(f"{self.folder}: several items are named {name!r} (authors: {authors}); give --author")
        path = self.folder / entries[0]["file"]
        try:
            return {"id": entries[0]["id"], **json.loads(path.read_text(encoding="utf-8"))}
        except (OSError, ValueError) as exc:
            raise InputError(f"{path}: cannot read the item: {exc}") from None


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _file_name(author: str, name: str) -> str:
    """A readable, collision-free file name for (author, name): a cleaned prefix and a hash of the exact pair."""
    digest = hashlib.sha256(f"{author}\0{name}".encode()).hexdigest()[:16]
    readable = _UNSAFE.sub("-", f"{author}--{name}").strip(".-")[:80]
    return f"{readable}-{digest}.json"


def write_atomically(path: str | os.PathLike[str], text: str) -> None:
    """Write `text` to a temporary file beside `path`, flush it to disk, then rename it over `path`: readers see the
    old file or the new one, never a part; nothing is left behind on failure."""
    staged = _staged(Path(path), text)
    try:
        os.replace(staged, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(staged)
        raise InputError(f"{path}: cannot write: {exc.strerror or exc}") from None


def _staged(path: Path, text: str) -> str:
    """A temporary file beside `path` holding `text`, flushed to disk: ready to be renamed over `path`."""
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise InputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(exc, OSError):
            raise InputError(f"{path}: cannot write: {exc.strerror or exc}") from None
        raise
    return temporary
