"""Whether an OpenPAI cluster is there at all, answered with what Python has loaded before it runs a line of paictl.

`paictl status|stop|logs|submit --target openpai` against a cluster that refuses or does not resolve is one line at
once (cli/entry.py asks `probe_alias` before anything else is imported). Python itself starts in about 1.6x the
time curl takes to give the same answer; `typing`, `socket`, `urllib.parse`, `pathlib` or `dataclasses` would each
add a sizeable part of curl's whole run again. So this module imports nothing but `os` and `_socket` (the C module
under `socket`: the same calls, without the enum classes `socket` builds on import), and reads the clusters file in
the one shape paictl writes it (`clusters.save_clusters`). Anything else (a file edited by hand into another
shape, a keyring token, a proxy, an unusual URL) is left undecided (None) for the full path (clusters.py,
client.py), which gives the same answer with the general tools. Both paths build the line here
(`unreachable_message`, `Redactor`) and connect here (`connect_error`), so they cannot drift apart.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see the module docstring)
if TYPE_CHECKING:
    from typing import Any, Optional

#: The environment variables through which httpx would reach the server by a proxy: then nothing is probed.
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
CONNECT_TIMEOUT = 10.0         # an address that swallows packets is reported after this long, once
REDACTED = "***"
#: What `probe_alias` returns when the server accepted a connection.
REACHABLE = ""
#: Larger clusters files are left to the full path (one alias is ~150 bytes).
PLAIN_FILE_LIMIT = 256 * 1024
_DEFAULT_PORTS = {"http": 80, "https": 443}
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_HOST_CHARS = frozenset(_LETTERS + "0123456789.-")
_PATH_CHARS = frozenset(_LETTERS + "0123456789-._~/%+=:")
_WORD_CHARS = frozenset(_LETTERS + "0123456789-._~/%+=:@[]")  # brackets: an IPv6 host in a URL
#: Plain scalars some YAML reading takes for a boolean or null rather than a string.
_NOT_STRINGS = frozenset({"true", "false", "null", "yes", "no", "on", "off", "y", "n"})
_STRING_KEYS = ("url", "user", "tokenEnv", "tokenStore", "token", "virtualCluster")


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
        folded = text.casefold()
        if "bearer" not in folded and "token=" not in folded:
            return text  # neither pattern can match: `re` stays unloaded
        import re

        # RFC 6750's b64token characters: what may follow "Bearer " in a credential.
        text = re.sub(r"(Bearer\s+)[A-Za-z0-9._~+/-]+=*", lambda m: m.group(1) + REDACTED, text,
                      flags=re.IGNORECASE)
        return re.sub(r"((?:^|[?&])(?:token|access_token)=)[^&#\s]*", lambda m: m.group(1) + REDACTED, text,
                      flags=re.IGNORECASE)


def http_address(url: str) -> Optional[tuple[str, int]]:
    """(host, port) of a plain `http(s)://host[:port][/path]` URL, as `urlsplit` gives them (the host lowered, the
    scheme's port by default); None for anything else (credentials, a query, an IPv6 literal, an unusual port or
    character), which `urllib.parse` then reads. Such a URL is also shown as written (`errors.display_url`)."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in _DEFAULT_PORTS:
        return None
    netloc, _, path = rest.partition("/")
    host, colon, port = netloc.partition(":")
    if not host or not _HOST_CHARS.issuperset(host) or not _PATH_CHARS.issuperset(path):
        return None
    labels = host.split(".")
    if not all(0 < len(label) < 64 for label in labels[:-1]) or len(labels[-1]) > 63:
        return None  # what the idna codec refuses (UnicodeError) when socket resolves the name
    if not colon:
        return host.lower(), _DEFAULT_PORTS[scheme]
    if not (port.isascii() and port.isdigit()) or port[0] == "0" or int(port) > 65535:
        return None
    return host.lower(), int(port)


def shown_url(url: str) -> str:
    """`errors.display_url(url)`, without importing it for a plain URL (shown as written)."""
    if http_address(url) is not None:
        return url
    from paictl.errors import display_url

    return display_url(url)


def connect_error(url: str, timeout: float = CONNECT_TIMEOUT) -> Optional[OSError]:
    """Resolve and connect once to the host and port of `url`: the error when that fails, else None. Nothing is
    checked when the environment names a proxy (httpx goes through it) or the URL has no usable host and port
    (httpx reports that itself)."""
    if any(os.environ.get(name) for name in PROXY_VARIABLES):
        return None
    address = http_address(url)
    if address is not None:
        return _connect(address, timeout)
    import socket
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme)
        if not parts.hostname or port is None:
            return None
        with socket.create_connection((parts.hostname, port), timeout=timeout):
            return None
    except ValueError:  # a port that is not a number, a name the idna codec refuses
        return None
    except OSError as exc:
        return exc


def _connect(address: tuple[str, int], timeout: float) -> Optional[OSError]:
    """`socket.create_connection(address, timeout)` closed again at once: the error it would raise (the last
    address's, when the name has several), else None. `address` is `http_address`'s (an ASCII host name)."""
    import _socket

    host, port = address
    last: Optional[OSError] = None
    try:
        # the name as bytes: a str would be encoded by the idna codec, whose import (stringprep, unicodedata, re)
        # costs more than the rest of the answer; for the ASCII names `http_address` passes, its bytes are these
        found = _socket.getaddrinfo(host.encode("ascii"), port, 0, _socket.SOCK_STREAM)
    except OSError as exc:
        return exc
    for family, kind, protocol, _, where in found:
        sock = None
        try:
            sock = _socket.socket(family, kind, protocol)
            sock.settimeout(timeout)
            sock.connect(where)
            return None
        except OSError as exc:
            last = exc
        finally:
            if sock is not None:
                sock.close()
    return last if last is not None else OSError("getaddrinfo returns an empty list")


def unreachable_message(alias: str, url: str, exc: BaseException, *, what: str = "", attempts: int = 1,
                        idempotent: bool = True) -> str:
    """The line for a server that could not be reached (before redaction): the same whether the early probe or a
    request found it so."""
    reason = " ".join(str(exc).split()) or type(exc).__name__
    tries = f" (tried {attempts} times)" if attempts > 1 else ""
    unsure = "" if idempotent else "; the server may have acted on it: check with `paictl status` first"
    return (f"cannot reach the OpenPAI REST server {alias} ({shown_url(url)}){tries}: {what + ': ' if what else ''}"
            f"{reason}{unsure}")


# -- the clusters file, as paictl writes it -------------------------------------------------------------------------

def clusters_file() -> str:
    """`$XDG_CONFIG_HOME/paictl/openpai-clusters.yaml`, `~/.config/...` when XDG_CONFIG_HOME is unset or relative
    (the XDG Base Directory rule)."""
    base = os.environ.get("XDG_CONFIG_HOME", "")
    root = base if base and os.path.isabs(base) else os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(root, "paictl", "openpai-clusters.yaml")


def _plain_word(text: str) -> bool:
    """A plain scalar every YAML reading takes for this same string: ASCII word characters, starting with a letter
    (no number, date or indicator), not ending with `:` (a key) and not a boolean or null."""
    return (bool(text) and text[0] in _LETTERS and _WORD_CHARS.issuperset(text) and not text.endswith(":")
            and text.lower() not in _NOT_STRINGS)


def _plain_interval(text: str) -> Optional[float]:
    """A positive decimal number written plainly (`1`, `2.5`), else None."""
    whole, dot, fraction = text.partition(".")
    if not (whole.isascii() and whole.isdigit()) or (whole[0] == "0" and len(whole) > 1):
        return None
    if dot and not (fraction.isascii() and fraction.isdigit()):
        return None
    seconds = float(text)
    return seconds if seconds > 0 else None


def plain_clusters(text: str) -> Optional[dict[str, dict[str, Any]]]:
    """The aliases of a clusters file in the shape `save_clusters` writes (comment lines at the left edge,
    `clusters:`, each alias indented two spaces, each of its keys four, every value a plain word or a plain
    minPollInterval), each a valid entry as `clusters.load_clusters` reads it (url and user given, tokenStore
    keyring or plaintext); None for any other text, which the YAML reader then reads."""
    entries: dict[str, dict[str, Any]] = {}
    entry: Optional[dict[str, Any]] = None
    seen_clusters = False
    for line in text.split("\n"):
        if not line or (line[0] == "#" and line.isprintable()):
            continue
        if not seen_clusters:
            if line != "clusters:":
                return None
            seen_clusters = True
        elif line[:2] == "  " and line[2:3] != " " and line.endswith(":"):
            alias = line[2:-1]
            if not _plain_word(alias) or alias in entries:
                return None
            entry = entries[alias] = {}
        elif line[:4] == "    " and entry is not None:
            key, sep, value = line[4:].partition(": ")
            if not sep or key in entry:
                return None
            if key == "minPollInterval":
                entry[key] = _plain_interval(value)
                if entry[key] is None:
                    return None
            elif key not in _STRING_KEYS or not _plain_word(value):
                return None
            else:
                entry[key] = value
        else:
            return None
    for entry in entries.values():
        if "url" not in entry or "user" not in entry or entry.get("tokenStore", "keyring") not in (
                "keyring", "plaintext"):
            return None
    return entries if seen_clusters and entries else None


def read_plain_clusters(path: str) -> Optional[dict[str, dict[str, Any]]]:
    """`plain_clusters` of the regular file at `path` (opened without blocking: a FIFO is left to the full path),
    None when it is absent, unreadable, large, not UTF-8 or not in that shape."""
    import stat

    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError):
        return None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode) or status.st_size > PLAIN_FILE_LIMIT:
            return None
        raw = os.read(descriptor, PLAIN_FILE_LIMIT + 1)
        return plain_clusters(raw.decode("utf-8")) if len(raw) <= PLAIN_FILE_LIMIT else None
    except (OSError, UnicodeDecodeError):
        return None
    finally:
        os.close(descriptor)


def plain_token(entry: dict[str, Any]) -> Optional[str]:
    """The token `clusters.resolve_token` finds for a plain entry without the keyring: from its environment
    variable or the file; None when it would look in the keyring or find none (the full path says why)."""
    if entry.get("tokenEnv"):
        return os.environ.get(entry["tokenEnv"], "").strip() or None
    store = entry.get("tokenStore") or ("plaintext" if "token" in entry else None)
    return entry.get("token") if store == "plaintext" else None


def probe_alias(alias: Optional[str]) -> Optional[str]:
    """For the cluster `alias` names (None: the only one), the one line `check_reachable` would raise (exit 3),
    `REACHABLE` when its server accepted a connection, or None when this light reading cannot tell (then the full
    path decides, and gives the same answer)."""
    if any(os.environ.get(name) for name in PROXY_VARIABLES):
        return None
    entries = read_plain_clusters(clusters_file())
    if entries is None or (alias is None and len(entries) != 1):
        return None
    if alias is None:
        alias = next(iter(entries))
    entry = entries.get(alias)
    token = plain_token(entry) if entry is not None else None
    if entry is None or token is None:
        return None
    url = entry["url"].rstrip("/")
    address = http_address(url)
    if address is None:
        return None
    exc = _connect(address, CONNECT_TIMEOUT)
    if exc is None:
        return REACHABLE
    return Redactor(token)(unreachable_message(alias, url, exc))
