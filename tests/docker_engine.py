"""A real docker engine for tests: `dockerd` on a private socket, and images made with `docker import`.

Tests that run containers take the `docker_engine` fixture (import it into the test module or a conftest.py:
`from docker_engine import docker_engine  # noqa: F401`). It starts Debian's dockerd (../shared/reference/peers.md
D) once per test session, whoever asks first, with everything of its own in one temporary folder: the API socket,
`--data-root`, `--exec-root` (containerd's sockets and state), `--pidfile` and its log. No bridge, no iptables
rules and no userland proxy, so several engines (several test sessions, other helpers' tests) run side by side on
one machine without touching each other or the host's network; containers use the host network, as OpenPAI's pods
and MARO's containers do. Point a client at it with `DOCKER_HOST=engine.host` (`engine.env()`).

No registry is reachable, so images are made here: `engine.base_image()` imports a root filesystem assembled from
this machine's own programs (docker_rootfs.py), built once per machine. `engine.image(tag, files)` adds files
to it (`docker create` + `docker cp` + `docker commit`), e.g. a file that only the image has.

`docker_registry` adds a real registry on 127.0.0.1 (Debian's docker-registry), to which `registry.push` sends an
image and removes it from the engine, so that pulling it is a real pull.

At the end of the session every container is removed, dockerd gets SIGTERM (SIGKILL after 30 s), any process still
running from its folder (containerd, shims) is killed, its mounts are unmounted and the folder removed: nothing is
left (`engine.leftovers()` says what would be).

Without dockerd or the docker client, or when not root (dockerd needs root), the fixture skips; under CI (the CI
variable set) it fails instead, since CI provisions docker (.ci/provision-docker.sh).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import tarfile
import tempfile
import threading
import time
from pathlib import Path
from typing import Iterator, Mapping, Optional

import pytest

from docker_rootfs import base_rootfs

_STOP_SECONDS = 30.0
BASE_IMAGE = "paictl-test/base:1"


def _fail_or_skip(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"CI provisions a docker engine (.ci/provision-docker.sh), but {reason}", pytrace=False)
    pytest.skip(reason)


class DockerEngine:
    """A running dockerd of this test session (see the module docstring)."""

    def __init__(self, root: Path):
        self.root = root
        self.socket = root / "docker.sock"
        self.host = f"unix://{self.socket}"
        self.process: Optional[subprocess.Popen] = None
        #: The client, found once: a test may change PATH (the harness must still reach its engine).
        self.client = shutil.which("docker") or "docker"
        self._images: dict[str, str] = {}
        self._lock = threading.Lock()

    # -- life cycle ---------------------------------------------------------------------------------------------

    def start(self, timeout: float = 60.0) -> None:
        dockerd = shutil.which("dockerd") or shutil.which("dockerd", path="/usr/sbin:/usr/bin")
        assert dockerd is not None
        log = open(self.root / "dockerd.log", "wb")
        self.process = subprocess.Popen(
            [dockerd, "--host", self.host, "--data-root", str(self.root / "data"),
             "--exec-root", str(self.root / "exec"), "--pidfile", str(self.root / "docker.pid"),
             "--bridge=none", "--iptables=false", "--ip6tables=false", "--ip-masq=false",
             "--userland-proxy=false", "--log-level=warn"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            if self.socket.exists() and self.docker("version", check=False, timeout=10).returncode == 0:
                return
            time.sleep(0.1)
        tail = (self.root / "dockerd.log").read_text(errors="replace")[-2000:]
        self.stop()
        raise RuntimeError(f"dockerd did not answer on {self.socket} within {timeout:.0f} s:\n{tail}")

    def halt(self, timeout: float = _STOP_SECONDS) -> None:
        """Stop dockerd as `systemctl stop docker` does (SIGTERM: it stops every container, which ends with 143,
        and exits), keeping its data: `start()` brings the same engine back, its stopped containers with it."""
        assert self.process is not None
        self._terminate(timeout)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(b"dockerd" not in _cmdline(pid) for pid in self._own_processes()):
            time.sleep(0.1)  # containerd and the shims end after dockerd
        self.socket.unlink(missing_ok=True)

    def _terminate(self, timeout: float) -> None:
        """SIGTERM to dockerd, SIGKILL after `timeout`."""
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def stop(self) -> None:
        """Remove every container, stop dockerd and whatever it started, unmount and delete its folder."""
        if self.process is not None and self.process.poll() is None:
            ids = self.docker("ps", "-aq", check=False, timeout=60).stdout.split()
            if ids:
                self.docker("rm", "-f", *ids, check=False, timeout=120)
            self._terminate(_STOP_SECONDS)
        for pid in self._own_processes():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for mount in sorted(self._own_mounts(), key=len, reverse=True):
            subprocess.run(["umount", "-l", mount], capture_output=True)
        shutil.rmtree(self.root, ignore_errors=True)

    def _own_processes(self) -> list[int]:
        """Processes whose command line names this engine's folder (dockerd, containerd, shims)."""
        found = []
        marker = str(self.root).encode()
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) != os.getpid():
                try:
                    with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                        if marker in cmdline.read():
                            found.append(int(entry))
                except OSError:
                    pass
        return found

    def _own_mounts(self) -> list[str]:
        prefix = str(self.root) + "/"
        with open("/proc/self/mountinfo") as mounts:
            points = [line.split()[4] for line in mounts]
        return [point for point in points if point.startswith(prefix)]

    def leftovers(self) -> dict[str, list]:
        """What this engine still holds: containers (any state), and its own processes (should be dockerd and
        containerd only while it runs)."""
        ids = self.docker("ps", "-aq", check=False).stdout.split()
        return {"containers": ids, "processes": self._own_processes()}

    # -- the client ---------------------------------------------------------------------------------------------

    def env(self, base: Optional[Mapping[str, str]] = None) -> dict[str, str]:
        """An environment whose docker client (and paictl) talk to this engine."""
        env = dict(os.environ if base is None else base)
        env["DOCKER_HOST"] = self.host
        env.pop("DOCKER_CONTEXT", None)
        return env

    def docker(self, *args: str, input: Optional[bytes] = None, check: bool = True,
               timeout: float = 120) -> subprocess.CompletedProcess:
        """The docker CLI against this engine; its output as text (stdout, stderr)."""
        done = subprocess.run([self.client, *args], input=input, capture_output=True, timeout=timeout,
                              env=self.env())
        result = subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(errors="replace"),
                                             done.stderr.decode(errors="replace"))
        if check and done.returncode != 0:
            raise AssertionError(f"docker {' '.join(args[:3])} failed ({done.returncode}): {result.stderr}")
        return result

    def containers(self, *filters: str) -> list[dict]:
        """`docker ps -a` (optionally `--filter`ed), one dict per container (ID, Names, State, Labels...)."""
        args = ["ps", "-a", "--no-trunc", "--format", "{{json .}}"]
        for item in filters:
            args += ["--filter", item]
        return [json.loads(line) for line in self.docker(*args).stdout.splitlines() if line.strip()]

    # -- images -------------------------------------------------------------------------------------------------

    def base_image(self) -> str:
        """The base image (bash, coreutils, python3), imported once per session."""
        with self._lock:
            if BASE_IMAGE not in self._images:
                tarball = base_rootfs()
                with open(tarball, "rb") as data:
                    self.docker("import", "--change", "ENV PATH=/usr/local/bin:/usr/bin:/bin",
                                "--change", "WORKDIR /", "-", BASE_IMAGE, input=data.read(), timeout=300)
                self._images[BASE_IMAGE] = BASE_IMAGE
            return BASE_IMAGE

    def image(self, tag: str, files: Optional[Mapping[str, bytes | str]] = None, *,
              workdir: Optional[str] = None) -> str:
        """The base image plus `files` (absolute path -> content; mode 0755 for a path under a bin folder, else
        0644), committed as `tag`; `workdir` sets its WORKDIR (created)."""
        base = self.base_image()
        with self._lock:
            if tag in self._images:
                return tag
            container = self.docker("create", base, "true").stdout.strip()
            try:
                if files or workdir:
                    self.docker("cp", "-", f"{container}:/", input=_tar_of(files or {}, workdir))
                changes = ["--change", f"WORKDIR {workdir}"] if workdir else []
                self.docker("commit", *changes, container, tag)
            finally:
                self.docker("rm", "-f", container, check=False)
            self._images[tag] = tag
            return tag


def _tar_of(files: Mapping[str, bytes | str], workdir: Optional[str]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        folders = {str(Path(path).parent) for path in files} | ({workdir} if workdir else set())
        for folder in sorted(folders):
            parts = Path(folder).parts[1:]
            for depth in range(1, len(parts) + 1):
                info = tarfile.TarInfo("/".join(parts[:depth]))
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
        for path, content in files.items():
            data = content.encode() if isinstance(content, str) else content
            info = tarfile.TarInfo(path.lstrip("/"))
            info.size, info.mode = len(data), 0o755 if "/bin/" in path else 0o644
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


# -- a registry -------------------------------------------------------------------------------------------------

class Registry:
    """Debian's docker-registry (the distribution project's registry) on 127.0.0.1, its storage in a temporary
    folder: pulls from it are real pulls (a loopback registry is plain HTTP to every engine, as docker allows)."""

    def __init__(self, root: Path):
        self.root = root
        self.process: Optional[subprocess.Popen] = None
        self.address = ""

    def start(self, timeout: float = 30.0) -> None:
        import socket
        import urllib.request

        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
        self.address = f"127.0.0.1:{port}"
        config = self.root / "config.yml"
        config.write_text(f"version: 0.1\nlog: {{level: error}}\nstorage:\n  filesystem: {{rootdirectory: "
                          f"{self.root / 'data'}}}\n  delete: {{enabled: true}}\nhttp: {{addr: '{self.address}'}}\n")
        binary = shutil.which("docker-registry") or shutil.which("registry")
        log = open(self.root / "registry.log", "wb")
        self.process = subprocess.Popen([binary, "serve", str(config)], stdin=subprocess.DEVNULL, stdout=log,
                                        stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                with urllib.request.urlopen(f"http://{self.address}/v2/", timeout=2):
                    return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"docker-registry did not answer on {self.address}: "
                           f"{(self.root / 'registry.log').read_text(errors='replace')[-1000:]}")

    def push(self, engine: DockerEngine, image: str, name: str) -> str:
        """`image` pushed as `<registry>/<name>`, then removed from the engine (so a run has to pull it)."""
        remote = f"{self.address}/{name}"
        engine.docker("tag", image, remote)
        engine.docker("push", remote, timeout=300)
        engine.docker("rmi", remote)
        return remote

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="session")
def docker_registry(docker_engine) -> Iterator[Registry]:
    """A registry on 127.0.0.1 for this session (Debian's docker-registry; skipped without it, except under CI)."""
    if shutil.which("docker-registry") is None and shutil.which("registry") is None:
        _fail_or_skip("docker-registry is not installed (Debian: apt-get install docker-registry)")
    registry = Registry(Path(tempfile.mkdtemp(prefix="paictl-registry-")))
    try:
        registry.start()
    except RuntimeError as error:
        _fail_or_skip(str(error))
    try:
        yield registry
    finally:
        registry.stop()


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return cmdline.read()
    except OSError:
        return b""


# -- the fixture ------------------------------------------------------------------------------------------------

_shared: dict[str, object] = {"engine": None, "users": 0}


def _missing() -> Optional[str]:
    if shutil.which("dockerd") is None and shutil.which("dockerd", path="/usr/sbin:/usr/bin") is None:
        return "dockerd is not installed (Debian: apt-get install docker.io)"
    if shutil.which("docker") is None:
        return "the docker client is not installed (Debian: apt-get install docker.io)"
    if os.geteuid() != 0:
        return "dockerd needs root, and the tests do not run as root"
    return None


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[DockerEngine]:
    """The session's docker engine (started on first use; shared by every module that imports this fixture)."""
    reason = _missing()
    if reason is not None:
        _fail_or_skip(reason)
    if _shared["engine"] is None:
        # A short path: the socket's path must fit in sun_path (108 bytes), containerd's sockets are below it too.
        engine = DockerEngine(Path(tempfile.mkdtemp(prefix="pdk-", dir="/tmp")))
        try:
            engine.start()
        except RuntimeError as error:
            _fail_or_skip(str(error))
        _shared["engine"] = engine
    _shared["users"] = int(_shared["users"]) + 1  # type: ignore[call-overload]
    try:
        yield _shared["engine"]  # type: ignore[misc]
    finally:
        _shared["users"] = int(_shared["users"]) - 1  # type: ignore[call-overload]
        if _shared["users"] == 0:
            engine = _shared["engine"]
            _shared["engine"] = None
            engine.stop()  # type: ignore[union-attr]


@pytest.fixture
def private_docker_engine() -> Iterator[DockerEngine]:
    """An engine of the test's own, for a test that stops and restarts it (the session's is shared)."""
    reason = _missing()
    if reason is not None:
        _fail_or_skip(reason)
    engine = DockerEngine(Path(tempfile.mkdtemp(prefix="pdp-", dir="/tmp")))
    try:
        engine.start()
    except RuntimeError as error:
        _fail_or_skip(str(error))
    try:
        yield engine
    finally:
        engine.stop()


@pytest.fixture(autouse=True)
def no_docker_engine(tmp_path, monkeypatch):
    """For a module that imports it (autouse there): a DOCKER_HOST where no engine answers, so that local runs take
    the host runtime whatever runs on this machine. A test of the docker runtime sets DOCKER_HOST=engine.host."""
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    monkeypatch.delenv("DOCKER_CONTEXT", raising=False)
