"""What a local task gets when it starts: free loopback ports, the runtime's PAI_* variables, its secrets.

This is openpai-runtime's `genenv` (openpai.md d.1) for a machine where every task shares one IP: all tasks are
on 127.0.0.1, so each *instance* needs its own ports (on a cluster each pod has its own IP and ports are per role).
Ports are bind-probed when a job attempt starts (`allocate_ports`): every port is bound at once, so none is handed
out twice and none is in use by another process, then released just before the tasks start. Any process could
still take one in that instant; a task that fails to bind then fails like a port conflict on a cluster (which
OpenPAI's runtime reports as 253 and retries).

Peers are known from the start (every task is on 127.0.0.1), so `PAI_HOST_IP_<role>_<i>` and
`PAI_TASK_ROLE_<role>_HOST_LIST` are set with or without gang allocation; OpenPAI sets them once the IPs are known.
"""

from __future__ import annotations

import os
import socket
from typing import Any, Mapping


Ports = dict[str, list[dict[str, list[int]]]]  # task role -> index -> label -> ports

#: Every process of a run carries this variable, so a run's processes can be found (and tests can prove none
#: survives) whatever happened to paictl.
from paictl.targets.local.procs import RUN_MARKER  # noqa: E402 - one name for the run marker
#: Variables a task must not inherit from the shell that ran paictl: the run's own values replace them.
_INHERITED_PREFIXES = ("PAI_", "FC_", RUN_MARKER)
_SECRET_COMMANDS = "PAICTL_TASK_COMMANDS"


def allocate_ports(plan: Mapping[str, Any]) -> Ports:
    """Free ports for every instance's requests, all distinct, probed by binding them on every IPv4 address."""
    probes: list[socket.socket] = []
    try:
        ports: Ports = {}
        for role in plan["spec"]["taskRoles"]:
            ports[role["name"]] = []
            for _ in range(role["instances"]):
                labels: dict[str, list[int]] = {}
                for label, count in role["ports"].items():
                    labels[label] = []
                    for _ in range(count):
                        probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                        probes.append(probe)
                        probe.bind(("", 0))
                        labels[label].append(probe.getsockname()[1])
                ports[role["name"]].append(labels)
        return ports
    finally:
        for probe in probes:
            probe.close()


def _joined(numbers: list[int]) -> str:
    return ",".join(map(str, numbers))


def peer_env(plan: Mapping[str, Any], ports: Ports) -> dict[str, str]:
    """The variables about every instance (hosts and ports), the same in every task of the attempt."""
    host = plan["spec"]["hostIP"]
    env: dict[str, str] = {}
    instances = []
    for role in plan["spec"]["taskRoles"]:
        name = role["frameworkName"]
        hosts = []
        for index, labels in enumerate(ports[role["name"]]):
            instances.append(f"{name}:{index}")
            env[f"PAI_HOST_IP_{name}_{index}"] = host
            hosts.append(f"{host}:{labels['http'][0]}" if labels.get("http") else host)
            for label, numbers in labels.items():
                env[f"PAI_PORT_LIST_{name}_{index}_{label}"] = env[f"PAI_{name}_{index}_{label}_PORT"] = \
                    _joined(numbers)
        env[f"PAI_TASK_ROLE_{name}_HOST_LIST"] = ",".join(hosts)
    env["PAI_TASK_ROLE_INSTANCES"] = ",".join(instances)
    return env


def attempt_env(plan: Mapping[str, Any], peers: Mapping[str, str], *, inherit: bool = True) -> dict[str, str]:
    """What every task of a job attempt shares: the host's environment (minus PAI_*/FC_*; not for a container,
    `inherit=False`: it has its image's), the plan's variables and every instance's host and port variables. Built
    once per attempt: with 200 instances the peers alone are ~1,400 variables, and rebuilding them for each task was
    most of a task's start-up cost."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_INHERITED_PREFIXES)} if inherit else {}
    env.update(plan["spec"]["env"])
    env.update(peers)
    return env


def task_env(plan: Mapping[str, Any], role: Mapping[str, Any], index: int, *, peers: Mapping[str, str],
             own_ports: Mapping[str, list[int]], work_dir: str, job_attempt: int, task_attempt: int,
             run_id: str, shared: Mapping[str, str] | None = None) -> dict[str, str]:
    """The whole environment of one task attempt: the host's (minus PAI_*/FC_*), then the runtime contract.

    `shared` is `attempt_env(plan, peers)` when the caller keeps it for the attempt (the runner does).
    """
    # A task's own variables never share a name with a peer's (those end in _PORT, _HOST_LIST or carry an
    # index), so applying them after the peers gives the same values as before them.
    return {**(shared if shared is not None else attempt_env(plan, peers)),
            **task_own_env(plan, role, index, own_ports=own_ports, work_dir=work_dir, job_attempt=job_attempt,
                           task_attempt=task_attempt, run_id=run_id)}


def task_own_env(plan: Mapping[str, Any], role: Mapping[str, Any], index: int, *, own_ports: Mapping[str, list[int]],
                 work_dir: str, job_attempt: int, task_attempt: int, run_id: str) -> dict[str, str]:
    """What `task_env` sets over the attempt's shared environment: the task's own variables and the contract's.
    The runner encodes only these per task, the ~1,400 shared ones once per attempt."""
    host = plan["spec"]["hostIP"]
    env = dict(role["tasks"][index]["env"])
    first = {label: str(numbers[0]) if numbers else "" for label, numbers in own_ports.items()}
    env.update({
        "PAI_WORK_DIR": work_dir,
        "PAI_CURRENT_CONTAINER_IP": host, "PAI_CONTAINER_HOST_IP": host,
        "PAI_CURRENT_CONTAINER_PORT": first.get("http", ""), "PAI_CONTAINER_HOST_PORT": first.get("http", ""),
        "PAI_CONTAINER_SSH_PORT": first.get("ssh", ""),
        "PAI_CONTAINER_HOST_PORT_LIST": ";".join(f"{label}:{_joined(n)}" for label, n in own_ports.items()),
        "FC_FRAMEWORK_ATTEMPT_ID": str(job_attempt),
        "FC_TASK_ATTEMPT_ID": str(task_attempt),
        RUN_MARKER: run_id,
    })
    env.update({f"PAI_CONTAINER_HOST_{label}_PORT_LIST": _joined(n) for label, n in own_ports.items()})
    return env


def task_argv(role: Mapping[str, Any], secrets: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """The process to start and any variable it needs; secret values never go on a command line.

    Without `$secrets` tags the plan's command runs as is. With them, the tags are filled in as openpai-runtime's
    pystache does (HTML-escaped; a secret the job lacks becomes empty) and the commands travel in an environment
    variable (readable by the same user only, unlike /proc/<pid>/cmdline), which the shell unsets before `eval`ing
    them, so the user's commands and their children never see it.
    """
    command = list(role["command"])
    if not role["secretTags"]:
        return command, {}
    import html  # only for jobs with secrets

    text = command[-2]
    for item in role["secretTags"]:
        text = text.replace(item["tag"], html.escape(secrets.get(item["key"], ""), quote=True))
    command[-2] = f'__paictl=${_SECRET_COMMANDS}; unset {_SECRET_COMMANDS}; eval "$__paictl"'
    return command, {_SECRET_COMMANDS: text}


class SpawnedTask:
    """The few `subprocess.Popen` methods the runner uses, for a process started by `os.posix_spawn`."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        return self._wait(os.WNOHANG)

    def wait(self) -> int:
        code = self._wait(0)
        assert code is not None
        return code

    def _wait(self, options: int) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, options)
            except ChildProcessError:  # reaped elsewhere: Popen reports 0 then too
                self.returncode = 0
            else:
                if pid == self.pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


class Spawner:
    """Starts a job attempt's tasks as `subprocess.Popen(argv, cwd=work_dir, env=env, stdin=DEVNULL, stdout=log,
    stderr=STDOUT, start_new_session=True)` would, through `os.posix_spawn` where it can.

    Every task of a big job carries every peer's variables (~1,400 at 200 instances); Popen turns the environment
    into bytes in Python for each task (~1 ms each), posix_spawn does it in C. What Popen adds is kept, and more: every
    signal back to its default action and none blocked (Popen resets only SIGPIPE and SIGXFSZ, and keeps the mask), a
    new session, and no inherited descriptor beyond 0-2 (any this process holds without close-on-exec is closed in
    the child). Popen is still used when the
    tasks run in another directory (posix_spawn cannot change it) or the shell is not found (its error is Popen's).
    """

    def __init__(self, work_dir: str, path: str | None) -> None:
        import shutil

        self.cwd = work_dir
        self.here = hasattr(os, "posix_spawn") and os.path.realpath(work_dir) == os.path.realpath(os.getcwd())
        self.path = path
        self._resolved: dict[str, str | None] = {}
        self._which = shutil.which
        self._leaked = [fd for fd in _open_descriptors() if fd > 2 and _inheritable(fd)]
        self._default_signals = _every_signal()

    def spawn(self, argv: list[str], env: Mapping[str, str] | Mapping[bytes, bytes], log: int) -> Any:
        """Start `argv` with `log` (a descriptor) as its standard output and error. `env` may be bytes already:
        os.posix_spawn encodes every str of it at every call (~1,400 variables a task at 200 instances)."""
        import subprocess

        executable = self._executable(argv[0]) if self.here else None
        if executable is None:
            return subprocess.Popen(argv, cwd=self.cwd, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        actions = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                   (os.POSIX_SPAWN_DUP2, log, 1), (os.POSIX_SPAWN_DUP2, log, 2),
                   *((os.POSIX_SPAWN_CLOSE, fd) for fd in self._leaked)]
        pid = os.posix_spawn(executable, argv, env, file_actions=actions, setsid=True, setsigmask=(),
                             setsigdef=self._default_signals)
        return SpawnedTask(pid)

    def _executable(self, name: str) -> str | None:
        """`name` looked up on the tasks' PATH, as Popen does with `env` (posix_spawnp would use this process's)."""
        if name not in self._resolved:
            self._resolved[name] = self._which(name, path=self.path) if os.sep not in name else \
                (name if os.access(name, os.X_OK) else None)
        return self._resolved[name]


def _every_signal() -> frozenset[int]:
    """Every signal a process can set back to its default action. A task starts as a container's first process
    does, with no signal blocked or ignored: whatever paictl inherited (SIGTERM blocked by its parent, SIGINT and
    SIGQUIT ignored in a script's background job, SIGPIPE ignored by Python itself) is not passed on, or `paictl
    stop`'s SIGTERM would not reach a task's trap."""
    import signal

    return frozenset(signal.valid_signals()) - {signal.SIGKILL, signal.SIGSTOP}


def _open_descriptors() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc/self/fd")]
    except (OSError, ValueError):
        return list(range(3, 256))


def _inheritable(fd: int) -> bool:
    try:
        return os.get_inheritable(fd)
    except OSError:
        return False
