"""The pod template of one replicatedJob: the task role's commands under the native runtime's contract.

Nothing of OpenPAI runs on a JobSet cluster, so the app container does what the native runtime of the Framework
target does (targets/framework/native.py, whose prelude pieces are reused), with what JobSet gives instead of what
FrameworkController gives:

- **Task index**: the Job controller sets `JOB_COMPLETION_INDEX` in every pod of an Indexed Job; the prelude exports
  it as `PAI_TASK_INDEX` and `PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX`.
- **Peers**: JobSet's headless Service gives every pod the DNS name `<js>-<rjob>-0-<i>.<subdomain>` (DNS hostnames
  on, not-ready addresses published), known at compile time. So `PAI_HOST_IP_<role>_<i>` is that **name**, not an
  IP, and `PAI_TASK_ROLE_<role>_HOST_LIST` is `name:httpPort,...`, built in one loop per role as the ports are. Jobs
  that resolve the name work unchanged (sockets, `MASTER_ADDR`, TF_CONFIG); a job that parses the value as an IP
  does not (reference jobset.md 2, "peer discovery").
- **Ports**: fixed per task role from the profile's portRange, as in the native runtime (each pod has its own IP).
- **Secrets**: `$secrets` are filled in at start from the mounted Secret (native.run_commands): never in the spec.
- `restartPolicy: Never`, which the per-index retry limit (`backoffLimitPerIndex`) requires; JobSet's webhook would
  otherwise default it to OnFailure, which restarts containers in place outside that limit.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Mapping

from paictl.protocol.names import convert_name

from paictl.targets.framework import native
from paictl.targets.framework.env import framework_env
from paictl.targets.framework.pod import (SECRETS_MOUNT, MountedStorage, task_image, cluster_pod_settings,
                                          secret_and_storage_volumes)
from paictl.targets.jobset.names import hostname

if TYPE_CHECKING:
    from paictl.compiler.profiles import Profile
    from paictl.protocol.model import Job, TaskRole

CONTAINER = "app"
#: Pod annotation holding the task role's original name (label values cannot start with `_`, role names can).
ROLE_ANNOTATION = "paictl.dev/task-role"


@dataclasses.dataclass(frozen=True, kw_only=True)
class PodParts:
    """What every replicatedJob's pod shares."""

    job: Job
    profile: Profile
    jobset: str
    subdomain: str
    rjobs: Mapping[str, str]                                   # task role -> replicatedJob name
    ports: Mapping[str, Mapping[str, tuple[int, ...]]]
    secrets_secret: str | None
    regcred: str | None
    storages: tuple[MountedStorage, ...] = ()


def peer_lines(parts: PodParts) -> list[str]:
    """Prelude lines: this task's index from JOB_COMPLETION_INDEX, and every task's DNS name and host list."""
    lines = [
        "# Task index: the Indexed Job's completion index, which the Job controller sets in every pod.",
        'export PAI_TASK_INDEX="$JOB_COMPLETION_INDEX" PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX="$JOB_COMPLETION_INDEX"',
        "# Peers: JobSet's headless Service gives task <i> of a role the DNS name <jobset>-<role>-0-<i>.<subdomain>.",
    ]
    for role in parts.job.task_roles:
        name = convert_name(role.name)
        host = hostname(parts.jobset, parts.rjobs[role.name], "$i") + "." + parts.subdomain
        port = native.http_port(role, parts.ports)
        lines += [
            "hosts=()",
            f"for ((i = 0; i < {role.instances}; i++)); do",
            f'  export "PAI_HOST_IP_{name}_$i={host}"; hosts+=("{host}:{port}")',
            "done",
            f'PAI_TASK_ROLE_{name}_HOST_LIST=$(IFS=,; echo "${{hosts[*]}}"); export PAI_TASK_ROLE_{name}_HOST_LIST',
        ]
    return lines


def pod_template(parts: PodParts, role: TaskRole, commands: str, substitutions: list[tuple[str, str]]) -> dict:
    profile = parts.profile
    prelude = "\n".join(native.port_lines(parts.job, parts.ports) + peer_lines(parts)
                        + native.run_commands(substitutions, SECRETS_MOUNT)) + "\n"
    shm = role.shm_mb or profile.default_shm_mb
    volumes: list[dict[str, Any]] = [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": f"{shm}Mi"}}]
    mounts: list[dict[str, Any]] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    more_mounts, more_volumes = secret_and_storage_volumes(parts.job, profile, parts.secrets_secret, parts.storages)
    mounts += more_mounts
    volumes += more_volumes
    res = role.resources
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": task_image(parts.job, role),
        "command": [*native.SHELL, "-c", prelude, native.SCRIPT_NAME],
        "args": [commands],
        "env": _env(parts, role),
        "resources": {"limits": {"cpu": res.cpu, "memory": f"{res.memory_mb}Mi", profile.gpu_resource: res.gpu,
                                 **profile.extra_limits}},
        "volumeMounts": mounts,
        # The last lines of a failed task's log survive in its status, for the follower's diagnosis.
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }
    ports = native.container_ports(role, parts.ports)
    if ports:
        container["ports"] = ports
    spec: dict[str, Any] = {"restartPolicy": "Never", "containers": [container], "volumes": volumes}
    spec.update(cluster_pod_settings(parts.job, role, profile, parts.regcred))
    return {"metadata": {"annotations": {ROLE_ANNOTATION: role.name}}, "spec": spec}


def _env(parts: PodParts, role: TaskRole) -> list[dict[str, Any]]:
    """The PAI_* variables OpenPAI jobs read: the job-wide list, this role's name, its container's IP and ports."""
    job, profile = parts.job, parts.profile
    env = framework_env(job, profile, job.defaults.virtual_cluster or profile.virtual_cluster)
    env.append({"name": "PAI_CURRENT_TASK_ROLE_NAME", "value": role.name})
    if role.resources.gpu == 0:
        env.append({"name": "NVIDIA_VISIBLE_DEVICES", "value": "none"})
    return env + native.native_env(role, parts.ports)
