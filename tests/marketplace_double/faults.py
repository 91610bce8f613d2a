"""A forwarding proxy in front of the marketplace double that fails or delays chosen requests.

The double answers as the server does; a test that needs its third write to fail, or a slow answer, puts this proxy
between paictl and the double. Every other request reaches the double unchanged, and every request is recorded
(method, path, status), so a test can say which writes happened.

    with FaultProxy(peer.url) as proxy:
        proxy.fail("POST", r"/items/[^/]+/tag/", status=500, body="Unexpected internal error")
        ... paictl ... --to proxy.url
"""

from __future__ import annotations

import dataclasses
import re
import threading
import time

import httpx

from loopback import LoopbackHandler, LoopbackServer


@dataclasses.dataclass
class Fault:
    method: str
    path: re.Pattern[str]
    status: int | None  # None: drop the connection without an answer
    body: str
    delay: float
    times: int  # how many matching requests fail; -1 for all
    content_type: str = "text/html; charset=utf-8"
    trickle: float = 0.0  # > 0: a 200 whose body never ends, one byte every `trickle` seconds


class _Handler(LoopbackHandler):
    owner: FaultProxy

    def _handle(self) -> None:
        owner = self.owner
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        fault = owner._fault_for(self.command, self.path)
        if fault is not None and fault.delay:
            time.sleep(fault.delay)
        if fault is not None and fault.trickle:
            owner.requests.append((self.command, self.path, 200))
            return self._trickle(fault.trickle)
        if fault is not None and fault.status is None:
            owner.requests.append((self.command, self.path, 0))
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if fault is not None and fault.status:
            status, headers, content = fault.status, {"Content-Type": fault.content_type}, fault.body.encode()
        else:
            forwarded = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length",
                                                                                   "connection")}
            answer = owner._client.request(self.command, owner.upstream + self.path, headers=forwarded, content=body)
            status, content = answer.status_code, answer.content
            headers = {k: v for k, v in answer.headers.items()
                       if k.lower() not in ("content-length", "transfer-encoding", "connection", "content-encoding")}
        owner.requests.append((self.command, self.path, status))
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        self.wfile.write(content)

    def _trickle(self, every: float) -> None:
        """A server that is alive but never finishes its answer: each read of it arrives well within any read
        timeout. It stops when the client goes away (or after a minute)."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", "1000000")
        self.end_headers()
        self.close_connection = True
        ends = time.monotonic() + 60
        try:
            while time.monotonic() < ends:
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(every)
        except OSError:
            return

    do_GET = do_POST = do_PUT = do_DELETE = _handle


class FaultProxy(LoopbackServer):
    handler = _Handler
    thread_name = "marketplace-fault-proxy"

    def __init__(self, upstream: str):
        self.upstream = upstream.rstrip("/")
        self.faults: list[Fault] = []
        self.requests: list[tuple[str, str, int]] = []
        self._lock = threading.Lock()
        self._client = httpx.Client(timeout=60)

    def fail(self, method: str, path: str, *, status: int | None = 500, body: str = "Unexpected internal error",
             delay: float = 0.0, times: int = 1, content_type: str = "text/html; charset=utf-8") -> None:
        """The next `times` requests `method` whose path matches `path` (re.search) get `status` and `body`
        (the server's own plain-text error form by default)."""
        self.faults.append(Fault(method, re.compile(path), status, body, delay, times, content_type))

    def trickle(self, method: str, path: str, *, every: float = 0.1) -> None:
        """Every request `method` whose path matches `path` is answered 200 with a body that never ends, one byte
        every `every` seconds."""
        self.faults.append(Fault(method, re.compile(path), 200, "", 0.0, -1, trickle=every))

    def slow(self, delay: float) -> None:
        """Every request waits `delay` seconds, then reaches the server."""
        self.faults.append(Fault("*", re.compile(""), 0, "", delay, -1))

    def clear(self) -> None:
        """No more faults: every request reaches the server."""
        with self._lock:
            self.faults.clear()

    def writes(self) -> list[tuple[str, str, int]]:
        return [r for r in self.requests if r[0] in ("POST", "PUT", "DELETE")]

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        self._client.close()

    def _fault_for(self, method: str, path: str) -> Fault | None:
        with self._lock:
            for fault in self.faults:
                if fault.times != 0 and fault.method in (method, "*") and fault.path.search(path):
                    if fault.times > 0:
                        fault.times -= 1
                    return fault
        return None
