"""`Emulator`: the object tests hold. It owns the store, the HTTP server thread and the scripted controller, and
offers the test-side levers: request records, seeding, scenarios, dropped watches, injected failures, expired
history, RBAC denials, removed CRDs and pod logs."""

from __future__ import annotations

import copy
import socket
import threading
from pathlib import Path

import yaml

from . import errors
from .clock import Clock
from .controller import Controller
from .resources import Registry
from .server import EmulatorHTTPServer, RequestRecord
from .store import Store


class Emulator:
    def __init__(self, speed: float = 1.0, bookmark_interval: float = 60.0,
                 tls: tuple[str, str] | None = None) -> None:
        """`tls`: (certificate file, key file) to serve HTTPS with, as every real API server does."""
        self.tls = tls
        self.clock = Clock(speed)
        self.registry = Registry()
        self.store = Store(self.registry, self.clock)
        self.bookmark_interval = bookmark_interval
        self.requests: list[RequestRecord] = []
        self.pod_logs: dict[tuple[str, ...], str] = {}
        self.log_archive: dict[tuple[str, str, str], str] = {}  # (namespace, pod, uid) -> log, kept after deletion
        self.user = "system:anonymous"
        self._lock = threading.Lock()
        self._failures: list[dict] = []
        self._forbidden: set[tuple[str, str]] = set()
        self._uninstalled: dict = {}
        self._stopping = False
        self._server: EmulatorHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.kubeconfig: Path | None = None  # the last file write_kubeconfig wrote
        self.controller = Controller(self)

    # -- lifecycle -----------------------------------------------------------------------------------------------

    def start(self) -> "Emulator":
        self._server = EmulatorHTTPServer(self)
        if self.tls is not None:
            import ssl

            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*self.tls)
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="emulator-http", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping = True
        self.controller.stop()
        if self._server is not None:
            self._server.shutdown()
            self.drop_watches()
            self._server.server_close()
        self.store.close()

    def __enter__(self) -> "Emulator":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._server is not None, "start the emulator first"
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self._server.server_address[1]}"

    def write_kubeconfig(self, path: str | Path, context: str = "emulator", namespace: str = "default") -> Path:
        path = Path(path)
        config = {
            "apiVersion": "v1", "kind": "Config", "preferences": {}, "current-context": context,
            "clusters": [{"name": context, "cluster": {"server": self.url}}],
            "users": [{"name": context, "user": {}}],
            "contexts": [{"name": context, "context": {"cluster": context, "user": context, "namespace": namespace}}],
        }
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        self.kubeconfig = path
        return path

    # -- requests ------------------------------------------------------------------------------------------------

    def _record_request(self, record: RequestRecord) -> None:
        with self._lock:
            self.requests.append(record)

    def count(self, method: str | None = None, path_contains: str | None = None, watch: bool | None = None) -> int:
        with self._lock:
            return sum(1 for r in self.requests
                       if (method is None or r.method == method)
                       and (path_contains is None or path_contains in r.path)
                       and (watch is None or r.watch == watch))

    def fail_next(self, count: int, status: int = 500, method: str | None = None,
                  path_contains: str | None = None, message: str | None = None) -> None:
        """The next `count` matching requests get an error Status with that code (InternalError for 500), before
        the server acts on them; `message`: the Status message an admission plugin would write."""
        self._inject("fail", count, method, path_contains, status=status, message=message)

    def throttle_next(self, count: int, method: str | None = None, path_contains: str | None = None,
                      retry_after: str = "1") -> None:
        """The next `count` matching requests are turned away as the API server's max-in-flight and priority-and-
        fairness filters do (k8s.io/apiserver/pkg/server/filters/maxinflight.go `tooManyRequests`): 429, header
        `Retry-After: 1`, a plain-text body, before anything is done."""
        self._inject("throttle", count, method, path_contains, retry_after=retry_after)

    def lose_next(self, count: int, method: str | None = None, path_contains: str | None = None) -> None:
        """The next `count` matching requests are carried out, then the connection drops before the answer: the
        client cannot tell whether the server acted (a proxy or load balancer cutting a connection does this)."""
        self._inject("lose", count, method, path_contains)

    def _inject(self, kind: str, count: int, method: str | None, path: str | None, **details) -> None:
        with self._lock:
            self._failures.append({"kind": kind, "count": count, "method": method, "path": path, **details})

    def _take_injected(self, method: str, path: str) -> dict | None:
        with self._lock:
            for failure in self._failures:
                if failure["count"] <= 0:
                    continue
                if failure["method"] not in (None, method) or (failure["path"] and failure["path"] not in path):
                    continue
                failure["count"] -= 1
                return failure
        return None

    def forbid(self, verb: str, plural: str) -> None:
        """RBAC denies `verb` ("get", "list", "watch", "create", "patch", "update", "delete", or "*") on
        `plural` (e.g. "frameworks", "pods/log")."""
        self._forbidden.add((verb, plural))

    def allow(self, verb: str, plural: str) -> None:
        self._forbidden.discard((verb, plural))

    def _check_allowed(self, verb: str, rt, route) -> None:
        plural = f"{rt.plural}/{route.subresource}" if route.subresource else rt.plural
        if (verb, plural) in self._forbidden or ("*", plural) in self._forbidden:
            raise errors.forbidden(rt, verb, route.namespace, route.name, self.user)

    def uninstall(self, plural: str) -> None:
        """Remove a kind as deleting its CRD does: its objects go, its resource answers 404, discovery omits it."""
        rt = self.registry.uninstall(plural)
        self.store.remove_type(rt)
        self._uninstalled[plural] = rt

    def install(self, plural: str) -> None:
        self.registry.install(self._uninstalled.pop(plural))

    def drop_watches(self) -> None:
        """Abruptly close every open watch and followed-log connection (the client sees a broken stream)."""
        if self._server is None:
            return
        with self._server.streams_lock:
            connections = list(self._server.open_streams)
            self._server.open_streams.clear()
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        with self.store.changed:
            self.store.changed.notify_all()

    def expire_history(self) -> None:
        """Forget the event history: a watch (or an Exact list, or a continue token) from an older resourceVersion
        now gets 410 Gone, as after a kube-apiserver restart and an etcd compaction (a compaction alone changes
        nothing a client sees: the watch cache and a list's snapshot still serve; test_parity.py holds this)."""
        self.store.expire()

    # -- objects -------------------------------------------------------------------------------------------------

    def _type(self, api_version: str, kind: str):
        rt = self.registry.by_kind(api_version, kind)
        if rt is None:
            raise KeyError(f"{api_version} {kind} is not served")
        return rt

    def get_object(self, api_version: str, kind: str, namespace: str | None, name: str) -> dict | None:
        return self.store.find(self._type(api_version, kind), namespace, name)

    def list_objects(self, api_version: str, kind: str, namespace: str | None = None) -> list[dict]:
        return self.store.list(self._type(api_version, kind), namespace)[0]

    def create_object(self, obj: dict, manager: str = "emulator-seed") -> dict:
        """Seed an object as another user would create it (an Update by `manager`)."""
        rt = self._type(obj["apiVersion"], obj["kind"])
        return self.store.create(rt, (obj.get("metadata") or {}).get("namespace"), copy.deepcopy(obj), manager)

    def delete_object(self, api_version: str, kind: str, namespace: str | None, name: str,
                      propagation: str | None = None) -> None:
        self.store.delete(self._type(api_version, kind), namespace, name, propagation=propagation)

    def scenario(self, kind: str, name: str, scenario: str, **params) -> None:
        """What the controller does with the object `name` of `kind` (or every object: name "*") once created."""
        self.controller.register(kind, name, scenario, params)

    def log_text(self, namespace: str, pod: str, container: str, gone_uid: str | None = None) -> str:
        """The log of a container; `gone_uid`: of the pod with that uid, which no longer exists."""
        with self._lock:
            if (namespace, pod, container) in self.pod_logs:
                return self.pod_logs[(namespace, pod, container)]
            if gone_uid and (namespace, pod, gone_uid) in self.log_archive:
                return self.log_archive[(namespace, pod, gone_uid)]
            return self.pod_logs.get((namespace, pod), "")
