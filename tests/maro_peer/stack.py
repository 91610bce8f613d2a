"""MARO's own Grass services, unchanged, on loopback: its master API server and master agent, and a node (node API
server and node agent), with a real redis-server and a real docker engine (../shared/reference/peers.md C and D);
jobs can go in through MARO's own client (`submit_with_maro`: its on-premises executor's `start_job`, which reads the
file, standardises it and sends it by its encrypted `POST /v1/jobs`, as `maro grass job start` does).

MARO comes from PyPI (`pymaro`, package.py: its pinned virtual environment, cached under ~/.cache/paictl-tests and
made by .ci/provision-grass.sh on CI); the services run from the installed package's `maro/cli/grass/lib`, as their
systemd units run them. What MARO's SSH-driven `grass create` / `node join` would have set up is set up here instead
(each an environment difference, listed in the README's Grass section):
- HOME folders with `~/.maro-local/cluster/{cluster,master,node}_details.yml`, as MARO's init scripts write them;
- `master_details` and the node's first record in Redis (`node join` writes them);
- a `sudo` that runs its arguments (the tests run as root; MARO calls `sudo docker ...`);
- a TCP sink on the fluentd port (MARO starts every container with docker's fluentd log driver, which needs a peer
  to connect to at container start; what it sends is dropped);
- the agents' `docker` talks to the test's engine (DOCKER_HOST);
- a MARO user made by MARO's own `scripts.master.create_user`; the client's HOME is a scratch folder, where
  `import maro` deploys its own copy of its templates (`~/.maro/lib`), as on a user's machine.
MARO's agents wake every 5 s (hard-coded); tests allow for several intervals.

Where the PyPI release (0.3.2a4) differs from what peers.md C describes (MARO at commit 34c2dc9):
- `maro grass job start` still fails for every file, but not where 34c2dc9 fails: `maro.cli.grass.job` imports,
  and its `start_job` dies at its late import of the local executor (`maro.cli.process` is not in the wheel); the
  `maro` command does not even start (its parser setup imports `maro.cli.k8s.aks`, not in the wheel, after
  `maro.simulator`, which needs pandas, python-dateutil, geopy and aria2p, none declared). So jobs go in through
  the on-premises executor's `start_job` called directly (`submit_with_maro`).
- The package declares no dependencies; under numpy 2 its compiled backends (`maro.backends.frame`) fail to import
  (built against numpy 1): package.py pins numpy 1.26.4. The Grass services do not import numpy.
- The grass executor modules import without `~/.maro-local` (the master API server and both agents still read
  `~/.maro-local/cluster/*.yml` at start, as at 34c2dc9).
- Otherwise the services behave as section C says, bugs included (the tests here rely on them): five master loops
  at a hard-coded 5 s; a container exit code outside {0, 64, 65} makes the job `finish` or kills the job tracker;
  a stop (`POST /v1/jobs/<name>:stop`) removes the pending ticket and queues the kill; no `PAI_*` variables.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Optional

from maro_peer import package


def missing() -> Optional[tuple[str, bool]]:
    """Why MARO's services cannot run here, and whether that is something CI provisions (then CI fails, not skips).
    Builds MARO's environment when it is not cached yet."""
    if shutil.which("redis-server") is None:
        return "redis-server is not installed (apt-get install redis-server)", True
    try:
        package.ensure_venv()
    except package.Unavailable as exc:
        return f"MARO ({package.MARO}) cannot be installed here: {exc}", True
    return None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class FluentdSink:
    """Accepts docker's fluentd log driver and drops what it sends (MARO's master runs fluentd there)."""

    def __init__(self) -> None:
        self.server = socket.socket()
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(64)
        self.port = self.server.getsockname()[1]
        self.received = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._drain, args=(conn,), daemon=True).start()

    def _drain(self, conn: socket.socket) -> None:
        with conn:
            while True:
                try:
                    data = conn.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                self.received += len(data)

    def close(self) -> None:
        self.server.close()


def _yaml(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))  # JSON is YAML: MARO reads these with yaml.safe_load


class MaroStack:
    """redis-server, MARO's master agent, and MARO nodes (node API server under gunicorn + node agent)."""

    def __init__(self, root: Path, *, cluster: str = "maro-test", cluster_id: str = "maro0test1"):
        self.root = root
        self.cluster, self.cluster_id = cluster, cluster_id
        venv = package.ensure_venv()
        self.python = package.python(venv)
        self.lib = package.grass_lib(venv)
        self.redis_port = free_port()
        self.api_port = free_port()  # the master API server's, which the killed-job agent reads but never calls
        self.fluentd = FluentdSink()
        self.bin = root / "bin"
        self.bin.mkdir(parents=True)
        sudo = self.bin / "sudo"
        sudo.write_text('#!/bin/sh\nexec "$@"\n')
        sudo.chmod(0o755)
        self.processes: dict[str, subprocess.Popen] = {}
        self.node_ports: dict[str, int] = {}
        self.redis: Optional[subprocess.Popen] = None

    # -- pieces -------------------------------------------------------------------------------------------------

    def start_redis(self) -> None:
        (self.root / "redis").mkdir(exist_ok=True)
        self.redis = subprocess.Popen(
            ["redis-server", "--port", str(self.redis_port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "yes", "--dir", str(self.root / "redis")],
            stdout=open(self.root / "redis.log", "ab"), stderr=subprocess.STDOUT)
        self.wait(lambda: self._ping(), "redis-server")

    def stop_redis(self) -> None:
        assert self.redis is not None
        self.redis.terminate()
        self.redis.wait(timeout=30)

    def _ping(self) -> bool:
        import redis

        try:
            return bool(redis.Redis(port=self.redis_port, socket_timeout=1).ping())
        except redis.RedisError:
            return False

    def client(self):
        import redis

        return redis.Redis(port=self.redis_port, decode_responses=True, socket_timeout=10)

    def _home(self, role: str, node: Optional[str] = None) -> Path:
        home = self.root / f"home-{role}"
        local = home / ".maro-local" / "cluster"
        _yaml(local / "cluster_details.yml", {"name": self.cluster, "id": self.cluster_id, "mode": "grass/on-premises",
                                              "master": self.master_details()})
        _yaml(local / "master_details.yml", self.master_details())
        if node is not None:
            _yaml(local / "node_details.yml", {"name": node, "id": node})
        return home

    def master_details(self) -> dict:
        return {"hostname": "127.0.0.1", "private_ip_address": "127.0.0.1", "redis": {"port": self.redis_port},
                "fluentd": {"port": self.fluentd.port}, "api_server": {"port": self.api_port}, "image_files": {}}

    def _env(self, home: Path, docker_host: Optional[str] = None) -> dict[str, str]:
        env = {"PATH": f"{self.bin}:{os.environ.get('PATH', '/usr/bin:/bin')}", "HOME": str(home),
               "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1", "LANG": "C.UTF-8"}
        if docker_host:
            env["DOCKER_HOST"] = docker_host
        return env

    def _spawn(self, name: str, argv: list[str], env: dict[str, str]) -> None:
        self.processes[name] = subprocess.Popen(argv, cwd=self.lib, env=env, stdin=subprocess.DEVNULL,
                                                stdout=open(self.root / f"{name}.log", "ab"),
                                                stderr=subprocess.STDOUT, start_new_session=True)

    def start_master(self) -> None:
        """MARO's master agent (its five loops), after `master_details` as `grass create` leaves it."""
        self.client().set("master_details", json.dumps(self.master_details()))
        self.client().set("cluster_details", json.dumps({"name": self.cluster, "id": self.cluster_id}))
        home = self._home("master")
        self._spawn("maro-master", [str(self.python), "-m", "services.master_agent.agent"], self._env(home))

    def start_api(self) -> None:
        """MARO's master API server (gunicorn, as its systemd unit runs it) and a MARO user for its client."""
        home = self._home("master")
        env = self._env(home)
        self._spawn("maro-api", [str(self.python), "-m", "gunicorn", "--bind", f"127.0.0.1:{self.api_port}",
                                 "--workers", "1", "--timeout", "120", "services.master_api_server.root:app"], env)
        done = subprocess.run([str(self.python), "-m", "scripts.master.create_user", "paictl-test", "admin"],
                              cwd=self.lib, env=env, capture_output=True, text=True, timeout=120, check=True)
        self.user = self.root / "maro-user.json"
        self.user.write_text(done.stdout)
        self.wait(lambda: self._answers(self.api_port), "MARO's master API server")

    @staticmethod
    def _answers(port: int) -> bool:
        with socket.socket() as probe:
            return probe.connect_ex(("127.0.0.1", port)) == 0

    def submit_with_maro(self, job_file: dict) -> str:
        """`maro grass job start CLUSTER FILE` without its CLI (which cannot run from the release: the module
        docstring says why): MARO's on-premises executor, made from the files `maro grass create` leaves on a user's
        machine (`~/.maro/clusters/<name>/cluster_details.yml`, and the admin user `_create_user` saves there),
        reads the file, standardises it and sends it through MARO's encrypted client; the new job's id, as that
        client sent it."""
        home = self.root / "home-client"
        clusters = home / ".maro" / "clusters" / self.cluster
        user = json.loads(self.user.read_text())
        _yaml(clusters / "users" / user["id"] / "user_details", user)
        (clusters / "users" / "default_user").write_text(user["id"])
        _yaml(clusters / "cluster_details.yml", {
            "name": self.cluster, "id": self.cluster_id, "mode": "grass/on-premises",
            "master": {**self.master_details(), "username": "root", "public_ip_address": "127.0.0.1",
                       "ssh": {"port": 22}}})
        path = self.root / f"job-{job_file['name']}.yml"
        path.write_text(json.dumps(job_file))
        script = (
            "import sys\n"
            "from maro.cli.grass.executors.grass_on_premises_executor import GrassOnPremisesExecutor\n"
            "executor = GrassOnPremisesExecutor(cluster_name=sys.argv[1])\n"
            "sent, create = [], executor.master_api_client.create_job\n"
            "def watched(job_details):\n"
            "    sent.append(job_details['id'])\n"
            "    return create(job_details=job_details)\n"
            "executor.master_api_client.create_job = watched\n"
            "executor.start_job(deployment_path=sys.argv[2])\n"
            "print(sent[0])\n")
        done = subprocess.run([str(self.python), "-c", script, self.cluster, str(path)],
                              env=self._env(home), capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise AssertionError(f"MARO's client failed: {done.stderr[-2000:]}\n{self.logs()}")
        return done.stdout.strip().splitlines()[-1]

    def stop(self, name: str) -> None:
        process = self.processes.pop(name)
        if process.poll() is None:
            os.killpg(process.pid, 15)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, 9)
                process.wait()

    def add_node(self, name: str, docker_host: str, *, cpu: float = 8, memory: int = 8192) -> None:
        """A MARO node: its first record (what `node join` writes), its API server and its agent."""
        port = free_port()
        self.node_ports[name] = port
        record = {"name": name, "id": name, "hostname": "127.0.0.1", "private_ip_address": "127.0.0.1",
                  "api_server": {"port": port}, "resources": {"cpu": cpu, "memory": memory, "gpu": 0},
                  "containers": {}, "image_files": {}, "state": {"status": "Pending"}}
        self.client().hset("name_to_node_details", name, json.dumps(record))
        home = self._home(f"node-{name}", name)
        env = self._env(home, docker_host)
        self._spawn(f"maro-api-{name}", [str(self.python), "-m", "gunicorn", "--bind", f"127.0.0.1:{port}",
                                         "--workers", "2", "--timeout", "120",
                                         "services.node_api_server.root:app"], env)
        self._spawn(f"maro-node-{name}", [str(self.python), "-m", "services.node_agent.agent"], env)
        self.wait(lambda: self._node_running(name), f"MARO node {name} Running")

    def _node_running(self, name: str) -> bool:
        dead = [n for n, p in self.processes.items() if p.poll() is not None]
        if dead:
            raise AssertionError(f"{dead[0]} exited {self.processes[dead[0]].returncode}\n{self.logs()}")
        text = self.client().hget("name_to_node_details", name)
        return bool(text) and json.loads(text).get("state", {}).get("status") == "Running"

    def cluster_file(self, nodes: dict[str, int], path: Path) -> Path:
        """paictl's cluster file for this cluster: the master's Redis and the given nodes (name -> API port)."""
        lines = [f"name: {self.cluster}", f"id: {self.cluster_id}",
                 f"master: {{hostname: 127.0.0.1, redis: {{port: {self.redis_port}}}, "
                 f"fluentd: {{port: {self.fluentd.port}}}}}",
                 "agents: {check_interval: 1}", "nodes:"]
        for name, port in nodes.items():
            lines.append(f"  - {{name: {name}, hostname: 127.0.0.1, api_server: {{port: {port}}}, "
                         f"resources: {{cpu: 8, memory: 8192, gpu: 0}}}}")
        path.write_text("\n".join(lines) + "\n")
        return path

    # -- helpers ------------------------------------------------------------------------------------------------

    def wait(self, condition, what: str, timeout: float = 90.0):
        deadline = time.monotonic() + timeout
        while True:
            value = condition()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}\n{self.logs()}")
            time.sleep(0.2)

    def logs(self) -> str:
        return "\n".join(f"--- {path.name}\n{path.read_text(errors='replace')[-2500:]}"
                         for path in sorted(self.root.glob("*.log")))

    def close(self) -> None:
        for name in list(self.processes):
            try:
                self.stop(name)
            except (ProcessLookupError, OSError):
                pass
        if self.redis is not None and self.redis.poll() is None:
            self.redis.kill()
            self.redis.wait(timeout=30)
        self.fluentd.close()
