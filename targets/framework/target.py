"""Compile a job into a FrameworkController Framework and its companion objects, as OpenPAI's rest-server does.

A pure translation, modelled on TorchX's schedulers: typed job + cluster profile in, plain Kubernetes objects out.
No Kubernetes client, no clock, no network: the same inputs always give the same objects, in apply order
(Secrets, then the PriorityClass, then the Framework that references them). Upstream's semantics are followed
exactly (openpai.md c.1-c.6, checked field by field against the golden outputs in tests/test_framework_golden.py);
the few deliberate differences are listed in that test's DELIBERATE_DIFFERENCES.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Mapping

from paictl.protocol.names import convert_name

from paictl.targets.findings import raise_if_any
from paictl.targets.kube.limits import size_findings
from paictl.targets.framework.env import framework_env, min_failed, min_succeeded
from paictl.targets.framework.names import framework_name, task_role_name_findings
from paictl.targets.framework.pod import MountedStorage, PodContext, pod_template
from paictl.targets.framework.secrets import config_annotation, config_secret, docker_secret, priority_class

if TYPE_CHECKING:
    from paictl.compiler.profiles import Profile
    from paictl.protocol.diagnostics import Finding
    from paictl.protocol.loading import Document
    from paictl.protocol.model import Job

API_VERSION = "frameworkcontroller.microsoft.com/v1"


def compile_framework(job: Job, profile: Profile, *, parameters: Mapping[str, Any] | None = None,
                      secrets_from: str | None = None, document: Document | None = None) -> list[dict[str, Any]]:
    """The objects to apply for `job` on the cluster `profile` describes: Secrets, PriorityClass, Framework.

    `parameters` overrides the job's parameters (as a submission-time override would). `secrets_from` names an
    existing Secret holding the job's secrets (key `secrets.yaml`): it is mounted instead of emitting
    `<name>-configcred`, so the secrets need not be in the job file (with the native runtime it also needs the
    `secret.<path>` keys described in framework_native). `document` is the job's loaded source
    (`paictl.protocol.loading.Document`): with it the `config` annotation is the submitted text, masked, exactly as
    upstream stores it, and errors the cluster finds (unknown storage, HiveD misfits) are located at file:line:col;
    without it the annotation is serialised from the model and errors carry a JSON pointer only.
    Raises InvalidJobError listing every such error.
    """
    from paictl.compiler.render import render_entrypoint

    name = framework_name(job, profile)
    # Upstream: `defaults.virtualCluster != null ? it : 'default'` (compile_checks refuses "" and non-strings).
    virtual_cluster = job.defaults.virtual_cluster if job.defaults.virtual_cluster is not None \
        else profile.virtual_cluster
    findings: list[Finding] = list(task_role_name_findings(job))
    storages = mounted_storages(job, profile, findings)
    hived_specs: dict[str, Any] = {}
    if profile.hived.enabled:
        from paictl.targets.framework.hived import hived_specs as compute

        hived_specs, problems = compute(job, profile, virtual_cluster)
        findings += problems + _null_virtual_cluster(document)
    native_ports: dict[str, Any] = {}
    if profile.runtime == "native":
        from paictl.targets.framework.native import allocate_ports

        native_ports, problems = allocate_ports(job, profile)
        findings += problems
    raise_if_any(findings, document, _path(document))
    entrypoints = {role.name: render_entrypoint(job, role.name, parameters) for role in job.task_roles}

    objects: list[dict[str, Any]] = []
    if profile.runtime == "native":
        from paictl.targets.framework.native import barrier_rbac

        objects += barrier_rbac(job, profile)
    secrets_secret = secrets_from
    if secrets_from is None and (job.secrets or job.has_secrets):
        secret = config_secret(name, job, profile)
        if profile.runtime == "native":
            from paictl.targets.framework.native import secret_files

            files = secret_files(job, entrypoints.values())
            secret["data"].update((key, _b64(value)) for key, value in sorted(files.items()))
        objects.append(secret)
        secrets_secret = f"{name}-configcred"
    regcred = docker_secret(name, job, profile)
    if regcred is not None:
        objects.append(regcred)
    priority_name = profile.fallback_priority_class
    if profile.priority_classes:
        from paictl.targets.framework.hived import priority_of

        pc = priority_class(name, priority_of(hived_specs) if profile.hived.enabled else 0)
        objects.append(pc)
        priority_name = pc["metadata"]["name"]

    ctx = PodContext(job=job, profile=profile, name=name, virtual_cluster=virtual_cluster,
                     shared_env=framework_env(job, profile, virtual_cluster), hived_specs=hived_specs,
                     secrets_secret=secrets_secret, regcred=regcred["metadata"]["name"] if regcred else None,
                     storages=storages, priority_class=priority_name, native_ports=native_ports)
    task_roles = []
    for role in job.task_roles:
        entrypoint = entrypoints[role.name]
        task_roles.append({
            "name": convert_name(role.name),
            "taskNumber": role.instances,
            "task": {
                # Upstream retries a task only without gang allocation: a gang is all-or-nothing (pai#5004).
                "retryPolicy": {"fancyRetryPolicy": False, "maxRetryCount": 0} if job.gang_allocation else
                {"fancyRetryPolicy": True, "maxRetryCount": role.task_retry_count},
                "podGracefulDeletionTimeoutSec": profile.pod_graceful_deletion_timeout_sec,
                "pod": pod_template(ctx, role, entrypoint),
            },
            "frameworkAttemptCompletionPolicy": {"minFailedTaskCount": min_failed(role),
                                                 "minSucceededTaskCount": min_succeeded(role)},
        })
    objects.append({
        "apiVersion": API_VERSION,
        "kind": "Framework",
        "metadata": {
            "name": name,
            "namespace": profile.namespace,
            "labels": {"userName": profile.user, "virtualCluster": virtual_cluster},
            "annotations": {
                "jobName": job.name,
                "logPathInfix": name,
                "config": config_annotation(job, document.text if document is not None else None,
                                            document.data if document is not None else None),
                "totalGpuNumber": str(sum(r.resources.gpu * r.instances for r in job.task_roles)),
            },
        },
        "spec": {
            "executionType": "Start",
            "retryPolicy": {"fancyRetryPolicy": True, "maxRetryCount": job.job_retry_count},
            "taskRoles": task_roles,
        },
    })
    raise_if_any(size_findings(objects, document.data if document is not None else None), document,
                 _path(document))
    return objects


def _null_virtual_cluster(document: Document | None) -> list[Finding]:
    """E806 for `virtualCluster: null` under HiveD: upstream's labels say `default`, but its HiveD code (lodash
    `get` with a default, which applies to undefined only) schedules the pods in virtual cluster null."""
    from paictl.protocol.codes import finding

    defaults = document.data.get("defaults") if document is not None else None
    if isinstance(defaults, dict) and "virtualCluster" in defaults and defaults["virtualCluster"] is None:
        return [finding("E806", "/defaults/virtualCluster", "defaults.virtualCluster is null; with HiveD, OpenPAI "
                        "schedules the pods in virtual cluster null (scheduler hivedscheduler-ds-null)",
                        "remove the key to use the default virtual cluster, or name one")]
    return []


def _b64(value: str) -> str:
    import base64

    return base64.b64encode(value.encode("utf-8")).decode("ascii")


def compile_framework_file(path: str | os.PathLike[str], profile: Profile, **options: Any) -> list[dict[str, Any]]:
    """`compile_framework` for a job file: validated (InvalidJobError if not valid), compiled, errors located."""
    from paictl.protocol import load_job_text, read_source
    from paictl.protocol.loading import decode_source, load_located

    from paictl.errors import InvalidJobError
    from paictl.protocol.loading import DocumentError

    try:
        text = decode_source(read_source(path), str(path))
    except DocumentError as exc:
        raise InvalidJobError(exc.diagnostics) from None
    job = load_job_text(text, str(path))
    return compile_framework(job, profile, document=load_located(text, str(path)), **options)


def mounted_storages(job: Job, profile: Profile, findings: list[Finding]) -> tuple[MountedStorage, ...]:
    """The storages upstream mounts: `extras.storages`, else the last teamwise_storage plugin's names
    (protocol/storage_checks.py reads them as k8s.js does; compile_checks has refused the shapes it crashes on).

    An empty list means the profile's default storages, as upstream gives a user all of theirs. Entries without a
    name are skipped, as upstream skips them (validate warns, W208).
    """
    from paictl.protocol.codes import finding
    from paictl.protocol.diagnostics import pointer_of
    from paictl.protocol.jsstring import js_string
    from paictl.protocol.storage_checks import requested_storages, storage_name

    requested, base = requested_storages(_plain_extras(job.extras))
    if not isinstance(requested, list):
        return ()
    if not requested:
        return tuple(MountedStorage(storage=s, mount_path=f"/mnt/{s.name}") for s in profile.storages if s.default)
    mounted = []
    for index, item in enumerate(requested):
        name = storage_name(item)
        if name is None:
            continue
        storage = profile.storage(js_string(name))  # upstream: `name in userStorages`, a string key
        if storage is None:
            known = ", ".join(s.name for s in profile.storages) or "none"
            findings.append(finding("E601", pointer_of(*base, index), f"Storage {js_string(name)} is not found.",
                                    hint=f"storages of the cluster profile: {known}"))
            continue
        mount_path = item.get("mountPath")
        mounted.append(MountedStorage(storage=storage, mount_path=mount_path or f"/mnt/{storage.name}"))
    return tuple(mounted)


def _plain_extras(value: Any) -> Any:
    """The model's read-only extras as dicts and lists, the shapes storage_checks reads."""
    if isinstance(value, Mapping):
        return {k: _plain_extras(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain_extras(v) for v in value]
    return value


def _path(document: Document | None) -> str:
    return document.path if document is not None else "<job>"


#: The `Target` protocol's entry point (paictl.targets.get_target("framework").compile).
compile = compile_framework  # noqa: A001 - the name every target module exports
