"""What every compile target needs of a job beyond what `validate` demands: one check set, run before any target.

`validate` reproduces the OpenPAI rest-server's verdict, and upstream lets through jobs it then crashes on (a
`taskRoles` that is null, a command mustache.js cannot parse, a runtime plugin whose parameters are a string) or that
FrameworkController refuses (more than 10,000 instances, a retry count beyond int32, a completion count below -1).
`paictl.targets.compiled.compile_job` runs these checks on every job validate accepted, before handing it to a
target, so each such job is refused with a located error (exit 1) instead of a traceback, exit 70, or a local run
allocating two billion tasks. Refusing is right here: upstream has no working behaviour to copy (README,
"Deliberate differences").
"""

from __future__ import annotations

import math
from typing import Any, Iterator

from .codes import finding
from .diagnostics import Finding, kind_of, pointer_of
from .placeholders import PLUGIN_KEY
from .platform_limits import LABEL_VALUE, MAX_INSTANCES, MAX_INT32, MIN_RETRY_COUNT, RESOURCE_BOUNDS
from .template_checks import (default_deployment, render_failures, rendered_views, task_roles,
                              template_findings)


def compile_findings(data: dict[str, Any], *, commands_only: bool = False) -> list[Finding]:
    """Errors for a job no target can compile; [] for every job a target can. `commands_only` says that only the
    task roles' commands can fail to render (validate's screen vouched for the rest): only they are checked."""
    views = list(rendered_views(data))  # the texts upstream renders, for the parse and the lookup checks
    if commands_only:
        return [*template_findings(data, views), *render_failures(views)]
    from .storage_checks import storage_problems

    return [*_task_role_shapes(data), *_counts(data), *template_findings(data, views), *plugin_findings(data),
            *hived_shape_findings(data), *_labels(data), *storage_problems(data), *_dates(data),
            *render_failures(views), *_images(data)]


def _images(data: dict[str, Any]) -> Iterator[Finding]:
    """E811: the image a task role runs must be a reference Kubernetes takes (not empty, no blanks at either end)."""
    used = {role.get("dockerImage") for _, role in task_roles(data) if isinstance(role.get("dockerImage"), str)}
    prerequisites = data.get("prerequisites")
    for index, item in enumerate(prerequisites if isinstance(prerequisites, list) else []):
        if not isinstance(item, dict) or item.get("type") != "dockerimage" or not isinstance(item.get("name"), str) \
                or item["name"] not in used:
            continue
        uri = item.get("uri")
        if isinstance(uri, str) and (not uri or uri != uri.strip()):
            what = "empty" if not uri else f"{uri!r}, with blanks at an end"
            yield finding("E811", pointer_of("prerequisites", index, "uri"), f"the image of docker image "
                          f"'{item.get('name')}' is {what}; OpenPAI puts it in the pod as it is, and Kubernetes "
                          "refuses a pod whose image is empty or not trimmed", "write the image reference, e.g. "
                          "`uri: ubuntu:22.04`")


def _dates(data: dict[str, Any]) -> Iterator[Finding]:
    """W809: an unquoted date where the job schema wants a mapping. ajv takes a JavaScript Date for an (empty)
    object there, so OpenPAI accepts the job and runs it as if the value were no settings at all; so does paictl,
    with this warning. Only those places are looked at (a date anywhere else is refused by the schema or kept as
    data)."""
    from .timestamps import Timestamp

    def places() -> Iterator[tuple[tuple[Any, ...], Any]]:
        for key in ("parameters", "secrets", "defaults", "extras"):
            yield (key,), data.get(key)
        extras = data.get("extras")
        hived = extras.get("hivedScheduler") if isinstance(extras, dict) else None
        yield ("extras", "hivedScheduler"), hived
        roles = hived.get("taskRoles") if isinstance(hived, dict) else None
        for name, entry in (roles.items() if isinstance(roles, dict) else ()):
            yield ("extras", "hivedScheduler", "taskRoles", name), entry
        for name, role in task_roles(data):
            for key in ("completion", "extraContainerOptions"):
                yield ("taskRoles", name, key), role.get(key)
        deployments = data.get("deployments")
        for index, deployment in enumerate(deployments if isinstance(deployments, list) else []):
            entries = deployment.get("taskRoles") if isinstance(deployment, dict) else None
            for name, entry in (entries.items() if isinstance(entries, dict) else ()):
                yield ("deployments", index, "taskRoles", name), entry
        prerequisites = data.get("prerequisites")
        for index, item in enumerate(prerequisites if isinstance(prerequisites, list) else []):
            if isinstance(item, dict):
                yield ("prerequisites", index, "auth"), item.get("auth")

    secrets = data.get("secrets")
    if isinstance(secrets, Timestamp):
        yield finding("W812", pointer_of("secrets"), f"secrets is the unquoted date {secrets}; OpenPAI stores the "
                      "date itself as the job's secrets file, so the job has no secret to name (`<% $secrets.x %>` "
                      "renders empty); a mapping of secrets was probably meant",
                      "write the secrets as a mapping, or remove the key")
    for where, value in places():
        if isinstance(value, Timestamp) and where != ("secrets",):
            yield finding("W809", pointer_of(*where), f"this is the unquoted date {value}, where a mapping belongs; "
                          "OpenPAI reads it as a JavaScript Date, which its schema takes for an empty mapping, and "
                          "then ignores it", "write the mapping this key takes, or remove the key")


def _labels(data: dict[str, Any]) -> Iterator[Finding]:
    defaults = data.get("defaults")
    cluster = defaults.get("virtualCluster") if isinstance(defaults, dict) else None
    if cluster is None:
        return
    from .timestamps import is_timestamp

    if is_timestamp(cluster):
        yield finding("E806", pointer_of("defaults", "virtualCluster"), f"defaults.virtualCluster is the unquoted "
                      f"date {cluster}; OpenPAI reads it as a JavaScript Date, and its label would be the date's ISO "
                      "text, which no Kubernetes label value can be", f"quote it ('{cluster}')")
        return
    from .yamltags import JSBuffer

    if isinstance(cluster, JSBuffer):
        yield finding("E806", pointer_of("defaults", "virtualCluster"), "defaults.virtualCluster is a !!binary value; "
                      "OpenPAI holds it as a Buffer, which becomes a JSON object in the label, and no Kubernetes label "
                      "value is one", "write the virtual cluster's name as text")
        return
    if cluster == "":
        yield finding("E806", pointer_of("defaults", "virtualCluster"), "defaults.virtualCluster is empty; OpenPAI "
                      "keeps it (only null means `default`), and no virtual cluster has an empty name",
                      "remove the key to use the default virtual cluster, or name one")
        return
    if not isinstance(cluster, str) or len(cluster) > 63 or not LABEL_VALUE.fullmatch(cluster):
        yield finding("E806", pointer_of("defaults", "virtualCluster"), f"defaults.virtualCluster ({kind_of(cluster)}) "
                      "is not a valid Kubernetes label value (at most 63 letters, digits, '-', '_' or '.', starting and ending with "
                      "a letter or digit); it labels the Framework and its pods",
                      "OpenPAI virtual cluster names are such names; check the spelling")


def _task_role_shapes(data: dict[str, Any]) -> Iterator[Finding]:
    roles = data.get("taskRoles")
    if not isinstance(roles, dict):
        if isinstance(roles, list) and roles:
            # The rest-server runs a list (JavaScript's Object.keys names the roles "0", "1", ...), but the
            # runtime's plugin initializer looks its role up in the submitted text's taskRoles by that name
            # (openpai-runtime src/init.d/initializer.py collect_plugin_configs): a list cannot be indexed by "0".
            upstream = ("OpenPAI's rest-server names the task roles 0, 1, ..., but its runtime then looks each task "
                        "role up by that name in the submitted job, which a list cannot answer: every task's init "
                        "container fails with exit code 1; an entry that is not a mapping crashes the rest-server")
        elif isinstance(roles, (list, dict, int, float)) and not isinstance(roles, bool):
            upstream = "OpenPAI builds a Framework with no task role, which runs nothing"
        else:
            upstream = "OpenPAI's rest-server crashes on it"
        yield finding("E801", pointer_of("taskRoles"), f"taskRoles is {kind_of(roles)}; paictl compiles task roles "
                      f"written as a mapping only ({upstream})",
                      "write taskRoles as a mapping of task role name to task role")
        return
    for name, role in roles.items():
        if not isinstance(role, dict):
            yield finding("E801", pointer_of("taskRoles", name), f"task role '{name}' is {kind_of(role)}, not a "
                          "mapping; no target can compile it (OpenPAI's rest-server crashes on it)")
    # The default deployment's taskRoles is searched with JavaScript's `in`: a list has no task role names (it
    # is read as none), anything else but a mapping makes the rest-server crash.
    deployment = default_deployment(data)
    if deployment is not None and deployment[2] is not None:
        yield finding("E801", pointer_of("deployments", deployment[0], "taskRoles"), f"the default deployment's "
                      f"taskRoles is {deployment[2]}, not a mapping; OpenPAI's rest-server crashes on it",
                      "write a mapping of task role name to preCommands/postCommands")


def _counts(data: dict[str, Any]) -> Iterator[Finding]:
    # An infinite retry count is no error: upstream sends it as JSON null, which the API server drops from the
    # Framework (a non-nullable field), so FrameworkController never retries; the model reads it as 0 (W210).
    retry = data.get("jobRetryCount")
    if _is_number(retry) and math.isfinite(retry) and retry > MAX_INT32:
        yield finding("E802", pointer_of("jobRetryCount"), f"jobRetryCount {retry} is above {MAX_INT32}, "
                      "FrameworkController's largest retry count")
    extras = data.get("extras")
    # k8s.js copies taskRetryCount into the task's retryPolicy only when gang allocation is exactly false.
    retried = isinstance(extras, dict) and extras.get("gangAllocation") is False
    for name, role in task_roles(data):
        instances = role.get("instances", 1)
        if _is_infinite(instances):
            yield _infinite(pointer_of("taskRoles", name, "instances"), f"instances of task role '{name}' is "
                            "Infinity", "OpenPAI sends taskNumber as null, which the API server drops: "
                            "FrameworkController starts no task, and the Framework waits forever")
        elif _is_number(instances) and instances > MAX_INSTANCES:
            yield finding("E802", pointer_of("taskRoles", name, "instances"), f"instances {instances} of task role "
                          f"'{name}' is above {MAX_INSTANCES}, FrameworkController's limit on a task role's tasks")
        retry = role.get("taskRetryCount")
        if _is_number(retry) and math.isfinite(retry) and retry > MAX_INT32:
            yield finding("E802", pointer_of("taskRoles", name, "taskRetryCount"), f"taskRetryCount {retry} is above "
                          f"{MAX_INT32}, FrameworkController's largest retry count")
        elif retried and _is_number(retry) and math.isfinite(retry) and retry < MIN_RETRY_COUNT:
            yield finding("E802", pointer_of("taskRoles", name, "taskRetryCount"), f"taskRetryCount {retry} is below "
                          f"{MIN_RETRY_COUNT}; with gangAllocation false it becomes the task's maxRetryCount, which "
                          "FrameworkController refuses below -2",
                          "use 0 (no retry), a number of retries, -1 (no limit) or -2 (always retry)")
        resources = role.get("resourcePerInstance")
        for key, bound, unit in RESOURCE_BOUNDS:
            value = resources.get(key) if isinstance(resources, dict) else None
            if _is_infinite(value):
                yield _infinite(pointer_of("taskRoles", name, "resourcePerInstance", key), f"{key} of task role "
                                f"'{name}' is {_shown(value)}", "JSON has no Infinity: OpenPAI sends the quantity as "
                                "null (or, for memoryMB, as the quantity \"InfinityMi\", which Kubernetes refuses)")
            elif _is_number(value) and value > bound:
                yield finding("E802", pointer_of("taskRoles", name, "resourcePerInstance", key), f"{key} {value} of "
                              f"task role '{name}' is more than Kubernetes can hold ({bound:.4g}): it counts "
                              f"resources in 64-bit {unit}, so the API server refuses the pod",
                              "request what a node has")
        options = role.get("extraContainerOptions")
        shm = options.get("shmMB") if isinstance(options, dict) else None
        if _is_infinite(shm):
            yield _infinite(pointer_of("taskRoles", name, "extraContainerOptions", "shmMB"), f"shmMB of task role "
                            f"'{name}' is {_shown(shm)}", f"OpenPAI sizes the shared memory volume \"{_shown(shm)}Mi\", "
                            "which is no Kubernetes quantity: the pod is refused")
        ports = resources.get("ports") if isinstance(resources, dict) else None
        for label, count in ports.items() if isinstance(ports, dict) else ():
            if _is_infinite(count):
                yield _infinite(pointer_of("taskRoles", name, "resourcePerInstance", "ports", label), f"port count "
                                f"'{label}' of task role '{name}' is {_shown(count)}", "OpenPAI writes it as null into "
                                "the port scheduling spec, and the runtime's int(None) fails every init container")
        completion = role.get("completion")
        if isinstance(completion, dict):
            for key in ("minFailedInstances", "minSucceededInstances"):
                value = completion.get(key)
                if _is_infinite(value):
                    yield _infinite(pointer_of("taskRoles", name, "completion", key), f"completion.{key} of task "
                                    f"role '{name}' is {_shown(value)}", "OpenPAI sends it as null, which the API "
                                    "server drops: FrameworkController reads 0, which never completes the attempt "
                                    "(neither the count written nor OpenPAI's default)")
                elif _is_number(value) and not -1 <= value <= MAX_INT32:
                    yield finding("E802", pointer_of("taskRoles", name, "completion", key),
                                  f"completion.{key} {value} is outside -1..{MAX_INT32}; FrameworkController rejects "
                                  "the Framework", "use -1 (never), or a count up to the task role's instances")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_infinite(value: Any) -> bool:
    """ajv (OpenPAI's schema) takes +-Infinity for an integer; JSON cannot carry it."""
    return type(value) is float and math.isinf(value)


def _shown(value: float) -> str:
    return "Infinity" if value > 0 else "-Infinity"


def _infinite(pointer: str, what: str, why: str) -> Finding:
    return finding("E802", pointer, f"{what}; {why}", "write a finite count")


def plugin_findings(data: dict[str, Any]) -> Iterator[Finding]:
    """The runtime reads extras[com.microsoft.pai.runtimeplugin] as a list of {plugin, parameters} mappings."""
    extras = data.get("extras")
    if not isinstance(extras, dict) or PLUGIN_KEY not in extras:
        return
    plugins = extras[PLUGIN_KEY]
    base = ("extras", PLUGIN_KEY)
    if not isinstance(plugins, list):
        yield finding("E804", pointer_of(*base), f"{PLUGIN_KEY} is {kind_of(plugins)}; it is a list of runtime "
                      "plugins (OpenPAI's runtime crashes on anything else)", "write `- plugin: <name>` entries")
        return
    for index, plugin in enumerate(plugins):
        if not isinstance(plugin, dict):
            yield finding("E804", pointer_of(*base, index), f"runtime plugin {index} is {kind_of(plugin)}; it is a "
                          "mapping with `plugin` and `parameters`")
            continue
        if not isinstance(plugin.get("plugin"), str):
            yield finding("E804", pointer_of(*base, index, "plugin"), f"runtime plugin {index} has no `plugin` name "
                          "(a string)")
        parameters = plugin.get("parameters")
        if isinstance(parameters, dict) or not _py_truthy(parameters):
            continue  # a mapping, or what the plugins read as "no parameters" (null, false, 0, "", [])
        where = pointer_of(*base, index, "parameters")
        if isinstance(parameters, (str, list)):
            yield finding("W804", where, f"parameters of runtime plugin {index} is {kind_of(parameters)}, not a "
                          "mapping; the runtime's plugins test `key in parameters`, which on a string or list finds "
                          "substrings or items, not settings, so the plugin runs without them",
                          "write the plugin's settings as a mapping (`parameters: {jobssh: true}`)")
        else:
            yield finding("E804", where, f"parameters of runtime plugin {index} is {kind_of(parameters)}; the "
                          "runtime's plugins test `key in parameters`, which raises a TypeError on it, so the "
                          "task's init container fails", "write the plugin's settings as a mapping")


def _py_truthy(value: Any) -> bool:
    """Python's truth, as the runtime's plugins test `if not parameters` (a date is a datetime there: true)."""
    return bool(value) if isinstance(value, (type(None), bool, int, float, str, list, dict)) and \
        not getattr(value, "moment", None) else True


def hived_shape_findings(data: dict[str, Any]) -> Iterator[Finding]:
    """A hivedScheduler.taskRoles that is a number or a boolean: OpenPAI's HiveD schema skips it and its code finds
    no task role in it, so the settings are silently lost (validate's E306/E307 cover every other shape)."""
    extras = data.get("extras")
    hived = extras.get("hivedScheduler") if isinstance(extras, dict) else None
    roles = hived.get("taskRoles") if isinstance(hived, dict) else None
    if isinstance(roles, (int, float)):
        yield finding("W805", pointer_of("extras", "hivedScheduler", "taskRoles"), f"hivedScheduler.taskRoles is "
                      f"{kind_of(roles)}; OpenPAI ignores it, so no HiveD setting would apply",
                      "write a mapping of task role name to HiveD settings, or remove it")
