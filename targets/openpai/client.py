"""Talking to an OpenPAI REST server (`src/rest-server/docs/swagger.yaml`): bearer token, retries, one-line errors.

httpx does the HTTP (connection reuse, timeouts, proxies from the environment, TLS). What this module adds:
- idempotent requests (GET, and the PUT of an execution type) are retried with exponential backoff when the
  connection drops or the server answers 5xx; a POST is never repeated, since the job may have been created;
- the server's error body `{code, message}` becomes one `ClusterError`/`NotFoundError` line naming the server,
  the HTTP status, the code and the message, plus what to do;
- a redaction guard: the token (and any `token=` in a URL, as the log-manager links carry) is replaced by `***` in
  every message this module builds and in every log record httpx writes, so no error text can carry it.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import time
from typing import Any, Callable, Mapping, Optional
from urllib.parse import urlsplit

from paictl.errors import ClusterError, NotFoundError

#: Statuses a retry can cure: the server or a proxy in front of it failed, not the request.
RETRY_STATUSES = frozenset({500, 502, 503, 504})
DEFAULT_ATTEMPTS = 4
DEFAULT_BACKOFF = 0.5          # seconds before the first retry; doubled each time up to MAX_BACKOFF
MAX_BACKOFF = 8.0
TIMEOUT = 30.0
REDACTED = "***"
_URL_TOKEN = re.compile(r"((?:^|[?&])(?:token|access_token)=)[^&#\s]*", re.IGNORECASE)
#: RFC 6750's b64token characters: what may follow "Bearer " in a credential.
_BEARER = re.compile(r"(Bearer\s+)[A-Za-z0-9._~+/-]+=*", re.IGNORECASE)


class Redactor:
    """Replaces known secrets, bearer credentials and `token=` URL parameters in any text."""

    def __init__(self, *secrets: Optional[str]):
        self.secrets = tuple(s for s in secrets if s)

    def add(self, secret: Optional[str]) -> None:
        if secret and secret not in self.secrets:
            self.secrets += (secret,)

    def __call__(self, text: Any) -> str:
        text = str(text)
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        text = _BEARER.sub(lambda m: m.group(1) + REDACTED, text)
        return _URL_TOKEN.sub(lambda m: m.group(1) + REDACTED, text)


class _RedactingFilter(logging.Filter):
    """Installed on httpx's and httpcore's loggers: a debug log of this process never shows the token."""

    def __init__(self, redact: Redactor):
        super().__init__()
        self.redact = redact

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = self.redact(record.getMessage())
        record.args = ()
        return True


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
                 sleep: Callable[[float], None] = time.sleep):
        import httpx

        self.url = url.rstrip("/")
        self.alias = alias or self.url
        self.attempts, self.backoff, self.sleep = max(1, attempts), backoff, sleep
        self.redact = Redactor(token)
        headers = {"Accept": "application/json", "User-Agent": "paictl"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout, follow_redirects=False)
        self._filter = _RedactingFilter(self.redact)
        for name in ("httpx", "httpcore"):
            logging.getLogger(name).addFilter(self._filter)

    def close(self) -> None:
        self._http.close()
        for name in ("httpx", "httpcore"):
            logging.getLogger(name).removeFilter(self._filter)

    # -- requests ---------------------------------------------------------------------------------------------

    def get(self, path: str, *, params: Optional[Mapping[str, Any]] = None, etag: Optional[str] = None,
            what: str = "") -> Reply:
        """GET, retried. With `etag`, a 304 comes back as Reply(status=304) for the caller to reuse its copy."""
        headers = {"If-None-Match": etag} if etag else {}
        return self._send("GET", path, params=params, headers=headers, idempotent=True, what=what)

    def put_json(self, path: str, body: Any, *, what: str = "") -> Reply:
        """PUT of a whole value (e.g. executionType STOP): idempotent, so retried like a GET."""
        return self._send("PUT", path, content=json.dumps(body).encode(), idempotent=True, what=what,
                          headers={"Content-Type": "application/json"})

    def post(self, path: str, *, content: bytes, content_type: str, what: str = "",
             auth: bool = True) -> Reply:
        """POST, never repeated: after a dropped connection the server may have acted on it."""
        return self._send("POST", path, content=content, idempotent=False, what=what, auth=auth,
                          headers={"Content-Type": content_type})

    def get_absolute(self, url: str, *, what: str = "") -> Reply:
        """GET a link the server handed out (a log location). The bearer token goes only to the REST server's own
        origin; a log-manager link on another host carries its own credential in the URL."""
        same_origin = _origin(url) == _origin(self.url) or not urlsplit(url).netloc
        return self._send("GET", url, idempotent=True, what=what, auth=same_origin, raw=True)

    def _send(self, method: str, path: str, *, params: Optional[Mapping[str, Any]] = None,
              headers: Optional[Mapping[str, str]] = None, content: Optional[bytes] = None, idempotent: bool,
              what: str, auth: bool = True, raw: bool = False) -> Reply:
        import httpx

        request_headers = dict(headers or {})
        delay = self.backoff
        for attempt in range(1, self.attempts + 1):
            last = attempt == self.attempts or not idempotent
            try:
                request = self._http.build_request(method, path, params=params, headers=request_headers,
                                                   content=content)
                if not auth:
                    request.headers.pop("Authorization", None)
                response = self._http.send(request)
            except httpx.TransportError as exc:
                if last:
                    raise ClusterError(self._unreachable(exc, what, attempt, idempotent)) from None
            except httpx.HTTPError as exc:  # an invalid URL or header: never retried
                raise ClusterError(self.redact(f"OpenPAI {self.alias}: {what or path}: {exc}")) from None
            else:
                if response.status_code not in RETRY_STATUSES or last:
                    return self._reply(response, what or f"{method} {path}", raw=raw)
            self.sleep(delay)
            delay = min(delay * 2, MAX_BACKOFF)
        raise AssertionError("unreachable")  # pragma: no cover

    def _reply(self, response: Any, what: str, *, raw: bool) -> Reply:
        text = response.text
        if response.status_code == 304:
            return Reply(status=304, body=None, etag=response.headers.get("ETag"))
        if response.status_code >= 400:
            raise self._error(response.status_code, text, what)
        body: Any = text
        if not raw:
            try:
                body = json.loads(text) if text else None
            except ValueError:
                body = text
        return Reply(status=response.status_code, body=body, etag=response.headers.get("ETag"), text=text)

    # -- errors -----------------------------------------------------------------------------------------------

    def _unreachable(self, exc: Exception, what: str, attempts: int, idempotent: bool) -> str:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        tries = f" (tried {attempts} times)" if attempts > 1 else ""
        unsure = "" if idempotent else "; the server may have acted on it: check with `paictl status` first"
        return self.redact(f"cannot reach the OpenPAI REST server {self.alias} ({self.url}){tries}: "
                           f"{what + ': ' if what else ''}{reason}{unsure}")

    def _error(self, status: int, text: str, what: str) -> ClusterError:
        code, message = server_error(text)
        line = f"OpenPAI {self.alias}: {what}: HTTP {status}" + (f" {code}" if code else "") + f": {message}"
        if status == 401:
            line = line.rstrip(".") + (f"; the token is missing, wrong or expired: run "
                                       f"`paictl openpai login {self.alias}`")
        cls = NotFoundError if status == 404 else ClusterError
        error = cls(self.redact(line))
        error.status, error.code = status, code  # type: ignore[attr-defined]
        return error


def server_error(text: str) -> tuple[str, str]:
    """(code, message) from an error body: `{code, message}` as the swagger's Response, else its first line."""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict) and ("message" in data or "code" in data):
        message = " ".join(str(data.get("message") or "").split())
        return str(data.get("code") or ""), message or "(no message)"
    first = " ".join((text or "").strip().splitlines()[:1])
    return "", (first[:200] or "(empty response)")


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme, parts.netloc
