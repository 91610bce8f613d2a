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

from .cluster import Cluster, Node
from .containers import DockerRuntime, ProcessRuntime, RuntimeFailure
from .redis_records import NODES, memory_mb, node_lock

log = logging.getLogger("paictl.grass.node")
API_PREFIX = "/v1/containers"


def detect_resources(node: Node) -> dict[str, float]:
    """The node's cpu, memory (MB) and gpu, "all" measured here (as MARO's agent does with psutil/nvidia-smi)."""
    import subprocess

    cpu = float(os.cpu_count() or 1) if node.cpu == "all" else float(node.cpu)
    if node.memory == "all":
        memory = float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1024 * 1024))
    else:
        memory = float(node.memory)
    if node.gpu == "all":
        try:
            done = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=10)
            gpu = float(len([line for line in done.stdout.splitlines() if line.startswith("GPU")])) \
                if done.returncode == 0 else 0.0
        except (OSError, subprocess.TimeoutExpired):
            gpu = 0.0
    else:
        gpu = float(node.gpu)
    return {"cpu": float(cpu), "memory": memory, "gpu": gpu}


class NodeAgent:
    """One node: `start()` serves the API and publishes the record every `interval` seconds until `close()`."""

    def __init__(self, cluster: Cluster, name: str, *, work_dir: Path, interval: Optional[float] = None,
                 runtime: Any = None, client: Any = None):
        from .redis_records import connect

        self.cluster = cluster
        self.node = cluster.node(name)
        self.interval = interval if interval is not None else cluster.check_interval
        data_dir = Path(cluster.master.data) if cluster.master.data else Path(work_dir) / "data"
        if runtime is None:
            runtime = DockerRuntime(data_dir) if DockerRuntime.available() else ProcessRuntime(work_dir, data_dir)
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
        for name in self.runtime.names():
            try:
                details = self.runtime.inspect(name)
            except RuntimeFailure:
                continue
            labels = dict(details["Config"]["Labels"])
            found[labels.get("container_name", name)] = {**labels, "state": details["State"]}
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
                "state": {"status": status, "check_time": now}, "containers": containers}

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

    # running
    def start(self) -> None:
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


def _serve(agent: NodeAgent) -> ThreadingHTTPServer:
    handler = type("NodeApiHandler", (_Handler,), {"agent": agent})
    server = ThreadingHTTPServer((agent.node.hostname, agent.node.api_port), handler)
    server.daemon_threads = True
    return server


class _Handler(BaseHTTPRequestHandler):
    agent: NodeAgent
    protocol_version = "HTTP/1.1"

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
        length = int(self.headers.get("Content-Length") or 0)
        if length > 4 * 1024 * 1024:
            raise RuntimeFailure("request too large")
        return json.loads(self.rfile.read(length) or b"{}")

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if not self._authorised():
            return
        path = unquote(self.path.split("?", 1)[0])
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

    def do_POST(self) -> None:  # noqa: N802
        if not self._authorised():
            return
        path = unquote(self.path.split("?", 1)[0])
        try:
            if path == API_PREFIX:
                config = self._body()
                if not isinstance(config, dict):
                    raise RuntimeFailure("the create config must be a JSON object")
                details = self.agent.runtime.create(config)
                self.agent.publish()
                self._reply(200, details)
            elif path.startswith(API_PREFIX + "/") and path.endswith(":stop"):
                self.agent.runtime.stop(path[len(API_PREFIX) + 1:-len(":stop")])
                self.agent.publish()
                self._reply(200, {})
            else:
                self._reply(404, {"error": "not found"})
        except (RuntimeFailure, ValueError, KeyError) as exc:
            self._reply(400, {"error": str(exc)})

    def do_DELETE(self) -> None:  # noqa: N802
        if not self._authorised():
            return
        path = unquote(self.path.split("?", 1)[0])
        if not path.startswith(API_PREFIX + "/"):
            self._reply(404, {"error": "not found"})
            return
        try:
            self.agent.runtime.remove(path[len(API_PREFIX) + 1:])
            self.agent.publish()
            self._reply(200, {})
        except RuntimeFailure as exc:
            self._reply(400, {"error": str(exc)})
