"""Cluster profiles: everything about a cluster that a compiled job depends on, kept out of the job itself.

An OpenPAI job says *what* to run; where the upstream rest-server fills in the rest (user, runtime image, GPU
resource name, HiveD SKU table, storages, service account...) from its own deployment, paictl reads a profile. The
same job compiled with two profiles gives two clusters' Frameworks, and a compile never reaches for a live cluster.

Profiles are YAML checked against `schemas/profile.schema.json` and reported through the job validator's machinery,
so a broken profile gets the same located `file:line:col` diagnostics as a broken job.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, Mapping

from paictl.errors import UsageError

BUILTIN_PROFILES = ("default", "openpai")

Runtime = Literal["openpai", "native"]
Naming = Literal["openpai", "readable"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Sku:
    """What one HiveD leaf cell of a SKU stands for; a task role's cell count is derived from it."""

    name: str
    cpu: int
    memory_mb: int
    gpu: int
    #: Leaf cells on one node, if known: HiveD can only place a pod inside one node-level cell.
    cells_per_node: int | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class HivedSettings:
    """The HiveD scheduler's settings: whether it is on, its SKU table, its scheduler name and device variables."""

    enabled: bool = False
    skus: Mapping[str, Sku] = dataclasses.field(default_factory=lambda: MappingProxyType({}))
    scheduler_prefix: str = "hivedscheduler"
    device_envs: tuple[str, ...] = ("NVIDIA_VISIBLE_DEVICES", "HIVED_VISIBLE_DEVICES")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Storage:
    """A storage the cluster offers jobs (OpenPAI's storage config): shared, mounted by default, read-only."""

    name: str
    share: bool = True
    default: bool = False
    read_only: bool = False


@dataclasses.dataclass(frozen=True, kw_only=True)
class Profile:
    """A loaded, validated cluster profile (see the schema for what each value means upstream)."""

    source: str
    namespace: str
    user: str
    runtime: Runtime
    runtime_image: str | None
    runtime_image_pull_secrets: tuple[str, ...]
    naming: Naming
    gpu_resource: str
    priority_classes: bool
    port_range: tuple[int, int]
    hived: HivedSettings
    storages: tuple[Storage, ...]
    fallback_priority_class: str | None = None
    virtual_cluster: str = "default"
    service_account: str | None = None
    host_network: bool = False
    #: matchExpressions of the required node affinity; empty means none.
    node_affinity: tuple[Mapping[str, Any], ...] = ()
    pod_graceful_deletion_timeout_sec: int = 600
    log_host_path: str = "/var/log/pai"
    exit_spec_config_map: str = "runtime-exit-spec-configuration"
    api_server_address: str = "https://kubernetes.default:443"
    rest_server_uri: str = "http://rest-server:9186"
    default_shm_mb: int = 512
    #: Native runtime, gang allocation: the FrameworkBarrier init container's image, and the service account its
    #: pods run as when `service_account` is unset (it must be allowed to read frameworks).
    barrier_image: str = "frameworkcontroller/frameworkbarrier"
    barrier_service_account: str | None = None
    #: Also emit that service account with a Role and RoleBinding that let it read frameworks (get, list, watch),
    #: as FrameworkController's example sets them up, for a cluster where nobody made them (`compile --barrier-rbac`).
    barrier_rbac: bool = False
    #: Extended resources every app container asks for (OpenPAI's FUSE device plugin: github.com/fuse).
    extra_limits: Mapping[str, int] = dataclasses.field(default_factory=lambda: MappingProxyType({}))
    #: KubeDL MarsJob apiVersion (`mars.apiVersion`); the older `kubedl.io/v1alpha1` is what Mars's client targets.
    mars_api_version: str = "training.kubedl.io/v1alpha1"
    #: Kueue LocalQueue for JobSets (`jobset.queueName`): the `kueue.x-k8s.io/queue-name` label, admission as one unit.
    jobset_queue_name: str | None = None

    def with_user(self, user: str | None) -> Profile:
        """The profile for `--user`: the user is the one value people change per invocation."""
        return self if not user else dataclasses.replace(self, user=user)

    def overridden(self, *, user: str | None = None, namespace: str | None = None) -> Profile:
        """The profile for `--user` and `-n/--namespace`, each held to the rule the profile schema states for the
        value it replaces (`check_override`): a value no profile file may hold is refused here, naming the option
        (exit 2), rather than compiled into objects the output check then calls a bug (exit 70)."""
        chosen = self.with_user(check_override("user", user, "--user") if user else None)
        if namespace is not None:
            chosen = dataclasses.replace(chosen, namespace=check_override("namespace", namespace, "--namespace"))
        return chosen

    def storage(self, name: str) -> Storage | None:
        return next((s for s in self.storages if s.name == name), None)


#: Why a value the profile schema's pattern refuses cannot be used, for the options that override it.
_OVERRIDE_RULES = {
    "namespace": "a Kubernetes namespace is at most 63 lowercase letters, digits and '-', beginning and ending "
                 "with a letter or digit",
    "user": "the user is the value of the objects' userName label: at most 63 letters, digits, '-', '_' and '.', "
            "beginning and ending with a letter or digit",
}


def check_override(key: str, value: str, option: str) -> str:
    """`value`, given by `option` for the profile's `key`, if the profile schema's pattern for `key` accepts it (a
    JSON Schema pattern matches anywhere: `re.search`); else UsageError."""
    import re

    from paictl.schemas import load_schema

    if re.search(load_schema("profile")["properties"][key]["pattern"], value) is None:
        raise UsageError(f"{option} {value!r}: {_OVERRIDE_RULES[key]}")
    return value


def load_profile(name_or_path: str | os.PathLike[str]) -> Profile:
    """A built-in profile by name (`default`, `openpai`) or a profile file; InvalidJobError if it is invalid.

    A built-in profile is shipped data: the tests check it against the schema and the consistency rules
    (tests/test_profiles.py), so it is only parsed here. Re-validating it through the located loader cost ~40 ms
    on every compile and local run.
    """
    name = os.fspath(name_or_path)
    if name in BUILTIN_PROFILES:
        return builtin_profile(name)
    text, path = _read(name)
    return profile_from_text(text, path)


@functools.lru_cache(maxsize=None)
def builtin_profile(name: str) -> Profile:
    """A shipped profile, trusted (see load_profile) and read once per process."""
    from paictl.protocol.loading import load_fast

    text, path = _read(name)
    data = load_fast(text)
    if data is None:  # pragma: no cover - the fast loader reads every shipped profile (tested)
        return profile_from_text(text, path)
    return _profile(data, path)


def profile_from_text(text: str, path: str = "<profile>") -> Profile:
    from paictl.protocol.validate import load_checked

    document = load_checked(text, path, "profile", _consistency)
    return _profile(document.data, path)


def _read(name_or_path: str | os.PathLike[str]) -> tuple[str, str]:
    name = os.fspath(name_or_path)
    if name in BUILTIN_PROFILES:
        # Plain files beside this module (package data), read without importlib.resources' import cost.
        resource = Path(__file__).parent / "profiles" / f"{name}.yaml"
        return resource.read_text(encoding="utf-8"), f"<profile {name}>"
    if not os.path.lexists(name):
        # Usually a mistyped built-in name rather than a missing file: a usage error (exit 2) either way.
        from paictl.protocol.diagnostics import one_line

        raise UsageError(f"{one_line(name)}: no such profile file (built-in profiles: "
                         f"{', '.join(BUILTIN_PROFILES)})")
    from paictl.protocol.source import read_text_file

    return read_text_file(name, "profile"), name  # bounded: a FIFO or /dev/zero never hangs it


def _consistency(data: Mapping[str, Any]):
    """Rules between values, which the schema cannot say; findings are located like schema ones."""
    from paictl.protocol.codes import finding

    findings = []
    start, end = data["portRange"]
    if start >= end:
        findings.append(finding("E501", "/portRange/1", f"portRange ends at {end}, not after its start {start}",
                                hint="write [first, last), e.g. [15000, 40000]"))
    if data["runtime"] == "openpai" and not data.get("runtimeImage"):
        findings.append(finding("E501", "/runtimeImage", "runtime 'openpai' needs a runtimeImage",
                                hint="e.g. openpai/openpai-runtime:v1.8.0, or use runtime: native"))
    hived = data["hived"]
    if hived["enabled"] and not hived.get("skus"):
        findings.append(finding("E501", "/hived", "HiveD is enabled but hived.skus is empty",
                                hint="list the cluster's SKU types: cpu, memoryMB and gpu of one leaf cell"))
    seen: set[str] = set()
    for index, storage in enumerate(data["storages"]):
        if storage["name"] in seen:
            findings.append(finding("E501", f"/storages/{index}/name", f"storage {storage['name']!r} is listed twice"))
        seen.add(storage["name"])
    return findings


def _profile(data: Mapping[str, Any], path: str) -> Profile:
    hived = data["hived"]
    defaults = HivedSettings()
    return Profile(
        source=path,
        namespace=data["namespace"],
        user=data["user"],
        runtime=data["runtime"],
        runtime_image=data.get("runtimeImage"),
        runtime_image_pull_secrets=tuple(data["runtimeImagePullSecrets"]),
        naming=data["naming"],
        gpu_resource=data["gpuResource"],
        priority_classes=data["priorityClasses"],
        fallback_priority_class=data.get("fallbackPriorityClass"),
        port_range=(data["portRange"][0], data["portRange"][1]),
        hived=HivedSettings(
            enabled=hived["enabled"],
            skus=MappingProxyType({
                name: Sku(name=name, cpu=sku["cpu"], memory_mb=sku["memoryMB"], gpu=sku["gpu"],
                          cells_per_node=sku.get("cellsPerNode"))
                for name, sku in (hived.get("skus") or {}).items()
            }),
            scheduler_prefix=hived.get("schedulerPrefix", defaults.scheduler_prefix),
            device_envs=tuple(hived.get("deviceEnvs", defaults.device_envs)),
        ),
        storages=tuple(Storage(name=s["name"], share=s.get("share", True), default=s.get("default", False),
                               read_only=s.get("readOnly", False)) for s in data["storages"]),
        **_optional(data),
    )


_OPTIONAL = {
    "virtualCluster": "virtual_cluster", "serviceAccount": "service_account", "hostNetwork": "host_network",
    "podGracefulDeletionTimeoutSec": "pod_graceful_deletion_timeout_sec", "logHostPath": "log_host_path",
    "exitSpecConfigMap": "exit_spec_config_map", "apiServerAddress": "api_server_address",
    "restServerUri": "rest_server_uri", "defaultShmMB": "default_shm_mb",
}


def _optional(data: Mapping[str, Any]) -> dict[str, Any]:
    values = {field: data[key] for key, field in _OPTIONAL.items() if key in data}
    barrier = data.get("frameworkBarrier") or {}
    if "image" in barrier:
        values["barrier_image"] = barrier["image"]
    if "serviceAccount" in barrier:
        values["barrier_service_account"] = barrier["serviceAccount"]
    if "rbac" in barrier:
        values["barrier_rbac"] = barrier["rbac"]
    if "apiVersion" in (data.get("mars") or {}):
        values["mars_api_version"] = data["mars"]["apiVersion"]
    if "queueName" in (data.get("jobset") or {}):
        values["jobset_queue_name"] = data["jobset"]["queueName"]
    values["extra_limits"] = MappingProxyType(dict(data.get("extraLimits") or {}))
    values["node_affinity"] = tuple(MappingProxyType(dict(e)) for e in data.get("nodeAffinity") or ())
    return values
