"""What the double and the fault proxy share: a threaded HTTP server on 127.0.0.1 at a port the kernel picks."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class QuietHandler(BaseHTTPRequestHandler):
    """HTTP/1.1 keep-alive, no request log, TCP_NODELAY as Node's server sets it (else a keep-alive client waits
    ~40 ms per answer: Nagle against delayed ACK). The handler reaches its server object as `self.owner`."""

    owner: Any
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass


class LoopbackServer:
    """`with Sub() as server:` serves `Sub.handler` on `server.url` until the block ends."""

    handler: type[QuietHandler]
    thread_name = "loopback"

    def __enter__(self):
        handler = type("Handler", (self.handler,), {"owner": self})
        self._http: ThreadingHTTPServer | None = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._http.daemon_threads = True
        threading.Thread(target=self._http.serve_forever, kwargs={"poll_interval": 0.05}, name=self.thread_name,
                         daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if getattr(self, "_http", None) is not None:
            self._http.shutdown()
            self._http.server_close()

    @property
    def url(self) -> str:
        assert self._http is not None
        host, port = self._http.server_address[:2]
        return f"http://{host}:{port}"
