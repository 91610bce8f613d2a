"""One walk over a job that can say "no semantic or compile check finds anything here", for `validate`'s fast path.

Why: most jobs are clean, and proving it with the checks themselves (protocol/semantics.py, compile_checks.py and
the modules they call) walked each job some fifteen times, a pass per check, building pointers and views as it
went: two thirds of a clean file's time in process. `surely_clean` walks the job once and answers True only where
it can vouch that every one of those checks comes back empty; anything it does not know (deployments, a placeholder
other than a plain `<% $root.name %>`, a value at or past a bound) is False, and the checks then run as before and
say what, if anything, is wrong. So the checks stay the only source of diagnostics; this walk only decides whether
they need to run. tests/test_clean_screen.py holds it to them over the corpus and generated jobs: wherever it says
True, the checks find nothing.

This module imports only what the walk itself needs: a clean job's validate loads none of the checks' modules.
"""

from __future__ import annotations

import math
import re
from typing import Any

from .names import convert_name
from .platform_limits import LABEL_VALUE, MAX_INSTANCES, MAX_INT32, RESOURCE_BOUNDS
from .templates import JS_WHITESPACE, OBJECT_PROTOTYPE_NAMES, name_path

#: A placeholder the walk can follow: one of OpenPAI's roots and plain key or index segments, single spaces inside.
_PLAIN_TAG = re.compile(r"<% *(\$[a-z]+(?:\.[A-Za-z0-9_-]+|\[[0-9]+\])*) *%>")
#: Escapes of a double-quoted scalar that can make a `<%` the text does not show (`\x3c%`, `<\` + line break + `%`).
_ESCAPED_TAG = re.compile(r"\\[xuU]|<\\[\r\n]")
#: The roots a plain placeholder in commands may name, with the task role field that selects the prerequisite.
_ROOT_FIELDS = {"$parameters": None, "$script": "script", "$output": "output", "$data": "data"}
_PREREQUISITE_FIELDS = (("script", "script"), ("output", "output"), ("data", "data"), ("dockerImage", "dockerimage"))
_ROLE_OWN_KEYS = frozenset({"shmMB", "infiniband"})
_COMPLETION_KEYS = ("minFailedInstances", "minSucceededInstances")
_EXTRAS_ONLY_READ = frozenset({"gangAllocation"})
_PLAIN_VALUES = (str, int, bool)


def surely_clean(data: dict[str, Any], text: str) -> bool:
    """True only when check_semantics and compile_findings both find nothing in this job (the fast path's plain
    data of `text`); False when that is not certain."""
    if len(text) > 4300:
        from .js_value_checks import LONG_DIGITS  # W209 looks at texts this long only

        if LONG_DIGITS.search(text):
            return False
    if "deployments" in data:
        return False
    if "\\" in text and _ESCAPED_TAG.search(text):
        return False
    tags = text.count("<%")
    retries = data.get("jobRetryCount")
    if retries is not None and not (type(retries) is int and 0 <= retries <= MAX_INT32):
        return False
    defaults = data.get("defaults")
    if defaults is not None and not _defaults_clean(defaults):
        return False
    extras = data.get("extras")
    if extras is not None:
        if type(extras) is not dict:
            return False
        if extras.keys() - _EXTRAS_ONLY_READ and not _extras_clean(data):
            return False
    groups = _prerequisite_groups(data.get("prerequisites"))
    if groups is None:
        return False
    roles = data.get("taskRoles")
    if type(roles) is not dict:
        return False
    gang = extras is None or extras.get("gangAllocation") is not False
    names = {name for group in groups.values() for name in group}
    converted: set[str] = set()
    rendered = 0
    for name, role in roles.items():
        if type(role) is not dict:
            return False
        key = convert_name(name)
        if key in converted:
            return False
        converted.add(key)
        if not _role_clean(role, gang, groups, names):
            return False
        if tags:
            found = _commands_clean(role, data, groups)
            if found is None:
                return False
            rendered += found
    # every `<%` of the text is in a command, where each was followed: no other value can hold a placeholder
    return rendered == tags


def _defaults_clean(defaults: Any) -> bool:
    if type(defaults) is not dict or defaults.keys() - {"virtualCluster"}:
        return False  # not a mapping, an unknown key (W204), or a deployment to name (E305: there are none)
    cluster = defaults.get("virtualCluster")
    return cluster is None or (type(cluster) is str and 0 < len(cluster) <= 63
                               and LABEL_VALUE.fullmatch(cluster) is not None)


def _extras_clean(data: dict[str, Any]) -> bool:
    """HiveD's settings, storages and runtime plugins: few jobs have them, and their checks are asked directly."""
    from .compile_checks import hived_shape_findings, plugin_findings
    from .hived_checks import hived_findings
    from .storage_checks import storage_problems, storage_warnings

    return not (hived_findings(data) or any(plugin_findings(data)) or any(hived_shape_findings(data))
                or any(storage_problems(data)) or any(storage_warnings(data)))


def _prerequisite_groups(listed: Any) -> dict[str, dict[str, dict[str, Any]]] | None:
    """type -> name -> prerequisite, or None when some prerequisite is not plainly clean: of an unknown type or
    without a string name, named twice (E301), with an auth that is not a mapping of texts (E803), or a docker
    image whose reference is empty or not trimmed (E811)."""
    groups: dict[str, dict[str, dict[str, Any]]] = {"script": {}, "output": {}, "data": {}, "dockerimage": {}}
    if listed is None:
        return groups
    if type(listed) is not list:
        return None
    for item in listed:
        if type(item) is not dict:
            return None
        name, kind = item.get("name"), item.get("type")
        group = groups.get(kind) if type(kind) is str else None
        if group is None or type(name) is not str or name in group:
            return None
        group[name] = item
        if "auth" in item:
            auth = item["auth"]
            if type(auth) is not dict or any(type(value) is not str or value in OBJECT_PROTOTYPE_NAMES
                                             for value in auth.values()):
                return None  # E803
        if kind == "dockerimage":
            uri = item.get("uri")
            if type(uri) is str and (not uri or uri != uri.strip()):
                return None
    return groups


def _role_clean(role: dict[str, Any], gang: bool, groups: dict[str, dict[str, Any]], names: set[str]) -> bool:
    """True when no check finds anything in this task role's own values."""
    commands = role.get("commands")
    if commands is not None and (type(commands) is not list or any(type(c) is not str for c in commands)):
        return False
    if commands and len(commands) == 1 and commands[0].strip(JS_WHITESPACE) in OBJECT_PROTOTYPE_NAMES:
        return False  # E803: mustache.js's template cache answers such a template with a built-in
    for field, kind in _PREREQUISITE_FIELDS:
        if field in role:
            value = role[field]
            if type(value) is not str or value not in groups[kind]:
                return False  # E304/W304, or a shape the schema refuses
    wanted = role.get("prerequisites")
    if wanted is not None and (type(wanted) is not list
                               or any(type(n) is not str or n not in names for n in wanted)):
        return False  # E303
    retries = role.get("taskRetryCount")
    if retries is not None and not (type(retries) is int and (retries == 0 or (0 < retries <= MAX_INT32
                                                                                 and not gang))):
        return False  # W202, W405, E802, W210
    instances = role.get("instances", 1)
    if not (type(instances) is int and 1 <= instances <= MAX_INSTANCES):
        return False
    completion = role.get("completion")
    if completion is not None:
        if type(completion) is not dict:
            return False
        for key in _COMPLETION_KEYS:
            value = completion.get(key)
            if value is not None and not (type(value) is int and (value == -1 or 1 <= value <= instances)):
                return False  # W203, W407, E802
    options = role.get("extraContainerOptions")
    if options is not None:
        if type(options) is not dict or options.keys() - _ROLE_OWN_KEYS:
            return False  # W201
        shm = options.get("shmMB")
        if type(shm) is float and not math.isfinite(shm):
            return False
    resources = role.get("resourcePerInstance")
    if resources is not None:
        if type(resources) is not dict:
            return False
        for key, bound, _ in RESOURCE_BOUNDS:
            value = resources.get(key)
            if value is not None and not (type(value) in (int, float) and 0 <= value <= bound):
                return False  # W207, E802 (a NaN fails the comparison too)
        ports = resources.get("ports")
        if ports is not None:
            if type(ports) is not dict or "__proto__" in ports:
                return False  # W212, W211
            if any(type(count) is not int or count < 1 for count in ports.values()):
                return False  # W207, E802
    return True


def _commands_clean(role: dict[str, Any], data: dict[str, Any], groups: dict[str, dict[str, Any]]) -> int | None:
    """How many `<%` the task role's commands hold, when each is a plain placeholder that renders a value (no
    W401/W403/W409, E803 or E810); None otherwise."""
    found = 0
    for command in role.get("commands") or ():
        count = command.count("<%")
        if not count:
            continue
        tags = _PLAIN_TAG.findall(command)
        if len(tags) != count:
            return None
        for name in tags:
            if not _renders(name_path(name), role, data, groups):
                return None
        found += count
    return found


def _renders(path: tuple[str, ...], role: dict[str, Any], data: dict[str, Any],
             groups: dict[str, dict[str, Any]]) -> bool:
    """The placeholder's own keys and indexes lead to a plain value (text, a number, a boolean)."""
    root = path[0]
    if root not in _ROOT_FIELDS or "__proto__" in path:
        return False
    field = _ROOT_FIELDS[root]
    value = data.get("parameters") if field is None else groups[field].get(role.get(field))
    for segment in path[1:]:
        if type(value) is dict:
            value = value.get(segment)
        elif type(value) is list and segment.isdigit() and segment.isascii() \
                and (segment == "0" or segment[0] != "0") and int(segment) < len(value):
            value = value[int(segment)]
        else:
            return False
        if value is None:
            return False
    return type(value) in _PLAIN_VALUES or (type(value) is float and math.isfinite(value))
