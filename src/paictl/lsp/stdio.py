"""`paictl lsp`'s transport: LSP base-protocol frames over standard input and output, bounded, and JSON-RPC's
rules for what pygls' own loop (pygls.io_.run_async) leaves unanswered.

pygls 2.x reads a frame of whatever length the header claims (`Content-Length: 1000000000000000000` is a
MemoryError), answers nothing to a request it cannot structure or one sent after `shutdown`, lets `exit` without
`shutdown` end with status 0 (the specification says 1), writes a traceback per message once the client has closed
the server's output, and keeps a finished future per notification for ever (pygls#608: memory grows with every
edit). Here:

- a frame's header lines, header count and body are bounded (`MAX_FRAME_BYTES`); a frame over the bound, or with
  no usable Content-Length, is answered with an error (id null, as JSON-RPC answers what it cannot attribute) and
  the stream is read on from the next `Content-Length:` header, so the server stays up;
- a body that is not JSON is a Parse error (-32700); one that is not a JSON-RPC message, an Invalid Request
  (-32600); a request whose params do not fit its method, Invalid params (-32602) with its id;
- before `initialize`, a request is answered ServerNotInitialized (-32002) and a notification dropped, as LSP 3.17
  says (pygls ran the handler: an Internal error with a traceback of the server's files); a second `initialize` is
  an Invalid Request (it "may only be sent once");
- after `shutdown`, every request is answered Invalid Request and notifications are dropped; `exit` ends the server
  with status 0 after `shutdown`, else 1;
- the server ends when either stream closes: end of input, or output that can no longer be written (a closed pipe
  is noticed at once by polling it, even while nothing is written); status 0 after `shutdown`, else 1;
- after every message the futures pygls has finished with are dropped (the workaround of pygls#608).

pygls still does the rest: the messages' types, the handlers, the document store. Only the loop is replaced.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
from typing import Any, NamedTuple, Optional

#: The largest frame body read (bytes). A job file is at most 2 MiB (protocol/source.py); JSON escapes can make
#: its text up to six times longer in a didOpen or didChange, and the frame carries some envelope besides.
MAX_FRAME_BYTES = 16 * 1024 * 1024
#: A header line longer than this, or more header lines than `MAX_HEADER_LINES`, is a broken frame.
MAX_HEADER_LINE_BYTES = 8 * 1024
MAX_HEADER_LINES = 32

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS, INTERNAL_ERROR = -32700, -32600, -32602, -32603
#: LSP's own code for a request before `initialize` (LSP 3.17, "Initialize Request").
SERVER_NOT_INITIALIZED = -32002
_MARKER = b"Content-Length:"
_CHUNK = 64 * 1024


class _End(Exception):
    """Standard input ended."""


class FrameProblem(NamedTuple):
    """Why a frame was refused (the stream is then past it)."""

    reason: str


class FrameReader:
    """Frames from a file descriptor, with its own buffer (it must look ahead to find the next header after a
    refused frame, which a BufferedReader cannot give back)."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buffer = bytearray()
        self.skipping = False  # the rest of a refused frame is still ahead

    def _fill(self) -> None:
        chunk = os.read(self.fd, _CHUNK)
        if not chunk:
            raise _End()
        self.buffer += chunk

    def _line(self) -> Optional[bytes]:
        """One header line without its line break, or None when it is longer than the bound."""
        while True:
            end = self.buffer.find(b"\n", 0, MAX_HEADER_LINE_BYTES + 1)
            if end >= 0:
                line = bytes(self.buffer[:end])
                del self.buffer[:end + 1]
                return line.rstrip(b"\r")
            if len(self.buffer) > MAX_HEADER_LINE_BYTES:
                return None
            self._fill()

    def _exactly(self, size: int) -> bytes:
        while len(self.buffer) < size:
            self._fill()
        body = bytes(self.buffer[:size])
        del self.buffer[:size]
        return body

    def _resynchronise(self) -> None:
        """Drop bytes up to the next `Content-Length:` (the rest of a refused frame), keeping memory bounded."""
        while True:
            found = self.buffer.find(_MARKER)
            if found >= 0:
                del self.buffer[:found]
                return
            del self.buffer[:max(0, len(self.buffer) - len(_MARKER) + 1)]
            self._fill()

    def next(self) -> bytes | FrameProblem:
        """The next frame's body, or the problem with it (answered before the rest of the refused frame is read
        past: its sender may wait for the answer); _End at end of input."""
        if self.skipping:
            self._resynchronise()
            self.skipping = False
        length: Optional[int] = None
        problem: Optional[str] = None
        lines = 0
        while True:
            line = self._line()
            if line is None:
                problem = f"a header line longer than {MAX_HEADER_LINE_BYTES} bytes"
                break
            if not line.strip():
                if lines == 0:
                    continue  # blank lines between frames: tolerated
                break
            lines += 1
            if lines > MAX_HEADER_LINES:
                problem = f"more than {MAX_HEADER_LINES} header lines"
                break
            name, _, value = line.partition(b":")
            if name.strip().lower() != b"content-length":
                continue  # Content-Type and unknown headers carry nothing paictl needs
            value = value.strip()
            if not value.isdigit() or len(value) > 20:
                shown = value[:40].decode("ascii", "replace")
                problem = (f"Content-Length {shown!r} is not a byte count" if not value.isdigit() else
                           f"a frame of {len(value)}-digit length is over the limit of {MAX_FRAME_BYTES} bytes")
                break
            length = int(value)
            if length > MAX_FRAME_BYTES:
                problem = f"a frame of {length} bytes is over the limit of {MAX_FRAME_BYTES} bytes"
                break
        if problem is None and length is None:
            problem = "a frame without Content-Length"
        if problem is not None:
            self.skipping = True
            return FrameProblem(problem)
        return self._exactly(length)


class StdoutWriter:
    """pygls' writer over a file descriptor: a write to a closed output ends the server instead of raising (pygls
    would log a traceback per message)."""

    def __init__(self, fd: int, closed: threading.Event):
        self.fd = fd
        self.closed = closed

    def write(self, data: bytes) -> None:
        if self.closed.is_set():
            return
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self.fd, view):]
        except OSError:
            self.closed.set()

    def close(self) -> None:
        pass


def _watch_output(fd: int, closed: threading.Event, wake) -> None:
    """Notice at once when the reader of our output goes away (a pipe's write end then polls POLLERR), even while
    nothing is being written; regular files and terminals never report it."""
    import select

    poller = select.poll()
    poller.register(fd, 0)  # only POLLERR, POLLHUP and POLLNVAL
    while not closed.is_set():
        if poller.poll(1000):
            closed.set()
            wake()
            return


def _quiet_pygls_logs() -> None:
    """pygls logs every problem it meets with a traceback on standard error; the answers here say it to the client
    instead, and standard error keeps one line per problem."""
    pygls_logger = logging.getLogger("pygls")
    if not pygls_logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(_OneLine("paictl lsp: %(message)s"))
        handler.setLevel(logging.CRITICAL)
        pygls_logger.addHandler(handler)
        pygls_logger.propagate = False


class _OneLine(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        record.exc_info, record.exc_text = None, None
        return " ".join(super().format(record).split())


def serve_stdio(server, stdin_fd: int = 0, stdout_fd: int = 1) -> int:
    """Serve `server` (a pygls LanguageServer) over the descriptors until `exit` or a stream closes; the exit
    status (0 after `shutdown`, else 1)."""
    _quiet_pygls_logs()
    closed = threading.Event()
    server.protocol.set_writer(StdoutWriter(stdout_fd, closed))
    try:
        return asyncio.run(_serve(server, FrameReader(stdin_fd), stdout_fd, closed))
    except KeyboardInterrupt:
        return 130


async def _serve(server, reader: FrameReader, stdout_fd: int, closed: threading.Event) -> int:
    loop = asyncio.get_running_loop()
    frames: asyncio.Queue = asyncio.Queue(maxsize=16)
    ended = object()

    def wake() -> None:
        loop.call_soon_threadsafe(lambda: frames.full() or frames.put_nowait(ended))

    def read_frames() -> None:  # a daemon thread: a blocking read must never hold the process at exit
        while True:
            try:
                frame: Any = reader.next()
            except (_End, OSError):
                frame = ended
            queued = threading.Event()

            def offer(frame: Any = frame, queued: threading.Event = queued) -> None:
                # made in the loop's own thread: a loop that ends first never holds an unawaited put (a warning
                # on standard error, when the client closed our output and the loop ended under this thread)
                loop.create_task(frames.put(frame)).add_done_callback(lambda _: queued.set())

            try:
                loop.call_soon_threadsafe(offer)
            except RuntimeError:  # the loop is gone
                return
            while not queued.wait(0.5):  # the queue is full (at most 16 frames ahead), or the loop has ended
                if loop.is_closed():
                    return
            if frame is ended:
                return

    threading.Thread(target=read_frames, name="lsp-stdin", daemon=True).start()
    threading.Thread(target=_watch_output, args=(stdout_fd, closed, wake), name="lsp-stdout", daemon=True).start()
    session = _Session(server)
    while True:
        frame = await frames.get()
        if frame is ended or closed.is_set():
            return session.status()
        if isinstance(frame, FrameProblem):
            session.reply_error(None, INVALID_REQUEST, f"refused frame: {frame.reason}")
            continue
        status = session.handle(frame)
        if status is not None:
            return status
        if closed.is_set():
            return session.status()


class _Session:
    """JSON-RPC's rules around pygls' protocol object."""

    def __init__(self, server):
        self.server = server
        self.protocol = server.protocol
        self.shut_down = False
        self.initialized = False

    def status(self) -> int:
        return 0 if self.shut_down else 1

    def reply_error(self, message_id: Any, code: int, message: str) -> None:
        self.protocol._send_data({"jsonrpc": "2.0", "id": message_id, "error": {"code": code, "message": message}})

    def handle(self, body: bytes) -> Optional[int]:
        """Handle one message; the exit status when it was `exit`, else None."""
        from pygls.exceptions import JsonRpcException

        try:
            data = json.loads(body)
        except (ValueError, RecursionError) as error:
            self.reply_error(None, PARSE_ERROR, f"Parse error: {' '.join(str(error).split())[:200]}")
            return None
        if not isinstance(data, dict) or data.get("jsonrpc") != "2.0":
            self.reply_error(None, INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message object")
            return None
        message_id = data.get("id")
        if "id" in data and (isinstance(message_id, bool) or not isinstance(message_id, (str, int, float,
                                                                                          type(None)))):
            self.reply_error(None, INVALID_REQUEST, "Invalid Request: an id is a string, a number or null")
            return None
        method = data.get("method")
        if "method" in data and not isinstance(method, str):
            self.reply_error(message_id, INVALID_REQUEST, "Invalid Request: method is not a string")
            return None
        is_request = "id" in data and method is not None
        if method == "exit":
            return self.status()
        if not self.initialized and method is not None and method != "initialize":
            if is_request:
                self.reply_error(message_id, SERVER_NOT_INITIALIZED, f"Server not initialized: {method} before "
                                                                     "initialize")
            return None
        if self.initialized and method == "initialize":
            if is_request:
                self.reply_error(message_id, INVALID_REQUEST, "Invalid Request: initialize may only be sent once")
            return None
        if self.shut_down:
            if is_request:
                self.reply_error(message_id, INVALID_REQUEST, "Invalid Request: the server has shut down; only "
                                                              "exit is accepted")
            return None
        try:
            message = self.protocol.structure_message(data)
        except JsonRpcException as error:
            if is_request:
                self.reply_error(message_id, error.code if error.code else INVALID_PARAMS,
                                 f"{'Invalid params' if error.code == INVALID_PARAMS else error.message} for "
                                 f"{method}")
            return None
        except Exception:  # noqa: BLE001 - whatever cattrs raises on hostile params is the client's, not ours
            if is_request:
                self.reply_error(message_id, INVALID_PARAMS, f"Invalid params for {method}")
            return None
        try:
            self.protocol.handle_message(message)
        except Exception:  # noqa: BLE001 - pygls answered a request already; a notification's failure is logged
            if is_request:
                self.reply_error(message_id, INTERNAL_ERROR, f"internal error handling {method}")
        if is_request and method == "shutdown":
            self.shut_down = True
        if is_request and method == "initialize":
            self.initialized = True
        self._drop_finished_futures()
        return None

    def _drop_finished_futures(self) -> None:
        """pygls#608: a notification's future (and a generator handler's) stays in `_request_futures` once done.
        A done future there is never needed again: a request's own is popped before its answer is sent, a
        cancel finds nothing to cancel in a finished one, and a request to the client is done only once answered
        (and then popped)."""
        futures = self.protocol._request_futures
        for key in [key for key, future in futures.items() if future.done()]:
            del futures[key]
