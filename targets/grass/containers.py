"""What a Grass node runs: containers from MARO's create config, with docker when an engine answers, otherwise as
host processes with the same command, environment and labels.

MARO's node API receives a create config (maro.md A.8): `container_name`, `image_name`, `command`, `cpu`, `memory`
("<MB>m"), optional `gpu`, `volumes` ("src:target"), `environments`, `labels`, `fluentd_address`, `fluentd_tag`.
`DockerRuntime` runs it as MARO does (`docker run -d --cpus --memory [--gpus] --name --network host -v -e -l IMAGE
COMMAND`, the command through a shell), but logs with docker's json-file driver so `logs` can read them without
the master's Fluentd. `ProcessRuntime` runs the command with `/bin/sh -c` in the shared data folder, as its own
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
from typing import Any, Optional

#: Every host process a node starts carries this variable (value: the container name), so leftovers can be found.
CONTAINER_MARKER = "PAICTL_GRASS_CONTAINER"
_INHERITED_PREFIXES = ("PAI_", "FC_", CONTAINER_MARKER)


class RuntimeFailure(Exception):
    """A container could not be created, stopped or removed (the node API answers 400, as MARO's does)."""


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


@dataclasses.dataclass(kw_only=True)
class _Process:
    """A container a node agent started as a local process: its config, its log and, once ended, its outcome."""
    config: dict[str, Any]
    popen: subprocess.Popen
    log: Path
    started: str
    finished: Optional[str] = None
    exit_code: Optional[int] = None


class ProcessRuntime:
    """Containers as host processes (no container engine on this machine)."""

    kind = "process"

    def __init__(self, work_dir: Path, data_dir: Optional[Path] = None, grace: float = 10.0):
        self.work_dir = Path(work_dir)
        self.data_dir = Path(data_dir) if data_dir else self.work_dir / "data"
        self.grace = grace
        self._lock = threading.Lock()
        self._containers: dict[str, _Process] = {}

    def log_path(self, config: dict[str, Any]) -> Path:
        job_id = str(config.get("labels", {}).get("job_id", "unknown"))
        return self.work_dir / "logs" / job_id / f"{config['container_name']}.log"

    def create(self, config: dict[str, Any]) -> dict[str, Any]:
        name = _checked_name(config)
        with self._lock:
            if name in self._containers:
                raise RuntimeFailure(f"container {name} already exists")
            env = {k: v for k, v in os.environ.items() if not k.startswith(_INHERITED_PREFIXES)}
            env.update({str(k): str(v) for k, v in (config.get("environments") or {}).items()})
            env[CONTAINER_MARKER] = name
            log = self.log_path(config)
            log.parent.mkdir(parents=True, exist_ok=True)
            self.data_dir.mkdir(parents=True, exist_ok=True)
            with open(log, "ab") as out:
                try:
                    popen = subprocess.Popen(["/bin/sh", "-c", str(config.get("command", ""))], env=env,
                                             cwd=self.data_dir, stdin=subprocess.DEVNULL, stdout=out,
                                             stderr=subprocess.STDOUT, start_new_session=True)
                except OSError as exc:
                    raise RuntimeFailure(f"cannot start {name}: {exc}") from None
            self._containers[name] = _Process(config=config, popen=popen, log=log, started=_now())
        return self.inspect(name)

    def _poll(self, item: _Process) -> None:
        if item.exit_code is None:
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
                     "ExitCode": 0 if running else item.exit_code, "Pid": item.popen.pid if running else 0,
                     "StartedAt": item.started, "FinishedAt": item.finished or "0001-01-01T00:00:00Z"}
            return {"Name": name, "State": state, "Config": {"Labels": dict(item.config.get("labels") or {})}}

    def names(self) -> list[str]:
        with self._lock:
            return list(self._containers)

    def stop(self, name: str) -> None:
        with self._lock:
            item = self._containers.get(name)
        if item is None:
            raise RuntimeFailure(f"no container {name}")
        _terminate(item.popen, self.grace)
        self.inspect(name)

    def remove(self, name: str) -> None:
        self.stop(name)
        with self._lock:
            self._containers.pop(name, None)

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


def _checked_name(config: dict[str, Any]) -> str:
    name = config.get("container_name")
    if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
        raise RuntimeFailure("create config: container_name must be a plain name")
    return name


class DockerRuntime:
    """Containers as MARO runs them, through the docker CLI (used when `docker info` answers)."""

    kind = "docker"

    def __init__(self, data_dir: Path, grace: float = 10.0):
        self.data_dir = Path(data_dir)
        self.grace = grace

    @staticmethod
    def available() -> bool:
        try:
            return subprocess.run(["docker", "info"], capture_output=True, timeout=10).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False

    def _docker(self, *args: str) -> str:
        done = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeFailure(f"docker {args[0]}: {done.stderr.strip()[:300]}")
        return done.stdout

    def create(self, config: dict[str, Any]) -> dict[str, Any]:
        name = _checked_name(config)
        argv = ["run", "-d", "--cpus", str(config.get("cpu", 1)), "--memory", str(config.get("memory", "0m")),
                "--name", name, "--network", "host"]
        if config.get("gpu"):
            argv += ["--gpus", str(config["gpu"])]
        for volume in config.get("volumes") or []:
            target = str(volume).rsplit(":", 1)[-1]
            argv += ["-v", f"{self.data_dir}:{target}"]
        for key, value in (config.get("environments") or {}).items():
            argv += ["-e", f"{key}={value}"]
        for key, value in (config.get("labels") or {}).items():
            argv += ["-l", f"{key}={value}"]
        # MARO formats `... IMAGE COMMAND` into one shell line: the shell splits COMMAND into the container's argv.
        argv += [str(config["image_name"]), *shlex.split(str(config.get("command", "")))]
        self._docker(*argv)
        return self.inspect(name)

    def inspect(self, name: str) -> dict[str, Any]:
        (details,) = json.loads(self._docker("inspect", name))
        return {"Name": name, "State": details["State"], "Config": {"Labels": details["Config"].get("Labels") or {}}}

    def names(self) -> list[str]:
        out = self._docker("ps", "-a", "--filter", "label=container_name", "--format", "{{.Names}}")
        return [line for line in out.splitlines() if line]

    def stop(self, name: str) -> None:
        self._docker("stop", "-t", str(int(self.grace)), name)

    def remove(self, name: str) -> None:
        self._docker("rm", "-f", name)

    def logs(self, name: str) -> bytes:
        done = subprocess.run(["docker", "logs", name], capture_output=True, timeout=60)
        return done.stdout + done.stderr

    def stop_all(self) -> None:
        """Containers outlive a docker node agent, as in MARO."""

