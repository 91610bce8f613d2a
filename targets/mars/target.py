"""Compile a job into a KubeDL `MarsJob` (Mars: distributed NumPy/Pandas on Kubernetes), and read one's status.

Upstream has no working example of a MarsJob (marsjob.md 5: the tutorial's file never existed, the sample is a stub,
the tutorial names a field that does not exist), so people write them by hand and find their mistakes at run time.
paictl builds one from a protocol job, a pure function like the Framework target (same inputs, same objects):

- **Roles.** Task roles named `scheduler`, `webservice` and `worker` (any case) become the `Scheduler`, `WebService`
  and `Worker` replica specs; `instances` is `replicas`. Any other role is refused (E701): KubeDL skips unknown replica
  types. Scheduler and Worker are required (E702): only the Scheduler decides success (the job succeeds when all
  scheduler pods do, and fails as soon as one fails, marsjob.md 3), and KubeDL calls the job Running only once a
  Worker is active. One scheduler at most (E703): it keeps the cluster state in memory and Mars runs exactly one.
- **The container is named `mars`.** KubeDL injects the Mars environment (MARS_CLUSTER_DETAIL, MARS_BIND_PORT...),
  the `mars-port` port and the worker memory settings only into the container of that name, and reads exit codes
  from it alone; under any other name the pods start but never find each other.
- **Commands** are rendered exactly as for the Framework (compiler/render.py) and run the way the native runtime runs
  them: `bash -o errexit -o nounset -o pipefail`, `$secrets` filled in at start from the mounted Secret
  (framework_native.run_commands), so no secret value is ever in the MarsJob. Secrets and registry credentials go to
  the same Secret objects as for the Framework (framework_secrets). The PAI_* variables come along (the task index
  from KubeDL's `replica-index` pod label), and the job's ports are fixed container ports from the profile's
  portRange, as in the native runtime, beside Mars's own `mars-port` 11111.
- **Restart policies** are KubeDL's Mars defaults (Scheduler Never, WebService Always, Worker ExitCode: restarted on
  a retryable exit code or eviction). A role with taskRetryCount > 0 (and `extras.gangAllocation: false`, the
  protocol's rule) gets OnFailure, except the Scheduler (W702); `extras.marsJob.restartPolicy` overrides both.
  KubeDL has one restart budget for the whole job, `backoffLimit`: it is jobRetryCount when that is > 0, or
  `extras.marsJob.backoffLimit`. A backoffLimit of 0 would fail the job at the WebService's first restart, so the
  default jobRetryCount 0 leaves it unset.
- **Memory**: requests are the job's, limits leave room for the worker cache (mars_pod.resources: Mars #1855, #1856).
- **Storages** (`extras.storages`) are mounted as for the Framework, from the profile's storages (E601 if unknown).
- **What does not carry over**: the openpai runtime (no Framework for it to read), HiveD, priority classes and host
  networking are Framework features; use `extras.marsJob.schedulingPolicy` for priority and gangs.

The API group comes from the profile (`mars.apiVersion`). Other Mars settings are in `extras.marsJob`
(mars_extras.py). The status side (`job_state`, `task_views`, `job_view`) is in mars_status.py and exported here.
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING, Any, Mapping

from paictl.targets.findings import located_all, raise_if_any
from paictl.targets.kube.limits import size_findings
from paictl.targets.framework.secrets import native_secret_objects
from paictl.targets.mars.extras import MarsSettings, read_settings
from paictl.targets.mars.status import API_VERSIONS, CONTAINER, KIND, PLURAL, REPLICA_TYPES, job_state, job_view, task_views

if TYPE_CHECKING:
    from paictl.compiler.profiles import Profile
    from paictl.protocol.diagnostics import Diagnostic, Finding
    from paictl.protocol.loading import Document
    from paictl.protocol.model import Job, TaskRole

__all__ = ["API_VERSIONS", "CONTAINER", "KIND", "PLURAL", "compile", "compile_warnings", "job_state", "job_view",
           "marsjob_name", "task_views"]

DEFAULT_RESTART_POLICIES = {"Scheduler": "Never", "WebService": "Always", "Worker": "ExitCode"}
#: The longest replica type in pod and Service names (`<job>-webservice-<i>`, DNS-1035 labels of at most 63).
_LONGEST_SUFFIX = "-webservice-"
_HASH = 8


def compile_marsjob(job: Job, profile: Profile, *, parameters: Mapping[str, Any] | None = None,
                    secrets_from: str | None = None, document: Document | None = None) -> list[dict[str, Any]]:
    """The objects to apply: the secrets Secret, the registry Secret (if the job has credentials), the MarsJob.

    Arguments as for the Framework target (framework.compile_framework). Raises InvalidJobError listing every job
    that cannot be a MarsJob, located in the job file when `document` is given.
    """
    from paictl.compiler.render import render_entrypoint

    from paictl.targets.framework.native import allocate_ports, runtime_commands

    from paictl.targets.framework.target import mounted_storages

    types, settings, errors, _ = _plan(job, profile)
    ports, problems = allocate_ports(job, profile)
    errors += problems + _port_findings(job, ports)
    storages = mounted_storages(job, profile, errors)  # E601 for a storage the profile does not have
    raise_if_any(errors, document, document.path if document is not None else "<job>")

    name = marsjob_name(job, profile)
    entrypoints = {role.name: render_entrypoint(job, role.name, parameters) for role in job.task_roles}
    objects, secrets_secret, regcred = native_secret_objects(name, job, profile, entrypoints.values(), secrets_from)

    from paictl.targets.mars.pod import PodParts, pod_template

    parts = PodParts(job=job, profile=profile, ports=ports, secrets_secret=secrets_secret,
                     regcred=regcred, settings=settings,
                     storages=storages)
    replica_specs = {}
    for replica_type in REPLICA_TYPES:
        role = types.get(replica_type)
        if role is None:
            continue
        commands, substitutions = runtime_commands(entrypoints[role.name], secrets_secret is not None)
        replica_specs[replica_type] = {
            "replicas": role.instances,
            "restartPolicy": restart_policy(job, role, replica_type, settings),
            "template": pod_template(parts, role, replica_type, commands, substitutions),
        }
    worker = types.get("Worker")
    if worker is not None:
        raise_if_any(_mount_findings(job, replica_specs["Worker"]["template"], settings, worker), document,
                     document.path if document is not None else "<job>")
    spec: dict[str, Any] = dict(settings.run_policy)
    if "backoffLimit" not in spec and job.job_retry_count > 0:
        spec["backoffLimit"] = job.job_retry_count
    if settings.web_host is not None:
        spec["webHost"] = settings.web_host
    if settings.memory_policy is not None:
        spec["workerMemoryTuningPolicy"] = dict(settings.memory_policy)
    spec["marsReplicaSpecs"] = replica_specs
    virtual_cluster = job.defaults.virtual_cluster or profile.virtual_cluster
    objects.append({
        "apiVersion": profile.mars_api_version,
        "kind": KIND,
        "metadata": {"name": name, "namespace": profile.namespace,
                     "labels": {"userName": profile.user, "virtualCluster": virtual_cluster},
                     "annotations": {"jobName": job.name}},
        "spec": spec,
    })
    raise_if_any(size_findings(objects, document.data if document is not None else None), document,
                 document.path if document is not None else "<job>")
    return objects


def compile_warnings(job: Job, profile: Profile, document: Document | None = None) -> list[Diagnostic]:
    """What the compile accepts but the user should fix (W701, W702, W703), located; printed by the CLI, not raised."""
    _, _, _, warnings = _plan(job, profile)
    return located_all(warnings, document, document.path if document is not None else "<job>")


def restart_policy(job: Job, role: TaskRole, replica_type: str, settings: MarsSettings) -> str:
    explicit = settings.restart_policies.get(role.name.lower())
    if explicit is not None:
        return explicit
    if role.task_retry_count > 0 and not job.gang_allocation and replica_type != "Scheduler":
        return "OnFailure"
    return DEFAULT_RESTART_POLICIES[replica_type]


def marsjob_name(job: Job, profile: Profile) -> str:
    """A readable name whose pods and Services (`<name>-webservice-<i>`) are valid DNS-1035 labels.

    The job name in lower case, other characters as dashes, starting with a letter, then a short hash of
    `<user>~<job>` that keeps two users' jobs of the same name apart in one namespace (as the Framework's readable
    names do). Shortened so the longest pod name fits in 63 characters.
    """
    digest = hashlib.md5(f"{profile.user}~{job.name}".encode("utf-8")).hexdigest()[:_HASH]
    stem = re.sub(r"[^a-z0-9]+", "-", job.name.lower()).strip("-")
    if not stem[:1].isalpha():
        stem = ("mars-" + stem).strip("-")
    widest_index = len(str(max((r.instances for r in job.task_roles), default=1) - 1))
    room = 63 - len(_LONGEST_SUFFIX) - widest_index - 1 - _HASH
    return f"{stem[:room].rstrip('-')}-{digest}"


def _plan(job: Job, profile: Profile) -> tuple[dict[str, TaskRole], MarsSettings, list[Finding], list[Finding]]:
    """Replica type -> task role, the checked extras, and the errors and warnings of both."""
    from paictl.protocol.codes import finding
    from paictl.protocol.diagnostics import Anchor
    from paictl.protocol.suggest import did_you_mean

    errors: list[Finding] = []
    warnings: list[Finding] = []
    types: dict[str, TaskRole] = {}
    by_lower = {t.lower(): t for t in REPLICA_TYPES}
    for role in job.task_roles:
        pointer = _role_pointer(role)
        replica_type = by_lower.get(role.name.lower())
        if replica_type is None:
            guess = did_you_mean(role.name, [t.lower() for t in REPLICA_TYPES],
                                 {"web": "webservice", "web_service": "webservice", "webserver": "webservice",
                                  "master": "scheduler", "workers": "worker"})
            errors.append(finding(
                "E701", pointer, f"task role '{role.name}' is not a Mars role: a MarsJob has only scheduler, "
                "webservice and worker replicas (KubeDL ignores any other)" + (f"; did you mean '{guess}'?"
                                                                               if guess else ""),
                hint="rename the task role to scheduler, webservice or worker", anchor=Anchor.KEY))
        elif replica_type in types:
            errors.append(finding("E701", pointer, f"task roles '{types[replica_type].name}' and '{role.name}' are "
                                  f"both the {replica_type} (role names are matched case-insensitively)",
                                  hint="merge them into one task role", anchor=Anchor.KEY))
        else:
            types[replica_type] = role
    if not errors:
        for replica_type, why in (("Scheduler", "only the scheduler decides whether a MarsJob succeeded or failed"),
                                  ("Worker", "without workers nothing computes, and KubeDL reports the job Running "
                                             "only once a worker is")):
            if replica_type not in types:
                errors.append(finding("E702", "/taskRoles", f"a Mars job needs a {replica_type.lower()} task role: "
                                      f"{why}", hint=f"add a task role named {replica_type.lower()}",
                                      anchor=Anchor.KEY))
    scheduler = types.get("Scheduler")
    if scheduler is not None and scheduler.instances > 1:
        errors.append(finding("E703", _role_pointer(scheduler) + "/instances",
                              f"the scheduler has {scheduler.instances} instances; Mars runs exactly one (it holds "
                              "the cluster state in memory, and only the scheduler decides success)",
                              hint="set instances: 1 (or leave it out)"))
    total = sum(r.instances for r in types.values())
    settings, problems, notes = read_settings(job.extras, {r.name.lower(): r.name for r in job.task_roles},
                                              profile.mars_api_version, total)
    errors += problems
    warnings += notes
    if settings.web_host is not None and not errors and "WebService" not in types:
        errors.append(finding("E704", "/extras/marsJob/webHost", "webHost is set but the job has no webservice task "
                              "role: KubeDL creates the Ingress for WebService pods only",
                              hint="add a webservice task role, or remove webHost", anchor=Anchor.KEY))
    if scheduler is not None and scheduler.task_retry_count > 0 and not job.gang_allocation \
            and scheduler.name.lower() not in settings.restart_policies:
        warnings.append(finding("W702", _role_pointer(scheduler) + "/taskRetryCount",
                                "taskRetryCount of the scheduler is not applied: a restarted scheduler has lost the "
                                "cluster state, so it stays restartPolicy Never (a failed scheduler fails the job)",
                                hint="remove taskRetryCount, or set extras.marsJob.restartPolicy.scheduler"))
    if job.job_retry_count == 0 and "backoffLimit" not in settings.run_policy:
        warnings += [finding("W703", _role_pointer(role) + "/taskRetryCount", f"taskRetryCount "
                             f"{role.task_retry_count} of task role '{role.name}' is no bound: its pods restart "
                             "OnFailure, and KubeDL limits those restarts only with the job's backoffLimit, which is "
                             "unset (jobRetryCount 0), so a task that keeps failing restarts for ever",
                             hint="set extras.marsJob.backoffLimit (restarts allowed across the job), or jobRetryCount")
                     for replica_type, role in types.items()
                     if restart_policy(job, role, replica_type, settings) == "OnFailure"
                     and role.name.lower() not in settings.restart_policies]
    return types, settings, errors, warnings


def _port_findings(job: Job, ports: Mapping[str, Mapping[str, tuple[int, ...]]]) -> list[Finding]:
    from paictl.protocol.codes import finding
    from paictl.protocol.diagnostics import Anchor
    from paictl.targets.mars.pod import MARS_PORT

    return [finding("E706", _role_pointer(role) + "/resourcePerInstance", f"task role '{role.name}' would get port "
                    f"{MARS_PORT} for its '{label}' ports, and Mars binds that port itself",
                    hint="use a profile whose portRange does not include 11111", anchor=Anchor.KEY)
            for role in job.task_roles for label, numbers in ports.get(role.name, {}).items() if MARS_PORT in numbers]


def _mount_findings(job: Job, template: Mapping[str, Any], settings: MarsSettings,
                    worker: TaskRole) -> list[Finding]:
    """E705 for a spill directory or a cache path (plasmaStore) where the Worker's `mars` container already has a
    mount: KubeDL adds its volumes there when it creates each pod, and the API server refuses a container with two
    mounts at one path ("must be unique"), so no worker pod would ever be created (KubeDL only records an event)."""
    from paictl.protocol.codes import finding
    from paictl.targets.mars.extras import BASE, KEY, MEMORY_POLICY, TUTORIAL_NAME
    from paictl.targets.mars.pod import CACHE_MOUNT_OF_KUBEDL, kubedl_mounts

    taken = {str(m.get("mountPath")): f"the container's mount of {m.get('name')}"
             for c in template["spec"]["containers"] for m in c.get("volumeMounts") or () if c.get("name") == CONTAINER}
    raw = job.extras.get(KEY)
    key = TUTORIAL_NAME if isinstance(raw, Mapping) and TUTORIAL_NAME in raw else MEMORY_POLICY
    findings: list[Finding] = []
    for volume, path in kubedl_mounts(settings, worker).items():
        where = f"{BASE}/{key}/" + ("plasmaStore" if volume == CACHE_MOUNT_OF_KUBEDL
                                    else f"spillDirs/{volume.rsplit('-', 1)[1]}")
        what = "the worker cache (plasmaStore)" if volume == CACHE_MOUNT_OF_KUBEDL else "spill directory"
        if path in taken:
            findings.append(finding("E705", where, f"{what} {path} is also {taken[path]}; KubeDL mounts a volume "
                                    "there as it creates each worker pod, and the API server refuses a container "
                                    "with two mounts at one path, so no worker would ever start",
                                    hint="choose another directory"))
        taken.setdefault(path, "the worker cache" if volume == CACHE_MOUNT_OF_KUBEDL else "a spill directory")
    return findings


def _role_pointer(role: TaskRole) -> str:
    return "/taskRoles/" + role.name.replace("~", "~0").replace("/", "~1")


#: The `Target` protocol's entry point (paictl.targets.get_target("mars").compile).
compile = compile_marsjob  # noqa: A001 - the name every target module exports
