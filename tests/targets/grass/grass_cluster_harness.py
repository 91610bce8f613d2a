"""A real Grass cluster on loopback for tests: redis-server (append-only, so a restart keeps everything), one
`paictl grass master` and two `paictl grass node` processes, with short check intervals and a cluster token.

Everything runs as real processes; the containers are host processes (no container engine here). Each node's
containers carry PAICTL_GRASS_CONTAINER in their environment, and `close()` kills whatever is left of them (a node
agent killed with SIGKILL leaves its containers running, like a docker node whose agent died).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

INTERVAL = 0.3
LOST_AFTER = 10.0  # far above the 0.3 s heartbeat, so a loaded machine never loses a live node
TOKEN = "test-token-0123456789abcdef"

needs_redis = pytest.mark.skipif(shutil.which("redis-server") is None,
                                 reason="redis-server is not installed (apt-get install redis-server)")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(condition: Callable[[], object], timeout: float = 60.0, what: str = "condition",
             explain: Callable[[], str] | None = None) -> object:
    """Poll until `condition()` is truthy; generous deadlines, since the box may be loaded. On a timeout the
    error carries `explain()` (the agents' logs), so a failure on CI can be understood."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}" + (f"\n{explain()}" if explain else ""))
        time.sleep(0.1)


class GrassCluster:
    def __init__(self, root: Path, *, cpu: int = 2, memory: int = 4096, token: bool = True):
        self.root = root
        self.redis_port = free_port()
        self.redis_dir = root / "redis"
        self.redis_dir.mkdir()
        self.ports = {"n1": free_port(), "n2": free_port()}
        self.cluster_file = root / "cluster.yaml"
        self.cluster_file.write_text(
            "name: test\n" + (f"token: {TOKEN}\n" if token else "") +
            f"master: {{hostname: 127.0.0.1, redis: {{port: {self.redis_port}}}, data: {root / 'data'}}}\n"
            f"agents: {{check_interval: {INTERVAL}, lost_after: {LOST_AFTER}}}\n"
            "nodes:\n" + "".join(
                f"  - {{name: {name}, hostname: 127.0.0.1, api_server: {{port: {port}}}, "
                f"resources: {{cpu: {cpu}, memory: {memory}, gpu: 0}}}}\n" for name, port in self.ports.items()))
        self.redis: subprocess.Popen | None = None
        self.agents: dict[str, subprocess.Popen] = {}

    # processes
    def start_redis(self) -> None:
        self.redis = subprocess.Popen(
            ["redis-server", "--port", str(self.redis_port), "--bind", "127.0.0.1", "--dir", str(self.redis_dir),
             "--appendonly", "yes", "--appendfsync", "always", "--save", "", "--protected-mode", "yes"],
            stdout=open(self.root / "redis.log", "ab"), stderr=subprocess.STDOUT)
        wait_for(self._redis_answers, what="redis-server")

    def _redis_answers(self) -> bool:
        import redis

        try:
            return bool(redis.Redis(port=self.redis_port, socket_timeout=1).ping())
        except redis.RedisError:
            return False

    def stop_redis(self) -> None:
        assert self.redis is not None
        self.redis.send_signal(signal.SIGTERM)
        self.redis.wait(timeout=30)

    def start_agent(self, role: str, *args: str) -> None:
        log = open(self.root / f"{role}.log", "ab")
        self.agents[role] = subprocess.Popen(
            [sys.executable, "-m", "paictl", "grass", *args, "--cluster", str(self.cluster_file)],
            cwd=self.root, stdout=log, stderr=subprocess.STDOUT)

    def start(self) -> "GrassCluster":
        self.start_redis()
        self.start_agent("master", "master")
        for name in self.ports:
            self.start_agent(name, "node", "--name", name, "--work-dir", str(self.root / name))
        client = self.client()
        wait_for(lambda: self._agents_alive() and all(self._running(client, name) for name in self.ports),
                 what="both nodes Running", explain=self.logs)
        return self

    def _agents_alive(self) -> bool:
        dead = [role for role, process in self.agents.items() if process.poll() is not None]
        if dead:
            raise AssertionError(f"agent {dead[0]} exited {self.agents[dead[0]].returncode}\n{self.logs()}")
        return True

    @staticmethod
    def _running(client, name: str) -> bool:
        import json

        text = client.hget("name_to_node_details", name)
        return bool(text) and json.loads(text)["state"]["status"] == "Running"

    def client(self):
        import redis

        return redis.Redis(port=self.redis_port, decode_responses=True, socket_timeout=5)

    def kill_agent(self, role: str) -> None:
        self.agents[role].kill()
        self.agents[role].wait(timeout=30)

    def close(self) -> None:
        for process in self.agents.values():
            if process.poll() is None:
                process.terminate()
        for process in self.agents.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        for pid in leftover_containers(self.root):
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.redis is not None and self.redis.poll() is None:
            self.redis.kill()
            self.redis.wait(timeout=30)

    def logs(self) -> str:
        return "\n".join(f"--- {path.name}\n{path.read_text(errors='replace')[-3000:]}"
                         for path in sorted(self.root.glob("*.log")))


@contextlib.contextmanager
def running_cluster(root: Path):
    """A started GrassCluster with a GrassBackend for it at `.backend`; its agents' logs are printed when the test
    fails, and everything is closed after it."""
    from paictl.targets.backend import BackendOptions
    from paictl.targets.grass.backend import GrassBackend

    cluster = GrassCluster(root)
    try:
        cluster.start()
        cluster.backend = GrassBackend(BackendOptions(cluster=str(cluster.cluster_file)))
        yield cluster
    except BaseException:
        print(cluster.logs())
        raise
    finally:
        cluster.close()


def leftover_containers(root: Path) -> list[int]:
    """Session leaders of host-process containers started for this cluster (found by their marker variable)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if b"PAICTL_GRASS_CONTAINER=" in environ and cwd.startswith(str(root)) and os.getsid(int(entry.name)) == \
                int(entry.name):
            found.append(int(entry.name))
    return found
