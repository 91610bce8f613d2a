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
import stat
import tempfile
import uuid
from pathlib import Path
from typing import Any, Iterator

from paictl.protocol.jsonout import strict_json
from paictl.errors import InputError, NotFoundError, UsageError
from paictl.protocol.diagnostics import one_line

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
        file = item_file(*key)
        staged = _staged(self.folder / file, strict_json(document, indent=2, ensure_ascii=False) + "\n")
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
                                 strict_json({"format": FORMAT, "items": entries}, indent=2, ensure_ascii=False) + "\n")
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
        """The index's entries, checked: `index.json` is input like any other (another tool, a bad merge, an attacker
        may have written it). Any entry that is not what paictl writes makes the whole index refused, located."""
        path = self.folder / INDEX_FILE
        raw = read_inside(self.folder, INDEX_FILE, MAX_INDEX_BYTES, missing_ok=True)
        if raw is None:
            return []
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            reason = "nested too deeply" if isinstance(exc, RecursionError) else one_line(str(exc))
            raise InputError(f"{path}: not a paictl marketplace index ({reason})") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("items"), list):
            raise InputError(f"{path}: not a paictl marketplace index (format {FORMAT} expected)")
        for number, entry in enumerate(data["items"]):
            problem = _entry_problem(entry)
            if problem:
                raise InputError(f"{path}: items[{number}]: {problem}; the index is refused (publish again to a "
                                 "new folder, or repair it)")
        return data["items"]

    def _existing_entries(self) -> list[dict[str, Any]]:
        if not self.folder.is_dir():
            raise InputError(f"{self.folder}: no marketplace index here (publish an item to create one)")
        return self._entries()

    def query(self, query: ItemQuery) -> list[dict[str, Any]]:
        """Summaries of the matching items, sorted by name, author, id."""
        found = [dict(e) for e in self._existing_entries() if query.matches(e)]
        for entry in found:
            del entry["file"]
        return in_listing_order(found)

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
        entry = entries[0]
        path = self.folder / entry["file"]
        raw = read_inside(self.folder, entry["file"], MAX_ITEM_BYTES)
        try:
            document = json.loads(raw)
        except (ValueError, RecursionError):
            raise InputError(f"{path}: not an item document (invalid JSON)") from None
        if not isinstance(document, dict) or not isinstance(document.get("protocol"), str) or (
                document.get("name"), document.get("author")) != (entry["name"], entry["author"]):
            raise InputError(f"{path}: not the item the index names (its name, author or protocol differ)")
        return {**document, "id": entry["id"]}


#: Bounds on what is read: an index of 100,000 items is about 40 MB; an item holds at most a 2 MiB job and text.
MAX_INDEX_BYTES = 128 * 1024 * 1024
MAX_ITEM_BYTES = 8 * 1024 * 1024
#: The one rule for an item's file, which the writer's names always meet and the reader checks: one name inside
#: `items/`, of safe characters. A single path segment ending in `.json` can never climb out, so dots are fine inside
#: it (`a..b`); what the rule shuts out is a slash, and with it `..` as a segment.
ITEM_FILE = re.compile(r"items/[A-Za-z0-9._-]{1,200}\.json")
_TEXT_KEYS = ("id", "name", "author")
_OPTIONAL_TEXT_KEYS = ("type", "source", "summary")


def _entry_problem(entry: Any) -> str | None:
    """Why an index entry is not one paictl writes, or None. The common case (a well-formed entry) is decided by
    one expression: an index may hold 100,000 entries."""
    if type(entry) is dict:
        get = entry.get
        text, name, author, file = get("id"), get("name"), get("author"), get("file")
        tags, categories = get("tags"), get("categories")
        if (type(text) is str and type(name) is str and type(author) is str and type(file) is str
                and text and name and author and "\x00" not in text + name + author
                and ITEM_FILE.fullmatch(file)
                and all(type(get(key)) in (str, type(None)) for key in _OPTIONAL_TEXT_KEYS)
                and (tags is None or (type(tags) is list and all(type(t) is str for t in tags)))
                and (categories is None or (type(categories) is list and all(type(c) is str for c in categories)))):
            return None
    return _why_not_an_entry(entry)


def _why_not_an_entry(entry: Any) -> str | None:
    if not isinstance(entry, dict):
        return "not an object"
    for key in _TEXT_KEYS:
        value = entry.get(key)
        if not isinstance(value, str) or not value:
            return f"`{key}` is missing or not a text"
        if "\x00" in value:
            return f"`{key}` contains a NUL"
    for key in _OPTIONAL_TEXT_KEYS:
        if entry.get(key) is not None and not isinstance(entry[key], str):
            return f"`{key}` is not a text"
    for key in ("tags", "categories"):
        value = entry.get(key)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            return f"`{key}` is not a list of texts"
    file = entry.get("file")
    if not isinstance(file, str) or not ITEM_FILE.fullmatch(file):
        return f"`file` must be items/<name>.json inside the index folder, not {one_line(repr(file))[:120]}"
    return None


def read_inside(folder: Path, relative: str, limit: int, *, missing_ok: bool = False) -> bytes | None:
    """The bytes of a regular file inside `folder` (symlinks resolved and kept inside), at most `limit` of them.

    A device, FIFO or socket is refused before reading (`/dev/zero` never ends, a FIFO may never be written)."""
    base = os.path.realpath(folder)
    target = os.path.realpath(os.path.join(base, relative))
    shown = folder / relative
    if os.path.commonpath([base, target]) != base:
        raise InputError(f"{shown}: leads out of the index folder (to {one_line(target)})")
    try:
        descriptor = os.open(target, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        if missing_ok:
            return None
        raise InputError(f"{shown}: no such file (the index names it)") from None
    except OSError as exc:
        raise InputError(f"{shown}: cannot read: {exc.strerror or exc}") from None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise InputError(f"{shown}: not a regular file")
        if status.st_size > limit:
            raise InputError(f"{shown}: {status.st_size} bytes, over the limit of {limit}")
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(descriptor, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise InputError(f"{shown}: over the limit of {limit} bytes")
        return b"".join(chunks)
    except OSError as exc:
        raise InputError(f"{shown}: cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(descriptor)


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_DOTS = re.compile(r"\.{2,}")


def item_file(author: str, name: str) -> str:
    """`items/<file>` for (author, name): a readable, collision-free name (a cleaned prefix and a hash of the exact
    pair) that meets ITEM_FILE for every name the item schema allows (`../up`, `a..b`, `x/../y`, any script)."""
    digest = hashlib.sha256(f"{author}\0{name}".encode()).hexdigest()[:16]
    readable = _DOTS.sub(".", _UNSAFE.sub("-", f"{author}--{name}")).strip(".-")[:80]
    file = f"{ITEMS_FOLDER}/{readable}-{digest}.json"
    assert ITEM_FILE.fullmatch(file), file
    return file


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
