"""A TCP forwarder that counts the connections made through it, and which of them carried no bytes at all.

A fail-fast reachability probe (kube/connection.py `probe`, openpai/client.py `connect_error`) is exactly such a
bare connection: it connects and closes without sending anything. Counting them at the wire tells how often an
invocation probed a cluster, without patching paictl.
"""

from __future__ import annotations

import socket
import threading
import time


class CountingForwarder:
    """Listens on 127.0.0.1 (port 0) and forwards every connection to `upstream` (host, port)."""

    def __init__(self, upstream: tuple[str, int]):
        self.upstream = upstream
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self.accepted = 0
        self.finished: list[int] = []  # bytes the client sent, per finished connection
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self.accepted += 1
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        sent = [0]
        try:
            upstream = socket.create_connection(self.upstream, timeout=30)
        except OSError:
            client.close()
            self._done(0)
            return

        def pump(source: socket.socket, sink: socket.socket, count: bool) -> None:
            try:
                while True:
                    data = source.recv(65536)
                    if not data:
                        break
                    if count:
                        sent[0] += len(data)
                    sink.sendall(data)
            except OSError:
                pass
            finally:
                try:
                    sink.shutdown(socket.SHUT_WR)
                except OSError:
                    pass

        back = threading.Thread(target=pump, args=(upstream, client, False), daemon=True)
        back.start()
        pump(client, upstream, True)
        back.join(timeout=30)
        client.close()
        upstream.close()
        self._done(sent[0])

    def _done(self, sent: int) -> None:
        with self._lock:
            self.finished.append(sent)

    def bare_connections(self, deadline: float = 30.0) -> int:
        """Connections that sent nothing, once every accepted connection has ended (waits up to `deadline` s)."""
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            with self._lock:
                if len(self.finished) == self.accepted:
                    return sum(1 for sent in self.finished if sent == 0)
            time.sleep(0.02)
        raise AssertionError(f"{self.accepted - len(self.finished)} connection(s) still open after {deadline}s")

    def close(self) -> None:
        self._closed = True
        self._listener.close()
