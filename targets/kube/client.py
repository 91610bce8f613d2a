"""Talking to a Kubernetes API server: raw JSON requests, retries, one-line errors (connection.py finds the server).

The official `kubernetes` client is imported only when a command reaches a cluster (connection.py; it costs half a
second to import). paictl uses it for what is hard to get right (kubeconfig, exec plugins, certificates, tokens) and
sends plain JSON requests through it, so server-side apply, watches and log streams behave exactly as on the wire,
with no generated models or discovery cache in between. Every failure becomes a `ClusterError` with one line that
says what to do: a traceback from deep inside urllib3 tells a user nothing.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence
from urllib.parse import quote

from paictl.errors import ClusterError

FIELD_MANAGER = "paictl"
#: `paictl stop` writes spec.executionType under its own manager: see `stop_framework` in kube_apply.
STOP_FIELD_MANAGER = "paictl-stop"
#: Plain requests give up after this long; watches and log streams have no read deadline of their own.
REQUEST_TIMEOUT = (10.0, 60.0)
#: Retries, as client-go decides them (k8s.io/client-go/rest/with_retry.go `checkWait`, request.go
#: `IsRetryableErrorFunc`): a 429 (priority and fairness turned the request away before acting on it) for any
#: request; a 5xx, a dropped connection or a read timeout only for requests that give the same result however often
#: they are sent (GET, server-side apply). A refused connection, an unknown host or a connect timeout is never retried:
#: there is no server to wait for, and kubectl answers at once too. The delays between attempts (seconds) double,
#: unless the server names one (Retry-After, capped at RETRY_AFTER_CAP).
RETRY_DELAYS = (0.25, 0.5, 1.0, 2.0)
RETRY_AFTER_CAP = 10.0
#: Items per page of a list (kubectl's --chunk-size default).
LIST_PAGE = 500
#: A retry that keeps the user waiting longer than this (seconds) is announced through `Cluster.notice`.
RETRY_QUIET = 1.0
APPLY_PATCH = "application/apply-patch+yaml"


@dataclasses.dataclass(frozen=True, kw_only=True)
class Resource:
    """Where a kind lives in the REST API (paictl knows the few kinds it creates; no discovery needed)."""

    kind: str
    api_version: str
    plural: str
    namespaced: bool = True

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def full_name(self) -> str:
        """`frameworks.frameworkcontroller.microsoft.com`: the CRD name, and how kubectl names a resource."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def collection(self, namespace: Optional[str]) -> str:
        base = f"/apis/{self.api_version}" if self.group else f"/api/{self.api_version}"
        if self.namespaced:
            return f"{base}/namespaces/{quote(namespace or 'default', safe='')}/{self.plural}"
        return f"{base}/{self.plural}"

    def every_namespace(self) -> str:
        """The collection across all namespaces (kubectl -A)."""
        base = f"/apis/{self.api_version}" if self.group else f"/api/{self.api_version}"
        return f"{base}/{self.plural}"

    def item(self, name: str, namespace: Optional[str]) -> str:
        return f"{self.collection(namespace)}/{quote(name, safe='')}"

    def label(self, name: str) -> str:
        """kubectl's `kind.group/name`, e.g. `secret/x` or `framework.frameworkcontroller.microsoft.com/x`."""
        kind = self.kind.lower()
        return f"{kind}.{self.group}/{name}" if self.group else f"{kind}/{name}"


FRAMEWORK = Resource(kind="Framework", api_version="frameworkcontroller.microsoft.com/v1", plural="frameworks")
MARSJOB = Resource(kind="MarsJob", api_version="training.kubedl.io/v1alpha1", plural="marsjobs")
JOBSET = Resource(kind="JobSet", api_version="jobset.x-k8s.io/v1alpha2", plural="jobsets")
POD = Resource(kind="Pod", api_version="v1", plural="pods")
KNOWN_RESOURCES = (
    Resource(kind="Secret", api_version="v1", plural="secrets"),
    Resource(kind="ConfigMap", api_version="v1", plural="configmaps"),
    Resource(kind="Service", api_version="v1", plural="services"),
    Resource(kind="ServiceAccount", api_version="v1", plural="serviceaccounts"),
    Resource(kind="PriorityClass", api_version="scheduling.k8s.io/v1", plural="priorityclasses", namespaced=False),
    FRAMEWORK,
    MARSJOB,
    JOBSET,
    # KubeDL before its 2021 group rename (reference marsjob.md 0): still what the Mars client submits.
    Resource(kind="MarsJob", api_version="kubedl.io/v1alpha1", plural="marsjobs"),
    POD,
)
#: Who provides a custom resource, for "X is not installed in this cluster".
PROVIDERS = {"frameworks": "FrameworkController", "marsjobs": "KubeDL (MarsJob)", "jobsets": "JobSet"}


def resource_for(obj: Mapping[str, Any]) -> Resource:
    for resource in KNOWN_RESOURCES:
        if resource.kind == obj.get("kind") and resource.api_version == obj.get("apiVersion"):
            return resource
    raise ClusterError(f"paictl does not know where {obj.get('apiVersion')} {obj.get('kind')} lives in the API")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Cluster:
    """A connection: the client, the namespace kubectl would use, and names for messages."""

    api: Any                       # kubernetes.client.ApiClient
    namespace: str
    context: str
    server: str
    #: The kubectl command that reaches this cluster as paictl did: the user's --kubeconfig and --context, when given
    #: (else kubectl chooses as paictl chose), shell-quoted. What advice printed to the user starts with.
    kubectl: str = "kubectl"
    #: Where a retry that keeps the user waiting is announced (one line, no "paictl:" prefix); None: silent.
    notice: Optional[Callable[[str], None]] = None

    def request(self, method: str, path: str, *, query: Sequence[tuple[str, Any]] = (), body: Any = None,
                content_type: Optional[str] = None, stream: bool = False,
                timeout: Any = REQUEST_TIMEOUT, retry: bool = True) -> Any:
        """Send a request; return the urllib3 response (status 2xx) or raise `ApiFailure` / urllib3's errors.

        Retried as `RETRY_DELAYS` says. Streams (their readers resume themselves) and callers with a backoff of their
        own (`retry=False`) are sent once."""
        import time

        idempotent = method == "GET" or content_type == APPLY_PATCH
        started = time.monotonic()
        for attempt, backoff in enumerate(RETRY_DELAYS if retry and not stream else (), start=1):
            try:
                return self._send(method, path, query=query, body=body, content_type=content_type, stream=stream,
                                  timeout=timeout)
            except ApiFailure as failure:
                if not (failure.status == 429 or (idempotent and failure.status >= 500)):
                    raise
                delay = failure.retry_after if failure.retry_after is not None else backoff
                why = f"the cluster answered {failure.status} {failure.reason or ''}".rstrip()
            except Exception as exc:  # noqa: BLE001
                if not (idempotent and is_dropped_connection(exc)):
                    raise
                delay, why = backoff, f"the connection to {self.server} dropped"
            if self.notice is not None and time.monotonic() + delay - started >= RETRY_QUIET:
                self.notice(f"{why}; retrying {method} in {delay:g}s (attempt {attempt + 1} of "
                            f"{len(RETRY_DELAYS) + 1})")
            time.sleep(delay)
        return self._send(method, path, query=query, body=body, content_type=content_type, stream=stream,
                          timeout=timeout)

    def _send(self, method: str, path: str, *, query: Sequence[tuple[str, Any]], body: Any,
              content_type: Optional[str], stream: bool, timeout: Any) -> Any:
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        method, url, headers, body, _ = self.api.param_serialize(
            method, path, query_params=list(query), header_params=headers, body=body,
            auth_settings=["BearerToken"])
        response = self.api.call_api(method, url, header_params=headers, body=body,
                                     _request_timeout=None if stream else timeout).response
        if not 200 <= response.status <= 299:
            try:
                text = response.data.decode("utf-8", errors="replace")
            finally:
                response.release_conn()
            raise ApiFailure(response.status, text, retry_after=_retry_after(response.headers.get("Retry-After")))
        return response

    def json(self, method: str, path: str, **options: Any) -> dict[str, Any]:
        response = self.request(method, path, **options)
        try:
            return json.loads(response.data or b"{}")
        finally:
            response.release_conn()

    def list_all(self, path: str, *, query: Sequence[tuple[str, Any]] = (), limit: Optional[int] = None) -> dict:
        """A whole collection, read in pages as kubectl reads it (`limit` + `continue`, LIST_PAGE items each), so that
        a namespace with thousands of objects costs no single huge answer (the API server answers a list in one
        piece otherwise). A continue token that expired (410: the pages came from a snapshot the server no longer
        keeps) starts the list again from the beginning. Returns a list object with every item."""
        page = limit or LIST_PAGE
        for _ in range(3):
            items: list = []
            token = ""
            try:
                while True:
                    answer = self.json("GET", path, query=[*query, ("limit", str(page))]
                                       + ([("continue", token)] if token else []))
                    items += answer.get("items") or []
                    token = str((answer.get("metadata") or {}).get("continue") or "")
                    if not token:
                        return {**answer, "items": items}
            except ApiFailure as failure:
                if failure.status != 410 or not token:
                    raise
        raise ApiFailure(410, json.dumps({"message": "the list kept changing faster than it could be read"}))

    def close(self) -> None:
        self.api.close()


class ApiFailure(Exception):
    """A non-2xx answer; the body is the API server's `Status` object when it sent one."""

    def __init__(self, status: int, body: str, *, retry_after: Optional[float] = None):
        super().__init__(f"HTTP {status}")
        self.status = status
        self.retry_after = retry_after  # seconds the server asked the client to wait (Retry-After), if it did
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = None
        self.body: dict[str, Any] = parsed if isinstance(parsed, dict) else {"message": body.strip()[:300]}

    @property
    def message(self) -> str:
        return " ".join(str(self.body.get("message") or f"HTTP {self.status}").split())

    @property
    def reason(self) -> str:
        return str(self.body.get("reason") or "")


def is_connection_error(exc: BaseException) -> bool:
    import urllib3.exceptions

    return isinstance(exc, (urllib3.exceptions.HTTPError, ConnectionError, TimeoutError))


def is_unreachable(exc: BaseException) -> bool:
    """No connection was made: refused, unknown host, connect timeout. Nothing reached a server, and waiting would
    not change that within a command's time."""
    import urllib3.exceptions

    return isinstance(exc, (urllib3.exceptions.NewConnectionError, urllib3.exceptions.ConnectTimeoutError,
                            ConnectionRefusedError))


def is_dropped_connection(exc: BaseException) -> bool:
    """A connection that was made and then lost (reset, closed mid-answer, a read timeout): the server may have
    acted, so only an idempotent request may be sent again."""
    return is_connection_error(exc) and not is_unreachable(exc)


def _retry_after(value: Optional[str]) -> Optional[float]:
    """Retry-After in seconds (the API server sends whole seconds; an HTTP date is honoured too), capped."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        from email.utils import parsedate_to_datetime

        try:
            import datetime

            seconds = (parsedate_to_datetime(value) - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
        except (TypeError, ValueError):
            return None
    return min(max(seconds, 0.0), RETRY_AFTER_CAP)


def unreachable_reason(exc: BaseException) -> str:
    """`connection refused`, `unknown host NAME`, `no answer within 10s`: the one thing the user needs to know."""
    import urllib3.exceptions

    if isinstance(exc, urllib3.exceptions.NameResolutionError):
        return f"unknown host {getattr(exc, 'conn', None) and exc.conn.host or ''}".rstrip()
    text = str(exc)
    if "Connection refused" in text or isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, urllib3.exceptions.NewConnectionError):
        return text.split("Failed to establish a new connection: ", 1)[-1]
    return "no answer (connect timeout)"


def resource_installed(cluster: Cluster, resource: Resource) -> bool:
    """Discovery, as kubectl asks it: does the server serve this resource at all?"""
    base = f"/apis/{resource.api_version}" if resource.group else f"/api/{resource.api_version}"
    try:
        found = cluster.json("GET", base)
    except ApiFailure as failure:
        if failure.status == 404:
            return False
        raise
    return any(r.get("name") == resource.plural for r in found.get("resources", []))


def describe_failure(cluster: Cluster, exc: BaseException, *, verb: str, resource: Resource,
                     name: Optional[str] = None, namespace: Optional[str] = None) -> ClusterError:
    """One line for any failure of `verb` on a resource; the caller raises it (`raise ... from None`)."""
    where = f" in namespace {namespace or cluster.namespace}" if resource.namespaced else ""
    target = f"{resource.full_name} {name!r}" if name else resource.full_name
    if not isinstance(exc, ApiFailure):
        if is_dropped_connection(exc) and verb not in ("get", "list", "watch"):
            return ClusterError(f"{verb} {target}{where}: the connection to {cluster.server} dropped before the "
                                f"cluster answered, so it may have been done: `paictl status` shows the job "
                                f"({_short(getattr(exc, 'reason', None) or exc)})")
        if is_connection_error(exc) or getattr(exc, "status", None) == 0:  # status 0: the client's TLS failure
            reason = unreachable_reason(exc) if is_unreachable(exc) else (getattr(exc, "reason", None) or exc)
            return ClusterError(f"cannot reach the cluster at {cluster.server} (context {cluster.context}): "
                                f"{_short(reason)}")
        return ClusterError(f"{verb} {target}{where}: {_short(exc)}")
    if exc.status == 401:
        return ClusterError(f"the cluster at {cluster.server} refused the credentials of context {cluster.context} "
                            f"(401 Unauthorized)")
    if exc.status == 403:
        # The authorizer's denial names the user and the verb (apiserver responsewriters forbiddenMessage:
        # `User "u" cannot get resource ...`); any other 403 is an admission plugin's (a ResourceQuota, Pod
        # Security, a namespace being terminated, a webhook), worded by it after "... is forbidden: ".
        if _RBAC_DENIAL.search(exc.message):
            rbac_verb = "patch (server-side apply)" if verb == "apply" else verb
            return ClusterError(f"forbidden: you may not {rbac_verb} {resource.full_name}{where} (RBAC): "
                                f"{exc.message}")
        return ClusterError(f"the cluster refused to {verb} {target}{where}: "
                            f"{_short(exc.message.split(' is forbidden: ', 1)[-1])}")
    if exc.status == 404 and resource.plural in PROVIDERS:
        try:
            installed = resource_installed(cluster, resource)
        except Exception:  # noqa: BLE001 - the original 404 is the better message then
            installed = True
        if not installed:
            return ClusterError(f"{PROVIDERS[resource.plural].split(' ')[0]} is not installed in this cluster: "
                                f"no {resource.full_name} resource")
    if exc.status == 404:
        details = exc.body.get("details") or {}
        if details.get("kind") == "namespaces":
            import shlex

            return ClusterError(f"namespace {details.get('name')!r} does not exist ({cluster.kubectl} create "
                                f"namespace {shlex.quote(str(details.get('name')))})")
        return ClusterError(f"{target} not found{where}")
    if exc.status == 409 and exc.reason == "Conflict" and verb == "apply":
        return ClusterError(_conflict_line(exc, target))
    if exc.status == 422:
        return ClusterError(f"the cluster rejected {target}: {_invalid_text(exc)}")
    return ClusterError(f"{verb} {target}{where}: the cluster answered {exc.status}: {exc.message}")


#: Field managers of the controllers that write a workload's spec back (server-side apply names them so)
CONTROLLER_MANAGERS = {"frameworkcontroller": "FrameworkController"}


def _conflict_line(exc: ApiFailure, target: str) -> str:
    """Name the other managers and their fields; a stopped job is the usual cause, so say what to do then."""
    causes = (exc.body.get("details") or {}).get("causes") or []
    managers: dict[str, list[str]] = {}
    for cause in causes:
        text = str(cause.get("message", ""))
        manager = text.split('"')[1] if text.count('"') >= 2 else "another field manager"
        managers.setdefault(manager, []).append(str(cause.get("field") or text))
    if not managers:
        return f"{target}: apply conflict: {exc.message}"
    owned = "; ".join(f"{', '.join(fields)} managed by {manager!r}" for manager, fields in managers.items())
    controllers = [manager for manager in managers if manager in CONTROLLER_MANAGERS]
    if STOP_FIELD_MANAGER in managers:
        hint = "the job was stopped by `paictl stop`: `paictl submit --replace` deletes it and runs the job anew"
    elif controllers:
        # FrameworkController writes the whole Framework back in its own form and so owns .spec.taskRoles (one
        # atomic field): the job is on the cluster already, and no apply of paictl's form can change it.
        hint = (f"the job is already submitted and {CONTROLLER_MANAGERS[controllers[0]]} owns its spec, so it cannot "
                f"be applied again: `paictl status` shows it; to run an edited job, `paictl submit --replace` deletes "
                f"it and runs the job anew")
    else:
        hint = "change those fields back, or delete the object first"
    return f"{target}: conflict with another field manager: {owned} ({hint})"


_RBAC_DENIAL = re.compile(r'(User|ServiceAccount|Group) "[^"]*" cannot [a-z]+ resource ')


def _invalid_text(exc: ApiFailure) -> str:
    """A 422 said briefly: who denied it (an admission webhook) and each cause as `field: reason`. A cause's
    "Invalid value: ..." quotes the whole rejected value (a webhook's Go dump of every replicatedJob runs to pages);
    the value is the user's own input, so only what is wrong with it is kept."""
    causes = [c for c in (exc.body.get("details") or {}).get("causes") or [] if isinstance(c, dict)]
    if not causes:
        return _short(exc.message)
    prefix = exc.message.split(": ", 1)[0] + ": " if exc.message.startswith("admission webhook ") else ""
    parts = []
    for cause in causes:
        message = " ".join(str(cause.get("message") or cause.get("reason") or "").split())
        if message.startswith("Invalid value: ") and len(message) > 120:
            message = message.rsplit(": ", 1)[-1]
        parts.append(f"{cause.get('field')}: {message}" if cause.get("field") else message)
    return _short(prefix + "; ".join(parts))


def _short(value: Any) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= 300 else text[:297] + "..."


def close_stream(response: Any) -> None:
    """End a streamed response for good. A watch left mid-stream (an ERROR event, a stop) must not go back to the
    connection pool: the next request on that connection would read the rest of the old stream."""
    try:
        response.close()
    finally:
        response.release_conn()


def iter_lines(response: Any, chunk: int = 65536) -> Iterator[bytes]:
    """Complete lines of a streamed body as they arrive (a watch event or a log line may span chunks)."""
    pending = b""
    while True:
        data = response.read1(chunk)
        if not data:
            break
        pending += data
        *lines, pending = pending.split(b"\n")
        yield from lines
    if pending:
        yield pending
