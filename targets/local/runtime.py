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

import html
import os
import socket
from typing import Any, Mapping

from paictl.protocol.names import convert_name

Ports = dict[str, list[dict[str, list[int]]]]  # task role -> index -> label -> ports

#: Every process of a run carries this variable, so a run's processes can be found (and tests can prove none
#: survives) whatever happened to paictl.
RUN_MARKER = "PAICTL_RUN_ID"
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


def attempt_env(plan: Mapping[str, Any], peers: Mapping[str, str]) -> dict[str, str]:
    """What every task of a job attempt shares: the host's environment (minus PAI_*/FC_*), the plan's variables
    and every instance's host and port variables. Built once per attempt: with 200 instances the peers alone are
    ~1,400 variables, and rebuilding them for each task was most of a task's start-up cost."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_INHERITED_PREFIXES)}
    env.update(plan["spec"]["env"])
    env.update(peers)
    return env


def task_env(plan: Mapping[str, Any], role: Mapping[str, Any], index: int, *, peers: Mapping[str, str],
             own_ports: Mapping[str, list[int]], work_dir: str, job_attempt: int, task_attempt: int,
             run_id: str, shared: Mapping[str, str] | None = None) -> dict[str, str]:
    """The whole environment of one task attempt: the host's (minus PAI_*/FC_*), then the runtime contract.

    `shared` is `attempt_env(plan, peers)` when the caller keeps it for the attempt (the runner does).
    """
    host = plan["spec"]["hostIP"]
    env = dict(shared) if shared is not None else attempt_env(plan, peers)
    # A task's own variables never share a name with a peer's (those end in _PORT, _HOST_LIST or carry an
    # index), so applying them after the peers gives the same values as before them.
    env.update(role["tasks"][index]["env"])
    first = {label: str(numbers[0]) if numbers else "" for label, numbers in own_ports.items()}
    env.update({
        "PAI_WORK_DIR": work_dir,
        "PAI_CURRENT_CONTAINER_IP": host, "PAI_CONTAINER_HOST_IP": host,
        "PAI_CURRENT_CONTAINER_PORT": first.get("http", ""), "PAI_CONTAINER_HOST_PORT": first.get("http", ""),
        "PAI_CONTAINER_SSH_PORT": first.get("ssh", ""),
        "PAI_CONTAINER_HOST_PORT_LIST": ";".join(f"{label}:{_joined(n)}" for label, n in own_ports.items()),
        "FC_FRAMEWORK_NAME": convert_name(plan["metadata"]["name"]),
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
    text = command[-2]
    for item in role["secretTags"]:
        text = text.replace(item["tag"], html.escape(secrets.get(item["key"], ""), quote=True))
    command[-2] = f'__paictl=${_SECRET_COMMANDS}; unset {_SECRET_COMMANDS}; eval "$__paictl"'
    return command, {_SECRET_COMMANDS: text}
