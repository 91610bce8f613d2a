"""The compile checks on text OpenPAI renders with mustache.js (E803, E810), and which texts those are.

Why a module of its own: upstream renders a task role's commands (joined with its default deployment's pre and
post commands) as one template against a view of parameters and prerequisites, and each registry auth value alone
against the secrets. Working out those texts and views, then parsing each as mustache.js does and looking each name
up as JavaScript does, is one concern apart from the counts, shapes and labels protocol/compile_checks.py checks;
compile_checks runs these with the rest.
"""

from __future__ import annotations

import functools
from typing import Any, Iterator

from .codes import finding
from .diagnostics import Finding, kind_of, pointer_of
from .jsstring import js_truthy
from .names import ABSENT_SELECTION, first_wins
from .templates import OBJECT_PROTOTYPE_NAMES



def render_failures(views: list[Any]) -> Iterator[Finding]:
    """E810: a name whose lookup or printing throws in JavaScript (a function that refuses the view as `this`,
    `Function.prototype.caller`, a mapping with a `toString` key) fails the rest-server's render; so does a
    built-in protocol/jsvalues.py does not model (refused, not guessed)."""
    from .templates import js_trim

    outcomes: dict[tuple[Any, ...], Exception | None] = {}  # task roles share texts and views: look each up once
    for pieces, view in views:
        text, starts, position = "", [], 0
        for pointer, command in pieces:
            starts.append((position, pointer))
            piece = js_trim(command) if view.get("$secrets", _NO_SECRETS) is _NO_SECRETS else command
            text += ("\n" if text or position else "") + piece
            position = len(text) + 1
        if "<%" not in text:
            continue
        # imported only for a text with tags: the JavaScript model (and its dataclasses) stays off the validate
        # path of the many jobs without placeholders
        from .jsvalues import JsThrow, Unmodeled, lookup as js_lookup, printed

        view_key = tuple(id(value) for value in view.values())
        for tag in _name_tags(text):
            key = (view_key, tag.path)
            if key not in outcomes:
                try:
                    printed(js_lookup(tag.path, view))
                    outcomes[key] = None
                except (JsThrow, Unmodeled) as failure:
                    outcomes[key] = failure
            exc = outcomes[key]
            if exc is not None:
                pointer = pointer_of(*next(p for start, p in reversed(starts) if start <= tag.start))
                why = f"{exc}; paictl refuses it rather than guess what OpenPAI renders" \
                    if isinstance(exc, Unmodeled) else f"JavaScript throws ({exc}), so the rest-server's render fails"
                yield finding("E810", pointer, f"placeholder {tag.raw}: {why}", "use a parameter's own value, "
                              "not a JavaScript built-in reached through it", excerpt=tag.raw)


_NO_SECRETS = object()


@functools.lru_cache(maxsize=512)
def _name_tags(text: str) -> tuple[Any, ...]:
    """The name tags of a text (none when mustache.js cannot parse it: E803 reports that), cached: commands repeat
    across task roles."""
    from .templates import TagKind, TemplateError, scan_tags

    try:
        return tuple(tag for tag in scan_tags(text) if tag.kind is TagKind.NAME)
    except TemplateError:
        return ()


def rendered_views(data: dict[str, Any]) -> Iterator[tuple[list[tuple[tuple[Any, ...], str]], dict[str, Any]]]:
    """Each text upstream renders as one template (a task role's commands with its default deployment's pre and
    post commands; each registry auth value), as (path, piece) pairs, with the view it is rendered against."""
    by_type: dict[str, dict[str, Any]] = {}
    prerequisites = data.get("prerequisites")
    for index, item in enumerate(prerequisites if isinstance(prerequisites, list) else []):
        if isinstance(item, dict) and isinstance(item.get("name"), str) and isinstance(item.get("type"), str):
            group = by_type.setdefault(item["type"], {})
            if not first_wins(item["name"]) or item["name"] not in group:
                group[item["name"]] = item
        auth = item.get("auth") if isinstance(item, dict) else None
        for key, value in (auth.items() if isinstance(auth, dict) else []):
            if isinstance(value, str):
                yield [(("prerequisites", index, "auth", key), value)], {"$secrets": data.get("secrets")}
    deployment = default_deployment(data)
    for name, role in task_roles(data):
        pieces: list[tuple[str, str]] = []
        extra = deployment[1].get(name) if deployment is not None else None
        extra = extra if isinstance(extra, dict) else {}
        for key, base in (("preCommands", None), ("commands", ("taskRoles", name, "commands")),
                          ("postCommands", None)):
            source = role if key == "commands" else extra
            commands = source.get(key) if isinstance(source, dict) else None
            for number, command in enumerate(commands if isinstance(commands, list) else []):
                if isinstance(command, str):
                    where = base or ("deployments", deployment[0] if deployment else 0, "taskRoles", name, key)
                    pieces.append(((*where, number), command))
        view = {"$parameters": data.get("parameters")}
        for root, field in (("$script", "script"), ("$output", "output"), ("$data", "data")):
            selected = role.get(field, ABSENT_SELECTION)
            view[root] = by_type.get(field, {}).get(selected) if isinstance(selected, str) else None
        yield pieces, view


def default_deployment(data: dict[str, Any]) -> tuple[int, dict[str, Any], str | None] | None:
    """(index, task roles, the shape upstream crashes on or None) of the default deployment, or None. A list of
    task roles is read as none: JavaScript's `in` finds no task role name among a list's indexes."""
    defaults = data.get("defaults")
    wanted = defaults.get("deployment") if isinstance(defaults, dict) else None
    deployments = data.get("deployments")
    listed = list(enumerate(deployments if isinstance(deployments, list) else []))
    for index, deployment in listed if first_wins(wanted) else reversed(listed):
        if isinstance(deployment, dict) and deployment.get("name") == wanted and wanted is not None:
            roles = deployment.get("taskRoles")
            broken = None if isinstance(roles, (dict, list)) else kind_of(roles)
            return index, roles if isinstance(roles, dict) else {}, broken
    return None


def task_roles(data: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(name, task role) of each task role written as a mapping (any other shape is E801's)."""
    roles = data.get("taskRoles")
    if isinstance(roles, dict):
        yield from ((name, role) for name, role in roles.items() if isinstance(role, dict))


def template_findings(data: dict[str, Any], views: list[Any]) -> Iterator[Finding]:
    """Text OpenPAI renders with mustache.js must parse, or upstream's renderer throws and the submission fails.

    Checked as upstream renders it: a task role's commands (with its default deployment's pre and post commands)
    trimmed and joined by newlines into ONE template, so a section opened in one command and closed in a later one
    parses; each registry auth value alone. Another deployment's commands are never rendered, so never checked.
    """
    from .templates import TemplateError, js_trim, scan_tags

    yield from _auth_values(data)
    for pieces, view in views:
        auth = "$secrets" in view
        text, starts = "", []
        for pointer, piece in pieces:
            if starts:
                text += "\n"
            starts.append((len(text), pointer))
            text += piece if auth else js_trim(piece)
        if text in OBJECT_PROTOTYPE_NAMES and starts:
            # mustache.js caches parsed templates in a plain object keyed by the text: `cache['toString']` is
            # Object.prototype's function, taken for the tokens, and `for (const token of tokens)` throws.
            yield finding("E803", pointer_of(*starts[0][1]), f"the whole template is '{text}', a name JavaScript's "
                          "Object prototype has: mustache.js's template cache answers it with that member instead "
                          "of parsed tokens, and OpenPAI's renderer throws", "write the command you mean to run")
            continue
        try:
            for _ in scan_tags(text):
                pass
        except TemplateError as exc:
            where = next(p for s, p in reversed(starts) if s <= exc.offset) if starts else ()
            pointer = pointer_of(*where)
            excerpt = text[exc.offset:].partition("\n")[0][:40] or None
            yield finding("E803", pointer, f"OpenPAI's template parser (mustache.js) fails on this text: "
                          f"{exc.message}; the job cannot be rendered", "close every `<%` with `%>` and every "
                          "section with its closing tag (a task role's commands are one template)", excerpt=excerpt)


def _auth_values(data: dict[str, Any]) -> Iterator[Finding]:
    """A registry auth value that is not text: upstream renders every auth value with mustache.js, which returns ''
    for a falsy value (null, false, 0, NaN) and throws on any other (`this.tail.search is not a function`), so the
    submission fails. An unquoted date is a JavaScript Date there, and a !!binary value a Node Buffer (an object,
    however empty): both throw too."""
    from .timestamps import is_timestamp
    from .yamltags import JSBuffer

    prerequisites = data.get("prerequisites")
    for index, item in enumerate(prerequisites if isinstance(prerequisites, list) else []):
        auth = item.get("auth") if isinstance(item, dict) else None
        for key, value in (auth.items() if isinstance(auth, dict) else []):
            if isinstance(value, JSBuffer):
                shown = "a !!binary value (a Node Buffer to OpenPAI, not text)"
            elif is_timestamp(value) or (not isinstance(value, str) and js_truthy(value)):
                shown = f"the unquoted date {value}" if is_timestamp(value) else kind_of(value)
            else:
                continue
            yield finding("E803", pointer_of("prerequisites", index, "auth", key), f"auth value '{key}' is "
                          f"{shown}; OpenPAI renders every auth value as a template, and its template parser "
                          "(mustache.js) throws on anything but text (null, false or 0 render as empty)",
                          "quote the value, or remove the key")
