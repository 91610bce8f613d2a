"""Reading a job's bytes with the size limit enforced while reading, so no input can cost more than the limit.

Checking the size after `read()` is too late: a 3 GiB file costs 3 GB, and `/dev/zero`, a FIFO with a writer that
never stops or an endless standard input never return. Here at most `MAX_FILE_BYTES + 1` bytes are ever read (the
extra byte tells "exactly at the limit" from "over it"), and inputs that have no end of their own (character and
block devices, sockets) are refused before reading.
"""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

from paictl.errors import InputError

#: Job files larger than this are refused (real OpenPAI jobs are a few KB; the largest in the upstream corpus is
#: under 10 KB). It bounds memory and time for hostile input.
MAX_FILE_BYTES = 2 * 1024 * 1024
#: Deeper nesting than this is refused (E106). Real jobs nest about 8 levels.
MAX_DEPTH = 100
#: The document, aliases expanded, may hold at most this many nodes (E106). A 10,000-task-role job has ~170,000.
MAX_EXPANDED_NODES = 250_000
#: ... and at most this many bytes of scalar text (E106): an alias of a long string counts its whole length.
MAX_EXPANDED_BYTES = 8 * 1024 * 1024

_CHUNK = 64 * 1024


def read_source(path: str | os.PathLike[str], limit: int = MAX_FILE_BYTES, *,
                thing: str | None = "the job") -> bytes:
    """At most `limit + 1` bytes of a regular file or a FIFO (process substitution), else InputError (exit 2).
    `thing`: what the file holds, for the advice to copy it to a file and pipe it (None: a file nothing pipes)."""
    shown = _printable(os.fspath(path))
    descriptor, _ = _open_readable(path, shown, lead="", reading="cannot read: ", thing=thing)
    try:
        with os.fdopen(descriptor, "rb", buffering=0, closefd=False) as stream:
            return read_bounded(stream, shown, limit)
    except OSError as exc:
        raise InputError(f"{shown}: cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(descriptor)


def _open_readable(path: str | os.PathLike[str], shown: str, *, lead: str, reading: str, thing: str | None
                   ) -> tuple[int, int]:
    """(descriptor, mode) of a regular file or FIFO opened for a blocking read, else InputError worded with `lead`
    (before "no such file" and the like), `reading` (before an OS error) and `thing` (what to copy to a file)."""
    if not os.fspath(path):  # an unset shell variable: say so, not ": no such file"
        raise InputError(f"'': {lead}no such file (an empty name)")
    try:
        # O_NONBLOCK: opening a FIFO with no writer must not block; it is cleared again before reading.
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputError(f"{shown}: {lead}no such file") from None
    except IsADirectoryError:
        raise InputError(f"{shown}: {lead}is a directory") from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the name
        raise InputError(f"{shown}: {reading}{getattr(exc, 'strerror', None) or exc}") from None
    try:
        mode = os.fstat(descriptor).st_mode
        if stat.S_ISDIR(mode):
            raise InputError(f"{shown}: {lead}is a directory")
        if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
            advice = f"; copy {thing} to a file, or pipe it to `-`" if thing else ""
            raise InputError(f"{shown}: {lead}not a regular file (a device or socket has no end to read to)"
                             + advice)
        os.set_blocking(descriptor, True)
    except InputError:
        os.close(descriptor)
        raise
    except OSError as exc:
        os.close(descriptor)
        raise InputError(f"{shown}: {reading}{exc.strerror or exc}") from None
    return descriptor, mode


def read_stdin(limit: int = MAX_FILE_BYTES) -> bytes:
    """Standard input, at most `limit + 1` bytes: an endless producer (`yes |`) is cut off, not read to the end."""
    import sys

    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:
        raise InputError("<stdin>: standard input is closed")
    try:
        return read_bounded(stream, "<stdin>", limit)
    except OSError as exc:
        raise InputError(f"<stdin>: cannot read: {exc.strerror or exc}") from None


def read_text_file(path: str | os.PathLike[str], what: str, limit: int = MAX_FILE_BYTES) -> str:
    """A user-given input other than a job (a profile, exit rules): bounded as a job is, decoded as UTF-8, or
    InputError (exit 2) naming `what` it was meant to be."""
    raw = read_source(path, limit)
    shown = _printable(os.fspath(path))
    if len(raw) > limit:
        raise InputError(f"{shown}: the {what} is larger than the limit of {limit} bytes")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{shown}: the {what} is not UTF-8 text (byte {exc.start})") from None


def read_bounded(stream: BinaryIO, name: str, limit: int = MAX_FILE_BYTES) -> bytes:
    """Read until end of input or `limit + 1` bytes, whichever comes first."""
    chunks: list[bytes] = []
    remaining = limit + 1
    while remaining > 0:
        chunk = stream.read(min(_CHUNK, remaining))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _printable(name: str) -> str:
    """The name as it can be shown on a terminal: controls escaped, a name longer than any file system allows cut."""
    from .diagnostics import one_line

    shown = one_line(name)
    return shown if len(shown) <= 200 else f"{shown[:120]}...({len(name)} characters)"


#: A stream (standard input, a FIFO) is read to its end to find its tail, but no further than this: an endless
#: producer must not keep a command running for ever.
MAX_STREAM_BYTES = 256 * 1024 * 1024


def read_tail(path: str | os.PathLike[str], tail: int, what: str) -> tuple[bytes, bool]:
    """The last `tail` bytes of a user-given file ("-" for standard input) that may legitimately be huge (a task's
    log), and whether anything before them was left out. A regular file is read from `size - tail` (its size costs
    nothing); a FIFO or standard input is read to its end keeping only the tail, and refused past
    MAX_STREAM_BYTES; devices and sockets are refused as for a job. InputError (exit 2) names `what` it was."""
    if os.fspath(path) == "-":
        import sys

        stream = getattr(sys.stdin, "buffer", None)
        if stream is None:
            raise InputError("<stdin>: standard input is closed")
        return _stream_tail(stream, "<stdin>", tail, what)
    shown = _printable(os.fspath(path))
    lead = f"cannot read the {what}: "
    descriptor, mode = _open_readable(path, shown, lead=lead, reading=lead, thing="it")
    try:
        with os.fdopen(descriptor, "rb", closefd=False) as stream:
            if stat.S_ISFIFO(mode):
                return _stream_tail(stream, shown, tail, what)
            size = os.fstat(descriptor).st_size
            start = max(0, size - tail)
            stream.seek(start)
            return read_bounded(stream, shown, tail - 1), start > 0
    except OSError as exc:
        raise InputError(f"{shown}: cannot read the {what}: {exc.strerror or exc}") from None
    finally:
        os.close(descriptor)


def _stream_tail(stream: BinaryIO, shown: str, tail: int, what: str) -> tuple[bytes, bool]:
    kept = bytearray()
    total = 0
    try:
        while True:
            chunk = stream.read(_CHUNK)
            if not chunk:
                break
            total += len(chunk)
            if total > MAX_STREAM_BYTES:
                raise InputError(f"{shown}: the {what} goes on past {MAX_STREAM_BYTES // (1024 * 1024)} MiB; save it "
                                 "to a file and pass that (only its end is read)")
            kept += chunk
            if len(kept) > 2 * tail:
                del kept[:len(kept) - tail]
    except OSError as exc:
        raise InputError(f"{shown}: cannot read the {what}: {exc.strerror or exc}") from None
    return bytes(kept[-tail:]), total > tail
