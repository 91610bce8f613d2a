"""The pod template of one MarsJob replica type: one container, named `mars`, that runs the task role's commands.

KubeDL adds the Mars environment, the worker cache volume and the spill directories itself (marsjob.md 1.3, 4), so
the template holds only what the job says: image, commands, resources, ports, the PAI_* variables, /dev/shm and the
job's Secret. The restart policy is the replica spec's, which KubeDL writes into the pod (a template value would only
be overwritten, with a warning event), so none is set here.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Mapping

from paictl.targets.framework.env import framework_env
from paictl.targets.framework.native import SCRIPT_NAME, SHELL, container_ports, native_env, run_commands
from paictl.targets.framework.pod import (SECRETS_MOUNT, MountedStorage, task_image, cluster_pod_settings,
                                          secret_and_storage_volumes)
from paictl.targets.mars.extras import cache_mb
from paictl.targets.mars.status import CONTAINER

if TYPE_CHECKING:
    from paictl.compiler.profiles import Profile
    from paictl.protocol.model import Job, TaskRole

    from paictl.targets.mars.extras import MarsSettings

#: KubeDL labels every pod with its index (marsjob.md 4); the PAI task index variables read it.
INDEX_FIELD = "metadata.labels['replica-index']"

#: The port Mars' own services bind in every pod (its scheduler, web service and workers find each other on it).
MARS_PORT = 11111
MARS_PORT_NAME = "mars-port"


@dataclasses.dataclass(frozen=True, kw_only=True)
class PodParts:
    """What every replica type's pod shares."""

    job: Job
    profile: Profile
    ports: Mapping[str, Mapping[str, tuple[int, ...]]]
    secrets_secret: str | None
    regcred: str | None
    settings: MarsSettings
    storages: tuple[MountedStorage, ...] = ()


def pod_template(parts: PodParts, role: TaskRole, replica_type: str, commands: str,
                 substitutions: list[tuple[str, str]]) -> dict[str, Any]:
    profile = parts.profile
    prelude = "\n".join([
        "# paictl: the task role's commands, as OpenPAI runs them; $secrets are read from the mounted Secret.",
        "export PAI_WORK_DIR=$PWD",
        *run_commands(substitutions, SECRETS_MOUNT),
    ]) + "\n"
    mounts: list[dict[str, Any]] = []
    volumes: list[dict[str, Any]] = []
    if not _cache_on_shm(parts.settings, role, replica_type):
        shm = role.shm_mb or profile.default_shm_mb
        volumes.append({"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": f"{shm}Mi"}})
        mounts.append({"name": "dshm", "mountPath": "/dev/shm"})
    more_mounts, more_volumes = secret_and_storage_volumes(parts.job, profile, parts.secrets_secret, parts.storages)
    mounts += more_mounts
    volumes += more_volumes
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": task_image(parts.job, role),
        "command": [*SHELL, "-c", prelude, SCRIPT_NAME],
        "args": [commands],
        "ports": [{"name": MARS_PORT_NAME, "containerPort": MARS_PORT}, *container_ports(role, parts.ports)],
        "env": _env(parts, role),
        "resources": resources(parts, role, replica_type),
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }
    if mounts:
        container["volumeMounts"] = mounts
    spec: dict[str, Any] = {"containers": [container]}
    if volumes:
        spec["volumes"] = volumes
    spec.update(cluster_pod_settings(parts.job, role, profile, parts.regcred))
    return {"spec": spec}


def resources(parts: PodParts, role: TaskRole, replica_type: str) -> dict[str, Any]:
    """Requests are what the job asks for; the memory limit leaves room above them (Mars issue #1855, PR #1856).

    Mars workers were being killed by the cluster (mars-project/mars#1855): the pods had memory limit = request,
    while a worker's memory is its own working set *plus* its cache, which lives in the shared-memory plasma store
    (tmpfs, charged to the pod) and which KubeDL sizes from the request (`workerCachePercentage` of the memory
    request, or `workerCacheSize`). Filling the cache pushed the pod over its limit. Mars's fix (#1856) is a memory
    limit of twice the request, which its own KubeDL client still uses. paictl does the same, and for a worker whose
    `workerCacheSize` is larger than its memory it raises the limit to request + cache, so a full cache never reaches
    the limit: memory request = memoryMB, limit = max(2 x memoryMB, memoryMB + cache). CPU is not killed at its
    limit, only throttled: request = limit = cpu. GPUs, and the profile's extra resources, are limits only.
    """
    res = role.resources
    cache = cache_mb(parts.settings.memory_policy, res.memory_mb) if replica_type == "Worker" else None
    memory_limit = max(2 * res.memory_mb, res.memory_mb + (cache or 0))
    limits: dict[str, Any] = {"cpu": res.cpu, "memory": f"{memory_limit}Mi",
                              parts.profile.gpu_resource: res.gpu, **parts.profile.extra_limits}
    return {"requests": {"cpu": res.cpu, "memory": f"{res.memory_mb}Mi"}, "limits": limits}


def _cache_on_shm(settings: MarsSettings, role: TaskRole, replica_type: str) -> bool:
    """KubeDL mounts the worker cache at plasmaStore (default /dev/shm): a /dev/shm volume of ours would collide."""
    return replica_type == "Worker" and kubedl_mounts(settings, role).get(CACHE_MOUNT_OF_KUBEDL) == "/dev/shm"


#: What `kubedl_mounts` calls KubeDL's worker cache volume (controllers/mars/mars.go mountSharedCacheToPath).
CACHE_MOUNT_OF_KUBEDL = "mars-shared-cache"


def kubedl_mounts(settings: MarsSettings, role: TaskRole) -> dict[str, str]:
    """Volume name -> mount path of what KubeDL adds to a Worker's `mars` container (marsjob_controller.go
    SetClusterSpec): `mars-empty-dir-<i>` at each spill directory, and the shared cache at plasmaStore (default
    /dev/shm) only when the cache has a size above 0 bytes (`cacheSize > 0`)."""
    policy = settings.memory_policy or {}
    mounts = {f"mars-empty-dir-{i}": str(path) for i, path in enumerate(policy.get("spillDirs") or ())}
    if cache_mb(policy, role.resources.memory_mb):
        mounts[CACHE_MOUNT_OF_KUBEDL] = str(policy.get("plasmaStore") or "/dev/shm")
    return mounts


def _env(parts: PodParts, role: TaskRole) -> list[dict[str, Any]]:
    """The PAI_* variables OpenPAI jobs read: the job-wide list, this role's, and its ports (native runtime's)."""
    job, profile = parts.job, parts.profile
    env = framework_env(job, profile, job.defaults.virtual_cluster or profile.virtual_cluster)
    env += [{"name": "PAI_CURRENT_TASK_ROLE_NAME", "value": role.name}]
    env += [{"name": name, "valueFrom": {"fieldRef": {"fieldPath": INDEX_FIELD}}}
            for name in ("PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX", "PAI_TASK_INDEX")]
    if role.resources.gpu == 0:
        env.append({"name": "NVIDIA_VISIBLE_DEVICES", "value": "none"})
    return env + native_env(role, parts.ports)
