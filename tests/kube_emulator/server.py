"""The HTTP side: a stdlib ThreadingHTTPServer speaking the Kubernetes REST dialect on 127.0.0.1.

HTTP/1.1 with keep-alive (client-go and urllib3 reuse connections); watches and followed logs are chunked streams
that stay open. Every request is recorded before it is served, so a test can count requests, including watches
still open. Injected failures (`fail_next`), RBAC denials (`forbid`) and removed CRDs (`uninstall`) are decided here.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import traceback
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from . import errors, handlers, openapi, streams
from .resources import SERVER_VERSION

#: the API server's limit on a request body (apiserver's MaxRequestBodyBytes, 3 MiB)
REQUEST_MAX_BYTES = 3 * 1024 * 1024


@dataclass
class RequestRecord:
    method: str
    path: str
    query: dict[str, str]
    watch: bool
    user_agent: str
    content_type: str
    status: int | None = None
    started: float = field(default_factory=time.monotonic)
    body: bytes = b""  # what the client sent (e.g. to check that a secret value only ever went to a Secret)
    authorization: str = ""  # the Authorization header (a bearer token from a kubeconfig or a service account)


@dataclass
class Route:
    group: str
    version: str
    namespace: str | None
    plural: str
    name: str | None
    subresource: str | None
    legacy_watch: bool


def parse_route(parts: list[str], registry) -> Route | None:
    """Map `/api/v1/...` or `/apis/g/v/...` path segments to a resource route (None: not a resource path)."""
    if parts[:1] == ["api"] and len(parts) >= 3:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 4:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    legacy_watch = rest[:1] == ["watch"]
    if legacy_watch:
        rest = rest[1:]
    if len(rest) >= 3 and rest[0] == "namespaces" and registry.by_path(group, version, rest[2]) is not None:
        namespace, rest = rest[1], rest[2:]
    else:
        namespace = None
    if not rest or len(rest) > 3:
        return None
    return Route(group, version, namespace, rest[0], rest[1] if len(rest) > 1 else None,
                 rest[2] if len(rest) > 2 else None, legacy_watch)


class EmulatorHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, emulator) -> None:
        self.emulator = emulator
        self.open_streams: set[socket.socket] = set()
        self.streams_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), Handler)

    def handle_error(self, request, client_address) -> None:  # dropped connections are expected, stay quiet
        pass


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # as a real API server (Go sets TCP_NODELAY on every connection): otherwise each answer's second write waits
    # for the client's delayed ACK, ~40 ms on every keep-alive request after the first
    disable_nagle_algorithm = True
    server: EmulatorHTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    # -- plumbing ------------------------------------------------------------------------------------------------

    def _serve(self, method: str) -> None:
        emu = self.server.emulator
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        parts = [p for p in url.path.split("/") if p]
        length = int(self.headers.get("Content-Length") or 0)
        if length > REQUEST_MAX_BYTES:  # refused before it is decoded; what was sent is read and dropped
            while length > 0:
                chunk = self.rfile.read(min(length, 1 << 20))
                if not chunk:
                    break
                length -= len(chunk)
            self.record = RequestRecord(method, url.path, {}, False, self.headers.get("User-Agent", ""),
                                        self.headers.get("Content-Type", ""))
            emu._record_request(self.record)
            self.lose_response = False
            self.send_json(413, errors.too_large(REQUEST_MAX_BYTES).status())
            self.close_connection = True
            return
        self.body = self.rfile.read(length) if length else b""
        watch = query.get("watch") in ("true", "1") or parts[3:4] == ["watch"] or parts[2:3] == ["watch"]
        self.record = RequestRecord(method, url.path, query, watch, self.headers.get("User-Agent", ""),
                                    self.headers.get("Content-Type", ""), body=self.body,
                                    authorization=self.headers.get("Authorization", ""))
        emu._record_request(self.record)
        self.lose_response = False
        try:
            injected = emu._take_injected(method, self.path)  # path and query: a test may match either
            if injected is not None and injected["kind"] == "fail":
                raise errors.injected(injected["status"], injected.get("message"))
            if injected is not None and injected["kind"] == "throttle":
                self.send_text(429, "Too many requests, please try again later.\n",
                               headers={"Retry-After": injected["retry_after"]})
                return
            self.lose_response = injected is not None and injected["kind"] == "lose"
            self._dispatch(method, parts, query)
        except errors.ApiError as error:
            self.send_json(error.code, error.status())
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True
        except Exception as bug:  # an emulator bug: answer 500 as an API server would, and show it in the test log
            traceback.print_exc()
            if self.record.status is None:
                self.send_json(500, errors.ApiError(500, "InternalError", f"emulator bug: {bug!r}").status())
            self.close_connection = True

    def _lose(self) -> bool:
        """The answer is lost: the request was served, the connection drops (see `Emulator.lose_next`)."""
        if not self.lose_response:
            return False
        self.record.status = 0
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        return True

    def send_json(self, code: int, payload: Any, content_type: str = "application/json") -> None:
        if self._lose():
            return
        data = json.dumps(payload).encode()
        self.record.status = code
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        self.wfile.write(data)

    def send_empty(self, code: int = 204) -> None:
        self.record.status = code
        self.send_response(code)
        self.end_headers()

    def send_text(self, code: int, text: str, content_type: str = "text/plain; charset=utf-8",
                  headers: dict[str, str] | None = None) -> None:
        data = text.encode()
        self.record.status = code
        self.send_response(code)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def start_chunked(self, content_type: str) -> None:
        with self.server.streams_lock:  # droppable before it is seen as streaming (status 200)
            self.server.open_streams.add(self.connection)
        self.record.status = 200
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()

    def write_chunk(self, data: bytes) -> None:
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

    def end_chunked(self, cleanly: bool) -> None:
        with self.server.streams_lock:
            self.server.open_streams.discard(self.connection)
        if cleanly:
            try:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except OSError:
                self.close_connection = True
        else:
            self.close_connection = True

    def stream_alive(self) -> bool:
        with self.server.streams_lock:
            return self.connection in self.server.open_streams

    # -- routing -------------------------------------------------------------------------------------------------

    def _dispatch(self, method: str, parts: list[str], query: dict[str, str]) -> None:
        emu = self.server.emulator
        registry = emu.registry
        if method == "GET":
            document = self._discovery(parts)
            if document is not None:
                self.send_json(200, document)
                return
        if method == "GET" and parts in (["healthz"], ["readyz"], ["livez"]):
            self.send_text(200, "ok")
            return
        route = parse_route(parts, registry)
        if route is None:
            if parts[:1] in (["openapi"], ["swagger.json"]):
                self.send_text(404, "404 page not found\n")
                return
            raise errors.no_such_resource()
        rt = registry.by_path(route.group, route.version, route.plural)
        if rt is None:
            raise errors.no_such_resource()
        if (rt.namespaced and route.name and route.namespace is None) or (not rt.namespaced and route.namespace):
            raise errors.no_such_resource()
        verb = handlers.verb_of(method, route, self.record.watch)
        emu._check_allowed(verb, rt, route)
        if route.subresource == "log":
            if rt.kind != "Pod" or method != "GET":
                raise errors.no_such_resource()
            streams.serve_log(self, emu, route, query)
        elif self.record.watch:
            streams.serve_watch(self, emu, rt, route, query)
        else:
            code, payload = handlers.handle(emu, self, method, rt, route, query)
            self.send_json(code, payload)

    def _discovery(self, parts: list[str]) -> dict | None:
        registry = self.server.emulator.registry
        if parts == ["version"]:
            return SERVER_VERSION
        if parts == ["openapi", "v3"]:
            return openapi.root(registry)
        if parts[:2] == ["openapi", "v3"] and len(parts) in (4, 5):
            group, version = ("", parts[3]) if parts[2] == "api" else (parts[3], parts[4] if len(parts) == 5 else "")
            document = openapi.group_version(registry, group, version)
            if document is None:
                raise errors.no_such_resource()
            return document
        if parts == ["api"]:
            return registry.core_versions(f"127.0.0.1:{self.server.server_address[1]}")
        if parts == ["apis"]:
            return registry.group_list()
        if len(parts) == 2 and parts[0] == "apis":
            if parts[1] not in registry.group_versions():
                raise errors.no_such_resource()
            return registry.group_doc(parts[1])
        if (len(parts) == 2 and parts[0] == "api") or (len(parts) == 3 and parts[0] == "apis"):
            group, version = ("", parts[1]) if parts[0] == "api" else (parts[1], parts[2])
            document = registry.resource_list(group, version)
            if document is None:
                raise errors.no_such_resource()
            return document
        return None
