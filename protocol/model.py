"""The typed, immutable job model every compile target consumes (never raw dicts).

Built only from data that passed validation, so it holds no parsing logic: defaults are applied here exactly where
OpenPAI applies them (instances 1, retry counts 0, gang allocation on). Secrets and registry passwords are kept out
of `repr` so that a model printed in a log or a traceback leaks nothing.
"""

from __future__ import annotations

import math

import dataclasses
import functools
from types import MappingProxyType
from typing import Any, Literal, Mapping

from .names import first_wins

PrerequisiteType = Literal["script", "output", "data", "dockerimage"]


def _frozen(mapping: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(_mapping(mapping)))


def _mapping(value: Any) -> Mapping[str, Any]:
    """A mapping the schema accepted; an unquoted date there (js-yaml's Date, which OpenPAI's schema takes for an
    object without keys) is held as that empty mapping. paictl, like OpenPAI, then runs the job without those settings (warning W809)."""
    return value if isinstance(value, Mapping) else {}


@dataclasses.dataclass(frozen=True, kw_only=True)
class DockerAuth:
    """A dockerimage prerequisite's registry credentials (`auth`); the password is never in a repr."""
    username: str | None = None
    password: str | None = dataclasses.field(default=None, repr=False)
    registry_uri: str | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class Prerequisite:
    """One entry of `prerequisites`: a docker image, script, data or output that task roles select by name."""
    name: str
    type: PrerequisiteType
    uri: str | tuple[str, ...] | None = None
    plugin: str | None = None
    require: tuple[str, ...] = ()
    auth: DockerAuth | None = None
    #: Every key as written (what `<% $script.x %>` and runtime plugins look up); auth is left out.
    fields: Mapping[str, Any] = dataclasses.field(default_factory=lambda: _frozen(None), repr=False)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Completion:
    """When a task role's attempt counts as failed or succeeded (FrameworkController's completion policy)."""
    #: None means OpenPAI's default (1 failure fails the attempt); -1 means never fail on failures.
    min_failed_instances: int | None = None
    #: None means OpenPAI's default (all instances must succeed); -1 means never succeed early.
    min_succeeded_instances: int | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class Resources:
    """`resourcePerInstance`: what each instance of a task role asks the scheduler for."""
    cpu: int
    memory_mb: int
    gpu: int
    #: label -> number of ports to allocate (not a port number).
    ports: Mapping[str, int] = dataclasses.field(default_factory=lambda: _frozen(None))


@dataclasses.dataclass(frozen=True, kw_only=True)
class TaskRole:
    """One task role: its image, resources, commands and how many identical instances run them."""
    name: str
    docker_image: str
    resources: Resources
    commands: tuple[str, ...]
    instances: int = 1
    #: `instances` as written (None when absent): HiveD's affinity group lists it as is (`podNumber`).
    instances_written: Any = 1
    completion: Completion = Completion()
    task_retry_count: int = 0
    prerequisites: tuple[str, ...] = ()
    data: str | None = None
    output: str | None = None
    script: str | None = None
    shm_mb: int | None = None
    extra_container_options: Mapping[str, Any] = dataclasses.field(default_factory=lambda: _frozen(None))


@dataclasses.dataclass(frozen=True, kw_only=True)
class DeploymentTaskRole:
    """A deployment's pre- and post-commands for one task role (joined around its commands)."""
    pre_commands: tuple[str, ...] = ()
    post_commands: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True, kw_only=True)
class Deployment:
    """A named deployment: per task role, commands run before and after the role's own."""
    name: str
    task_roles: Mapping[str, DeploymentTaskRole]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Defaults:
    """`defaults`: the deployment applied and the virtual cluster submitted to when none is named."""
    deployment: str | None = None
    virtual_cluster: str | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class Job:
    """A validated job (protocol v2) with OpenPAI's defaults applied: what every target compiles."""
    name: str
    task_roles: tuple[TaskRole, ...]
    protocol_version: str = "2"
    type: str = "job"
    version: str | int | float | None = None
    contributor: str | None = None
    description: str | None = None
    prerequisites: tuple[Prerequisite, ...] = ()
    parameters: Mapping[str, Any] = dataclasses.field(default_factory=lambda: _frozen(None))
    secrets: Mapping[str, Any] = dataclasses.field(default_factory=lambda: _frozen(None), repr=False)
    #: Whether the job has a `secrets` value at all: upstream makes the secrets Secret for any value but null, an
    #: empty mapping included (`config.secrets ? ... : null`), so a job with `secrets: {}` gets one too.
    has_secrets: bool = False
    job_retry_count: int = 0
    deployments: tuple[Deployment, ...] = ()
    defaults: Defaults = Defaults()
    extras: Mapping[str, Any] = dataclasses.field(default_factory=lambda: _frozen(None))

    @property
    def gang_allocation(self) -> bool:
        """OpenPAI allocates all task roles together unless `extras.gangAllocation` is exactly false."""
        return self.extras.get("gangAllocation") is not False

    def task_role(self, name: str) -> TaskRole:
        return self._task_roles_by_name[name]

    @functools.cached_property
    def _task_roles_by_name(self) -> dict[str, TaskRole]:
        """Looked up once per role by every target: a scan each time made 17,000 roles cost 10 s."""
        return {role.name: role for role in reversed(self.task_roles)}  # reversed: the first of a name wins

    def prerequisite(self, type_: PrerequisiteType, name: str) -> Prerequisite | None:
        """The prerequisite upstream finds under this type and name: the first, or for `__proto__` the last
        (protocol/names.py)."""
        found = [p for p in self.prerequisites if p.type == type_ and p.name == name]
        return (found[0] if first_wins(name) else found[-1]) if found else None

    def default_deployment(self) -> Deployment | None:
        """The deployment `defaults.deployment` names: the first of that name, or for `__proto__` the last."""
        found = [d for d in self.deployments if d.name == self.defaults.deployment]
        return (found[0] if first_wins(self.defaults.deployment) else found[-1]) if found else None


def job_from_data(data: Mapping[str, Any]) -> Job:
    """The model of a document that passed validation (calling it on unvalidated data is a programming error)."""
    roles = data.get("taskRoles")
    return Job(
        name=data["name"],
        protocol_version=str(data["protocolVersion"]),
        type=data["type"],
        version=data.get("version"),
        contributor=data.get("contributor"),
        description=data.get("description"),
        prerequisites=tuple(_prerequisite(p) for p in data.get("prerequisites") or ()),
        parameters=_frozen(data.get("parameters")),
        secrets=_frozen(data.get("secrets")),
        has_secrets=data.get("secrets") is not None,
        job_retry_count=_retry_count(data.get("jobRetryCount")),
        task_roles=tuple(_task_role(n, r) for n, r in roles.items()) if isinstance(roles, dict) else (),
        deployments=tuple(_deployment(d) for d in data.get("deployments") or ()),
        defaults=Defaults(deployment=_mapping(data.get("defaults")).get("deployment"),
                          virtual_cluster=_mapping(data.get("defaults")).get("virtualCluster")),
        extras=_frozen(data.get("extras")),
    )


def _ports(ports: Any) -> Any:
    """The port labels OpenPAI keeps: it copies them into a plain object (`randomPorts.ports[label] = ...`), where a
    `__proto__` label sets the object's prototype instead of adding a key, so that label gets no port (W211)."""
    if isinstance(ports, dict) and "__proto__" in ports:
        return {label: count for label, count in ports.items() if label != "__proto__"}
    if isinstance(ports, list):  # Object.keys of an array: its indexes are the labels (W212)
        return {str(index): count for index, count in enumerate(ports)} or None
    return ports


def _retry_count(value: Any) -> int:
    """OpenPAI's `count || 0`; an infinite count (ajv takes it for an integer) reaches the Framework as JSON null,
    which the API server drops from the non-nullable field: FrameworkController reads 0, and so does paictl."""
    if isinstance(value, float) and not math.isfinite(value):
        return 0
    return value or 0


def _prerequisite(item: Mapping[str, Any]) -> Prerequisite:
    uri = item.get("uri")
    auth = item.get("auth")
    return Prerequisite(
        name=item["name"],
        type=item["type"],
        uri=tuple(uri) if isinstance(uri, list) else uri,
        plugin=item.get("plugin"),
        require=tuple(item.get("require") or ()),
        auth=DockerAuth(username=auth.get("username"), password=auth.get("password"),
                        registry_uri=auth.get("registryuri")) if isinstance(auth, dict) else None,
        fields=_frozen({k: v for k, v in item.items() if k != "auth"}),
    )


def _task_role(name: str, role: Mapping[str, Any]) -> TaskRole:
    resources = role["resourcePerInstance"]
    completion = _mapping(role.get("completion"))
    options = _mapping(role.get("extraContainerOptions"))
    return TaskRole(
        name=name,
        instances=role.get("instances") or 1,
        instances_written=role.get("instances"),
        completion=Completion(min_failed_instances=completion.get("minFailedInstances"),
                              min_succeeded_instances=completion.get("minSucceededInstances")),
        task_retry_count=_retry_count(role.get("taskRetryCount")),
        prerequisites=tuple(role.get("prerequisites") or ()),
        docker_image=role["dockerImage"],
        data=role.get("data"),
        output=role.get("output"),
        script=role.get("script"),
        shm_mb=options.get("shmMB"),
        extra_container_options=_frozen(options),
        resources=Resources(cpu=resources["cpu"], memory_mb=resources["memoryMB"], gpu=resources["gpu"],
                            ports=_frozen(_ports(resources.get("ports")))),
        commands=tuple(role["commands"]),
    )


def _deployment(item: Mapping[str, Any]) -> Deployment:
    return Deployment(
        name=item["name"],
        task_roles=_frozen({
            name: DeploymentTaskRole(pre_commands=tuple(spec.get("preCommands") or ()),
                                     post_commands=tuple(spec.get("postCommands") or ()))
            for name, spec in ((n, _mapping(v)) for n, v in _mapping(item["taskRoles"]).items())
        }),
    )
