"""The node agent: MARO's node record and heartbeat in the master's Redis, and MARO's node API over HTTP.

**Record** (maro.md A.9), written only under the Redis lock `lock:name_to_node_details:<node>`, every check interval
(MARO: 5 s): `id`, `name`, `hostname`, `api_server.port`, `resources {cpu, memory, gpu, target_free_cpu,
target_free_memory, target_free_gpu}` ("all" resolved on this machine: cores, MB of RAM, `nvidia-smi` GPUs),
`state {status: Running, check_time: Redis TIME}`, `containers {name: labels + {state: inspect State}}`, and
`image_files` as MARO keeps it. Keys already in the record that paictl does not manage (MARO's `username`, `ssh`...)
are kept. Free resources count the labels of running containers, as MARO's agent does. Unlike MARO, the lock
expires (a crashed holder cannot block the node forever), and a container created through the API is in the
record at once, so the master's next pass never places onto resources already given away.

**API** (MARO's node-api-server, maro.md A.10): `POST /v1/containers` (MARO's create config; answers the
container's inspect details), `POST /v1/containers/<name>:stop`, `DELETE /v1/containers/<name>`, `GET /v1/status`;
paictl adds `GET /v1/containers/<name>/logs` (what `paictl logs` reads). It listens on the node's address from the
cluster file, never on every interface unless that address says so. When the cluster file sets a token, every call
must carry `Authorization: Bearer <token>` (401 otherwise); a stock MARO master sends none, so it can drive only
nodes of a cluster without a token. Failures answer 400 as MARO's do.

**Redis down**: the agent keeps its containers running and publishes again once Redis answers. SIGTERM (or
`close`) marks the node `Stopped` and stops its host-process containers.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Optional
from urllib.parse import unquote

from paictl.errors import ClusterError

from .cluster import Cluster, Node
from .containers import DockerRuntime, ProcessRuntime
from .create_config import RuntimeFailure, checked_config
from .placement import amount_text
from .redis_records import NODES, memory_mb, node_lock

log = logging.getLogger("paictl.grass.node")
API_PREFIX = "/v1/containers"


def detect_resources(node: Node) -> dict[str, float]:
    """The node's cpu, memory (MB) and gpu, "all" measured here as MARO's agent measures it (`_init_resources`): the
    logical cores and the GPUs as counts, the memory as total bytes / 1024**2 unrounded; a declared amount is kept
    as declared (an int stays an int), so the record's JSON is MARO's."""
    import subprocess

    cpu = (os.cpu_count() or 1) if node.cpu == "all" else node.cpu
    if node.memory == "all":
        memory: float = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / (1024 ** 2)
    else:
        memory = node.memory  # type: ignore[assignment]
    if node.gpu == "all":
        try:
            done = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=10)
            gpu = len([line for line in done.stdout.splitlines() if line.startswith("GPU")]) \
                if done.returncode == 0 else 0
        except (OSError, subprocess.TimeoutExpired):
            gpu = 0
    else:
        gpu = node.gpu
    return {"cpu": cpu, "memory": memory, "gpu": gpu}  # type: ignore[dict-item]


class NodeAgent:
    """One node: `start()` serves the API and publishes the record every `interval` seconds until `close()`."""

    def __init__(self, cluster: Cluster, name: str, *, work_dir: Path, interval: Optional[float] = None,
                 runtime: Any = None, client: Any = None, engine: str = "auto"):
        from .redis_records import connect

        self.cluster = cluster
        self.node = cluster.node(name)
        self.interval = interval if interval is not None else cluster.check_interval
        data_dir = Path(cluster.master.data) if cluster.master.data else Path(work_dir) / "data"
        if runtime is None:
            docker = engine == "docker" or (engine == "auto" and DockerRuntime.available())
            runtime = DockerRuntime(data_dir, node=name) if docker else ProcessRuntime(work_dir, data_dir)
        self.runtime = runtime
        self.redis = client if client is not None else connect(cluster)
        self.resources = detect_resources(self.node)
        self._stop = threading.Event()
        self._publish_lock = threading.Lock()
        self._server: Optional[ThreadingHTTPServer] = None
        self._threads: list[threading.Thread] = []

    # the record
    def containers(self) -> dict[str, dict[str, Any]]:
        found = {}
        for details in self.runtime.inspect_all():
            labels = dict(details["Config"]["Labels"])
            found[labels.get("container_name", details["Name"])] = {**labels, "state": details["State"]}
        return found

    def record_fields(self, containers: dict[str, dict[str, Any]], status: str, now: float) -> dict[str, Any]:
        used = [0.0, 0.0, 0.0]
        for details in containers.values():
            if details["state"].get("Running"):
                used[0] += float(details.get("cpu", 0) or 0)
                used[1] += memory_mb(details.get("memory", "0m"))
                used[2] += float(details.get("gpu", 0) or 0)
        resources = dict(self.resources)
        resources.update(target_free_cpu=resources["cpu"] - used[0], target_free_memory=resources["memory"] - used[1],
                         target_free_gpu=resources["gpu"] - used[2])
        return {"id": self.node.name, "name": self.node.name, "hostname": self.node.hostname,
                "api_server": {"port": self.node.api_port}, "resources": resources,
                "state": {"status": status, "check_time": int(now)}, "containers": containers}

    def publish(self, status: str = "Running") -> bool:
        """Write the record under MARO's lock; False (and try again later) when Redis does not answer."""
        import redis

        with self._publish_lock:
            try:
                containers = self.containers()
                seconds, _ = self.redis.time()
                with self.redis.lock(node_lock(self.node.name), timeout=30, blocking_timeout=10):
                    text = self.redis.hget(NODES, self.node.name)
                    record = json.loads(text) if text else {"image_files": {}}
                    record.update(self.record_fields(containers, status, float(seconds)))
                    self.redis.hset(NODES, self.node.name, json.dumps(record))
                return True
            except (redis.RedisError, OSError) as exc:
                log.warning("node %s: cannot publish to %s: %s", self.node.name, self.cluster.redis_address, exc)
                return False

    def record_refusal(self, config: dict[str, Any], reason: str) -> None:
        """The engine would not create a container: say so where every `status` reads it (MARO's master ignores the
        400 this node answers, and would leave the job running forever with that task pending)."""
        from .redis_records import Records

        try:
            Records(self.cluster, self.redis).record_refusal(config.get("labels") or {}, config["container_name"],
                                                             self.node.name, reason)
        except ClusterError as exc:
            log.warning("node %s: cannot record the refusal of %s: %s", self.node.name, config["container_name"], exc)

    def engine_shortfall(self) -> Optional[str]:
        """What the cluster file gives this node that its container engine cannot: containers asking for it would
        be refused by docker. None when it fits (or the engine does not say)."""
        info = getattr(self.runtime, "engine_info", lambda: None)()
        if not isinstance(info, dict):
            return None
        short = []
        cores, memory = info.get("NCPU"), info.get("MemTotal")
        if isinstance(cores, int) and self.resources["cpu"] > cores:
            short.append(f"cpu {amount_text(self.resources['cpu'])} but the engine has {cores} cores")
        if isinstance(memory, int) and self.resources["memory"] > memory / (1024 * 1024):
            short.append(f"memory {amount_text(self.resources['memory'])} MB but the engine has "
                         f"{memory // (1024 * 1024)} MB")
        if not short:
            return None
        return (f"node {self.node.name}: the cluster file gives it {'; '.join(short)}: a container asking for more "
                "than the engine has will be refused (its job then fails)")

    # running
    def start(self) -> None:
        shortfall = self.engine_shortfall()
        if shortfall:
            log.warning("%s", shortfall)
        self._server = _serve(self)
        self.publish()
        for target in (self._server.serve_forever, self._loop):
            thread = threading.Thread(target=target, daemon=True, name=f"grass-node-{self.node.name}")
            thread.start()
            self._threads.append(thread)

    @property
    def address(self) -> tuple[str, int]:
        assert self._server is not None
        return self._server.server_address[:2]  # type: ignore[return-value]

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.publish()
            except Exception:  # noqa: BLE001 - the heartbeat must outlive any one bad pass
                log.exception("node %s: publishing failed", self.node.name)

    def wait(self) -> None:
        while not self._stop.wait(1.0):
            pass

    def close(self) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        self.runtime.stop_all()
        self.publish(status="Stopped")


#: The API's bounds: connections served at once (more wait in the kernel's backlog), seconds a connection may sit
#: idle or take to send its headers and body, and a body's size and JSON depth.
MAX_CONNECTIONS = 32
IDLE_SECONDS = 10.0
MAX_BODY = 1024 * 1024
MAX_DEPTH = 32


class _BoundedServer(ThreadingHTTPServer):
    """One thread per connection, at most MAX_CONNECTIONS of them; a connection over the bound waits for a slot
    for IDLE_SECONDS, then is answered 503."""

    daemon_threads = True
    request_queue_size = 64

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(timeout=IDLE_SECONDS):
            try:
                request.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            except OSError:
                pass
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


def _serve(agent: NodeAgent) -> ThreadingHTTPServer:
    handler = type("NodeApiHandler", (_Handler,), {"agent": agent})
    return _BoundedServer((agent.node.hostname, agent.node.api_port), handler)


class _Refused(Exception):
    """A request paictl answers with `status` and a JSON error."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def _depth(text: bytes) -> int:
    """How deeply the JSON text nests (brackets outside strings), without parsing it."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in text:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:
                escaped = True
            elif byte == 0x22:
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_DEPTH:
                return deepest
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return deepest


class _Handler(BaseHTTPRequestHandler):
    agent: NodeAgent
    protocol_version = "HTTP/1.1"
    # each answer is headers then body, two writes: without TCP_NODELAY a keep-alive client waits ~40 ms (Nagle
    # against delayed ACK) on every request after its first; Go's and Node's servers set it too
    disable_nagle_algorithm = True
    timeout = IDLE_SECONDS  # the socket's: idle keep-alive connections and slow headers or bodies end

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        log.debug("node api: " + format, *args)

    def _reply(self, status: int, body: Any, content_type: str = "application/json") -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _authorised(self) -> bool:
        token = self.agent.cluster.token
        if token is None:
            return True
        given = self.headers.get("Authorization", "")
        if hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
            return True
        self._reply(401, {"error": "a cluster token is required"})
        return False

    def _body(self) -> Any:
        if self.headers.get("Transfer-Encoding"):
            raise _Refused(411, "send the body with a Content-Length")
        text = self.headers.get("Content-Length") or "0"
        if not text.isdigit():
            raise _Refused(400, "Content-Length is not a number")
        length = int(text)
        if length > MAX_BODY:
            self.close_connection = True
            raise _Refused(413, f"the body is over {MAX_BODY} bytes")
        try:
            data = self.rfile.read(length)
        except TimeoutError:
            self.close_connection = True
            raise _Refused(408, f"the body did not arrive within {IDLE_SECONDS:g} s") from None
        if len(data) < length:
            self.close_connection = True
            raise _Refused(400, "the body is shorter than its Content-Length")
        if _depth(data) > MAX_DEPTH:
            raise _Refused(400, f"the JSON body nests deeper than {MAX_DEPTH}")
        try:
            return json.loads(data or b"{}")
        except (ValueError, RecursionError):
            raise _Refused(400, "the body is not JSON") from None

    def _answer(self, handle) -> None:
        """Run `handle`; whatever happens, the client gets an HTTP answer (MARO's node API answers 400 for a
        failure; a request paictl refuses gets its own status)."""
        try:
            if self._authorised():
                handle(unquote(self.path.split("?", 1)[0]))
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client left: nobody to answer
        except _Refused as exc:
            self._reply(exc.status, {"error": str(exc)})
        except RuntimeFailure as exc:
            self._reply(400, {"error": str(exc)})
        except Exception as exc:  # noqa: BLE001 - one bad request never goes unanswered
            log.exception("node api: %s %s", self.command, self.path[:200])
            self._reply(500, {"error": f"internal error: {type(exc).__name__}"})

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self._answer(self._get)

    def do_POST(self) -> None:  # noqa: N802
        self._answer(self._post)

    def do_DELETE(self) -> None:  # noqa: N802
        self._answer(self._delete)

    def _get(self, path: str) -> None:
        if path == "/v1/status":
            self._reply(200, {"status": "OK", "time": time.time()})
        elif path.startswith(API_PREFIX + "/") and path.endswith("/logs"):
            name = path[len(API_PREFIX) + 1:-len("/logs")]
            try:
                self._reply(200, self.agent.runtime.logs(name), "text/plain; charset=utf-8")
            except RuntimeFailure as exc:
                self._reply(404, {"error": str(exc)})
        else:
            self._reply(404, {"error": "not found"})

    def _post(self, path: str) -> None:
        try:
            if path == API_PREFIX:
                config = self._body()
                if not isinstance(config, dict):
                    raise RuntimeFailure("the create config must be a JSON object")
                config = checked_config(config)
                try:
                    details = self.agent.runtime.create(config)
                except RuntimeFailure as exc:
                    self.agent.record_refusal(config, str(exc))
                    raise
                self.agent.publish()
                self._reply(200, details)
            elif path.startswith(API_PREFIX + "/") and path.endswith(":stop"):
                self.agent.runtime.stop(path[len(API_PREFIX) + 1:-len(":stop")])
                self.agent.publish()
                self._reply(200, {})
            else:
                self._reply(404, {"error": "not found"})
        except (ValueError, KeyError) as exc:
            self._reply(400, {"error": str(exc)})

    def _delete(self, path: str) -> None:
        if not path.startswith(API_PREFIX + "/"):
            self._reply(404, {"error": "not found"})
            return
        try:
            self.agent.runtime.remove(path[len(API_PREFIX) + 1:])
            self.agent.publish()
            self._reply(200, {})
        except RuntimeFailure as exc:
            self._reply(400, {"error": str(exc)})
