"""The PAI_* environment a task sees, built exactly as OpenPAI's rest-server builds it (openpai.md c.4, d.1).

User commands read these variables (`$PAI_TASK_ROLE_TASK_COUNT_worker`, `$PAI_JOB_NAME`...), so names, order and
string forms follow `runtime-env.js` and `k8s.js`: task-role names are the *original* protocol names here (only the
runtime's port and host variables use the converted ones), and every value is a string as JavaScript prints it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from paictl.targets.framework.hived import ISOLATION_FIELD

if TYPE_CHECKING:
    from paictl.compiler.profiles import Profile
    from paictl.protocol.model import Job, TaskRole

TASK_INDEX_FIELD = "metadata.annotations['FC_TASK_INDEX']"


def min_failed(role: TaskRole) -> int:
    """frameworkAttemptCompletionPolicy.minFailedTaskCount: upstream's truthiness test makes null and 0 mean 1."""
    return role.completion.min_failed_instances or 1


def min_succeeded(role: TaskRole) -> int:
    """minSucceededTaskCount: null and 0 mean "all instances" (taskNumber)."""
    return role.completion.min_succeeded_instances or role.instances


def _var(name: str, value: Any) -> dict[str, Any]:
    from paictl.protocol.jsstring import js_string

    return {"name": name, "value": js_string(value)}


def _field(name: str, path: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def framework_env(job: Job, profile: Profile, virtual_cluster: str) -> list[dict[str, Any]]:
    """`runtime-env.js generateFrameworkEnv`: the job-wide list, identical in every container."""
    user_job = f"{profile.user}~{job.name}"
    names = ",".join(role.name for role in job.task_roles)
    env = [
        _var("PAI_FRAMEWORK_NAME", user_job),
        _var("PAI_JOB_NAME", user_job),
        _var("PAI_USER_NAME", profile.user),
        _var("PAI_DEFAULT_FS_URI", ""),
        _var("PAI_TASK_ROLE_COUNT", len(job.task_roles)),
        _var("PAI_TASK_ROLE_LIST", names),
        _var("PAI_VIRTUAL_CLUSTER", virtual_cluster),
    ]
    for role in job.task_roles:
        res = role.resources
        env += [
            _var(f"PAI_TASK_ROLE_TASK_COUNT_{role.name}", role.instances),
            # shmMB is reported as 0 when unset although the pod gets the default size: upstream does the same.
            _var(f"PAI_RESOURCE_{role.name}", f"{res.gpu},{res.cpu},{res.memory_mb},{role.shm_mb or 0}"),
            _var(f"PAI_MIN_FAILED_TASK_COUNT_{role.name}", min_failed(role)),
            _var(f"PAI_MIN_SUCCEEDED_TASK_COUNT_{role.name}", min_succeeded(role)),
        ]
    total = sum(role.instances for role in job.task_roles)
    env += [
        _var("PAI_USERNAME", profile.user),
        _var("PAI_TASKS_NUM", total),
        _var("PAI_JOB_TASK_COUNT", total),
        _var("PAI_TASK_ROLES_NUM", len(job.task_roles)),
        _var("PAI_JOB_TASK_ROLE_COUNT", len(job.task_roles)),
        _var("PAI_JOB_TASK_ROLE_LIST", names),
    ]
    return env


def task_role_env(role: TaskRole) -> list[dict[str, Any]]:
    return [_var("PAI_CURRENT_TASK_ROLE_NAME", role.name),
            _field("PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX", TASK_INDEX_FIELD)]


def init_env(job: Job, profile: Profile, entrypoint: str, shared: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The openpai-runtime init container's variables: what to run, where the cluster is, then the PAI_* list."""
    return [
        {"name": "USER_CMD", "value": entrypoint},
        {"name": "KUBE_APISERVER_ADDRESS", "value": profile.api_server_address},
        {"name": "REST_SERVER_URI", "value": profile.rest_server_uri},
        {"name": "GANG_ALLOCATION", "value": "true" if job.gang_allocation else "false"},
        *shared,
    ]


def app_env(role: TaskRole, profile: Profile, shared: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The app container's list: the shared one, the task index, and which GPUs it may see."""
    env = [*shared, _field("PAI_TASK_INDEX", TASK_INDEX_FIELD)]
    if profile.hived.enabled:
        # HiveD writes the leaf cells it bound into an annotation; the devices follow it (none without GPUs).
        # Upstream tests `gpu === 0` and `gpu > 0`: a negative count (W207) gets neither.
        for name in profile.hived.device_envs if role.resources.gpu >= 0 else ():
            env.append({"name": name, "value": "none"} if role.resources.gpu == 0 else _field(name, ISOLATION_FIELD))
    elif role.resources.gpu == 0:
        env.append({"name": "NVIDIA_VISIBLE_DEVICES", "value": "none"})
    return env
