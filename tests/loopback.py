"""What the tests' servers share (the OpenPAI double and its stand-ins, the marketplace double and the fault proxy):
a threaded HTTP server on 127.0.0.1 (port 0 unless told), run as a context manager."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Optional


class LoopbackHandler(BaseHTTPRequestHandler):
    """What every stand-in's handler shares: HTTP/1.1 keep-alive, quiet, and TCP_NODELAY as Go's and Node's servers
    set it (an answer is two writes; without it a keep-alive client waits ~40 ms for each, Nagle against delayed
    ACK)."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *args) -> None:
        pass


class LoopbackServer:
    """Subclasses set `handler` (a LoopbackHandler class); the handler reaches the server object as
    `self.owner`. `with Sub(...) as server:` serves on `server.url` until the block ends."""

    handler: type[BaseHTTPRequestHandler]
    want_port = 0
    thread_name = "loopback"

    def __enter__(self):
        handler = type("Handler", (self.handler,), {"owner": self})
        self._httpd: Optional[ThreadingHTTPServer] = ThreadingHTTPServer(("127.0.0.1", self.want_port), handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name=self.thread_name,
                         daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        if getattr(self, "_httpd", None) is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    @property
    def port(self) -> int:
        assert self._httpd is not None
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"
