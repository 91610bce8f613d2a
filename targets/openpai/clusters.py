"""Which OpenPAI clusters a user talks to: aliases in a small YAML file in the user's config directory.

An alias names a REST server URL, the OpenPAI user and where the token comes from. The token itself is never in
this file unless the user asks for it (`--store-plaintext`): by default it is read from an environment variable
(`tokenEnv`, what CI systems provide) or from the OS keyring (`tokenStore: keyring`, only when the optional
`keyring` package is importable). The file is written atomically with mode 0600, since it may hold a plaintext
token and always tells where the others are.

    clusters:
      prod:
        url: https://pai.example.com/rest-server   # the REST API: under /rest-server of the site, or a direct address
        user: alice
        tokenEnv: PAI_PROD_TOKEN       # or tokenStore: keyring, or token: ... (only with --store-plaintext)
        virtualCluster: default        # optional: the virtual cluster used when the job names none
        minPollInterval: 1             # optional: seconds between status requests (at least this long)
"""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path
from typing import Any, Optional

from paictl.errors import ClusterError, ConfigFileError, InputError, PaictlError, UsageError, display_url
from paictl.targets.config_files import ConfigDocument, load_config_file

from .reach import clusters_file

KEYRING_SERVICE = "paictl-openpai"
ALIAS_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
TOKEN_SOURCES = ("env", "keyring", "plaintext")
DEFAULT_MIN_POLL_INTERVAL = 1.0


@dataclasses.dataclass(frozen=True, kw_only=True)
class ClusterEntry:
    """One alias. `token` is set only for a plaintext entry; `repr` never shows it."""

    alias: str
    url: str
    user: str
    token_env: Optional[str] = None
    token_store: Optional[str] = None          # "keyring" or "plaintext" when the token is stored, else None
    token: Optional[str] = dataclasses.field(default=None, repr=False)
    virtual_cluster: Optional[str] = None
    min_poll_interval: float = DEFAULT_MIN_POLL_INTERVAL

    @property
    def token_source(self) -> str:
        """How the token is found, for `paictl openpai clusters` (never the token)."""
        if self.token_env:
            return f"env ${self.token_env}"
        if self.token_store == "keyring":
            return "OS keyring"
        if self.token_store == "plaintext":
            return "clusters file (plaintext)"
        return "none (run `paictl openpai login`)"


def clusters_path() -> Path:
    """`$XDG_CONFIG_HOME/paictl/openpai-clusters.yaml`, `~/.config/...` when XDG_CONFIG_HOME is unset or relative
    (the XDG Base Directory rule: `reach.clusters_file`)."""
    return Path(clusters_file())


def check_alias(alias: str) -> str:
    if not ALIAS_PATTERN.match(alias):
        raise UsageError(f"cluster alias {alias!r}: use letters, digits, '.', '_' or '-' (at most 63)")
    return alias


def check_url(url: str) -> str:
    """An http(s) URL with no credentials in it: no user:password, no query (`?token=...`), no fragment. The error
    never repeats the URL, which may hold a token."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        parts.port  # a port that is not a number raises here
    except ValueError:
        raise UsageError("the URL is not a valid http(s) URL (e.g. https://pai.example.com)") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"{display_url(url)!r} is not an http(s) URL of an OpenPAI cluster "
                         "(e.g. https://pai.example.com)")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise UsageError("put no credentials, query or fragment in the cluster URL (it would be stored and shown): "
                         "give the site, e.g. https://pai.example.com, and the token with `paictl openpai login` "
                         "or --token-env")
    return url.rstrip("/")


def load_clusters(path: Optional[Path] = None) -> dict[str, ClusterEntry]:
    """Every alias in the file, in file order; an absent file is an empty one. A broken file (not YAML, or not
    the shape `save_clusters` writes) is ConfigFileError (exit 3), located, and never quotes a line: it may hold a
    token. The file is bounded as a job is: a FIFO or /dev/zero never hangs it."""
    path = path or clusters_path()
    if not os.path.lexists(path):
        return {}
    document = load_config_file(path, "clusters file")
    try:
        return _entries(document)
    except ConfigFileError:
        if document.positions is not None:
            raise
    return _entries(load_config_file(path, "clusters file", located=True))  # read again, to say where


def _entries(document: ConfigDocument) -> dict[str, ClusterEntry]:
    clusters = document.data.get("clusters")
    if not isinstance(clusters, dict):
        where = document.where("/clusters") if "clusters" in document.data else f"{document.shown}:1:1"
        raise ConfigFileError(f"{where}: expected a mapping `clusters:` of alias to cluster")
    return {str(alias): _entry(str(alias), value, document) for alias, value in clusters.items()}


def _entry(alias: str, value: Any, document: ConfigDocument) -> ClusterEntry:
    from paictl.protocol.diagnostics import escape_pointer_token

    pointer = f"/clusters/{escape_pointer_token(alias)}"

    def broken(key: str, problem: str) -> ConfigFileError:
        where = document.where(f"{pointer}/{key}") if isinstance(value, dict) and key in value else \
            document.where(pointer)
        return ConfigFileError(f"{where}: cluster {alias!r}{problem}")

    if not isinstance(value, dict) or not isinstance(value.get("url"), str) or not isinstance(value.get("user"), str):
        raise broken("", " needs a `url` and a `user` (strings)")
    store = value.get("tokenStore")
    if store is not None and store not in ("keyring", "plaintext"):
        raise broken("tokenStore", ": tokenStore must be keyring or plaintext")
    interval = value.get("minPollInterval", DEFAULT_MIN_POLL_INTERVAL)
    if not isinstance(interval, (int, float)) or isinstance(interval, bool) or interval <= 0:
        raise broken("minPollInterval", ": minPollInterval must be a positive number of seconds")
    for key in ("tokenEnv", "virtualCluster", "token"):
        if value.get(key) is not None and not isinstance(value[key], (str, int, float)):
            raise broken(key, f": {key} must be a string")
    token = value.get("token")
    return ClusterEntry(alias=alias, url=value["url"], user=value["user"],
                        token_env=None if value.get("tokenEnv") is None else str(value["tokenEnv"]),
                        token_store="plaintext" if token is not None and store is None else store,
                        token=str(token) if token is not None else None,
                        virtual_cluster=None if value.get("virtualCluster") is None else str(value["virtualCluster"]),
                        min_poll_interval=float(interval))


def save_clusters(entries: dict[str, ClusterEntry], path: Optional[Path] = None) -> Path:
    """Write the file atomically, mode 0600 from the first byte (created by mkstemp, then renamed over)."""
    import io
    import tempfile

    from ruamel.yaml import YAML

    path = path or clusters_path()
    data: dict[str, Any] = {"clusters": {}}
    for alias, entry in entries.items():
        item: dict[str, Any] = {"url": entry.url, "user": entry.user}
        if entry.token_env:
            item["tokenEnv"] = entry.token_env
        if entry.token_store:
            item["tokenStore"] = entry.token_store
        if entry.token_store == "plaintext" and entry.token is not None:
            item["token"] = entry.token
        if entry.virtual_cluster:
            item["virtualCluster"] = entry.virtual_cluster
        if entry.min_poll_interval != DEFAULT_MIN_POLL_INTERVAL:
            item["minPollInterval"] = entry.min_poll_interval
        data["clusters"][alias] = item
    stream = io.StringIO()
    stream.write("# paictl OpenPAI clusters (`paictl openpai --help`). Readable by its owner only (u=rw): it may "
                 "name a token's place.\n")
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.dump(data, stream)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        handle, temporary = tempfile.mkstemp(prefix=".openpai-clusters.", dir=path.parent)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:  # mkstemp creates it 0600
                out.write(stream.getvalue())
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError as exc:  # the OS's own words and the path it stopped at, not Python's "[Errno 20] ..."
        stopped = f" ({exc.filename})" if exc.filename and os.fspath(exc.filename) != os.fspath(path) else ""
        raise InputError(f"{path}: cannot write the clusters file: {exc.strerror or exc}{stopped}") from None
    return path


def get_cluster(alias: Optional[str], path: Optional[Path] = None) -> ClusterEntry:
    """The alias asked for, or the only one when there is exactly one."""
    entries = load_clusters(path)
    where = path or clusters_path()
    if alias is None:
        if len(entries) == 1:
            return next(iter(entries.values()))
        if not entries:
            raise UsageError(f"no OpenPAI cluster configured in {where}; add one with "
                             "`paictl openpai add ALIAS URL --user NAME`")
        raise UsageError(f"several OpenPAI clusters in {where} ({', '.join(entries)}); choose one with --cluster")
    if alias not in entries:
        known = f"; known: {', '.join(entries)}" if entries else ""
        raise UsageError(f"no OpenPAI cluster {alias!r} in {where}{known}")
    return entries[alias]


def keyring_module() -> Any:
    """The `keyring` package when it is installed and has a usable backend, else None (it is optional)."""
    try:
        import keyring  # type: ignore[import-not-found]
        from keyring.backends import fail  # type: ignore[import-not-found]
    except ImportError:
        return None
    try:
        if isinstance(keyring.get_keyring(), fail.Keyring):
            return None
    except Exception:  # a broken backend configuration is "no keyring", not a crash
        return None
    return keyring


def resolve_token(entry: ClusterEntry) -> str:
    """The bearer token for `entry`, from wherever the entry says; UsageError (2) when it cannot be found."""
    if entry.token_env:
        value = os.environ.get(entry.token_env, "")
        if not value.strip():
            raise UsageError(f"cluster {entry.alias!r} takes its token from ${entry.token_env}, which is not set")
        return value.strip()
    if entry.token_store == "keyring":
        keyring = keyring_module()
        if keyring is None:
            raise UsageError(f"cluster {entry.alias!r} keeps its token in the OS keyring, but no keyring is "
                             "available here (pip install keyring); or use --token-env")
        try:
            value = keyring.get_password(KEYRING_SERVICE, entry.alias)
        except Exception as exc:
            raise UsageError(f"cluster {entry.alias!r}: the OS keyring refused: {type(exc).__name__}") from None
        if not value:
            raise UsageError(f"no token for cluster {entry.alias!r} in the OS keyring; run "
                             f"`paictl openpai login {entry.alias}`")
        return value
    if entry.token_store == "plaintext" and entry.token:
        return entry.token
    raise UsageError(f"cluster {entry.alias!r} has no token; run `paictl openpai login {entry.alias}` or "
                     f"`paictl openpai add {entry.alias} ... --token-env VAR`")


_NO_KEYRING = ("no OS keyring is available to keep the token (pip install keyring); pass --store-plaintext to keep it "
               "in the clusters file (mode 0600), or create an application token in the web portal and use "
               "--token-env VAR")


def check_token_storage(*, plaintext: bool) -> None:
    """UsageError when a token could not be kept: asked before logging in, since every login makes a token on the
    server, and one nobody can keep would be left there."""
    if not plaintext and keyring_module() is None:
        raise UsageError(_NO_KEYRING)


def store_token(entry: ClusterEntry, token: str, *, plaintext: bool) -> ClusterEntry:
    """Keep a token from `login`: in the OS keyring, or in the file when the user asked for plaintext."""
    if plaintext:
        return dataclasses.replace(entry, token_env=None, token_store="plaintext", token=token)
    keyring = keyring_module()
    if keyring is None:
        raise UsageError(_NO_KEYRING)
    try:
        keyring.set_password(KEYRING_SERVICE, entry.alias, token)
    except Exception as exc:
        raise UsageError(f"the OS keyring refused the token: {type(exc).__name__}") from None
    return dataclasses.replace(entry, token_env=None, token_store="keyring", token=None)


def forget_token(entry: ClusterEntry) -> None:
    """Remove a keyring token when its alias is removed (best effort: an absent entry is fine)."""
    if entry.token_store != "keyring":
        return
    keyring = keyring_module()
    if keyring is None:
        return
    try:
        keyring.delete_password(KEYRING_SERVICE, entry.alias)
    except Exception:
        pass


def basic_login(entry: ClusterEntry, password: str, expiration: Optional[int] = None) -> tuple[str, str]:
    """(user, token) from `POST /api/v2/authn/basic/login` (form-encoded, as the swagger says). The password is
    added to the client's redaction guard, so no error can quote it."""
    from urllib.parse import urlencode

    from .client import OpenPaiClient

    client = OpenPaiClient(url=entry.url, token=None, alias=entry.alias, attempts=1)
    client.redact.add(password)
    form = {"username": entry.user, "password": password}
    if expiration is not None:
        form["expiration"] = str(expiration)
    try:
        reply = client.post("/api/v2/authn/basic/login", content=urlencode(form).encode(), auth=False,
                            content_type="application/x-www-form-urlencoded", what=f"log in as {entry.user}")
    finally:
        client.close()
    body = reply.body if isinstance(reply.body, dict) else {}
    if not body.get("token"):
        raise ClusterError(f"OpenPAI {entry.alias}: the login answer has no token")
    return str(body.get("user") or entry.user), str(body["token"])


def revoke_token(entry: ClusterEntry, token: str) -> bool:
    """`DELETE /api/v2/tokens/<token>` with the token itself: a login token that could not be kept is not left on
    the server. Best effort: False when the server did not take it (the caller says so)."""
    from urllib.parse import quote

    from .client import OpenPaiClient

    client = OpenPaiClient(url=entry.url, token=token, alias=entry.alias, attempts=1)
    client.redact.add(token)
    try:
        client.delete(f"/api/v2/tokens/{quote(token, safe='')}", what="revoke the new token")
    except PaictlError:
        return False
    finally:
        client.close()
    return True


def check_token(entry: ClusterEntry) -> Optional[str]:
    """Ask the server who we are with the entry's token: a wrong token is found at login, not at the first submit.
    Returns None when the server accepted it, or why it could not be asked (the server is unreachable: the token
    is kept unchecked). A refusal (401, 403, ...) raises."""
    from urllib.parse import quote

    from .client import OpenPaiClient, UnreachableError

    client = OpenPaiClient(url=entry.url, token=resolve_token(entry), alias=entry.alias, attempts=1)
    try:
        client.get(f"/api/v2/users/{quote(entry.user, safe='')}", what=f"check the token of {entry.user}")
    except UnreachableError as error:
        return str(error)
    finally:
        client.close()
    return None


def discover_api(url: str) -> tuple[str, Optional[str]]:
    """Where the REST API of the cluster at `url` is: `url` itself when it answers as the REST server
    (`GET /api/v2/info`: `{"name": "PAI RESTful API", ...}`), else `url/rest-server`, where a deployment's proxy
    serves it. Returns (REST URL, None), or (url, why it could not be asked) when nothing answers at all. A server
    that answers, but neither way as OpenPAI, is a UsageError saying what to type."""
    from .client import REST_PREFIX, OpenPaiClient, UnreachableError

    candidates = [url] if url.endswith(REST_PREFIX) else [url, url + REST_PREFIX]
    answers = []
    for candidate in candidates:
        client = OpenPaiClient(url=candidate, token=None, alias=display_url(candidate), attempts=1)
        try:
            reply = client.get("/api/v2/info", what="ask what it is")
        except UnreachableError as error:
            return url, str(error)
        except ClusterError as error:
            answers.append(f"{display_url(candidate)}/api/v2/info: {getattr(error, 'reason', str(error))[:160]}")
            continue
        finally:
            client.close()
        body = reply.body if isinstance(reply.body, dict) else {}
        if body.get("name") == "PAI RESTful API":
            return candidate, None
        answers.append(f"{display_url(candidate)}/api/v2/info does not answer as an OpenPAI REST server")
    raise UsageError(f"no OpenPAI REST server at {display_url(url)} ({'; '.join(answers)}); give the web portal's "
                     f"address (https://HOST, whose API is https://HOST{REST_PREFIX}) or the REST server's own "
                     "(e.g. http://HOST:9186)")
