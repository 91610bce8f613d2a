"""Talking to an OpenPAI REST server (`src/rest-server/docs/swagger.yaml`): bearer token, retries, one-line errors.

httpx does the HTTP (connection reuse, timeouts, proxies from the environment, TLS). What this module adds:
- failing fast: a refused connection, an unknown host or a connect timeout is one line at once, never retried
  (the cluster is not there; asking again only makes the user wait);
- idempotent requests (GET, and the PUT of an execution type) are retried with exponential backoff when an open
  connection drops, or the server answers 429 or 5xx; a POST is never repeated, since the job may have been created.
  A 429 whose Retry-After outlasts the retries (the REST server's rate limiters say 60 or 3600 s) is one line at
  once, saying when to try again. Once retrying has taken a second, each further attempt is announced (a WARNING on the `paictl.openpai` logger,
  which reaches standard error through logging's last-resort handler unless an application configures logging);
- the server's error body `{code, message}` becomes one `ClusterError`/`NotFoundError` line naming the server,
  the HTTP status, the code and the message, plus what to do;
- links the server hands out (log locations) are resolved as the web portal resolves them (`resolve_link`), and the
  bearer token goes only to URLs under the REST server's own address: never to another origin, nor to another path
  of the same site (the log-manager behind the same proxy gets its own credential in the link);
- a redaction guard: the token (and any `token=` in a URL, as the log-manager links carry) is replaced by `***` in
  every message this module builds and in every log record httpx writes, so no error text can carry it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import time
from typing import Any, Callable, Iterator, Mapping, Optional
from urllib.parse import urljoin, urlsplit, urlunsplit

from paictl.errors import ClusterError, NotFoundError, display_url
from paictl.http_answers import decoded, page_text, read_within

from .reach import CONNECT_TIMEOUT, Redactor, connect_error, unreachable_message

#: Statuses a retry can cure: too many requests, or the server or a proxy in front of it failed, not the request.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
DEFAULT_ATTEMPTS = 4
DEFAULT_BACKOFF = 0.5          # seconds before the first retry; doubled each time up to MAX_BACKOFF
MAX_BACKOFF = 8.0
TIMEOUT = 30.0
ANNOUNCE_AFTER = 1.0           # seconds of retrying after which each further attempt is announced
#: The REST API's path under a deployment's site root (pylon routes `/rest-server/api/...` to the REST server).
REST_PREFIX = "/rest-server"
#: pylon's route to a node's log-manager (`location ~ ^/log-manager/([^/]+):(\d+)/(.*)$`).
_LOG_MANAGER_LINK = re.compile(r"^/log-manager/([^/]+):(\d+)(/.*)?$")
#: What most REST answers are (a JSON object), and the words a message uses for each JSON type.
JSON_OBJECT: tuple[type, ...] = (dict,)
_JSON_NAMES = {dict: "object", list: "list", str: "string", int: "number", float: "number", bool: "boolean",
               type(None): "null"}
#: The logger retries are announced on (`logging.getLogger(LOGGER)`); logging is imported once httpx is, not
#: before: an unreachable cluster's answer (cli/entry.py) needs neither.
LOGGER = "paictl.openpai"


class _RedactingFilter:
    """Installed on httpx's and httpcore's loggers: a debug log of this process never shows the token. (logging
    takes any object with a `filter` method.)"""

    def __init__(self, redact: Redactor):
        super().__init__()
        self.redact = redact

    def filter(self, record: Any) -> bool:
        record.msg = self.redact(record.getMessage())
        record.args = ()
        return True


class UnreachableError(ClusterError):
    """The REST server could not be reached at all (refused, unknown host, no route, connect timeout)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Reply:
    """An OpenPAI REST reply: status, body (parsed JSON, else text) and the ETag to poll with."""
    status: int
    body: Any                   # parsed JSON, or the text when the body is not JSON
    etag: Optional[str] = None
    text: str = ""


class OpenPaiClient:
    """One REST server, one user, one token. Every method raises `paictl.errors` classes only."""

    def __init__(self, *, url: str, token: Optional[str], alias: str = "", attempts: int = DEFAULT_ATTEMPTS,
                 backoff: float = DEFAULT_BACKOFF, timeout: float = TIMEOUT,
                 sleep: Callable[[float], None] = time.sleep, reachable: bool = False):
        self.url = url.rstrip("/")
        self.alias = alias or self.url
        self.attempts, self.backoff, self.sleep, self.timeout = max(1, attempts), backoff, sleep, timeout
        self.redact = Redactor(token)
        self._headers = {"Accept": "application/json", "User-Agent": "paictl"}
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        self._http: Any = None
        self._filter = _RedactingFilter(self.redact)
        self.reachable = reachable  # `check_reachable` passed (here or for the caller): not asked again

    def _client(self) -> Any:
        """The httpx client, made on first use, after a plain TCP connect to the server (`check_reachable`): httpx
        takes a few hundred milliseconds to import, and an unreachable cluster should answer faster than that."""
        if self._http is None:
            if not self.reachable:
                self.check_reachable()
            import logging

            import httpx

            self._http = httpx.Client(base_url=self.url, headers=self._headers, follow_redirects=False,
                                      timeout=httpx.Timeout(self.timeout, connect=min(self.timeout, CONNECT_TIMEOUT)))
            for name in ("httpx", "httpcore"):
                logging.getLogger(name).addFilter(self._filter)
        return self._http

    def check_reachable(self) -> None:
        """UnreachableError when the server's host does not resolve or its port refuses a TCP connection. The line
        names the server, not the request that was about to be made (none was sent), so that the CLI's early answer
        (cli/entry.py, before any command code runs) and a command's own first request say the same thing."""
        exc = connect_error(self.url, min(self.timeout, CONNECT_TIMEOUT))
        if exc is not None:
            raise UnreachableError(self._unreachable(exc, "", 1, True))
        self.reachable = True

    def close(self) -> None:
        if self._http is not None:
            import logging

            self._http.close()
            for name in ("httpx", "httpcore"):
                logging.getLogger(name).removeFilter(self._filter)

    # -- requests ---------------------------------------------------------------------------------------------

    def get(self, path: str, *, params: Optional[Mapping[str, Any]] = None, etag: Optional[str] = None,
            what: str = "", expect: tuple[type, ...] = JSON_OBJECT) -> Reply:
        """GET, retried. With `etag`, a 304 comes back as Reply(status=304) for the caller to reuse its copy.
        `expect`: the JSON types the REST server answers this request with; any other 2xx answer (a proxy's or a
        login page, an empty body) is a one-line ClusterError, not a value the caller would misread."""
        headers = {"If-None-Match": etag} if etag else {}
        return self._send("GET", path, params=params, headers=headers, idempotent=True, what=what, expect=expect)

    def put_json(self, path: str, body: Any, *, what: str = "") -> Reply:
        """PUT of a whole value (e.g. executionType STOP): idempotent, so retried like a GET."""
        return self._send("PUT", path, content=json.dumps(body).encode(), idempotent=True, what=what,
                          headers={"Content-Type": "application/json"})

    def post(self, path: str, *, content: bytes, content_type: str, what: str = "",
             auth: bool = True) -> Reply:
        """POST, never repeated: after a dropped connection the server may have acted on it. Only the REST
        server's own JSON answer is success: a 2xx page from something in front of it did not submit anything."""
        return self._send("POST", path, content=content, idempotent=False, what=what, auth=auth,
                          headers={"Content-Type": content_type})

    def delete(self, path: str, *, what: str = "") -> Reply:
        """DELETE (a token's revocation): idempotent, so retried like a GET."""
        return self._send("DELETE", path, idempotent=True, what=what)

    def get_link(self, link: str, *, what: str = "") -> Reply:
        """GET a link the server handed out (a log location), resolved by `resolve_link`. The bearer token goes
        along only when the link lies under the REST server's own address."""
        url = resolve_link(self.url, link)
        return self._send("GET", url, idempotent=True, what=what, auth=self.owns(url), raw=True)

    @contextlib.contextmanager
    def open_link(self, link: str, *, headers: Optional[Mapping[str, str]] = None, what: str = "") -> Iterator[Any]:
        """GET a link the server handed out as a stream: the httpx response (200, 206, or 416 for a range past the
        end), whose body the caller reads in chunks (`iter_bytes`), so a log of any size costs a chunk of memory.
        Any other status is the usual one-line error (a 404 is NotFoundError); 429/5xx, and a connection dropped
        before the answer, are retried as `get` retries them; a connection that drops mid-body is a one-line
        ClusterError naming the link's server."""
        http = self._client()
        import httpx

        url = resolve_link(self.url, link)
        delay = self.backoff
        for attempt in range(1, self.attempts + 1):
            request = http.build_request("GET", url, headers=dict(headers or {}))
            if not self.owns(url):
                request.headers.pop("Authorization", None)
            try:
                response = http.send(request, stream=True)
            except (httpx.ConnectError, httpx.ConnectTimeout, httpx.UnsupportedProtocol) as exc:
                raise UnreachableError(self._link_unreachable(exc, url, what, attempt)) from None
            except httpx.TransportError as exc:  # dropped before an answer (a kept-alive connection closed): again
                if attempt == self.attempts or isinstance(exc, httpx.TimeoutException):
                    raise ClusterError(self._link_unreachable(exc, url, what, attempt)) from None
                self.sleep(delay)
                delay = min(delay * 2, MAX_BACKOFF)
                continue
            status = response.status_code
            wait = _retry_after(response.headers.get("Retry-After"))
            if status in RETRY_STATUSES and attempt < self.attempts and wait <= MAX_BACKOFF:
                response.close()
                self.sleep(max(delay, wait))
                delay = min(delay * 2, MAX_BACKOFF)
                continue
            try:
                if status >= 400 and status != 416:
                    text = decoded(response, read_within(response, time.monotonic() + self.timeout))
                    raise self._error(status, text, what or "GET log", retry_after=wait)
                if 300 <= status < 400:  # never followed: its body is no log
                    raise self._redirected(status, response.headers.get("Location"), url, what or "GET log")
                yield response
            except httpx.TransportError as exc:  # mid-answer: what the caller has read may already be shown
                raise ClusterError(self._link_unreachable(exc, url, what, attempt)) from None
            finally:
                response.close()
            return

    def owns(self, url: str) -> bool:
        """Whether `url` is the REST server's: same scheme, host and port, and a path under its base path."""
        base, other = urlsplit(self.url + "/"), urlsplit(url)
        return (_origin_of(base) == _origin_of(other) and (other.path or "/").startswith(base.path))

    def _send(self, method: str, path: str, *, params: Optional[Mapping[str, Any]] = None,
              headers: Optional[Mapping[str, str]] = None, content: Optional[bytes] = None, idempotent: bool,
              what: str, auth: bool = True, raw: bool = False, expect: tuple[type, ...] = JSON_OBJECT) -> Reply:
        http = self._client()  # first: an unreachable server fails before httpx loads
        import logging

        import httpx

        request_headers = dict(headers or {})
        delay, started = self.backoff, time.monotonic()
        for attempt in range(1, self.attempts + 1):
            last = attempt == self.attempts or not idempotent
            deadline = time.monotonic() + self.timeout  # for the whole answer, not only each read of it
            try:
                request = http.build_request(method, path, params=params, headers=request_headers,
                                             content=content)
                if not auth or not self.owns(str(request.url)):
                    request.headers.pop("Authorization", None)
                response = http.send(request, stream=True)
                try:
                    data = read_within(response, deadline)
                finally:
                    response.close()
            except (httpx.ConnectError, httpx.ConnectTimeout, httpx.UnsupportedProtocol) as exc:
                # nothing was sent: the server is not there (or not at this address); asking again only waits
                raise UnreachableError(self._unreachable(exc, what, attempt, True)) from None
            except httpx.TransportError as exc:  # the connection dropped, or the answer took too long
                if last or isinstance(exc, httpx.TimeoutException):
                    raise ClusterError(self._unreachable(exc, what, attempt, idempotent)) from None
                reason = " ".join(str(exc).split()) or type(exc).__name__
            except httpx.HTTPError as exc:  # an invalid URL or header: never retried
                raise ClusterError(self.redact(f"OpenPAI {self.alias}: {what or path}: {exc}")) from None
            else:
                wait = _retry_after(response.headers.get("Retry-After"))
                if response.status_code not in RETRY_STATUSES or last or wait > MAX_BACKOFF:
                    # a rate limiter's window (the REST server's are a minute or an hour) outlasts any retry
                    return self._reply(response, data, what or f"{method} {path}", raw=raw, expect=expect)
                reason = f"HTTP {response.status_code}"
                delay = max(delay, wait)
            if time.monotonic() - started + delay >= ANNOUNCE_AFTER:
                logging.getLogger(LOGGER).warning(self.redact(
                    f"paictl: OpenPAI {self.alias}: {what or method + ' ' + path}: {reason}; "
                    f"attempt {attempt + 1} of {self.attempts} in {delay:.1f}s"))
            self.sleep(delay)
            delay = min(delay * 2, MAX_BACKOFF)
        raise AssertionError("unreachable")  # pragma: no cover

    def _reply(self, response: Any, data: bytes, what: str, *, raw: bool, expect: tuple[type, ...]) -> Reply:
        text, status = decoded(response, data), response.status_code
        if status == 304:
            return Reply(status=304, body=None, etag=response.headers.get("ETag"))
        if status >= 400:
            raise self._error(status, text, what, retry_after=_retry_after(response.headers.get("Retry-After")))
        if status >= 300:
            raise self._redirected(status, response.headers.get("Location"), str(response.url), what)
        body: Any = text
        if not raw:
            try:
                body = json.loads(text)
            except ValueError:
                raise self._not_the_server(status, text, response.headers.get("Content-Type"), what) from None
            if expect and not isinstance(body, expect):
                wanted = " or ".join(_JSON_NAMES[kind] for kind in expect)
                raise self._failure(what, f"HTTP {status}, but the answer is a JSON {_JSON_NAMES[type(body)]}, not "
                                          f"the JSON {wanted} the REST server sends", status=status)
        return Reply(status=status, body=body, etag=response.headers.get("ETag"), text=text)

    # -- errors -----------------------------------------------------------------------------------------------

    def _unreachable(self, exc: Exception, what: str, attempts: int, idempotent: bool) -> str:
        return self.redact(unreachable_message(self.alias, self.url, exc, what=what, attempts=attempts,
                                               idempotent=idempotent))

    def _link_unreachable(self, exc: Exception, url: str, what: str, attempts: int) -> str:
        """The line for a link that could not be read: it names the link's own server (a node's log-manager) when
        that is not the REST server."""
        if self.owns(url):
            return self._unreachable(exc, what, attempts, True)
        parts = urlsplit(url)
        reason = " ".join(str(exc).split()) or type(exc).__name__
        tries = f" (tried {attempts} times)" if attempts > 1 else ""
        server = display_url(f"{parts.scheme}://{parts.netloc}")
        return self.redact(f"cannot read from {server}{tries}, where a link of the OpenPAI REST server {self.alias} "
                           f"points: {what}: {reason}")

    def _failure(self, what: str, reason: str, advice: str = "", *, status: int = 0, code: str = "",
                 retry_after: float = 0.0) -> ClusterError:
        """The one line for an answer that is no success: `OpenPAI ALIAS: WHAT: REASON[; ADVICE]`. The error keeps
        `status`, `code`, `reason` (the answer alone, for a caller that words the rest itself) and `retry_after`
        (seconds, from a 429's Retry-After)."""
        line = f"OpenPAI {self.alias}: {what}: {reason}" + (f"; {advice}" if advice else "")
        error: Any = (NotFoundError if status == 404 else ClusterError)(self.redact(line))
        error.status, error.code, error.reason = status, code, self.redact(reason)
        error.retry_after = retry_after
        return error

    def _redirected(self, status: int, location: Optional[str], url: str, what: str) -> ClusterError:
        """A 3xx: never followed (the token would go along, and a redirected POST loses its body)."""
        where = display_url(urljoin(url, location)) if location else "nowhere (no Location)"
        # the address is not the last thing on the line: a `token=` redaction runs to the end of a word
        return self._failure(what, f"HTTP {status} redirects to {where} (paictl follows no redirect)",
                             f"if the cluster moved, give its new address to `paictl openpai add {self.alias}`",
                             status=status)

    def _not_the_server(self, status: int, text: str, content_type: Optional[str], what: str) -> ClusterError:
        """A 2xx answer that is not JSON: something in front of the REST server (a proxy, a login page) answered,
        and the request did not reach it, or the address is not the REST API's."""
        shown = page_text(text) or "an empty body"
        return self._failure(what, f"HTTP {status}, but the answer is not the REST server's JSON "
                                   f"({content_type or 'no content type'}: {shown})",
                             f"is {display_url(self.url)} the REST API, with no login page or proxy answering in "
                             "its place?", status=status)

    def _error(self, status: int, text: str, what: str, *, retry_after: float = 0.0) -> ClusterError:
        code, message = server_error(text)
        reason, advice = f"HTTP {status}" + (f" {code}" if code else "") + f": {message}", ""
        if status == 429 and retry_after:
            reason = reason.rstrip(".")
            advice = f"the server's rate limit lets this through again in {retry_after:.0f} s"
        elif status == 401:
            reason, advice = reason.rstrip("."), (f"the token is missing, wrong or expired: run "
                                                  f"`paictl openpai login {self.alias}`")
        elif status == 404 and not code and text.lstrip().startswith("<"):
            # an HTML page, not the REST server's {code, message}: the address is a web site, e.g. the cluster's
            # site root, whose REST API is under /rest-server
            advice = (f"{display_url(self.url)} answers, but not as an OpenPAI REST API: give the cluster's "
                      "address to `paictl openpai add` again (it finds the API, e.g. under /rest-server)")
        return self._failure(what, reason, advice, status=status, code=code, retry_after=retry_after)


def server_error(text: str) -> tuple[str, str]:
    """(code, message) from an error body: `{code, message}` as the swagger's Response, else its first line."""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict) and ("message" in data or "code" in data):
        message = " ".join(str(data.get("message") or "").split())
        return str(data.get("code") or ""), message or "(no message)"
    return "", page_text(text) or "(empty response)"


def _origin_of(parts: Any) -> tuple[str, str, Optional[int]]:
    default = {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), parts.port or default


def _retry_after(value: Optional[str]) -> float:
    try:
        return max(0.0, float(value)) if value else 0.0
    except ValueError:
        return 0.0


def site_root(rest_url: str) -> Optional[str]:
    """The deployment's site root when the REST URL is `https://HOST[/PREFIX]/rest-server`, else None (a direct REST
    server address, with no proxy in front of it)."""
    parts = urlsplit(rest_url)
    path = parts.path.rstrip("/")
    if not path.endswith(REST_PREFIX):
        return None
    return urlunsplit((parts.scheme, parts.netloc, path[:-len(REST_PREFIX)], "", ""))


def resolve_link(rest_url: str, link: str) -> str:
    """A link from the REST server as the web portal resolves it. Absolute links stay as they are; site-relative
    ones (`/log-manager/HOST:PORT/api/v1/logs/...`) are resolved against the site root when the cluster is known by
    its `.../rest-server` URL; given a direct REST address (no pylon in front), paictl does what pylon would do:
    `/log-manager/HOST:PORT/PATH` goes to `http://HOST:PORT/PATH`."""
    parts = urlsplit(link)
    if parts.scheme and parts.netloc:
        return link
    if not link.startswith("/"):
        return urljoin(rest_url.rstrip("/") + "/", link)
    root = site_root(rest_url)
    if root is not None:
        return root + link
    routed = _LOG_MANAGER_LINK.match(parts.path)
    if routed:
        query = f"?{parts.query}" if parts.query else ""
        return f"http://{routed.group(1)}:{routed.group(2)}{routed.group(3) or '/'}{query}"
    base = urlsplit(rest_url)
    return urlunsplit((base.scheme, base.netloc, parts.path, parts.query, ""))
