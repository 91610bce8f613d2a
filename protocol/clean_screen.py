"""One walk over a job that can say "no semantic or compile check finds anything here", for `validate`'s fast path.

Why: most jobs are clean, and proving it with the checks themselves (protocol/semantics.py, compile_checks.py and
the modules they call) walked each job some fifteen times, a pass per check, building pointers and views as it
went: two thirds of a clean file's time in process. `surely_clean` walks the job once and answers True only where
it can vouch that every one of those checks comes back empty; anything it does not know (a placeholder other than a
plain `<% $root.name %>` in commands, a value at or past a bound, an odd shape) is False, and the checks then run as before and
say what, if anything, is wrong. So the checks stay the only source of diagnostics; this walk only decides whether
they need to run. tests/test_clean_screen.py holds it to them over the corpus and generated jobs: wherever it says
True, the checks find nothing.

A job with a problem is usually clean but for one task role: `unvouched_parts` says which task roles it could not
vouch for (the rest of the job vouched for), and whether only their commands' placeholders were in doubt, so that
validate runs only the checks that can find something there (protocol/validate.py, task_role_findings);
tests/test_task_role_checks.py holds that to every check over the whole job.

This module imports only what the walk itself needs: a clean job's validate loads none of the checks' modules (HiveD's,
the storages' and the plugins' checks are asked directly, when a job has those settings).
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any, Callable, NamedTuple

from .names import convert_name
from .platform_limits import LABEL_VALUE, MAX_INSTANCES, MAX_INT32, RESOURCE_BOUNDS
from .templates import JS_WHITESPACE, OBJECT_PROTOTYPE_NAMES, PLUGIN_KEY, name_path

#: A placeholder the walk can follow: one of OpenPAI's roots and plain key or index segments, single spaces inside.
_PLAIN_TAG = re.compile(r"<% *(\$[a-z]+(?:\.[A-Za-z0-9_-]+|\[[0-9]+\])*) *%>")
#: The roots a plain placeholder in commands may name, with the task role field that selects the prerequisite.
_ROOT_FIELDS = {"$parameters": None, "$script": "script", "$output": "output", "$data": "data"}
_PREREQUISITE_FIELDS = (("script", "script"), ("output", "output"), ("data", "data"), ("dockerImage", "dockerimage"))
_ROLE_OWN_KEYS = frozenset({"shmMB", "infiniband"})
_COMPLETION_KEYS = ("minFailedInstances", "minSucceededInstances")
_PLAIN_VALUES = (str, int, bool)
_DEFAULTS_KEYS = frozenset({"virtualCluster", "deployment"})
_DEPLOYMENT_KEYS = frozenset({"protocolVersion", "name", "version", "contributor", "description", "taskRoles"})
_DEPLOYMENT_COMMANDS = ("preCommands", "postCommands")
#: Extras keys the walk reads itself; HiveD's are checked by their own checks, and any other key (the runtime
#: plugins, storages, free-form settings) by the plugin and storage checks.
_EXTRAS_READ = frozenset({"gangAllocation"})
_EXTRAS_READ_WITH_HIVED = frozenset({"gangAllocation", "hivedScheduler"})
_EXTRAS_SEEN = frozenset({"gangAllocation", "hivedScheduler", PLUGIN_KEY})
#: HiveD's priority classes and task role names (protocol/hived_checks.py); JavaScript's `$` is the very end.
_PRIORITY_CLASSES = ("prod", "test", "oppo")
_HIVED_ROLE_NAME = re.compile(r"[A-Za-z0-9._~]+")
#: W209's digit runs are longer than this; a text with fewer digits and underscores in all has none.
_LONG_DIGITS = 4300
_NOT_DIGITS = bytes(byte for byte in range(256) if byte not in b"0123456789_")
#: Escapes of a double-quoted scalar that can make a `<%` the text does not show (`\\x3c%`, `<\\` + line break + `%`).
_ESCAPED_TAG = re.compile(r"\\[xuU]|<\\[\r\n]")
#: What `_tags_render` answers for commands holding a placeholder it cannot follow: no sum of counts gets back to 0.
_NOT_PLAIN = -(2 ** 62)


class Unvouched(NamedTuple):
    """What the walk could not vouch for in a job, the rest of it being vouched for (a named tuple, not a dataclass:
    one is made per file validated; see protocol/diagnostics.py)."""

    #: The task roles whose checks may find something; none for a clean job.
    task_roles: frozenset[str]
    #: Only the placeholders of those task roles' commands (and of the deployments' pre and post commands for them)
    #: may be wrong: their values passed the walk, and they hold no `<%` anywhere else.
    commands_only: bool
    #: And each of those placeholders is a plain one whose lookup ends at a value or at nothing (a key its mapping
    #: lacks, which no JavaScript object has either; a null): it may render nothing (W401, W403), but every
    #: template parses and no lookup throws (no E803, E810, W409): the compile checks have nothing to find.
    lookups_only: bool


CLEAN = Unvouched(task_roles=frozenset(), commands_only=True, lookups_only=True)


def surely_clean(data: dict[str, Any], text: str) -> bool:
    """True only when check_semantics and compile_findings both find nothing in this job (the fast path's plain
    data of `text`); False when that is not certain."""
    return unvouched_parts(data, text) == CLEAN


def unvouched_parts(data: dict[str, Any], text: str) -> Unvouched | None:
    """The task roles this walk cannot vouch for, everything else in the job being vouched for: the checks can then
    report something only in those task roles' own values and commands (their pre and post commands in the
    deployments too), so validate runs them on those task roles alone, and only the placeholder checks when only
    placeholders of their commands were in doubt. CLEAN: the whole job is clean. None: some other part (the
    top-level sections, two task roles together, a placeholder outside the task roles) is not certain, and every
    check runs over the whole job.

    Why task roles: a job is mostly its task roles (a dozen alike is usual), and each check of a task role reads
    that task role and the top-level sections only. A job with one problem in one task role then costs the walk
    and the checks of that task role, not every check over the whole job."""
    if len(text) > _LONG_DIGITS and _digits_in(text) > _LONG_DIGITS:
        from .js_value_checks import LONG_DIGITS  # W209: a run of more digits than that (searched slowly)

        if LONG_DIGITS.search(text):
            return None
    retries = data.get("jobRetryCount")
    if retries is not None and not (type(retries) is int and 0 <= retries <= MAX_INT32):
        return None
    extras = data.get("extras")
    if extras is not None and (type(extras) is not dict or not _extras_clean(data, extras)):
        return None
    groups = _prerequisite_groups(data.get("prerequisites"))
    roles = data.get("taskRoles")
    if groups is None or type(roles) is not dict:
        return None
    deployments = _deployment_commands(data, roles)
    if deployments is None:
        return None
    every, chosen = deployments
    gang = extras is None or extras.get("gangAllocation") is not False
    names = {name for group in groups.values() for name in group}
    shown = text.count("<%")  # the job's own count, but for comments, and escapes in double quotes
    escaped = "\\" in text and _ESCAPED_TAG.search(text) is not None
    tags = shown or escaped
    converted: set[str] = set()
    unvouched: list[str] = []
    commands_only = lookups_only = True
    rendered = 0
    for name, role in roles.items():
        if type(role) is not dict:
            return None
        key = name.lower() if name.isascii() and name.isalnum() else convert_name(name)  # the same, sooner
        if key in converted:
            return None  # W404, between two task roles
        converted.add(key)
        values_pass = _role_clean(role, gang, groups, names, chosen.get(name, ()))
        if values_pass:
            if not tags:
                continue
            found = _tags_render(role.get("commands") or (), role, data, groups)
            if name in every and found >= 0:
                found += _tags_render(every[name], role, data, groups)
            if found >= 0:
                rendered += found
                continue
        # Left to the checks of this task role, which see each of its `<%`: all of them are accounted for.
        unvouched.append(name)
        if not tags:
            commands_only = lookups_only = False
            continue
        deployed = every.get(name, [])
        found = _tags_in(role, deployed)
        if found is None:
            return None
        rendered += found
        # its values passed: only its commands' placeholders are in doubt, if it has no `<%` elsewhere
        commands_only = commands_only and values_pass and found == _tags_in_commands(role, deployed)
        lookups_only = lookups_only and commands_only and all(
            _tags_render(commands, role, data, groups, ends=_looked_up) >= 0
            for commands in (role.get("commands") or (), deployed))
    if not unvouched:
        parts = CLEAN
    else:
        parts = Unvouched(task_roles=frozenset(unvouched), commands_only=commands_only, lookups_only=lookups_only)
    if not tags:
        return parts
    if rendered < shown:
        rendered += _plugin_tags_render(extras, roles, data, groups)
    if rendered == shown and not escaped:
        return parts  # the job holds at most the text's count: every `<%` is one accounted for
    # Else every `<%` of the job must be in a command or a runtime plugin's parameters, where each was followed (or
    # is left to the checks of its task role), or in its description (free text, not checked): the job's own
    # count, from its JSON (C speed; no `<%` spans two strings there, comments are left out, escapes are read)
    import json

    description = data.get("description")
    if rendered + (description.count("<%") if type(description) is str else 0) == json.dumps(
            data, ensure_ascii=False, check_circular=False).count("<%"):
        return parts
    return None


def _tags_in(role: dict[str, Any], deployed: list[str]) -> int | None:
    """How many `<%` a task role holds anywhere (its commands, keys, any field: its checks read all of them), with
    the deployments' commands for it; None when it cannot be told."""
    import json

    if any(type(command) is not str for command in deployed):
        return None
    try:
        held = json.dumps(role, ensure_ascii=False, check_circular=False).count("<%")
    except (TypeError, ValueError):
        return None
    return held + sum(command.count("<%") for command in deployed)


def _tags_in_commands(role: dict[str, Any], deployed: list[str]) -> int:
    """How many `<%` a task role's commands hold (a task role the walk passed: a list of texts, or none), with the
    deployments' commands for it."""
    return sum(command.count("<%") for command in (*(role.get("commands") or ()), *deployed))


def _digits_in(text: str) -> int:
    """How many digits and underscores the text holds (a byte translation: C speed)."""
    return len(text.encode("utf-8", "surrogatepass").translate(None, _NOT_DIGITS))


def _deployment_commands(data: dict[str, Any], roles: dict[str, Any]
                         ) -> tuple[dict[str, list[str]], dict[str, list[str]]] | None:
    """(task role -> the pre and post commands of every deployment, whose placeholders are checked; task role ->
    those of the default deployment, which upstream renders), or None when some deployment, or the defaults, are
    not plainly clean (E302, E305, E801, E806, W204-W206, W406)."""
    defaults = data.get("defaults")
    chosen = None
    if defaults is not None:
        if type(defaults) is not dict or defaults.keys() - _DEFAULTS_KEYS:
            return None
        cluster = defaults.get("virtualCluster")
        if cluster is not None and not (type(cluster) is str and 0 < len(cluster) <= 63
                                        and LABEL_VALUE.fullmatch(cluster) is not None):
            return None
        chosen = defaults.get("deployment")
    listed = data.get("deployments")
    if listed is None:
        return ({}, {}) if chosen is None else None
    if type(listed) is not list:
        return None
    every: dict[str, list[str]] = {}
    default: dict[str, list[str]] = {}
    seen: set[str] = set()
    for deployment in listed:
        if type(deployment) is not dict or deployment.keys() - _DEPLOYMENT_KEYS:
            return None
        name, entries = deployment.get("name"), deployment.get("taskRoles")
        if type(name) is not str or name in seen or type(entries) is not dict:
            return None
        seen.add(name)
        for role, entry in entries.items():
            if role not in roles or type(entry) is not dict:
                return None
            for key in _DEPLOYMENT_COMMANDS:
                commands = entry.get(key)
                if commands is None:
                    continue
                if type(commands) is not list or any(type(c) is not str for c in commands):
                    return None
                every.setdefault(role, []).extend(commands)
                if name == chosen:
                    default.setdefault(role, []).extend(commands)
    if chosen is not None and chosen not in seen:
        return None
    return every, default


def _extras_clean(data: dict[str, Any], extras: dict[str, Any]) -> bool:
    """HiveD's settings, storages and runtime plugins. The usual shapes are vouched for here (HiveD task roles of the
    job with a string or null skuType or pinnedCellId, not both, one placement per affinity group; plugins with a
    name and a mapping of parameters, no storages); anything else is asked of their own checks (imported on first
    use: a job without such settings never loads those modules)."""
    keys = extras.keys()
    if not keys - _EXTRAS_READ:
        return True
    if not keys - _EXTRAS_SEEN and ("hivedScheduler" not in extras or _hived_plainly_clean(
            extras["hivedScheduler"], data.get("taskRoles"))) and _plugins_plainly_clean(extras.get(PLUGIN_KEY, [])):
        return True
    hived_findings, hived_shape_findings, plugin_findings, storage_problems, storage_warnings = _extras_checks()
    if "hivedScheduler" in extras and (hived_findings(data) or any(hived_shape_findings(data))):
        return False
    if extras.keys() - _EXTRAS_READ_WITH_HIVED and (any(plugin_findings(data)) or any(storage_problems(data))
                                                      or any(storage_warnings(data))):
        return False
    return True


def _hived_plainly_clean(hived: Any, roles: Any) -> bool:
    """No W306/W307/W805 (hived_checks.py, compile_checks.py) for the usual HiveD settings."""
    if type(hived) is not dict or hived.get("jobPriorityClass", "prod") not in _PRIORITY_CLASSES:
        return False
    settings_of = hived.get("taskRoles")
    if settings_of is None:
        return True
    if type(settings_of) is not dict or not settings_of or type(roles) is not dict:
        return False
    placements: dict[str, tuple[Any, Any]] = {}
    for name, settings in settings_of.items():
        if name not in roles or type(settings) is not dict or not _HIVED_ROLE_NAME.fullmatch(name):
            return False
        sku, cell, group = settings.get("skuType"), settings.get("pinnedCellId"), settings.get("affinityGroupName")
        if any(value is not None and type(value) is not str for value in (sku, cell, group)) \
                or (sku is not None and cell is not None):
            return False
        if group is not None and placements.setdefault(group, (sku, cell)) != (sku, cell):
            return False
    return True


def _plugins_plainly_clean(plugins: Any) -> bool:
    """No E804/W804 and no storages (E808, W208) for the usual runtime plugins: a name, and a mapping of
    parameters or none; a teamwise_storage plugin's storages are for its own checks."""
    return type(plugins) is list and all(
        type(plugin) is dict and type(plugin.get("plugin")) is str and plugin["plugin"] != "teamwise_storage"
        and type(plugin.get("parameters", {})) in (dict, type(None)) for plugin in plugins)


@functools.lru_cache(maxsize=1)
def _extras_checks() -> tuple[Callable[[dict[str, Any]], Any], ...]:
    from .compile_checks import hived_shape_findings, plugin_findings
    from .hived_checks import hived_findings
    from .storage_checks import storage_problems, storage_warnings

    return hived_findings, hived_shape_findings, plugin_findings, storage_problems, storage_warnings


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


def _role_clean(role: dict[str, Any], gang: bool, groups: dict[str, dict[str, Any]], names: set[str],
                added: Any) -> bool:
    """True when no check finds anything in this task role's own values; `added` are the pre and post commands the
    default deployment renders with its commands."""
    commands = role.get("commands")
    if commands is not None and (type(commands) is not list or any(type(c) is not str for c in commands)):
        return False
    pieces = [*(commands or ()), *added]
    if len(pieces) == 1 and pieces[0].strip(JS_WHITESPACE) in OBJECT_PROTOTYPE_NAMES:
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


def _tags_render(commands: Any, role: dict[str, Any], data: dict[str, Any], groups: dict[str, dict[str, Any]],
                 *, ends: Callable[..., bool] | None = None) -> int:
    """How many `<%` the commands of a task role hold, when each is a plain placeholder that renders a value with
    the task role's view (no W401/W403/W409, E803 or E810); _NOT_PLAIN otherwise. `ends=_looked_up` asks less: that
    each lookup ends at a plain value or at nothing."""
    ends = ends or _renders
    found = 0
    for command in commands:
        count = command.count("<%")
        if not count:
            continue
        tags = _PLAIN_TAG.findall(command)
        if len(tags) != count or not all(ends(name_path(name), role, data, groups) for name in tags):
            return _NOT_PLAIN
        found += count
    return found


def _plugin_tags_render(extras: Any, roles: dict[str, Any], data: dict[str, Any],
                        groups: dict[str, dict[str, Any]]) -> int:
    """How many `<%` the runtime plugins' parameters hold, when each is a plain placeholder that the runtime finds a
    value for with the view of every task role running the plugin (no W401-W403, W409); _NOT_PLAIN otherwise."""
    plugins = extras.get(PLUGIN_KEY) if type(extras) is dict else None
    found = 0
    for plugin in plugins if type(plugins) is list else ():
        if type(plugin) is not dict or "parameters" not in plugin:
            continue
        wanted = plugin.get("taskroles")
        users = [role for name, role in roles.items() if type(wanted) is not list or name in wanted]
        for text in _texts_under(plugin["parameters"]):
            count = text.count("<%")
            tags = _PLAIN_TAG.findall(text) if count else ()
            if len(tags) != count or (count and not users) or not all(
                    _renders(name_path(name), role, data, groups, secrets=True) for name in tags for role in users):
                return _NOT_PLAIN
            found += count
    return found


def _texts_under(value: Any) -> list[str]:
    if type(value) is str:
        return [value]
    if type(value) is dict:
        value = list(value.values())
    return [text for item in value for text in _texts_under(item)] if type(value) is list else []


#: Where a lookup ends (_lookup_end), besides a value: at nothing (a null, or a key its mapping lacks that is none
#: of Object.prototype's names: JavaScript finds undefined there too, without throwing), or somewhere this walk does
#: not follow (an index past a list's end, a key of a text or a number, `__proto__`, a root it does not know).
_NOTHING, _UNFOLLOWED = object(), object()


def _lookup_end(path: tuple[str, ...], role: dict[str, Any], data: dict[str, Any],
                groups: dict[str, dict[str, Any]], *, secrets: bool = False) -> Any:
    """The end of mustache.js's lookup of the placeholder (protocol/jsvalues.py) with the task role's view,
    followed by its own keys and indexes: the value, _NOTHING or _UNFOLLOWED. `$secrets` only where `secrets` says
    so: the runtime's plugins look it up as the others; in commands, the rest-server renders without it (E810 is
    then JavaScript's to decide)."""
    root = path[0]
    if "__proto__" in path:
        return _UNFOLLOWED
    if root == "$secrets" and secrets:
        value = data.get("secrets")
    elif root not in _ROOT_FIELDS:
        return _UNFOLLOWED
    else:
        field = _ROOT_FIELDS[root]
        selected = role.get(field) if field is not None else None  # not a name (a list...) in an unvouched role
        value = data.get("parameters") if field is None else groups[field].get(selected) if type(selected) is str \
            else None
    for segment in path[1:]:
        if value is None:
            return _NOTHING
        if type(value) is dict:
            if segment not in value:
                return _UNFOLLOWED if segment in OBJECT_PROTOTYPE_NAMES else _NOTHING
            value = value[segment]
        elif type(value) is list and segment.isdigit() and segment.isascii() \
                and (segment == "0" or segment[0] != "0") and int(segment) < len(value):
            value = value[int(segment)]
        else:
            return _UNFOLLOWED
    return _NOTHING if value is None else value


def _plain(value: Any) -> bool:
    """A text, a number or a boolean: what a placeholder renders as written."""
    return type(value) in _PLAIN_VALUES or (type(value) is float and math.isfinite(value))


def _renders(path: tuple[str, ...], role: dict[str, Any], data: dict[str, Any],
             groups: dict[str, dict[str, Any]], *, secrets: bool = False) -> bool:
    """The placeholder's own keys and indexes lead to a plain value (text, a number, a boolean)."""
    return _plain(_lookup_end(path, role, data, groups, secrets=secrets))


def _looked_up(path: tuple[str, ...], role: dict[str, Any], data: dict[str, Any],
               groups: dict[str, dict[str, Any]]) -> bool:
    """The placeholder's lookup ends at a plain value, or at nothing without throwing: it may render nothing (W401,
    W403), but no lookup throws (E810)."""
    end = _lookup_end(path, role, data, groups)
    return end is _NOTHING or _plain(end)
