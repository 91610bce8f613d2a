"""The local target: compile a job into a LocalPlan, the host processes `paictl submit --target local` starts.

A local run keeps OpenPAI's runtime contract so a job debugged here behaves the same on a cluster: the entrypoint
rest-server would render (deployment pre/post commands merged, parameters filled in), run by bash with errexit,
nounset and pipefail as openpai-runtime runs `user.sh`, with the PAI_* variables of openpai.md d.1, and
FrameworkController's retry and completion rules (frameworkcontroller.md b-d; see local_policy.py).

Compile stays pure (no clock, no sockets, no file system): the plan records everything that follows from the job,
and leaves out the two things that only exist at run time:
- ports. Every task instance shares the loopback interface, so each gets its own ports, and they must be really
  free when the tasks start. The plan records each instance's port *requests* (label -> count, with OpenPAI's
  `ssh` and `http` added) and the names of the variables that carry them (`envAtStart`); the runner bind-probes
  free ports at the start of every job attempt and writes them to `<run>/<attempt>/ports.json`
  (local_runtime.py).
- secret values. The commands keep their `<% $secrets.x %>` tags (the runtime's substitution list is
  `secretTags`, tag and key only); the runner fills them in when a task starts. A plan can be printed, stored in
  the run folder and diffed without leaking anything.

Where the tasks run is decided at submit, not here: each in a container of its task role's image when a docker engine
answers (the docker runtime, containers.py), or as host processes. The plan records each role's image and its
resourcePerInstance, which the docker runtime turns into the container's limits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from paictl.errors import UsageError
from paictl.protocol.names import convert_name

from paictl.targets.findings import raise_if_any
from paictl.targets.framework.env import framework_env, min_failed, min_succeeded
from paictl.targets.framework.native import ALWAYS_PORTS, SCRIPT_NAME, SHELL, runtime_commands

if TYPE_CHECKING:
    from paictl.compiler.profiles import Profile
    from paictl.protocol.loading import Document
    from paictl.protocol.model import Job, TaskRole

API_VERSION = "paictl.dev/v1alpha1"
KIND = "LocalPlan"
#: Seconds between SIGTERM and SIGKILL when tasks are stopped: the local analogue of a pod's termination grace
#: (`docker stop` waits as long). FrameworkController's podGracefulDeletionTimeoutSec (600 in OpenPAI) bounds a
#: force-deletion on a cluster, far too long for a Ctrl-C on a workstation.
GRACE_PERIOD_SEC = 10
#: Every local task runs here: loopback is the only interface all instances share.
HOST_IP = "127.0.0.1"
#: /dev/shm of an OpenPAI task without extraContainerOptions.shmMB (openpai.md: the dshm emptyDir's sizeLimit).
DEFAULT_SHM_MB = 512
NODE = "localhost"


def compile_local(job: Job, profile: Profile, *, parameters: Mapping[str, Any] | None = None,
                  secrets_from: str | None = None, document: Document | None = None) -> list[dict[str, Any]]:
    """The LocalPlan for `job`, as a one-object list (the `Target` protocol); pure and deterministic.

    Raises UsageError for `--secrets-from` (a Kubernetes Secret; locally the secrets come from the job) and
    InvalidJobError for task role names that clash once converted (E606): the runtime's variables use them.
    """
    from paictl.compiler.render import render_entrypoint

    from paictl.targets.framework.names import framework_name, task_role_name_findings

    if secrets_from is not None:
        raise UsageError("--secrets-from names a Kubernetes Secret; a local run takes the secrets from the job")
    raise_if_any(task_role_name_findings(job), document, document.path if document is not None else "<job>")
    virtual_cluster = job.defaults.virtual_cluster or profile.virtual_cluster
    shared = {item["name"]: item["value"] for item in framework_env(job, profile, virtual_cluster)}
    # FrameworkController names the Framework as `--target framework` would with this profile (the md5 of
    # `<user>~<job>` with naming `openpai`): a task that keys files or peers on it sees the cluster's value.
    framework = shared["FC_FRAMEWORK_NAME"] = framework_name(job, profile)
    # FrameworkController prepends its variables to every container; the UIDs come at run time (own_names).
    shared["FC_FRAMEWORK_NAMESPACE"] = profile.namespace
    shared["FC_CONFIGMAP_NAME"] = f"{framework}-attempt"
    roles = []
    for role in job.task_roles:
        commands, substitutions = runtime_commands(render_entrypoint(job, role.name, parameters), bool(job.secrets))
        roles.append(_role(job, role, commands, substitutions, framework))
    return [{
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": job.name},
        "spec": {
            "jobName": shared["PAI_JOB_NAME"],
            "user": profile.user,
            "gangAllocation": job.gang_allocation,
            # Framework retryPolicy as OpenPAI sets it: fancy (transient failures retried without counting).
            "jobRetry": {"fancyRetryPolicy": True, "maxRetryCount": job.job_retry_count},
            "gracePeriodSec": GRACE_PERIOD_SEC,
            "hostIP": HOST_IP,
            "workingDir": ".",
            "notes": [],
            "env": shared,
            # Every instance's host and port variables, seen by every task, set at the start of each job attempt.
            "envAtStart": peer_names(job),
            "taskRoles": roles,
        },
    }]


def _role(job: Job, role: TaskRole, commands: str, substitutions: list[tuple[str, str]],
          framework: str) -> dict[str, Any]:
    ports = port_requests(role)
    converted = convert_name(role.name)
    return {
        "name": role.name,
        "frameworkName": converted,
        "instances": role.instances,
        "image": _image(job, role),
        # What the docker runtime limits each instance to (the host runtime records them only): resourcePerInstance,
        # and /dev/shm's size as OpenPAI mounts it (extraContainerOptions.shmMB, else 512).
        "resources": {"cpu": role.resources.cpu, "memoryMB": role.resources.memory_mb, "gpu": role.resources.gpu,
                      "shmMB": role.shm_mb if isinstance(role.shm_mb, int) and role.shm_mb > 0 else DEFAULT_SHM_MB},
        "completion": {"minFailedTaskCount": min_failed(role), "minSucceededTaskCount": min_succeeded(role)},
        # Upstream retries a task only without gang allocation (pai#5004); FC's fancy policy then applies.
        "taskRetry": {"fancyRetryPolicy": False, "maxRetryCount": 0} if job.gang_allocation else
        {"fancyRetryPolicy": True, "maxRetryCount": role.task_retry_count},
        "command": [*SHELL, "-c", commands, SCRIPT_NAME],
        "secretTags": [{"tag": tag, "key": key} for tag, key in substitutions],
        "ports": ports,
        "tasks": [{
            "index": index,
            "env": {
                "PAI_CURRENT_TASK_ROLE_NAME": role.name,
                "PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX": str(index),
                "PAI_TASK_INDEX": str(index),
                "FC_TASKROLE_NAME": converted,
                "FC_TASK_INDEX": str(index),
                "FC_POD_NAME": f"{framework}-{converted}-{index}",
            },
        } for index in range(role.instances)],
        # This instance's own variables, set when it starts (its ports are allocated then).
        "envAtStart": own_names(role),
    }


def port_requests(role: TaskRole) -> dict[str, int]:
    """label -> count, the job's labels then the runtime's `ssh` and `http` (as the port-scheduling spec lists)."""
    counts = {label: max(count, 0) for label, count in role.resources.ports.items()}
    for label in ALWAYS_PORTS:
        counts.setdefault(label, 1)
    return counts


#: FrameworkController's per-object UIDs, which a local run makes up as the API server would: the Framework's once
#: a run, the attempt ConfigMap's, the task roles' and the tasks' once a job attempt, the pod's once a task attempt.
FC_UIDS = ("FC_FRAMEWORK_UID", "FC_CONFIGMAP_UID", "FC_FRAMEWORK_ATTEMPT_INSTANCE_UID", "FC_TASKROLE_UID",
           "FC_TASK_UID", "FC_POD_UID", "FC_TASK_ATTEMPT_INSTANCE_UID")


def own_names(role: TaskRole) -> list[str]:
    """The variables about the task itself that the runner sets when it starts, sorted."""
    names = {"PAI_WORK_DIR", "PAI_TASK_ROLE_INSTANCES", "PAI_CURRENT_CONTAINER_IP", "PAI_CONTAINER_HOST_IP",
             "PAI_CURRENT_CONTAINER_PORT", "PAI_CONTAINER_HOST_PORT", "PAI_CONTAINER_SSH_PORT",
             "PAI_CONTAINER_HOST_PORT_LIST", "FC_FRAMEWORK_ATTEMPT_ID", "FC_TASK_ATTEMPT_ID", *FC_UIDS}
    names.update(f"PAI_CONTAINER_HOST_{label}_PORT_LIST" for label in port_requests(role))
    return sorted(names)


def peer_names(job: Job) -> list[str]:
    """Every instance's host and port variables (OpenPAI's runtime gives each task all of them), in job order."""
    names = []
    for role in job.task_roles:
        name = convert_name(role.name)
        names.append(f"PAI_TASK_ROLE_{name}_HOST_LIST")
        for i in range(role.instances):
            names.append(f"PAI_HOST_IP_{name}_{i}")
            for label in port_requests(role):
                names += [f"PAI_PORT_LIST_{name}_{i}_{label}", f"PAI_{name}_{i}_{label}_PORT"]
    return names


def _image(job: Job, role: TaskRole) -> str:
    prerequisite = job.prerequisite("dockerimage", role.docker_image)
    uri = prerequisite.uri if prerequisite is not None else None
    return uri if isinstance(uri, str) else role.docker_image


#: The `Target` protocol's entry point (paictl.targets.get_target("local").compile).
compile = compile_local  # noqa: A001 - the name every target module exports
