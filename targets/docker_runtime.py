"""A docker engine as paictl's runtimes use it: the local target's docker runtime and a Grass node's containers.

Two ways in, each used where it is cheaper (measured in benchmarks/local_docker.py):
- control calls (is an engine there, is an image present, pull it, list, inspect and remove containers) go to the
  engine's HTTP API over its socket with the standard library (`Engine`): a call is one request, ~1 ms, against
  ~40 ms to start the docker CLI for it;
- a task's container is run by the docker CLI (`run_argv`), `docker run` in the foreground: the CLI process
  *is* the task for the runner that starts it. It attaches the container's output to its own (so a task's log
  is written as it comes, with no copying loop in paictl), exits with the container's exit code (125-127 when
  docker itself failed, as on a cluster), forwards SIGTERM to the container (`--sig-proxy`, the default), and with
  `--rm` returns only once the container is removed. Doing the same over the API would need a reader per
  container streaming its attach socket to the log, for no gain: the engine's own work (create, mount, start,
  wait, remove: ~200 ms) dominates either way.

A Grass node's docker runtime (targets/grass/containers.py `DockerRuntime`) runs MARO's create config with
`run_argv(..., detach=True, remove=False, init=False, log_driver="json-file")` and does everything else through
`Engine`: inspecting each container the node agent reports in its loop costs ~1 ms instead of a docker CLI process.

Only the standard library: the local run's watchdog loads this file by path (`python -I -S`, no site-packages)
to remove a run's containers when paictl itself was killed.

`DOCKER_HOST` as the docker CLI reads it: `unix:///path` (default `unix:///var/run/docker.sock`) or
`tcp://host:port` (TLS with `DOCKER_TLS_VERIFY` and `DOCKER_CERT_PATH`, as the CLI). An `ssh://` host or a docker
context is not followed: `engine_address` refuses it with one line.
"""

from __future__ import annotations

import dataclasses
import http.client
import json
import os
import socket
import urllib.parse
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence

DEFAULT_HOST = "unix:///var/run/docker.sock"
#: The API version paictl speaks: docker 17.06's, so every engine since answers (newer ones accept older versions).
API_VERSION = "v1.30"


def _shown(url: str) -> str:
    """An engine address as messages show it: paictl.errors.display_url (no user:password, no query values). The
    watchdog loads this module by path without paictl importable, and prints nothing."""
    try:
        from paictl.errors import display_url
    except ImportError:
        return "(the engine)"
    return display_url(url)


class EngineError(Exception):
    """The engine refused a call or cannot be reached; `status` is the HTTP status (None: no answer)."""

    def __init__(self, message: str, status: Optional[int] = None):
        super().__init__(message)
        self.status = status


@dataclasses.dataclass(frozen=True, kw_only=True)
class Address:
    """Where the engine listens, as `DOCKER_HOST` says."""
    url: str
    socket_path: Optional[str] = None  # unix
    host: Optional[str] = None         # tcp
    port: Optional[int] = None
    tls: Optional[tuple[str, str, str]] = None  # (ca, cert, key) with DOCKER_TLS_VERIFY


def engine_address(environ: Mapping[str, str] = os.environ) -> Address:
    """The engine `DOCKER_HOST` names (the default socket without it); EngineError for one paictl cannot reach."""
    url = environ.get("DOCKER_HOST") or DEFAULT_HOST
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme == "unix":
        return Address(url=url, socket_path=parsed.path or "/var/run/docker.sock")
    if parsed.scheme in ("tcp", "http", "https"):
        tls = None
        if environ.get("DOCKER_TLS_VERIFY") or parsed.scheme == "https":
            certs = environ.get("DOCKER_CERT_PATH") or os.path.expanduser("~/.docker")
            tls = tuple(os.path.join(certs, name) for name in ("ca.pem", "cert.pem", "key.pem"))
        return Address(url=url, host=parsed.hostname or "localhost", port=parsed.port or (2376 if tls else 2375),
                       tls=tls)  # type: ignore[arg-type]
    raise EngineError(f"DOCKER_HOST={_shown(url)}: paictl reaches docker engines on unix:// or tcp:// "
                      "addresses only")


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: Optional[float]):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self._path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


class Engine:
    """The engine's HTTP API: one connection per call (the engine closes idle ones; a call is ~1 ms)."""

    def __init__(self, address: Optional[Address] = None, *, timeout: float = 30.0):
        self.address = address if address is not None else engine_address()
        self.timeout = timeout

    def _connection(self, timeout: Optional[float]) -> http.client.HTTPConnection:
        if self.address.socket_path is not None:
            return _UnixConnection(self.address.socket_path, timeout)
        if self.address.tls is not None:
            import ssl

            ca, cert, key = self.address.tls
            context = ssl.create_default_context(cafile=ca)
            context.load_cert_chain(cert, key)
            return http.client.HTTPSConnection(self.address.host, self.address.port, timeout=timeout,
                                               context=context)
        return http.client.HTTPConnection(self.address.host, self.address.port, timeout=timeout)

    def _open(self, method: str, path: str, *, query: Optional[Mapping[str, Any]] = None,
              body: Any = None, timeout: Optional[float] = None) -> tuple[http.client.HTTPConnection,
                                                                          http.client.HTTPResponse]:
        target = f"/{API_VERSION}{path}" + (f"?{urllib.parse.urlencode(query)}" if query else "")
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Host": "docker"}  # what the docker CLI sends over a socket
        if data is not None:
            headers["Content-Type"] = "application/json"
        connection = self._connection(self.timeout if timeout is None else timeout)
        try:
            connection.request(method, target, body=data, headers=headers)
            return connection, connection.getresponse()
        except (OSError, http.client.HTTPException) as error:
            connection.close()
            raise EngineError(f"no docker engine answers at {_shown(self.address.url)} "
                              f"({_reason(error)})") from None

    def call(self, method: str, path: str, *, query: Optional[Mapping[str, Any]] = None, body: Any = None,
             timeout: Optional[float] = None, missing_ok: bool = False) -> Any:
        """One API call: its decoded JSON answer (None for an empty one, or a 404 when `missing_ok`)."""
        connection, response = self._open(method, path, query=query, body=body, timeout=timeout)
        try:
            data = response.read()
        except (OSError, http.client.HTTPException) as error:
            raise EngineError(f"the docker engine at {_shown(self.address.url)} broke off "
                              f"({_reason(error)})") from None
        finally:
            connection.close()
        if response.status == 404 and missing_ok:
            return None
        if response.status >= 400:
            raise EngineError(_message(data) or f"HTTP {response.status}", response.status)
        if not data:
            return None
        try:
            return json.loads(data)
        except ValueError:
            return data.decode(errors="replace")

    # -- the engine ---------------------------------------------------------------------------------------------

    def ping(self, timeout: float = 2.0) -> bool:
        """Whether an engine answers (within `timeout` seconds)."""
        try:
            connection, response = self._open("GET", "/_ping", timeout=timeout)
        except EngineError:
            return False
        try:
            response.read()
            return response.status == 200
        except (OSError, http.client.HTTPException):
            return False
        finally:
            connection.close()

    def info(self) -> dict[str, Any]:
        return self.call("GET", "/info")

    # -- images -------------------------------------------------------------------------------------------------

    def image(self, reference: str) -> Optional[dict[str, Any]]:
        """The image's inspect record, or None when the engine does not have it."""
        return self.call("GET", f"/images/{urllib.parse.quote(reference, safe='/:@')}/json", missing_ok=True)

    def pull(self, reference: str, progress: Optional[Callable[[dict[str, Any]], None]] = None) -> None:
        """Pull `reference` (`name[:tag|@digest]`, latest when untagged), calling `progress` with each of the
        engine's progress records ({"status", "id", "progressDetail": {"current", "total"}}); EngineError with
        the engine's message when it cannot."""
        name, tag = split_reference(reference)
        query = {"fromImage": name, "tag": tag} if tag else {"fromImage": name}
        connection, response = self._open("POST", "/images/create", query=query, timeout=None)
        try:
            if response.status >= 400:
                raise EngineError(_message(response.read()) or f"HTTP {response.status}", response.status)
            for record in _json_lines(response):
                if "error" in record:  # a failure after the stream began (an unknown tag, a lost registry)
                    raise EngineError(str(record.get("error") or record.get("errorDetail")))
                if progress is not None:
                    progress(record)
        except (OSError, http.client.HTTPException) as error:
            raise EngineError(f"the docker engine broke off the pull ({_reason(error)})") from None
        finally:
            connection.close()
        if self.image(reference) is None:
            raise EngineError(f"the engine reported no error, yet has no image {reference} after pulling it")

    # -- containers ---------------------------------------------------------------------------------------------

    def containers(self, labels: Mapping[str, Optional[str]]) -> list[dict[str, Any]]:
        """Every container (running or not) carrying all of `labels` (a None value: the label, whatever its value)."""
        filters = json.dumps({"label": [key if value is None else f"{key}={value}" for key, value in labels.items()]})
        return self.call("GET", "/containers/json", query={"all": "1", "filters": filters}) or []

    def inspect(self, name: str) -> Optional[dict[str, Any]]:
        return self.call("GET", f"/containers/{urllib.parse.quote(name)}/json", missing_ok=True)

    def stop(self, name: str, grace: float) -> None:
        """SIGTERM to the container's main process, SIGKILL after `grace` seconds (`docker stop -t`)."""
        try:
            self.call("POST", f"/containers/{urllib.parse.quote(name)}/stop", query={"t": str(int(grace))},
                      timeout=grace + 60)
        except EngineError as error:
            if error.status != 304:  # already stopped
                raise

    def logs(self, name: str) -> bytes:
        """What the container wrote (stdout and stderr interleaved), from a json-file or local log driver."""
        connection, response = self._open("GET", f"/containers/{urllib.parse.quote(name)}/logs",
                                          query={"stdout": "1", "stderr": "1"}, timeout=60)
        try:
            data = response.read()
        finally:
            connection.close()
        if response.status >= 400:
            raise EngineError(_message(data) or f"HTTP {response.status}", response.status)
        return _demultiplexed(data)

    def remove(self, name: str) -> bool:
        """Kill and remove the container (with its anonymous volumes); False when there was none."""
        try:
            self.call("DELETE", f"/containers/{urllib.parse.quote(name)}", query={"force": "1", "v": "1"},
                      timeout=60)
        except EngineError as error:
            if error.status == 404:
                return False
            if error.status == 409 and "already in progress" in str(error):  # --rm got there first
                return True
            raise
        return True

    def remove_labelled(self, labels: Mapping[str, str]) -> list[str]:
        """Remove every container carrying `labels`; the names removed."""
        removed = []
        for container in self.containers(labels):
            if self.remove(container["Id"]):
                removed.append(container["Names"][0].lstrip("/") if container.get("Names") else container["Id"])
        return removed


# -- running a container with the CLI ------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True, kw_only=True)
class ContainerSpec:
    """A container as `docker run` starts it. Environment values in `env_from_client` are not on the command
    line: `-e NAME` makes the CLI copy them from its own environment (the caller puts them there)."""
    image: str
    command: Sequence[str]
    name: str
    labels: Mapping[str, str] = dataclasses.field(default_factory=dict)
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    env_from_client: Sequence[str] = ()
    cpus: Optional[float] = None
    memory_mb: Optional[int] = None
    gpus: Optional[int] = None
    shm_mb: Optional[int] = None
    #: (host path, container path, read only)
    mounts: Sequence[tuple[str, str, bool]] = ()
    network: str = "host"
    workdir: Optional[str] = None
    #: docker-init (tini) as PID 1: it forwards SIGTERM to the command and reaps orphans, as a pod's init does.
    init: bool = True
    remove: bool = True
    detach: bool = False
    log_driver: Optional[str] = None
    extra: Sequence[str] = ()


def run_argv(spec: ContainerSpec, docker: str = "docker") -> list[str]:
    """The `docker run` command line for `spec` (the CLI's options, in the order `docker run --help` lists)."""
    argv = [docker, "run"]
    if spec.detach:
        argv.append("--detach")
    if spec.remove:
        argv.append("--rm")
    if spec.init:
        argv.append("--init")
    argv += ["--name", spec.name, "--network", spec.network]
    if spec.cpus is not None and spec.cpus > 0:
        argv += ["--cpus", f"{spec.cpus:g}"]
    if spec.memory_mb is not None and spec.memory_mb > 0:
        argv += ["--memory", f"{spec.memory_mb}m"]
    if spec.gpus:
        argv += ["--gpus", str(spec.gpus)]
    if spec.shm_mb:
        argv += ["--shm-size", f"{spec.shm_mb}m"]
    if spec.workdir:
        argv += ["--workdir", spec.workdir]
    if spec.log_driver:
        argv += ["--log-driver", spec.log_driver]
    for host, target, read_only in spec.mounts:
        argv += ["--mount", _mount_value(host, target, read_only)]
    for key, value in spec.labels.items():
        argv += ["--label", f"{key}={value}"]
    for key, value in spec.env.items():
        argv += ["--env", f"{key}={value}"]
    for key in spec.env_from_client:
        argv += ["--env", key]
    argv += [*spec.extra, spec.image, *spec.command]
    return argv


def _mount_value(host: str, target: str, read_only: bool) -> str:
    """`--mount`'s value for a bind. The CLI reads it as one CSV record (encoding/csv), so a field holding a comma
    or a quote is quoted: a path with a comma stays one path, never an extra mount option."""
    fields = ["type=bind", f"source={host}", f"target={target}"] + (["readonly"] if read_only else [])
    return ",".join('"' + field.replace('"', '""') + '"' if "," in field or '"' in field else field
                    for field in fields)


def split_reference(reference: str) -> tuple[str, str]:
    """`name[:tag][@digest]` -> (name, tag or digest); an untagged name means `latest`, as `docker pull` says."""
    if "@" in reference:
        name, digest = reference.split("@", 1)
        return name, digest
    slash = reference.rfind("/")
    colon = reference.rfind(":")
    if colon > slash:
        return reference[:colon], reference[colon + 1:]
    return reference, "latest"


def gpu_devices() -> int:
    """How many NVIDIA GPUs this machine shows (/dev/nvidia<N>)."""
    try:
        return sum(1 for name in os.listdir("/dev") if name.startswith("nvidia") and name[6:].isdigit())
    except OSError:
        return 0


def _json_lines(response: http.client.HTTPResponse) -> Iterator[dict[str, Any]]:
    decoder = json.JSONDecoder()
    pending = ""
    while True:
        chunk = response.read1(65536) if hasattr(response, "read1") else response.read(65536)
        if not chunk:
            break
        pending += chunk.decode("utf-8", errors="replace")
        while True:
            pending = pending.lstrip()
            if not pending:
                break
            try:
                record, end = decoder.raw_decode(pending)
            except ValueError:
                break
            pending = pending[end:]
            if isinstance(record, dict):
                yield record


def _demultiplexed(data: bytes) -> bytes:
    """The payload of docker's multiplexed stream (8-byte frame headers: stream, 0, 0, 0, big-endian size); a
    container with a TTY sends it raw."""
    if len(data) < 8 or data[0] not in (0, 1, 2) or data[1:4] != b"\0\0\0":
        return data
    out, position = [], 0
    while position + 8 <= len(data):
        size = int.from_bytes(data[position + 4:position + 8], "big")
        out.append(data[position + 8:position + 8 + size])
        position += 8 + size
    return b"".join(out)


def _message(data: bytes) -> str:
    try:
        return str(json.loads(data).get("message", "")).strip()
    except (ValueError, AttributeError):
        return data.decode(errors="replace").strip()[:300]


def _reason(error: BaseException) -> str:
    return getattr(error, "strerror", None) or str(error) or type(error).__name__
