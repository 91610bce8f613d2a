"""The whole OpenPAI server side on 127.0.0.1: the unchanged rest-server and database-controller (../shared/peers),
PostgreSQL, a Kubernetes API stand-in, a log-manager stand-in, a pylon stand-in and (HiveD mode) a HiveD stand-in.

What is real: every line of the rest-server and database-controller (run from a scratch copy with npm's packages,
see install.py), PostgreSQL 15, HTTP. What is played: Kubernetes (tests/kube_emulator's API server, plus the kinds
the rest-server reads that paictl's own tests never needed: Node, PersistentVolume(Claim)), FrameworkController
(frameworks.py, driven by each test), the log-manager and pylon (logmanager.py, pylon.py, from upstream's lua and
nginx configuration), HiveD's web service (hived.py). Environment differences, each needed here, are listed in
README "OpenPAI clusters" and in the closing note of issue 25.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Optional

import httpx

from . import install
from .frameworks import FrameworkController
from .kube import start_kube
from .logmanager import LogManager
from .postgres import Postgres, find_bin
from .pylon import Pylon

ADMIN, ADMIN_PASSWORD = "admin", "admin-password-1f2e"
LOG_ADMIN, LOG_ADMIN_PASSWORD = "log-admin", "log-admin-password-77aa"
USERS = {"alice": "alice-password-9c1d", "bob": "bob-password-2b7e"}
#: Persistent volume claims of the cluster: every user's group has confignfs, alice's team the others (the upstream
#: example jobs name confignfs, nfs-storage and confignfs-data).
STORAGES = ("confignfs", "teamnfs", "nfs-storage", "confignfs-data")


class StackError(RuntimeError):
    pass


@dataclasses.dataclass
class RestServer:
    """One rest-server process and the pylon in front of it."""
    port: int
    pylon: Pylon
    hived: bool

    @property
    def rest_url(self) -> str:
        """The REST server itself (what a deployment's REST_SERVER_URI is)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def site_url(self) -> str:
        """The cluster's site root, as users know it: pylon in front of everything."""
        return self.pylon.url

    @property
    def api_url(self) -> str:
        """The REST API through pylon: `https://HOST/rest-server`."""
        return f"{self.site_url}/rest-server"


def unavailable_reason() -> Optional[str]:
    """Why the stack cannot run here (None: it can)."""
    if not install.PEER.is_dir():
        return f"no OpenPAI peer at {install.PEER}"
    if shutil.which("node") is None or shutil.which("npm") is None:
        return "node/npm not installed"
    if find_bin() is None:
        return "PostgreSQL (initdb) not installed"
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_http(url: str, timeout: float, process: Optional[subprocess.Popen] = None, log: Optional[Path] = None,
               ok=lambda r: r.status_code < 500) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise StackError(f"{url}: the process exited ({process.returncode}): {_tail(log)}")
        try:
            if ok(httpx.get(url, timeout=2)):
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise StackError(f"{url} did not answer within {timeout}s: {_tail(log)}")


def _tail(log: Optional[Path], size: int = 3000) -> str:
    if log is None or not log.is_file():
        return ""
    return log.read_text(errors="replace")[-size:]


class Stack:
    """Start with `Stack(folder, hived=False).start()`; `stop()` ends every process it started."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.processes: list[tuple[str, subprocess.Popen]] = []
        self.exit_stack = contextlib.ExitStack()
        self.postgres: Optional[Postgres] = None
        self.kube: Any = None
        self.logs: Optional[LogManager] = None
        self.hived_service: Any = None
        self.fc: Optional[FrameworkController] = None
        self.installed: Optional[Path] = None
        self.default: Optional[RestServer] = None
        self._hived: Optional[RestServer] = None
        self.tokens: dict[str, str] = {}
        self._watcher_stop = threading.Event()

    # -- addresses (of the default-scheduler rest-server) --------------------------------------------------------

    @property
    def rest_url(self) -> str:
        assert self.default is not None
        return self.default.rest_url

    @property
    def site_url(self) -> str:
        assert self.default is not None
        return self.default.site_url

    @property
    def api_url(self) -> str:
        assert self.default is not None
        return self.default.api_url

    # -- lifecycle ---------------------------------------------------------------------------------------------

    def start(self) -> "Stack":
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        started = time.monotonic()
        self.folder.mkdir(parents=True, exist_ok=True)
        self.installed = install.ensure_installed(install.PEER)
        pg_bin = find_bin()
        assert pg_bin is not None
        self.postgres = Postgres(self.folder / "pg", pg_bin).start()
        self.kube = start_kube(STORAGES)
        self.logs = self.exit_stack.enter_context(LogManager(self.folder / "node-logs", admin=LOG_ADMIN,
                                                             password=LOG_ADMIN_PASSWORD))
        self.fc = FrameworkController(self.kube.url, log_writer=self.logs.write, history_writer=self._history)
        self._start_database_controller(self.installed)
        self.default = self._start_rest_server(self.installed, hived=False)
        self._seed_users()
        self.startup_seconds = time.monotonic() - started

    def hived(self) -> RestServer:
        """A second rest-server with LAUNCHER_SCHEDULER=hivedscheduler over the same database, Kubernetes and users
        (started on first use). Its start adds a group per HiveD virtual cluster; alice joins `gpu`, bob does not."""
        if self._hived is None:
            from .hived import HivedService

            assert self.installed is not None
            self.hived_service = self.exit_stack.enter_context(HivedService())
            self._hived = self._start_rest_server(self.installed, hived=True)
            admin = {"Authorization": f"Bearer {self.tokens[ADMIN]}"}
            deadline = time.monotonic() + 30
            while True:  # the group `gpu` is created by the new server's start, asynchronously
                reply = httpx.put(f"{self._hived.rest_url}/api/v2/users/alice/group", headers=admin, timeout=30,
                                  json={"groupname": "gpu"})
                if reply.status_code in (200, 201):
                    break
                if time.monotonic() > deadline:
                    raise StackError(f"alice into group gpu: HTTP {reply.status_code} {reply.text[:300]}")
                time.sleep(0.2)
        return self._hived

    def stop(self) -> None:
        self._watcher_stop.set()
        for _, process in reversed(self.processes):
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGTERM)
        for _, process in reversed(self.processes):
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=5)
        self.processes.clear()
        if self.fc is not None:
            self.fc.close()
        self.exit_stack.close()
        if self.kube is not None:
            self.kube.stop()
            self.kube = None
        if self.postgres is not None:
            self.postgres.stop()
            self.postgres = None

    # -- parts -------------------------------------------------------------------------------------------------

    def _spawn(self, name: str, command: list[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen:
        log = self.folder / f"{name.replace('/', '-')}.log"
        out = open(log, "ab")
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
        out.close()
        self.processes.append((name, process))
        return process

    def _base_env(self) -> dict[str, str]:
        keep = ("PATH", "HOME", "LANG", "TZ")
        env = {key: os.environ[key] for key in keep if key in os.environ}
        env.update({"NODE_ENV": "production", "LOG_LEVEL": "warn", "RBAC_IN_CLUSTER": "false"})
        return env

    def _db_env(self) -> dict[str, str]:
        assert self.postgres is not None
        env = self._base_env()
        env.update({"DB_CONNECTION_STR": self.postgres.url(), "CUSTOM_K8S_API_SERVER_URL": self.kube.url,
                    "K8S_CONNECTION_TIMEOUT_SECOND": "30", "WRITE_MERGER_CONNECTION_TIMEOUT_SECOND": "30",
                    "MAX_DB_CONNECTION": "10", "MAX_RPC_CONCURRENCY": "10", "RETAIN_MODE_ENABLED": "false",
                    "WATCH_TIMEOUT_SECONDS": "3600", "INTERVAL_SECOND": "1",
                    "WRITE_MERGER_URL": f"http://127.0.0.1:{self.write_merger_port}"})
        return env

    def _start_database_controller(self, installed: Path) -> None:
        src = installed / "database-controller" / "src"
        self.write_merger_port = free_port()
        env = self._db_env()
        # The initializer creates its tables concurrently, and a table whose foreign key names one not yet created
        # fails now and then (42P01); in a deployment Kubernetes restarts it: so does this loop, a few times.
        for _ in range(5):
            initializer = subprocess.run(["node", "initializer/index.js"], cwd=src, env=env, capture_output=True,
                                         text=True, timeout=120)
            if initializer.returncode == 0:
                break
        else:
            raise StackError(f"database-controller initializer failed: {initializer.stdout[-2000:]}"
                             f"{initializer.stderr[-2000:]}")
        merger = self._spawn("write-merger", ["node", "write-merger/index.js"], src,
                             {**env, "PORT": str(self.write_merger_port)})
        self._spawn("poller", ["node", "poller/index.js"], src, env)
        threading.Thread(target=self._keep_watcher, args=(src, env), daemon=True,
                         name="openpai-watcher-restarts").start()
        _wait_http(f"http://127.0.0.1:{self.write_merger_port}/ping", 60, merger,
                   self.folder / "write-merger.log", ok=lambda r: True)

    def _keep_watcher(self, src: Path, env: dict[str, str], limit: int = 50) -> None:
        """The framework watcher exits on any watch error and expects Kubernetes to restart it: a bounded loop."""
        for _ in range(limit):
            if self._watcher_stop.is_set():
                return
            process = self._spawn("watcher-framework", ["node", "watcher/framework/index.js"], src, env)
            while process.poll() is None:
                if self._watcher_stop.wait(0.2):
                    return
            time.sleep(0.2)

    def _write_configs(self, hived: bool) -> dict[str, Path]:
        folder = self.folder / "config"
        folder.mkdir(exist_ok=True)
        group = {
            "groupDataSource": "basic",
            "adminGroup": {"groupname": "admingroup", "description": "admin's group", "externalName": "",
                           "extension": {"acls": {"virtualClusters": [], "admin": True}}},
            "defaultGroup": {"groupname": "default", "description": "group for default vc", "externalName": "",
                             "extension": {"acls": {"virtualClusters": ["default"], "admin": False,
                                                    "storageConfigs": ["confignfs"]}}},
            "grouplist": [{"groupname": "team", "description": "alice's team", "externalName": "",
                           "extension": {"acls": {"virtualClusters": ["default"], "admin": False,
                                                  "storageConfigs": list(STORAGES[1:])}}}],
        }
        paths = {"group": folder / "group.yaml", "exit": folder / "k8s-job-exit-spec.yaml"}
        paths["group"].write_text(json.dumps(group))  # JSON is YAML
        import yaml  # the exit spec's `spec` list, as the rest-server's configmap holds it

        spec = yaml.safe_load((install.PEER / "k8s-job-exit-spec" / "config" / "k8s-job-exit-spec.yaml")
                              .read_text())["spec"]
        paths["exit"].write_text(json.dumps(spec))
        if hived:
            from .hived import write_spec

            paths["hived"] = write_spec(folder / "hivedscheduler.yaml")
        return paths

    def _start_rest_server(self, installed: Path, *, hived: bool) -> RestServer:
        assert self.postgres is not None and self.logs is not None
        paths = self._write_configs(hived)
        port = free_port()
        env = self._base_env()
        env.update({
            "LAUNCHER_TYPE": "k8s", "LAUNCHER_SCHEDULER": "hivedscheduler" if hived else "defaultscheduler",
            "LAUNCHER_PRIORITY_CLASS": "true", "LAUNCHER_RUNTIME_IMAGE": "openpai/openpai-runtime:v1.8.0",
            "LAUNCHER_RUNTIME_IMAGE_PULL_SECRETS": "pai-secret",
            "HIVED_COMPUTING_DEVICE_ENVS": "NVIDIA_VISIBLE_DEVICES,HIVED_VISIBLE_DEVICES",
            "DEFAULT_COMPUTING_DEVICE_TYPE": "nvidia.com/gpu",
            "HIVED_WEBSERVICE_URI": self.hived_service.url if self.hived_service else "http://127.0.0.1:9",
            "HIVED_SPEC_PATH": str(paths.get("hived", self.folder / "no-hived.yaml")),
            "K8S_APISERVER_URI": self.kube.url, "REST_SERVER_URI": f"http://127.0.0.1:{port}",
            "WRITE_MERGER_URL": f"http://127.0.0.1:{self.write_merger_port}",
            "SQL_CONNECTION_STR": self.postgres.url(), "SQL_MAX_CONNECTION": "10", "JOB_HISTORY": "false",
            "ALERT_MANAGER_URL": "http://127.0.0.1:9", "PAI_REST_SERVER_EXIT_SPEC_PATH": str(paths["exit"]),
            "LOG_SERVER": "log_manager", "LOG_MANAGER_PORT": str(self.logs.port),
            "LOG_MANAGER_ADMIN_NAME": LOG_ADMIN, "LOG_MANAGER_ADMIN_PASSWORD": LOG_ADMIN_PASSWORD,
            "SERVER_PORT": str(port), "JWT_SECRET": "rest-server-jwt-secret-5c2a",
            "JWT_TOKEN_EXPIRE_TIME": "7d", "AUTHN_METHOD": "basic", "DEFAULT_PAI_ADMIN_USERNAME": ADMIN,
            "DEFAULT_PAI_ADMIN_PASSWORD": ADMIN_PASSWORD, "GROUP_CONFIG_PATH": str(paths["group"]),
            "WEBPORTAL_URL": "http://127.0.0.1:9", "RATE_LIMIT_API_PER_MIN": "100000",
            "RATE_LIMIT_LIST_JOB_PER_MIN": "100000", "RATE_LIMIT_SUBMIT_JOB_PER_HOUR": "100000",
            "DEBUGGING_RESERVATION_SECONDS": "604800",
        })
        name = "rest-server-hived" if hived else "rest-server"
        workdir = self.folder / name  # it writes server.log into its working folder: not into the shared cache
        workdir.mkdir(exist_ok=True)
        process = self._spawn(name, ["node", str(installed / "rest-server" / "index.js")], workdir, env)
        _wait_http(f"http://127.0.0.1:{port}/api/v2/info", 90, process, self.folder / f"{name}.log",
                   ok=lambda r: r.status_code == 200)
        pylon = self.exit_stack.enter_context(Pylon(f"http://127.0.0.1:{port}"))
        return RestServer(port=port, pylon=pylon, hived=hived)

    def _history(self, framework: dict[str, Any]) -> None:
        """What fluentd's pgjson plugin does with FrameworkController's snapshot of a completed attempt: one
        `framework_history` row, uid md5("{name}+{attempt}+retry"), inserted once."""
        import hashlib

        assert self.postgres is not None
        name, attempt = framework["metadata"]["name"], framework["status"]["attemptStatus"]["id"]
        uid = hashlib.md5(f"{name}+{attempt}+retry".encode()).hexdigest()
        snapshot = json.dumps(framework)
        assert "$snapshot$" not in snapshot
        self.postgres.sql(
            'INSERT INTO framework_history ("insertedAt", "updatedAt", "uid", "frameworkName", "attemptIndex", '
            f'"historyType", "snapshot") VALUES (now(), now(), \'{uid}\', \'{name}\', {int(attempt)}, \'retry\', '
            f"$snapshot${snapshot}$snapshot$) ON CONFLICT (uid) DO NOTHING;")

    # -- users ---------------------------------------------------------------------------------------------------

    def login(self, user: str, password: str) -> str:
        deadline = time.monotonic() + 60
        while True:
            reply = httpx.post(f"{self.rest_url}/api/v2/authn/basic/login",
                               data={"username": user, "password": password}, timeout=30)
            if reply.status_code == 200:
                return reply.json()["token"]
            if time.monotonic() > deadline:
                raise StackError(f"login {user}: HTTP {reply.status_code} {reply.text[:300]}")
            time.sleep(0.2)  # the admin user is created asynchronously at start

    def _seed_users(self) -> None:
        admin = self.tokens[ADMIN] = self.login(ADMIN, ADMIN_PASSWORD)
        headers = {"Authorization": f"Bearer {admin}"}
        groups = {"alice": ["default", "team"], "bob": ["default"]}
        for user, password in USERS.items():
            reply = httpx.post(f"{self.rest_url}/api/v2/users", headers=headers, timeout=30,
                               json={"username": user, "password": password, "admin": False, "email": "",
                                     "virtualCluster": ["default"]})
            if reply.status_code not in (201, 409):
                raise StackError(f"create user {user}: HTTP {reply.status_code} {reply.text[:300]}")
            for group in groups[user]:
                reply = httpx.put(f"{self.rest_url}/api/v2/users/{user}/group", headers=headers, timeout=30,
                                  json={"groupname": group})
                if reply.status_code not in (200, 201):
                    raise StackError(f"group {group} of {user}: HTTP {reply.status_code} {reply.text[:300]}")
            self.tokens[user] = self.login(user, password)

    def rest(self, method: str, path: str, *, user: str = ADMIN, **options: Any) -> httpx.Response:
        """A request straight to the REST server as `user` (for test setup and checks)."""
        headers = {"Authorization": f"Bearer {self.tokens[user]}", **options.pop("headers", {})}
        return httpx.request(method, f"{self.rest_url}{path}", headers=headers, timeout=30, **options)

    def server_log(self, name: str = "rest-server") -> str:
        return _tail(self.folder / f"{name}.log", 20000)
