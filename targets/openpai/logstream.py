"""Reading one OpenPAI log file from the log-manager as a stream, and following it without losing or repeating a line.

The log-manager serves a task's files through nginx (`src/log-manager`, an openresty app), which honours
`Range: bytes=N-` (206 with `Content-Range: bytes N-M/SIZE`; 416 with `bytes */SIZE` when N is at or past the
end) and the REST server's `tail-mode=true` (the last 16 KB). So a follower asks only for the bytes after those
it has, instead of the whole log on every poll (the web portal does the same). What could make that wrong is a
file replaced under the same link: the log-manager rotates a full log (multilog keeps the old one as `<log>.1`), and
a file may be truncated. A cursor therefore remembers the file's first bytes and checks them on every poll
(`Range: bytes=0-63`): different first bytes, or a size below the offset, mean a new file. Then the rest of the
old one is read from the rotated file when the log-manager has it, a note says the log was replaced (on standard
error, as `tail -F` says `file truncated`), and the new file is shown from its start.

A server that ignores Range (a 200 to a ranged request) is still followed correctly: the whole file is streamed
and the bytes already shown are skipped as they arrive, never held.

Lines are split from chunks as they arrive; memory is one chunk plus one unfinished line (capped at
`MAX_LINE` bytes: a longer line is shown in pieces).
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterator, Optional
from urllib.parse import urlsplit, urlunsplit

from paictl.errors import NotFoundError

HEAD_BYTES = 64
TAIL_BYTES = 16384   # what the log-manager's tail mode serves: a log's last 16 KB
MAX_LINE = 1 << 20
CHUNK = 64 * 1024
_TOTAL = re.compile(r"/\s*(\d+)\s*$")


def rotated_link(link: str) -> str:
    """The link of a log's rotated file: the log-manager names it `<log>.1`."""
    parts = urlsplit(link)
    return urlunsplit((parts.scheme, parts.netloc, parts.path + ".1", parts.query, parts.fragment))


def total_size(response: Any) -> Optional[int]:
    """SIZE from `Content-Range: bytes N-M/SIZE` or `bytes */SIZE`."""
    match = _TOTAL.search(response.headers.get("Content-Range") or "")
    return int(match.group(1)) if match else None


class LogCursor:
    """Where a reader is in one log file: bytes received, the file's first bytes, an unfinished last line."""

    def __init__(self, link: str, *, file: str = "") -> None:
        self.link, self.file = link, file
        self.offset = 0
        self.head = b""
        self.pending = b""
        self.ranged: Optional[bool] = None    # whether the server honoured a Range request (None: not asked yet)

    def lines(self, data: bytes) -> list[bytes]:
        """The complete lines `data` finishes; the rest waits in `pending` (or is cut at MAX_LINE)."""
        if self.offset < HEAD_BYTES:  # the head is the file's first bytes: only while offset is within them
            self.head += data[:HEAD_BYTES - self.offset]
        self.offset += len(data)
        buffered = self.pending + data
        parts = buffered.split(b"\n")
        self.pending = parts.pop()
        while len(self.pending) > MAX_LINE:
            parts.append(self.pending[:MAX_LINE])
            self.pending = self.pending[MAX_LINE:]
        return parts

    def rest(self) -> list[bytes]:
        """The unfinished last line, as a line (the log has ended, or is being replaced)."""
        rest, self.pending = self.pending, b""
        return [rest] if rest else []


class Replaced(Exception):
    """The file under the cursor's link is no longer the one it was reading."""


def read_new(open_link: Callable[..., Any], cursor: LogCursor, *, what: str) -> Iterator[bytes]:
    """Every complete line the file has beyond the cursor, as it arrives. Raises Replaced (before yielding anything)
    when the file is not the one the cursor was reading; NotFoundError when the link has no file."""
    if cursor.offset and cursor.head:
        _check_head(open_link, cursor, what=what)
    if cursor.offset == 0 or cursor.ranged is False:
        yield from _whole(open_link, cursor, what=what)
        return
    headers = {"Range": f"bytes={cursor.offset}-"}
    with open_link(cursor.link, headers=headers, what=what) as response:
        if response.status_code == 416:
            size = total_size(response)
            if size is not None and size < cursor.offset:
                raise Replaced()
            return
        if response.status_code == 200:  # the server ignores Range: skip what was shown, as it streams past
            cursor.ranged = False
            yield from _skip_shown(response, cursor)
            return
        cursor.ranged = True
        for chunk in response.iter_bytes(CHUNK):
            yield from cursor.lines(chunk)


def _check_head(open_link: Callable[..., Any], cursor: LogCursor, *, what: str) -> None:
    if cursor.ranged is False:
        return  # checked while the whole file streams past (`_skip_shown`)
    with open_link(cursor.link, headers={"Range": f"bytes=0-{len(cursor.head) - 1}"}, what=what) as response:
        if response.status_code == 416:
            raise Replaced()
        if response.status_code == 200:
            cursor.ranged = False
            return
        head = b""
        for chunk in response.iter_bytes(CHUNK):
            head += chunk
            if len(head) >= len(cursor.head):
                break
        if head[:len(cursor.head)] != cursor.head:
            raise Replaced()


def _whole(open_link: Callable[..., Any], cursor: LogCursor, *, what: str) -> Iterator[bytes]:
    with open_link(cursor.link, what=what) as response:
        if cursor.offset:
            yield from _skip_shown(response, cursor)
            return
        for chunk in response.iter_bytes(CHUNK):
            yield from cursor.lines(chunk)


def _skip_shown(response: Any, cursor: LogCursor) -> Iterator[bytes]:
    """A whole file when the cursor has shown its first `offset` bytes: those are compared with the cursor's
    first bytes and dropped as they arrive; a shorter or different file is Replaced (nothing of it yielded)."""
    position, head = 0, b""
    for chunk in response.iter_bytes(CHUNK):
        if len(head) < len(cursor.head):
            head += chunk[:len(cursor.head) - len(head)]
            if head != cursor.head[:len(head)]:
                raise Replaced()
        if position + len(chunk) <= cursor.offset:
            position += len(chunk)
            continue
        new = chunk[max(0, cursor.offset - position):]
        position += len(chunk)
        yield from cursor.lines(new)
    if position < cursor.offset:
        raise Replaced()


def rotated_rest(open_link: Callable[..., Any], cursor: LogCursor, *, what: str) -> Iterator[bytes]:
    """After a rotation, the lines the old file got after the cursor's offset, from `<log>.1` when the log-manager
    has it and it is the file the cursor was reading (same first bytes); nothing otherwise."""
    old = LogCursor(rotated_link(cursor.link))
    old.offset, old.head, old.pending = cursor.offset, cursor.head, cursor.pending
    try:
        yield from read_new(open_link, old, what=what)
    except (Replaced, NotFoundError):
        yield from cursor.rest()
        return
    yield from old.rest()
