"""What a Grass node runs: containers from MARO's create config, with docker when an engine answers, otherwise as
host processes with the same command, environment and labels.

MARO's node API receives a create config (maro.md A.8): `container_name`, `image_name`, `command`, `cpu`, `memory`
("<MB>m"), optional `gpu`, `volumes` ("src:target"), `environments`, `labels`, `fluentd_address`, `fluentd_tag`.
`DockerRuntime` runs it as MARO does (`docker run -d --cpus --memory [--gpus] --name --network host -v -e -l IMAGE
COMMAND`, the command split by a shell; the volumes as `--mount` binds of the data folder), but logs with docker's
json-file driver so `logs` can read them without the master's Fluentd; it uses the docker runtime the local target
uses (targets/docker_runtime.py): the CLI's `docker run`, and the engine's API for everything else. `ProcessRuntime` runs the command with `/bin/sh -c` in the shared data folder, as its own
session (so a stop reaches every process it started), output to `<logs>/<job_id>/<container>.log`.

Both report a container as MARO's node agent does: its labels plus `state`, docker's inspect `State` (`Status`
running/exited, `Running`, `ExitCode`, `Pid`, `StartedAt`, `FinishedAt`). A process killed by signal N exits 128+N,
as docker reports it.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import shlex
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any, Callable, Optional

from paictl.targets.docker_runtime import ContainerSpec, Engine, EngineError, run_argv

from .create_config import PLAIN_NAME, RuntimeFailure, checked_name

#: Every host process a node starts carries this variable (value: the container name), so leftovers can be found.
CONTAINER_MARKER = "PAICTL_GRASS_CONTAINER"
_INHERITED_PREFIXES = ("PAI_", "FC_", CONTAINER_MARKER)


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


@dataclasses.dataclass(kw_only=True)
class _Process:
    """A container a node agent started as a local process: its config, its log and, once ended, its outcome.
    `popen` is None for one adopted from a previous run of the agent (known by its pid)."""
    config: dict[str, Any]
    popen: Optional[subprocess.Popen]
    pid: int
    log: Path
    started: str
    finished: Optional[str] = None
    exit_code: Optional[int] = None

    @property
    def status_file(self) -> Path:
        return self.log.with_suffix(".exit")


#: The shell around a host-process container's command: it writes the command's exit status beside the log, so an
#: agent restarted while the command ran can still learn how it ended.
_RECORDING = '/bin/sh -c "$1"; code=$?; echo "$code" > "$2"; exit "$code"'


class ProcessRuntime:
    """Containers as host processes (no container engine on this machine)."""

    kind = "process"

    def __init__(self, work_dir: Path, data_dir: Optional[Path] = None, grace: float = 10.0):
        self.work_dir = Path(work_dir)
        self.data_dir = Path(data_dir) if data_dir else self.work_dir / "data"
        self.grace = grace
        self._lock = threading.Lock()
        self._containers: dict[str, _Process] = {}
        self._table = self.work_dir / "containers.json"
        self._adopt()

    def _adopt(self) -> None:
        """The containers a previous run of this agent started (its table in the work dir): one still running is
        tracked again by its pid (it keeps its resources, and stops as any other); one that ended meanwhile
        reports the status it wrote, else 137 (killed before it could write one)."""
        try:
            table = json.loads(self._table.read_text())
        except (OSError, ValueError):
            return
        if not isinstance(table, dict):
            return
        for name, entry in table.items():
            try:
                item = _Process(config=entry["config"], popen=None, pid=int(entry["pid"]), log=Path(entry["log"]),
                                started=str(entry["started"]))
            except (KeyError, TypeError, ValueError):
                continue
            if not _ours(item.pid, name):
                _ended(item)
            self._containers[name] = item

    def _save(self) -> None:
        table = {name: {"config": item.config, "pid": item.pid, "log": str(item.log), "started": item.started}
                 for name, item in self._containers.items()}
        self.work_dir.mkdir(parents=True, exist_ok=True)
        temporary = self._table.with_suffix(".tmp")
        temporary.write_text(json.dumps(table))
        temporary.replace(self._table)

    def log_path(self, config: dict[str, Any]) -> Path:
        """`<work dir>/logs/<job id>/<container>.log`; both names are plain (checked_config), and the path is
        checked to stay below the work dir all the same."""
        job_id = str((config.get("labels") or {}).get("job_id", "unknown"))
        logs = (self.work_dir / "logs").resolve()
        path = (logs / job_id / f"{checked_name(config)}.log").resolve()
        if not PLAIN_NAME.match(job_id) or logs not in path.parents:
            raise RuntimeFailure("create config: labels.job_id must be a plain name")
        return path

    def create(self, config: dict[str, Any]) -> dict[str, Any]:
        name = checked_name(config)
        with self._lock:
            if name in self._containers:
                raise RuntimeFailure(f"container {name} already exists")
            env = {k: v for k, v in os.environ.items() if not k.startswith(_INHERITED_PREFIXES)}
            env.update({str(k): str(v) for k, v in (config.get("environments") or {}).items()})
            env[CONTAINER_MARKER] = name
            log = self.log_path(config)
            log.parent.mkdir(parents=True, exist_ok=True)
            self.data_dir.mkdir(parents=True, exist_ok=True)
            log.with_suffix(".exit").unlink(missing_ok=True)
            with open(log, "ab") as out:
                try:
                    popen = subprocess.Popen(["/bin/sh", "-c", _RECORDING, "paictl-container",
                                              str(config.get("command", "")), str(log.with_suffix(".exit"))],
                                             env=env, cwd=self.data_dir, stdin=subprocess.DEVNULL, stdout=out,
                                             stderr=subprocess.STDOUT, start_new_session=True)
                except OSError as exc:
                    raise RuntimeFailure(f"cannot start {name}: {exc}") from None
            self._containers[name] = _Process(config=config, popen=popen, pid=popen.pid, log=log, started=_now())
            self._save()
        return self.inspect(name)

    def _poll(self, item: _Process) -> None:
        if item.exit_code is None:
            if item.popen is None:
                if not _ours(item.pid, item.config.get("container_name", "")):
                    _ended(item)
                return
            code = item.popen.poll()
            if code is not None:
                item.exit_code = 128 - code if code < 0 else code
                item.finished = _now()

    def inspect(self, name: str) -> dict[str, Any]:
        with self._lock:
            item = self._containers.get(name)
            if item is None:
                raise RuntimeFailure(f"no container {name}")
            self._poll(item)
            running = item.exit_code is None
            state = {"Status": "running" if running else "exited", "Running": running,
                     "ExitCode": 0 if running else item.exit_code, "Pid": item.pid if running else 0,
                     "StartedAt": item.started, "FinishedAt": item.finished or "0001-01-01T00:00:00Z"}
            return {"Name": name, "State": state, "Config": {"Labels": dict(item.config.get("labels") or {})}}

    def names(self) -> list[str]:
        with self._lock:
            return list(self._containers)

    def inspect_all(self) -> list[dict[str, Any]]:
        found = []
        for name in self.names():
            try:
                found.append(self.inspect(name))
            except RuntimeFailure:
                continue
        return found

    def stop(self, name: str) -> None:
        with self._lock:
            item = self._containers.get(name)
        if item is None:
            raise RuntimeFailure(f"no container {name}")
        if item.popen is not None:
            _terminate(item.popen, self.grace)
        else:
            _terminate_adopted(item.pid, name, self.grace)
        self.inspect(name)

    def remove(self, name: str) -> None:
        self.stop(name)
        with self._lock:
            self._containers.pop(name, None)
            self._save()

    def logs(self, name: str) -> bytes:
        with self._lock:
            item = self._containers.get(name)
        if item is None:
            raise RuntimeFailure(f"no container {name}")
        try:
            return item.log.read_bytes()
        except OSError:
            return b""

    def stop_all(self) -> None:
        for name in self.names():
            try:
                self.stop(name)
            except RuntimeFailure:
                pass


def _ours(pid: int, name: str) -> bool:
    """Whether process `pid` is still the container `name` (its marker variable says so; pids are reused)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as environ:
            return f"{CONTAINER_MARKER}={name}".encode() in environ.read().split(b"\0")
    except OSError:
        return False


def _ended(item: _Process) -> None:
    """An adopted container's end: the status its shell wrote, else 137 (it was killed before writing one)."""
    try:
        item.exit_code = int(item.status_file.read_text().strip())
        moment = item.status_file.stat().st_mtime
        item.finished = datetime.datetime.fromtimestamp(moment, datetime.timezone.utc).isoformat(
            timespec="microseconds").replace("+00:00", "Z")
    except (OSError, ValueError):
        item.exit_code, item.finished = 137, _now()


def _terminate_adopted(pid: int, name: str, grace: float) -> None:
    import time

    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        if not _ours(pid, name):
            return
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and _ours(pid, name):
            try:
                os.waitpid(pid, os.WNOHANG)  # a zombie child of ours, if any
            except ChildProcessError:
                pass
            time.sleep(0.1)


def _terminate(popen: subprocess.Popen, grace: float) -> None:
    """SIGTERM to the container's whole session, SIGKILL after `grace` seconds (what `docker stop` does)."""
    if popen.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(popen.pid, sig)
        except ProcessLookupError:
            return
        try:
            popen.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


class DockerRuntime:
    """Containers as MARO runs them, on the engine `DOCKER_HOST` names (used when it answers): `docker run -d` by
    the docker CLI, which pulls a missing image as MARO's own `docker run` does; every other call (inspect, list,
    stop, remove, logs) through the engine's API (targets/docker_runtime.py), which spares a docker CLI process
    (35-85 ms) for each container the node agent inspects in its loop."""

    kind = "docker"

    def __init__(self, data_dir: Path, grace: float = 10.0, node: Optional[str] = None):
        self.data_dir = Path(data_dir)
        self.grace = grace
        self.node = node  # only this node's containers are its own (several nodes may share one engine)
        self._engine: Optional[Engine] = None

    @staticmethod
    def available() -> bool:
        try:
            return Engine().ping(timeout=10)
        except EngineError:  # a DOCKER_HOST paictl cannot reach (ssh://)
            return False

    def _call(self, what: str, call: Callable[[Engine], Any]) -> Any:
        try:
            if self._engine is None:
                self._engine = Engine()
            return call(self._engine)
        except EngineError as error:
            raise RuntimeFailure(f"docker {what}: {str(error)[:300]}") from None

    def engine_info(self) -> Optional[dict[str, Any]]:
        """The engine's `docker info` (NCPU, MemTotal in bytes), or None when it does not answer."""
        try:
            return self._call("info", lambda engine: engine.info())
        except RuntimeFailure:
            return None

    def create(self, config: dict[str, Any]) -> dict[str, Any]:
        name = checked_name(config)
        self.data_dir.mkdir(parents=True, exist_ok=True)  # a bind mount's source must exist (`-v` made it)
        spec = ContainerSpec(
            # MARO formats `... IMAGE COMMAND` into one shell line: the shell splits COMMAND into the container's argv.
            image=str(config["image_name"]), command=shlex.split(str(config.get("command", ""))), name=name,
            cpus=float(config.get("cpu", 1)), memory_mb=int(str(config.get("memory", "0m")).rstrip("m") or 0),
            gpus=config.get("gpu") or None,
            mounts=[(str(self.data_dir), str(volume).rsplit(":", 1)[-1], False)
                    for volume in config.get("volumes") or []],
            env={str(key): str(value) for key, value in (config.get("environments") or {}).items()},
            labels={str(key): str(value) for key, value in (config.get("labels") or {}).items()},
            detach=True, remove=False, init=False, log_driver="json-file")
        try:
            done = subprocess.run(run_argv(spec), capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise RuntimeFailure(f"docker run: {exc}") from None
        if done.returncode != 0:
            raise RuntimeFailure(f"docker run: {done.stderr.strip()[:300]}")
        return self.inspect(name)

    def inspect(self, name: str) -> dict[str, Any]:
        details = self._call("inspect", lambda engine: engine.inspect(name))
        if details is None:
            raise RuntimeFailure(f"docker inspect: no such container: {name}")
        return _reported(details)

    def inspect_all(self) -> list[dict[str, Any]]:
        """Every container of this node (one that is removed meanwhile is left out)."""
        found = []
        for name in self.names():
            details = self._call("inspect", lambda engine: engine.inspect(name))
            if isinstance(details, dict) and "State" in details:
                found.append(_reported(details))
        return found

    def names(self) -> list[str]:
        labels: dict[str, Optional[str]] = {"node_name": self.node} if self.node else {"container_name": None}
        listed = self._call("ps", lambda engine: engine.containers(labels))
        return [container["Names"][0].lstrip("/") for container in listed if container.get("Names")]

    def stop(self, name: str) -> None:
        self._call("stop", lambda engine: engine.stop(name, self.grace))

    def remove(self, name: str) -> None:
        """Kill and remove the container; one that is not there is not an error (`docker rm -f`)."""
        self._call("rm", lambda engine: engine.remove(name))

    def logs(self, name: str) -> bytes:
        return self._call("logs", lambda engine: engine.logs(name))

    def stop_all(self) -> None:
        """Containers outlive a docker node agent, as in MARO."""


def _reported(details: dict[str, Any]) -> dict[str, Any]:
    """A container as MARO's node agent reports it: its name, docker's `State` record and its labels."""
    return {"Name": str(details.get("Name") or "").lstrip("/"), "State": details["State"],
            "Config": {"Labels": (details.get("Config") or {}).get("Labels") or {}}}
