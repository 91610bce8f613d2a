"""Template checks: placeholders that render to nothing, tags OpenPAI drops, and placeholders it never renders.

OpenPAI renders `<% ... %>` in exactly these places, each with its own context (reference b):
- task role commands, joined with the chosen deployment's preCommands/postCommands: `$parameters`, `$script`,
  `$output`, `$data` by the rest-server (mustache.js); `$secrets` later by the runtime, and only if the job has
  secrets (pystache, which then blanks every tag still unresolved);
- a dockerimage prerequisite's `auth` values: `$secrets` only, by the rest-server;
- runtime-plugin parameters (`extras['com.microsoft.pai.runtimeplugin'][*].parameters`, and every key of a
  prerequisite that has `plugin` except plugin/type/failurePolicy): all five roots, by the runtime's plain
  lookups, which fail (KeyError) on a missing key.

W408 (never rendered) covers every other string value: top-level version/contributor, defaults.virtualCluster,
prerequisite uri/version/require/... (a tag in a data uri reaches the command as literal text through
`<% $data.uri[0] %>`: mustache does not render twice), task role extraContainerOptions, deployment
version/contributor, and the keys of a runtime-plugin entry other than `parameters`. It leaves out text that is
free-form user data, where a `<%` is the user's business: top-level `parameters` and `secrets`, every
`description`, and `extras` other than the runtime-plugin list (read by other components with their own rules).
Fields whose value must name something (dockerImage/script/output/data, a task role's prerequisites,
defaults.deployment) are left to E303-E305, which fire anyway and say placeholders are not rendered there.

Like the other semantic checks these run on documents that may have failed the schema: values are read through
the guards in `shapes`, and a value of the wrong shape is skipped.
"""

from __future__ import annotations

import types
from bisect import bisect_right
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from .codes import finding
from .diagnostics import Finding, pointer_of
from .names import ABSENT_SELECTION
from .shapes import as_mapping, as_list, mappings_in, strings_in
from .suggest import did_you_mean
from .templates import (PLUGIN_KEY, Tag, TagKind, TemplateError, has_tags, js_trim, lookup,  # noqa: F401 - PLUGIN_KEY
                        resolve, scan_tags)

ROOT_CODES = {"$parameters": "W401", "$secrets": "W402", "$script": "W403", "$output": "W403", "$data": "W403"}
ROLE_ROOTS = {"$script": "script", "$output": "output", "$data": "data"}
#: Keys of a plugin prerequisite the runtime does not pass on as parameters.
PLUGIN_OWN_KEYS = ("plugin", "type", "failurePolicy")

_DROPPED = {
    TagKind.SECTION: ("section tag {q} is dropped by OpenPAI together with everything up to its closing tag",
                      "OpenPAI renders only plain `<% $name %>` tags; write the text without the section"),
    TagKind.INVERTED: ("inverted section tag {q} is dropped by OpenPAI together with everything up to its closing "
                       "tag", "OpenPAI renders only plain `<% $name %>` tags; write the text without the section"),
    TagKind.UNESCAPED: ("unescaped tag {q} is dropped by OpenPAI", "write `<% name %>`; OpenPAI does not "
                        "HTML-escape what it renders"),
    TagKind.COMMENT: ("comment tag {q} is dropped by OpenPAI", "remove it, or use a shell comment if the text "
                      "should stay"),
    TagKind.PARTIAL: ("partial tag {q} is dropped by OpenPAI (it has no partials)", "remove it"),
    TagKind.DELIMITERS: ("delimiter change {q} is dropped by OpenPAI and stops later `<% %>` from being tags",
                         "remove it; OpenPAI's delimiters are always `<%` and `%>`"),
}


_NO_FIELDS: Mapping[str, str] = types.MappingProxyType({})


class Scope(NamedTuple):
    """What one rendered field can see. `context` maps each root the renderer provides to its value. A named tuple,
    not a dataclass (see protocol/diagnostics.py)."""

    where: str  # "commands" | "auth" | "plugin"
    context: dict[str, Any]
    role: str | None = None
    role_fields: Mapping[str, str] = _NO_FIELDS  # root -> selected prerequisite name
    #: Roots whose value is unusable, which another check reports: a field naming a missing prerequisite (E304), or
    #: parameters, secrets or a prerequisite list of the wrong shape (the schema).
    broken: frozenset[str] = frozenset()
    has_secrets: bool = False


def check_placeholders(data: dict[str, Any], groups: dict[str, dict[str, tuple[int, dict[str, Any]]]] | None
                       ) -> list[Finding]:
    """W401-W403, W408 and W409 for the whole job; `groups` is upstream's type -> name -> prerequisite index, None
    when the prerequisites cannot be grouped."""
    roles, scopes = _roles_and_scopes(data, groups)
    findings = _in_commands(data, roles, scopes)
    auth_scope = Scope("auth", _present({"$secrets": data.get("secrets")}), broken=_misshapen(data) & {"$secrets"},
                       has_secrets=bool(data.get("secrets")))
    for p_index, item in mappings_in(data.get("prerequisites")):
        if item.get("type") == "dockerimage" and isinstance(item.get("auth"), dict):
            for pointer, text in _strings(item["auth"], ("prerequisites", p_index, "auth")):
                findings += _check_text(text, pointer, auth_scope)
        if "plugin" in item:
            users = [n for n, r in roles.items() if item.get("name") in as_list(r.get("prerequisites"))]
            for key, value in item.items():
                if key not in PLUGIN_OWN_KEYS:
                    findings += _check_plugin(value, ("prerequisites", p_index, key), scopes, users, data)
    for index, plugin in mappings_in(as_mapping(data.get("extras")).get(PLUGIN_KEY)):
        if "parameters" in plugin:
            wanted = plugin.get("taskroles")
            users = [n for n in roles if not isinstance(wanted, list) or n in wanted]
            findings += _check_plugin(plugin["parameters"], ("extras", PLUGIN_KEY, index, "parameters"), scopes,
                                      users, data)
    findings += _never_rendered(data)
    return _once_each(findings)


def command_placeholders(data: dict[str, Any], groups: dict[str, dict[str, tuple[int, dict[str, Any]]]] | None
                         ) -> list[Finding]:
    """What check_placeholders finds in the task roles' commands (with the deployments' pre and post commands for
    them): all it finds in a job whose other placeholders are known to be fine (validate's screen vouched)."""
    return _once_each(_in_commands(data, *_roles_and_scopes(data, groups)))


def _roles_and_scopes(data: dict[str, Any], groups: dict[str, dict[str, tuple[int, dict[str, Any]]]] | None
                      ) -> tuple[dict[str, dict[str, Any]], dict[str, Scope]]:
    """The task roles that are mappings, and the view each one's placeholders are rendered with."""
    roles = {name: role for name, role in as_mapping(data.get("taskRoles")).items() if isinstance(role, dict)}
    return roles, {name: _role_scope(data, name, role, groups) for name, role in roles.items()}


def _in_commands(data: dict[str, Any], roles: dict[str, dict[str, Any]], scopes: dict[str, Scope]
                 ) -> list[Finding]:
    findings: list[Finding] = []
    default = as_mapping(data.get("defaults")).get("deployment")
    for name, role in roles.items():
        base = ("taskRoles", name, "commands")
        # (path tokens, text): a pointer is built only for a finding (most commands have none)
        commands = [((*base, i), c) for i, c in strings_in(role.get("commands"))]
        extended = False  # the default deployment adds to this task role: its join is the text upstream renders
        for d_index, deployment in mappings_in(data.get("deployments")):
            extra = as_mapping(deployment.get("taskRoles")).get(name)
            if not isinstance(extra, dict):
                continue
            extended = extended or (default is not None and deployment.get("name") == default)
            parts = {key: [(("deployments", d_index, "taskRoles", name, key, i), c)
                           for i, c in strings_in(extra.get(key))] for key in ("preCommands", "postCommands")}
            findings += _check_joined(parts["preCommands"] + commands + parts["postCommands"], scopes[name])
        if not extended:
            findings += _check_joined(commands, scopes[name])
    return findings


def _once_each(findings: list[Finding]) -> list[Finding]:
    unique: dict[tuple[str, str, str], Finding] = {}
    for f in findings:
        unique.setdefault((f.code, f.pointer, f.message), f)
    return list(unique.values())


def _present(context: dict[str, Any]) -> dict[str, Any]:
    return {root: value for root, value in context.items() if value is not None}


def _misshapen(data: dict[str, Any]) -> frozenset[str]:
    """$parameters and $secrets when the job's value is not a mapping: the schema rejects it, so tags under that
    root are not reported as resolving to nothing."""
    return frozenset(root for root, key in (("$parameters", "parameters"), ("$secrets", "secrets"))
                     if data.get(key) is not None and not isinstance(data[key], dict))


def _role_scope(data: dict[str, Any], name: str, role: dict[str, Any], groups: dict[str, Any] | None) -> Scope:
    context = {"$parameters": data.get("parameters"), "$secrets": data.get("secrets")}
    fields, broken = {}, set(_misshapen(data))
    for root, field in ROLE_ROOTS.items():
        if field in role:
            value = role[field]
            known = groups is not None and isinstance(value, str)
            selected = groups.get(field, {}).get(value) if known else None
            if selected is None:
                broken.add(root)
            else:
                fields[root], context[root] = value, selected[1]
        elif groups is not None and ABSENT_SELECTION in groups.get(field, {}):  # what upstream renders then
            fields[root], context[root] = ABSENT_SELECTION, groups[field][ABSENT_SELECTION][1]
    return Scope("commands", _present(context), name, fields, frozenset(broken), bool(data.get("secrets")))


def _check_plugin(value: Any, tokens: tuple[Any, ...], scopes: dict[str, Scope], users: list[str],
                  data: dict[str, Any]) -> list[Finding]:
    """Plugin parameters are rendered per task role that runs the plugin; check each such role's view."""
    views = [scopes[u]._replace(where="plugin") for u in users] or [
        Scope("plugin", _present({"$parameters": data.get("parameters"), "$secrets": data.get("secrets")}),
              broken=_misshapen(data))]
    return [f for pointer, text in _strings(value, tokens) for view in views for f in _check_text(text, pointer, view)]


def _strings(value: Any, tokens: tuple[Any, ...]) -> Iterator[tuple[str, str]]:
    """Every string under `value` that could hold a tag, with its pointer."""
    if isinstance(value, str):
        if has_tags(value):
            yield pointer_of(*tokens), value
    elif isinstance(value, dict):
        for key, child in value.items():
            yield from _strings(child, (*tokens, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _strings(child, (*tokens, index))


# ----------------------------------------------------------------------------------------------------------------
# Rendered fields

def _check_joined(parts: list[tuple[tuple[Any, ...], str]], scope: Scope) -> list[Finding]:
    """Commands are trimmed and joined with newlines before rendering, so a tag may only make sense across them.
    `parts` are (path tokens, text)."""
    if not any(has_tags(text) for _, text in parts):
        return []
    starts, pieces, offset = [], [], 0
    for _, text in parts:
        starts.append(offset)
        pieces.append(js_trim(text))
        offset += len(pieces[-1]) + 1
    joined = "\n".join(pieces)
    return _check_text(joined, lambda at: pointer_of(*parts[bisect_right(starts, at) - 1][0]), scope)


#: A file reports at most 1,000 problems (MAX_DIAGNOSTICS in protocol/validate.py), and these are all warnings: past
#: this many in one text, the rest could never be shown (50,000 unknown placeholders took 1 s to describe).
_MAX_FINDINGS = 1000


def _check_text(text: str, where: Any, scope: Scope) -> list[Finding]:
    pointer_at = where if callable(where) else (lambda at: where)
    findings: list[tuple[int, Finding]] = []
    try:
        for tag in scan_tags(text):
            if len(findings) > _MAX_FINDINGS:
                continue  # still scanned to its end: a parse failure there is reported
            found = _check_tag(tag, pointer_at(tag.start), scope)
            if found is not None:
                findings.append((tag.start, found._replace(excerpt=tag.raw)))
    except TemplateError as exc:
        if scope.where != "plugin":  # the runtime's plugin lookup is a regex: it never fails to parse
            # An unclosed section is reported once, as the parse failure it causes.
            findings = [(start, f) for start, f in findings if start != exc.offset]
            failure = finding("W409", pointer_at(exc.offset), f"OpenPAI's template parser (mustache.js) fails on "
                               f"this text: {exc.message}", "close every `<%` with `%>` and every section with its "
                               "closing tag, or avoid `<%` here")
            findings.append((exc.offset, failure))
    return [f for _, f in findings]


def _check_tag(tag: Tag, pointer: str, scope: Scope) -> Finding | None:
    quoted = _quote(tag.raw)
    if tag.kind is TagKind.CLOSE:
        return None
    if tag.kind is not TagKind.NAME:
        message, hint = _DROPPED[tag.kind]
        if scope.where == "plugin":
            message = f"{tag.kind.name.lower()} tag {{q}} is left as written by the runtime"
        return finding("W409", pointer, message.format(q=quoted), hint)
    root = tag.path[0] if tag.path else ""
    if "<%" in tag.name:
        return finding("W409", pointer, f"tag {quoted} holds another '<%': the first '<%' is not closed, so the "
                        f"tag runs on to the next '%>'; {_left_as_is(scope)}",
                        "close the first tag with `%>`, or remove the stray `<%`")
    if root not in ROOT_CODES:
        guess = did_you_mean(root if root.startswith("$") else "$" + root, ROOT_CODES)
        return finding("W409", pointer, f"tag {quoted} names '{root}', which is not one of OpenPAI's names; "
                        f"{_unknown_root_outcome(tag, scope)}", f"did you mean '{guess}'?" if guess else
                        "names start with $parameters, $secrets, $script, $output or $data")
    if root in scope.broken:
        return None
    code, rest = ROOT_CODES[root], tag.path[1:]
    if root in scope.context:
        if _found(root, rest, scope):
            return None
        why, guess = _explain_miss(root, rest, scope)
    else:
        why, guess = _explain_absent(root, scope), None
    return finding(code, pointer, f"placeholder {quoted} resolves to nothing: {why}; {_consequence(root, scope)}",
                    f"did you mean '{guess}'?" if guess else _fix(root, rest, scope))


def _found(root: str, rest: tuple[str, ...], scope: Scope) -> bool:
    """Does the tag render? The runtime's plugin lookup walks dict keys only; mustache.js (commands, auth) does
    JavaScript property access, so `x.length` or `constructor` render too (protocol/jsvalues.py). A name the
    rest-server's render throws on is not "nothing": compile refuses it (E810)."""
    found = resolve(rest, scope.context[root])[0]
    if scope.where == "plugin" or (found and "__proto__" not in rest):
        # An own key or index holding a value is what JavaScript finds too (js-yaml 3 makes `__proto__` the
        # prototype, not a key): only the names plain data lacks need the JavaScript model.
        return found
    from .jsvalues import UNDEFINED, JsThrow, Unmodeled, lookup as js_lookup

    try:
        value = js_lookup((root, *rest), {root: scope.context[root]})
    except (JsThrow, Unmodeled):
        return True
    return value is not None and value is not UNDEFINED


def _explain_absent(root: str, scope: Scope) -> str:
    if scope.where == "auth" and root != "$secrets":
        return f"auth is rendered with $secrets only, never {root}"
    if root in ROLE_ROOTS:
        if scope.role is None:
            return f"no task role runs this plugin, so there is no {root}"
        return f"task role '{scope.role}' sets no {ROLE_ROOTS[root]}"
    return f"the job has no {root[1:]}"


def _explain_miss(root: str, rest: tuple[str, ...], scope: Scope) -> tuple[str, str | None]:
    depth, _ = lookup(rest, scope.context[root])
    container = lookup(rest[:depth], scope.context[root])[1]
    shown = ".".join((root, *rest[:depth]))
    if root in ROLE_ROOTS and depth == 0:
        shown = f"{root} (prerequisite '{scope.role_fields[root]}')"
    if depth == len(rest) or container is None:
        return f"{shown} is null", None
    segment = rest[depth]
    if isinstance(container, dict):
        return f"{shown} has no key '{segment}'", did_you_mean(segment, container)
    if isinstance(container, list):
        return f"{shown} has {len(container)} item{'s' if len(container) != 1 else ''}, no index '{segment}'", None
    kind = "a string" if isinstance(container, str) else "a boolean" if isinstance(container, bool) else "a number"
    return f"{shown} is {kind}, not a mapping", None


def _consequence(root: str, scope: Scope) -> str:
    if scope.where == "plugin":
        return "the runtime's lookup fails (KeyError)"
    if scope.where == "auth":
        return "OpenPAI leaves it in the auth as written"
    if root == "$secrets":
        return "the runtime renders it as an empty string" if scope.has_secrets else \
            "OpenPAI leaves it in the command as written"
    return _left_as_is(scope)


def _unknown_root_outcome(tag: Tag, scope: Scope) -> str:
    """What becomes of a name outside OpenPAI's roots: mustache.js still looks it up in the view, a plain
    JavaScript object, so `toString` or `__proto__` print `[object Object]` (protocol/jsvalues.py)."""
    if scope.where != "plugin":
        from .jsvalues import JsThrow, Unmodeled, lookup as js_lookup, printed

        try:
            shown = printed(js_lookup(tag.path, {}))
        except (JsThrow, Unmodeled):
            shown = None
        if shown is not None:
            return f"OpenPAI prints JavaScript's {shown!r} for it"
    return _left_as_is(scope)


def _left_as_is(scope: Scope) -> str:
    if scope.where == "commands" and scope.has_secrets:
        return "OpenPAI leaves it in the command, and the runtime blanks it (the job has secrets)"
    field = {"commands": "command", "auth": "auth", "plugin": "plugin parameter"}[scope.where]
    return f"OpenPAI leaves it in the {field} as written"


def _fix(root: str, rest: tuple[str, ...], scope: Scope) -> str:
    if scope.where == "auth" and root != "$secrets":
        return "auth can use only $secrets; move the value into `secrets`"
    if root in ROLE_ROOTS:
        field = ROLE_ROOTS[root]
        if root not in scope.context and scope.role is not None:
            return f"set `{field}: <prerequisite name>` on task role '{scope.role}'"
        name = scope.role_fields.get(root, "?")
        return f"add `{'.'.join(rest) or field}` to prerequisite '{name}', or fix the name"
    return f"define `{'.'.join(rest) or '...'}` under `{root[1:]}`, or fix the name"


# ----------------------------------------------------------------------------------------------------------------
# Never rendered

def _never_rendered(data: dict[str, Any]) -> Iterator[Finding]:
    for key, value in data.items():
        if key in ("parameters", "secrets", "description", "taskRoles", "prerequisites", "deployments", "extras",
                   "defaults"):
            continue
        yield from _placeholders_in(value, (key,))
    for key, value in as_mapping(data.get("defaults")).items():
        if key != "deployment":
            yield from _placeholders_in(value, ("defaults", key))
    for index, item in mappings_in(data.get("prerequisites")):
        for key, value in item.items():
            plugin_parameter = "plugin" in item and key not in PLUGIN_OWN_KEYS
            auth = item.get("type") == "dockerimage" and key == "auth"
            if key != "description" and not plugin_parameter and not auth:
                yield from _placeholders_in(value, ("prerequisites", index, key))
    for name, role in as_mapping(data.get("taskRoles")).items():
        for key, value in as_mapping(role).items():
            if key not in ("commands", "prerequisites", "dockerImage", "script", "output", "data"):
                yield from _placeholders_in(value, ("taskRoles", name, key))
    for index, deployment in mappings_in(data.get("deployments")):
        for key, value in deployment.items():
            if key not in ("description", "name", "taskRoles"):
                yield from _placeholders_in(value, ("deployments", index, key))
    for index, plugin in mappings_in(as_mapping(data.get("extras")).get(PLUGIN_KEY)):
        for key, value in plugin.items():
            if key != "parameters":
                yield from _placeholders_in(value, ("extras", PLUGIN_KEY, index, key))


def _placeholders_in(value: Any, tokens: tuple[Any, ...]) -> Iterator[Finding]:
    for pointer, text in _strings(value, tokens):
        try:
            first = next(iter(scan_tags(text)), None)
        except TemplateError:
            first = None
        shown = _quote(first.raw if first is not None else "<%")
        yield finding("W408", pointer, f"placeholder {shown} is in a field OpenPAI never renders, so the "
                      "value is used as written",
                      "placeholders work only in commands, deployment pre/postCommands, dockerimage auth and "
                      "runtime-plugin parameters; write the literal value here (a YAML anchor can share it)",
                      excerpt=first.raw if first is not None else None)


# ----------------------------------------------------------------------------------------------------------------

def _quote(raw: str, limit: int = 60) -> str:
    """A tag as it appears in a one-line message: whitespace collapsed, long ones cut."""
    text = " ".join(raw.split())
    return f"'{text if len(text) <= limit else text[:limit - 3] + '...'}'"

