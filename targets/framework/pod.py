"""The pod template of one Framework task role (openpai.md c.4), for the openpai runtime and the native one.

With `runtime: openpai` the pod is the rest-server's `generateTaskRole`: an init container from the runtime image
receives the rendered entrypoint in USER_CMD and prepares `/usr/local/pai`, and the app container runs the
runtime's entry script. With `runtime: native` the app container does the runtime's work itself, behind a
FrameworkBarrier init container when the job is gang-allocated (framework_native.py). Cluster conventions (service
account, node affinity, log directory, exit-spec ConfigMap, extra resources...) come from the profile.
"""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Any, Mapping

from paictl.protocol.jsstring import js_truthy
from paictl.protocol.names import convert_name

from paictl.targets.framework.env import app_env, init_env, task_role_env
from paictl.targets.framework.hived import ENABLE_RESOURCE, SPEC_ANNOTATION, dump_spec
from paictl.targets.framework.values import plain

if TYPE_CHECKING:
    from paictl.compiler.profiles import Profile, Storage
    from paictl.protocol.model import Job, TaskRole

RUNTIME_ROOT = "/usr/local/pai"
SECRETS_MOUNT = "/usr/local/pai/secrets"
POD_TYPE_LABEL = "kube-launcher-task"
CAPABILITIES = {"add": ["SYS_ADMIN", "IPC_LOCK", "DAC_READ_SEARCH"], "drop": ["MKNOD"]}
#: Port labels the runtime always allocates (ssh for the ssh plugin, http for PAI_CURRENT_CONTAINER_PORT).
ALWAYS_PORTS = ("ssh", "http")


@dataclasses.dataclass(frozen=True, kw_only=True)
class MountedStorage:
    """A storage the pod mounts, and where in the container."""
    storage: Storage
    mount_path: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class PodContext:
    """What every task role's pod shares: computed once by the compiler, read here."""

    job: Job
    profile: Profile
    name: str
    virtual_cluster: str
    shared_env: list[dict[str, Any]]
    hived_specs: Mapping[str, Mapping[str, Any]]
    #: The Secret mounted as job-secrets (the configcred one, or `--secrets-from`), if any.
    secrets_secret: str | None
    regcred: str | None
    storages: tuple[MountedStorage, ...]
    priority_class: str | None
    #: Native runtime: the fixed ports of every task role (framework_native.allocate_ports).
    native_ports: Mapping[str, Mapping[str, tuple[int, ...]]] = dataclasses.field(default_factory=dict)


def pod_template(ctx: PodContext, role: TaskRole, entrypoint: str) -> dict[str, Any]:
    profile = ctx.profile
    labels = {"userName": profile.user, "virtualCluster": ctx.virtual_cluster, "type": POD_TYPE_LABEL}
    annotations: dict[str, str] = {}
    if profile.runtime == "openpai":
        annotations["container.apparmor.security.beta.kubernetes.io/app"] = "unconfined"
    annotations["rest-server/port-scheduling-spec"] = _ports_annotation(role, profile)
    if profile.hived.enabled:
        annotations[SPEC_ANNOTATION] = dump_spec(ctx.hived_specs[role.name])

    spec: dict[str, Any] = {}
    if profile.runtime == "openpai":
        spec["privileged"] = False  # not a PodSpec field: upstream sends it and the API server drops it
    spec["restartPolicy"] = "Never"
    if profile.runtime == "openpai":
        service_account = profile.service_account
    else:
        from paictl.targets.framework.native import service_account
        service_account = service_account(ctx.job, profile)
    if service_account:
        spec["serviceAccountName"] = service_account
    if profile.runtime == "openpai":
        spec["initContainers"] = [_init_container(ctx, role, entrypoint)]
        spec["containers"] = [_app_container(ctx, role)]
    else:
        if ctx.job.gang_allocation:
            from paictl.targets.framework.native import barrier_init_container
            spec["initContainers"] = [barrier_init_container(profile)]
        spec["containers"] = [_native_container(ctx, role, entrypoint)]
    spec["volumes"] = _volumes(ctx, role)
    if profile.node_affinity:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [plain(e) for e in profile.node_affinity]}]}}}
    pull_secrets = [{"name": s} for s in profile.runtime_image_pull_secrets]
    if ctx.regcred and _has_auth(ctx.job, role):
        pull_secrets.append({"name": ctx.regcred})
    if pull_secrets:
        spec["imagePullSecrets"] = pull_secrets
    if profile.host_network:
        spec["hostNetwork"] = True
    if profile.hived.enabled:
        spec["schedulerName"] = f"{profile.hived.scheduler_prefix}-ds-{ctx.virtual_cluster}"
    if ctx.priority_class:
        spec["priorityClassName"] = ctx.priority_class
    return {"metadata": {"labels": labels, "annotations": annotations}, "spec": spec}


def _ports_annotation(role: TaskRole, profile: Profile) -> str:
    """JSON of the port request: counts per label, ssh and http added, as the runtime's port allocator reads it."""
    ports = {label: {"count": count} for label, count in role.resources.ports.items()}
    for label in ALWAYS_PORTS:
        ports.setdefault(label, {"count": 1})
    start, end = profile.port_range
    return json.dumps({"schedulePortStart": start, "schedulePortEnd": end, "ports": ports}, separators=(",", ":"))


def _log_mount(ctx: PodContext, role: TaskRole) -> dict[str, Any]:
    return {"name": "host-log", "subPath": f"{ctx.profile.user}/{ctx.name}/{convert_name(role.name)}",
            "mountPath": f"{RUNTIME_ROOT}/logs"}


def _secret_mounts(ctx: PodContext) -> list[dict[str, Any]]:
    return [{"name": "job-secrets", "mountPath": SECRETS_MOUNT}] if ctx.secrets_secret else []


def _init_container(ctx: PodContext, role: TaskRole, entrypoint: str) -> dict[str, Any]:
    shared = [*ctx.shared_env, *task_role_env(role)]
    return {
        "name": "init",
        "imagePullPolicy": "Always",
        "image": ctx.profile.runtime_image,
        "env": init_env(ctx.job, ctx.profile, entrypoint, shared),
        "volumeMounts": [
            {"name": "pai-vol", "mountPath": RUNTIME_ROOT},
            _log_mount(ctx, role),
            {"name": "job-exit-spec", "mountPath": "/usr/local/pai-config"},
            *_secret_mounts(ctx),
        ],
    }


def _limits(ctx: PodContext, role: TaskRole) -> dict[str, Any]:
    res, profile = role.resources, ctx.profile
    limits: dict[str, Any] = {"cpu": res.cpu, "memory": f"{res.memory_mb}Mi", **profile.extra_limits}
    if profile.hived.enabled:
        limits[ENABLE_RESOURCE] = 1  # HiveD assigns the GPUs; the device plugin's resource must not be requested
    else:
        limits[profile.gpu_resource] = res.gpu
    if js_truthy(role.extra_container_options.get("infiniband")):  # k8s.js: Boolean(...infiniband)
        limits["rdma/hca"] = 1
    return limits


def _storage_mounts(ctx: PodContext) -> list[dict[str, Any]]:
    mounts = []
    for mounted in ctx.storages:
        mount = {"name": f"{mounted.storage.name}-volume", "mountPath": mounted.mount_path}
        if not mounted.storage.share:
            mount["subPath"] = ctx.profile.user
        mounts.append(mount)
    return mounts


def _app_container(ctx: PodContext, role: TaskRole) -> dict[str, Any]:
    shared = [*ctx.shared_env, *task_role_env(role)]
    return {
        "name": "app",
        "imagePullPolicy": "Always",
        "image": task_image(ctx.job, role),
        "command": [f"{RUNTIME_ROOT}/runtime"],
        "resources": {"limits": _limits(ctx, role)},
        "env": app_env(role, ctx.profile, shared),
        "securityContext": {"capabilities": {k: list(v) for k, v in CAPABILITIES.items()}},
        "terminationMessagePath": "/tmp/pai-termination-log",
        "volumeMounts": [
            {"name": "dshm", "mountPath": "/dev/shm"},
            {"name": "pai-vol", "mountPath": RUNTIME_ROOT},
            _log_mount(ctx, role),
            *_storage_mounts(ctx),  # upstream adds storages with the task role, the secrets after it
            *_secret_mounts(ctx),
        ],
    }


def _native_container(ctx: PodContext, role: TaskRole, entrypoint: str) -> dict[str, Any]:
    """Without the runtime the app container prepares the task itself (framework_native.py), then runs it.

    Runtime plugins and the exit spec (failure classification into the termination message) are not provided.
    """
    from paictl.targets.framework import native as native

    shared = [*ctx.shared_env, *task_role_env(role)]
    commands, substitutions = native.runtime_commands(entrypoint, ctx.secrets_secret is not None)
    mounts = [{"name": "dshm", "mountPath": "/dev/shm"}]
    if ctx.job.gang_allocation:
        mounts.append({"name": native.BARRIER_VOLUME, "mountPath": native.BARRIER_MOUNT})
    container = {
        "name": "app",
        "image": task_image(ctx.job, role),
        "command": [*native.SHELL, "-c", native.prelude(ctx.job, ctx.native_ports, substitutions, SECRETS_MOUNT),
                    native.SCRIPT_NAME],
        "args": [commands],
        "resources": {"limits": _limits(ctx, role)},
        "env": [*app_env(role, ctx.profile, shared), *native.native_env(role, ctx.native_ports)],
        "ports": native.container_ports(role, ctx.native_ports),
        "volumeMounts": [*mounts, *_secret_mounts(ctx), *_storage_mounts(ctx)],
    }
    if not container["ports"]:
        del container["ports"]
    return container


def _volumes(ctx: PodContext, role: TaskRole) -> list[dict[str, Any]]:
    profile = ctx.profile
    shm = role.shm_mb or profile.default_shm_mb
    volumes: list[dict[str, Any]] = [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": f"{shm}Mi"}}]
    if profile.runtime == "openpai":
        volumes += [
            {"name": "pai-vol", "emptyDir": {}},
            {"name": "host-log", "hostPath": {"path": profile.log_host_path}},
            {"name": "job-exit-spec", "configMap": {"name": profile.exit_spec_config_map}},
        ]
    elif ctx.job.gang_allocation:
        from paictl.targets.framework.native import BARRIER_VOLUME
        volumes.append({"name": BARRIER_VOLUME, "emptyDir": {}})
    secrets = [{"name": "job-secrets", "secret": {"secretName": ctx.secrets_secret}}] if ctx.secrets_secret else []
    storages = []
    for mounted in ctx.storages:
        claim: dict[str, Any] = {"claimName": mounted.storage.name}
        if mounted.storage.read_only:
            claim["readOnly"] = True
        storages.append({"name": f"{mounted.storage.name}-volume", "persistentVolumeClaim": claim})
    # Upstream's order (storages with the task role, the secrets after it); the native runtime keeps its own.
    return volumes + (storages + secrets if profile.runtime == "openpai" else secrets + storages)


def task_image(job: Job, role: TaskRole) -> str:
    prerequisite = job.prerequisite("dockerimage", role.docker_image)
    assert prerequisite is not None and isinstance(prerequisite.uri, str)  # guaranteed by validation
    return prerequisite.uri


def _has_auth(job: Job, role: TaskRole) -> bool:
    prerequisite = job.prerequisite("dockerimage", role.docker_image)
    return prerequisite is not None and prerequisite.auth is not None


def secret_and_storage_volumes(job: Job, profile: Profile, secrets_secret: str | None,
                               storages: tuple[MountedStorage, ...]) -> tuple[list[dict[str, Any]], list[dict]]:
    """(mounts, volumes) of the job's Secret (read-only at SECRETS_MOUNT) and its storages (subPath <user> for
    storages that are not shared, as the Framework mounts them): for the native-runtime pods of other targets."""
    mounts: list[dict[str, Any]] = []
    volumes: list[dict[str, Any]] = []
    if secrets_secret:
        volumes.append({"name": "job-secrets", "secret": {"secretName": secrets_secret}})
        mounts.append({"name": "job-secrets", "mountPath": SECRETS_MOUNT, "readOnly": True})
    if storages:
        context = PodContext(job=job, profile=profile, name="", virtual_cluster="", shared_env=[], hived_specs={},
                             secrets_secret=None, regcred=None, storages=storages, priority_class=None)
        mounts += _storage_mounts(context)
        volumes += [{"name": f"{m.storage.name}-volume", "persistentVolumeClaim": {
            "claimName": m.storage.name, **({"readOnly": True} if m.storage.read_only else {})}} for m in storages]
    return mounts, volumes


def cluster_pod_settings(job: Job, role: TaskRole, profile: Profile, regcred: str | None) -> dict[str, Any]:
    """The pod spec fields the profile and the registry Secret decide (service account, required node affinity,
    image pull Secret), for the native-runtime pods of other targets."""
    spec: dict[str, Any] = {}
    if profile.service_account:
        spec["serviceAccountName"] = profile.service_account
    if profile.node_affinity:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [plain(e) for e in profile.node_affinity]}]}}}
    if regcred and _has_auth(job, role):
        spec["imagePullSecrets"] = [{"name": regcred}]
    return spec
