"""A stand-in for pylon, OpenPAI's front proxy (microsoft/pai `src/pylon`, nginx), with the routes paictl meets.

Routes as `deploy/pylon-config/location.conf.template` declares them (a95d9420; re-implemented, not copied):
- `/healthz` → 200 "Pylon ready.";
- `^/rest-server/api(.*)$` → `REST_SERVER_URI/api$1` with the query (If-None-Match and ETag passed through);
- `^/log-manager/([^/]+):(\\d+)/(.*)$` → `http://$1:$2/$3` with the query;
- everything else → the web portal. Its stand-in serves the portal's page at `/` and a 404 HTML page for any other
  path, which is what a REST client pointed at the site root meets.
Bodies are buffered, not streamed: the harness's answers are small. An upstream that breaks off mid-answer is passed
on as nginx passes it: the head and the bytes that arrived, then the connection closes.
"""

from __future__ import annotations

import http.client
import re
from urllib.parse import urlsplit

from loopback import LoopbackHandler, LoopbackServer

REST = re.compile(r"^/rest-server/api(.*)$")
LOG_MANAGER = re.compile(r"^/log-manager/([^/]+):(\d+)/(.*)$")
HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailers",
              "transfer-encoding", "upgrade", "host", "content-length"}
PORTAL_PAGE = b"<!DOCTYPE html><html><head><title>Platform for AI</title></head><body><div id=\"app\"></div>" \
              b"</body></html>\n"
NOT_FOUND_PAGE = b"<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n<center><h1>404 Not Found</h1>" \
                 b"</center>\r\n<hr><center>pylon</center>\r\n</body>\r\n</html>\r\n"


class Pylon(LoopbackServer):
    """`with Pylon(rest_url) as pylon:` serves on `pylon.url`; `requests` records (method, path, headers)."""

    def __init__(self, rest_url: str):
        self.rest = urlsplit(rest_url)
        self.requests: list[tuple[str, str, dict[str, str]]] = []


class _Handler(LoopbackHandler):
    owner: Pylon

    def _answer(self, status: int, body: bytes, headers: list[tuple[str, str]]) -> None:
        self.send_response(status)
        for key, value in headers:
            if key.lower() not in HOP_BY_HOP:
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _route(self) -> None:
        self.owner.requests.append((self.command, self.path, dict(self.headers.items())))
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        parts = urlsplit(self.path)
        query = f"?{parts.query}" if parts.query else ""
        if parts.path == "/healthz":
            return self._answer(200, b"Pylon ready.", [("Content-Type", "text/plain")])
        rest, logs = REST.match(parts.path), LOG_MANAGER.match(parts.path)
        if rest:
            host, port, path = self.owner.rest.hostname, self.owner.rest.port, f"/api{rest.group(1)}{query}"
        elif logs:
            host, port, path = logs.group(1), int(logs.group(2)), f"/{logs.group(3)}{query}"
        elif parts.path in ("/", "/index.html"):
            return self._answer(200, PORTAL_PAGE, [("Content-Type", "text/html")])
        else:
            return self._answer(404, NOT_FOUND_PAGE, [("Content-Type", "text/html")])
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        try:
            upstream = http.client.HTTPConnection(host, port, timeout=60)
            upstream.request(self.command, path, body=body or None, headers=headers)
            response = upstream.getresponse()
            try:
                data = response.read()
            except http.client.IncompleteRead as broken:
                # as nginx does when the upstream breaks off mid-answer: the head and what arrived, then close
                upstream.close()
                return self._broken(response, broken.partial)
            upstream.close()
        except OSError:
            return self._answer(502, b"<html><center><h1>502 Bad Gateway</h1></center></html>",
                                [("Content-Type", "text/html")])
        self._answer(response.status, data, response.getheaders())

    def _broken(self, response: http.client.HTTPResponse, partial: bytes) -> None:
        self.send_response(response.status)
        for key, value in response.getheaders():
            if key.lower() not in HOP_BY_HOP:
                self.send_header(key, value)
        self.send_header("Content-Length", response.getheader("Content-Length") or str(len(partial) + 1))
        self.end_headers()
        self.wfile.write(partial)
        self.close_connection = True

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _route


Pylon.handler = _Handler
