"""Checks that need the whole job, run after OpenPAI's JSON schema (whether or not the job passed it).

Three groups, all reported together (OpenPAI's rest-server stops at its first semantic error; a user fixing a file
wants them all):
- E301-E305: the rest-server's own `protocolValidate` checks; a job failing one is rejected upstream.
- W201-W207: values the schema lets through by accident (an upstream bug or a missing minimum) that do not do what
  they say.
- W401-W409: jobs OpenPAI accepts and then runs wrongly, from user reports: templates that render to nothing, task
  role names that collide, retry settings that are ignored. The template checks live in `placeholders`.
W209-W211 (values JavaScript reads other than they look) live in `js_value_checks`; HiveD's and the storages' in
`hived_checks` and `storage_checks`.

The checks also run on documents that failed the schema, so that every problem is reported at once. They read
values through the guards in `shapes`: a value of the wrong shape is skipped, since the schema phase reports it,
and so is a name lookup (E303-E305) into a list that is malformed. The one shape reported here is `taskRoles`
(W206), which the schema lets through as any value.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .codes import finding
from .diagnostics import Anchor, Finding, kind_of, pointer_of
from .names import convert_name, first_wins
from .suggest import did_you_mean
from .js_value_checks import LONG_DIGITS, infinite_retries, long_number_findings, prototype_port_labels
from .template_checks import OBJECT_PROTOTYPE_NAMES
from .placeholders import PLUGIN_KEY, check_placeholders, command_placeholders
from .shapes import as_list, as_mapping, is_int, mappings_in, strings_in

#: The task role fields that name a prerequisite, with the prerequisite type each must name (upstream uses
#: `field.toLowerCase()`), in the order the rest-server checks them.
PREREQUISITE_FIELDS = (("script", "script"), ("output", "output"), ("data", "data"), ("dockerImage", "dockerimage"))
PREREQUISITE_TYPES = ("script", "output", "data", "dockerimage")

KNOWN_CONTAINER_OPTIONS = ("shmMB", "infiniband")
KNOWN_DEFAULTS = ("deployment", "virtualCluster")
KNOWN_DEPLOYMENT_KEYS = ("protocolVersion", "name", "version", "contributor", "description", "taskRoles")


def check_semantics(data: Any, *, tags: bool = True, text: str | None = None,
                    commands_only: bool = False) -> list[Finding]:
    """Every semantic finding for a loaded job, valid or not, in document order.

    `tags=False` says that no string of the job can hold a `<%` (validate.py knows it from the text), so the
    placeholder checks, which walk every string, have nothing to find. `text`, when given, is the job's text: a
    number in it too long for an exact value is warned (W209). `commands_only` says that only the placeholders of
    the task roles' commands can be wrong (validate's screen vouched for the rest): only those are checked."""
    if not isinstance(data, dict):
        return []
    if commands_only:
        return _in_document_order(command_placeholders(data, prerequisites_by_type(data)), data)
    findings = [
        *(long_number_findings(data) if text is not None and len(text) > 4300 and LONG_DIGITS.search(text) else ()),
        *_prerequisites(data),
        *_deployments(data),
        *_defaults(data),
        *_task_roles(data),
        *infinite_retries(data),
        *prototype_port_labels(data),
        *(check_placeholders(data, prerequisites_by_type(data)) if tags else ()),
        *_extras_findings(data),
    ]
    return _in_document_order(findings, data)


def _extras_findings(data: dict[str, Any]) -> list[Finding]:
    """HiveD's and the storages' checks, for a job whose extras hold what they look at (most hold neither: their
    modules, and the date handling they import, stay unloaded on the validate fast path)."""
    extras = data.get("extras")
    if not isinstance(extras, dict):
        return []
    found: list[Finding] = []
    if "hivedScheduler" in extras:
        from .hived_checks import hived_findings

        found += hived_findings(data)
    if "storages" in extras or PLUGIN_KEY in extras:
        from .storage_checks import storage_warnings

        found += storage_warnings(data)
    return found


def prerequisites_by_type(data: dict[str, Any]) -> dict[str, dict[str, tuple[int, dict[str, Any]]]] | None:
    """Upstream's regrouping: type -> name -> (index, prerequisite). Of a duplicate pair (E301) the first is kept
    (of several named `__proto__`, no duplicates upstream, the last: protocol/names.py).

    None when some prerequisite cannot be grouped (the list is not a list, or an entry lacks a string name or one
    of the four types): which names exist is then unknown, so the checks that look names up skip rather than call
    a name missing that the schema's fix may well supply.
    """
    listed = data.get("prerequisites")
    if listed is not None and not isinstance(listed, list):
        return None
    groups: dict[str, dict[str, tuple[int, dict[str, Any]]]] = {t: {} for t in PREREQUISITE_TYPES}
    for index, item in enumerate(listed or []):
        if not _typed(item):
            return None
        if first_wins(item["name"]):
            groups[item["type"]].setdefault(item["name"], (index, item))
        else:
            groups[item["type"]][item["name"]] = (index, item)
    return groups


def _deployment_names(data: dict[str, Any]) -> list[str] | None:
    """The deployments' names; None (unknown) when `deployments` is not a list or an entry has no string name."""
    listed = data.get("deployments")
    if listed is not None and not isinstance(listed, list):
        return None
    if not all(_named(d) for d in listed or []):
        return None
    return [d["name"] for d in listed or []]


def _named(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("name"), str)


def _typed(item: Any) -> bool:
    """A prerequisite upstream's regrouping can place: a string name and one of the four types."""
    return _named(item) and item.get("type") in PREREQUISITE_TYPES


def task_roles(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    roles = data.get("taskRoles")
    return roles if isinstance(roles, dict) else {}


def gang_allocation(data: dict[str, Any]) -> bool:
    """Upstream tests `extras.gangAllocation !== false`: anything but a literal false keeps gang allocation on."""
    return as_mapping(data.get("extras")).get("gangAllocation") is not False


# ----------------------------------------------------------------------------------------------------------------
# Prerequisites, deployments, defaults

def _prerequisites(data: dict[str, Any]) -> Iterator[Finding]:
    seen: dict[tuple[str, str], int] = {}
    for index, item in enumerate(as_list(data.get("prerequisites"))):
        if not _typed(item):
            continue
        key = (item["type"], item["name"])
        if key in seen and first_wins(key[1]):
            yield finding("E301", pointer_of("prerequisites", index, "name"),
                          f"duplicate {key[0]} prerequisite '{key[1]}' (first defined at /prerequisites/{seen[key]})",
                          "rename or remove one of them; OpenPAI rejects a job with two prerequisites of the same "
                          "type and name")
        else:
            seen[key] = index


def _deployments(data: dict[str, Any]) -> Iterator[Finding]:
    roles = task_roles(data)
    seen: dict[str, int] = {}
    for index, deployment in mappings_in(data.get("deployments")):
        name = deployment.get("name")
        named = isinstance(name, str)
        # A deployment without a usable name is still checked; messages then say where it is.
        shown = f"'{name}'" if named else f"at /deployments/{index}"
        if named and name in seen and first_wins(name):
            yield finding("E302", pointer_of("deployments", index, "name"),
                          f"duplicate deployment '{name}' (first defined at /deployments/{seen[name]})",
                          "rename or remove one of them; OpenPAI rejects a job with two deployments of one name")
        elif named:
            seen[name] = index
        for key in deployment:
            if key not in KNOWN_DEPLOYMENT_KEYS:
                guess = did_you_mean(key, KNOWN_DEPLOYMENT_KEYS)
                yield finding("W205", pointer_of("deployments", index, key),
                              f"unknown key '{key}' in deployment {shown}; OpenPAI ignores it",
                              f"did you mean '{guess}'?" if guess else
                              f"a deployment has only {', '.join(KNOWN_DEPLOYMENT_KEYS)}", Anchor.KEY)
        if "taskRoles" not in deployment:
            continue  # missing, which the schema reports
        if not isinstance(deployment["taskRoles"], dict):
            yield finding("W206", pointer_of("deployments", index, "taskRoles"),
                          f"taskRoles of deployment {shown} is {kind_of(deployment['taskRoles'])}, not a mapping; "
                          "OpenPAI's schema lets it through, and rendering fails if the deployment is chosen",
                          "write it as a mapping of task role name to {preCommands, postCommands}")
        elif isinstance(data.get("taskRoles"), dict):
            for role in deployment["taskRoles"]:
                if role not in roles:
                    guess = did_you_mean(role, roles)
                    yield finding("W406", pointer_of("deployments", index, "taskRoles", role),
                                  f"deployment {shown} sets commands for task role '{role}', which the job does "
                                  "not have; OpenPAI ignores them",
                                  f"did you mean '{guess}'?" if guess else
                                  f"the job's task roles are: {', '.join(roles)}", Anchor.KEY)


def _defaults(data: dict[str, Any]) -> Iterator[Finding]:
    defaults = as_mapping(data.get("defaults"))
    for key in defaults:
        if key not in KNOWN_DEFAULTS:
            guess = did_you_mean(key, KNOWN_DEFAULTS)
            yield finding("W204", pointer_of("defaults", key), f"unknown key '{key}' in defaults; OpenPAI ignores it",
                          f"did you mean '{guess}'?" if guess else "defaults has only deployment and virtualCluster",
                          Anchor.KEY)
    chosen = defaults.get("deployment")
    names = _deployment_names(data)
    if not isinstance(chosen, str) or names is None:
        return
    if chosen not in names:
        guess = did_you_mean(chosen, names)
        if guess:
            hint = f"did you mean '{guess}'?"
        elif names:
            hint = f"the deployments are: {', '.join(names)}"
        else:
            hint = "the job has no deployments; add one under `deployments`, or remove defaults.deployment"
        if "<%" in chosen:
            hint += " (placeholders are not rendered here)"
        yield finding("E305", pointer_of("defaults", "deployment"),
                      f"defaults.deployment '{chosen}' names no deployment", hint)


# ----------------------------------------------------------------------------------------------------------------
# Task roles

def _task_roles(data: dict[str, Any]) -> Iterator[Finding]:
    if "taskRoles" not in data:
        return  # missing, which the schema reports
    roles = data["taskRoles"]
    if not isinstance(roles, dict):
        usable = ("names its entries 0, 1, ..., which its runtime cannot look up in a list" if isinstance(roles, list)
                  and roles else "the job gets no usable task role")
        yield finding("W206", pointer_of("taskRoles"),
                      f"taskRoles is {kind_of(roles)}, not a mapping; OpenPAI's schema lets it through and {usable}",
                      "write taskRoles as a mapping of task role name to task role, e.g. `taskRoles: {worker: ...}`")
        return
    groups = prerequisites_by_type(data)
    gang = gang_allocation(data)
    converted: dict[str, str] = {}
    for name, role in roles.items():
        if isinstance(role, dict):
            if groups is not None:
                yield from _role_prerequisites(name, role, groups)
            yield from _role_values(name, role, gang)
        key = convert_name(name)
        if key in converted:
            yield finding("W404", pointer_of("taskRoles", name),
                          f"task roles '{converted[key]}' and '{name}' both become '{key}' after OpenPAI's name "
                          "conversion (lowercase, letters and digits only)",
                          "rename one of them; the Framework's task roles and the runtime's PAI_* variables use the "
                          "converted name, so the two roles clash", Anchor.KEY)
        else:
            converted[key] = name


def _role_prerequisites(name: str, role: dict[str, Any], groups: dict[str, dict[str, Any]]) -> Iterator[Finding]:
    every_name = {n for group in groups.values() for n in group}
    for index, wanted in strings_in(role.get("prerequisites")):
        if wanted not in every_name:
            guess = did_you_mean(wanted, every_name)
            yield finding("E303", pointer_of("taskRoles", name, "prerequisites", index),
                          f"task role '{name}' lists prerequisite '{wanted}', which does not exist",
                          _placeholder_note(wanted, f"did you mean '{guess}'?" if guess else
                                            "add it under the top-level `prerequisites`, or remove it here"))
    for field, kind in PREREQUISITE_FIELDS:
        value = role.get(field)
        if not isinstance(value, str) or value in groups.get(kind, {}):
            continue
        other = [t for t, group in groups.items() if value in group]
        guess = did_you_mean(value, groups.get(kind, {}))
        if other:
            hint = f"'{value}' is a prerequisite of type {other[0]}; {field} needs one of type {kind}"
            hint += f" (did you mean '{guess}'?)" if guess else ""
        elif guess:
            hint = f"did you mean '{guess}'?"
        elif kind == "dockerimage":
            hint = f"add a prerequisite `{{name: {value}, type: dockerimage, uri: <image>}}`"
        else:
            hint = f"add a prerequisite `{{name: {value}, type: {kind}, ...}}`"
        if kind != "dockerimage" and value in OBJECT_PROTOTYPE_NAMES and not other:
            # upstream's `name in prerequisites[kind]` finds Object.prototype's member: the job runs, and only the
            # placeholders of this root see that member (the pod's image comes from dockerImage alone, so there it
            # stays E304: no image)
            yield finding("W304", pointer_of("taskRoles", name, field),
                          f"{field} '{value}' names no prerequisite of type {kind}; OpenPAI finds JavaScript's "
                          f"Object.prototype.{value} under that name and runs the job, and `<% ${field} %>` "
                          "placeholders render from it", hint)
            continue
        yield finding("E304", pointer_of("taskRoles", name, field),
                      f"{field} '{value}' names no prerequisite of type {kind}", _placeholder_note(value, hint))


def _placeholder_note(value: str, hint: str) -> str:
    if "<%" in value:
        return hint + " (OpenPAI does not render placeholders in this field)"
    return hint


def _role_values(name: str, role: dict[str, Any], gang: bool) -> Iterator[Finding]:
    base = ("taskRoles", name)
    for key in as_mapping(role.get("extraContainerOptions")):
        if key not in KNOWN_CONTAINER_OPTIONS:
            guess = did_you_mean(key, KNOWN_CONTAINER_OPTIONS)
            yield finding("W201", pointer_of(*base, "extraContainerOptions", key),
                          f"unknown key '{key}' in extraContainerOptions of task role '{name}'; OpenPAI ignores it",
                          f"did you mean '{guess}'?" if guess else
                          "extraContainerOptions has only shmMB and infiniband", Anchor.KEY)
    retries = role.get("taskRetryCount")
    # Exactly an int: a bool is no count (and an integral float, which the schema accepts, is left unchecked).
    if type(retries) is int and retries < 0 and (gang or retries >= -2):  # below -2 without gang: E802
        yield finding("W202", pointer_of(*base, "taskRetryCount"),
                      f"taskRetryCount is {retries}; {_negative_retry_effect(retries, gang)}",
                      "use 0 (no retry) or a positive number of retries")
    elif type(retries) is int and retries > 0 and gang:
        # Only positive counts: a negative one is already W202, whose message says gang allocation ignores it.
        yield finding("W405", pointer_of(*base, "taskRetryCount"),
                      f"taskRetryCount {retries} of task role '{name}' is ignored: gang allocation is on, so OpenPAI "
                      "never retries a task",
                      "set `extras.gangAllocation: false` to let tasks retry, or remove taskRetryCount "
                      "(microsoft/pai#5004)")
    instances = role.get("instances", 1)
    counted = is_int(instances) and instances >= 1  # W407 compares with an instance count the schema accepts
    for key, default in (("minFailedInstances", "1"), ("minSucceededInstances", "the role's instances")):
        value = as_mapping(role.get("completion")).get(key)
        if not is_int(value):
            continue
        pointer = pointer_of(*base, "completion", key)
        if value == 0:
            yield finding("W203", pointer, f"completion.{key} is 0, which OpenPAI treats as unset: the default "
                          f"({default}) applies", "use -1 (never triggers) or a count of at least 1, or remove it")
        elif value < -1:
            yield finding("W203", pointer, f"completion.{key} is {value}; OpenPAI passes it to FrameworkController, "
                          "which requires -1 or more", "use -1 (never triggers) or a count of at least 1")
        elif counted and value > instances:
            effect = ("failed tasks of this role never fail the job" if key == "minFailedInstances" else
                      "the role succeeds only once all its tasks have finished")
            yield finding("W407", pointer, f"completion.{key} is {value} but task role '{name}' has only {instances} "
                          f"instance{'s' if instances != 1 else ''}, so it is never reached: {effect}",
                          f"use at most {instances}, or -1 if that is what you want")
    resources = as_mapping(role.get("resourcePerInstance"))
    for key in ("cpu", "memoryMB", "gpu"):
        if is_int(resources.get(key)) and resources[key] < 0:
            yield finding("W207", pointer_of(*base, "resourcePerInstance", key),
                          f"{key} is {resources[key]}; Kubernetes rejects a negative resource limit, so the task's "
                          "pod is never created", f"use 0 or more {key}")
    for label, count in as_mapping(resources.get("ports")).items():
        if is_int(count) and count < 1:
            yield finding("W207", pointer_of(*base, "resourcePerInstance", "ports", label),
                          f"port label '{label}' asks for {count} ports, so it gets none",
                          "the value is how many ports to reserve for the label (at least 1), not a port number")


def _negative_retry_effect(retries: int, gang: bool) -> str:
    if gang:
        return "OpenPAI accepts it and ignores it (gang allocation is on, so tasks are never retried)"
    if retries == -1:
        return "with gangAllocation false, FrameworkController reads -1 as 'retry failed tasks without limit'"
    return "with gangAllocation false, FrameworkController reads -2 as 'always retry, even after success'"


# ----------------------------------------------------------------------------------------------------------------
# Ordering

def _in_document_order(findings: list[Finding], data: dict[str, Any]) -> list[Finding]:
    """Sort by where each pointer sits in the document (mappings keep the file's key order); ties keep their order."""
    if len(findings) < 2:  # the usual case, a clean job: no need to walk it
        return findings
    order: dict[str, int] = {}

    def walk(value: Any, pointer: str) -> None:
        order[pointer] = len(order)
        if isinstance(value, dict):
            for key, child in value.items():
                walk(child, pointer + pointer_of(key))
        elif isinstance(value, list):
            for index, child in enumerate(value):
                walk(child, f"{pointer}/{index}")

    walk(data, "")
    return sorted(findings, key=lambda f: order.get(f.pointer, len(order)))
