"""Task-role entrypoints and registry credentials rendered exactly as OpenPAI's rest-server renders them.

The rest-server (`protocolRender`, src/middlewares/v2/protocol.js) does not call `mustache.render`: it walks the
tokens of `mustache.parse(text, ['<%', '%>'])` itself, emits text and name tokens only, writes a name that
resolves to null/undefined back as `<% name %>`, and appends values with `+=` (so JavaScript's `String()`, no HTML
escaping). Every other tag is dropped, and a section with everything inside it. The entrypoint becomes the
container's `USER_CMD`, so any difference here is a different program run; the upstream corpus checks it byte for
byte.

No template engine renders here, on purpose: upstream's renderer is this token walk, not a template engine's
`render`, and every value is looked up as JavaScript would look it up (protocol/jsvalues.py's model of plain data
and built-in prototypes). So no attribute of a Python object is reachable, and `{{ }}`, `{% %}` or
`<% $parameters.__class__ %>` in a job are inert text or a name that is not found; a sandboxed engine joining the
tokens would guard nothing more, and importing one was a sixth of every `paictl compile`. A text is split into
tokens once (cached per text) and joined in one pass, linear in its length.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from paictl.protocol.jsstring import js_string
from paictl.protocol.jsvalues import JsThrow, Unmodeled, get as js_get, lookup as js_lookup, printed
from paictl.protocol.names import ABSENT_SELECTION
from paictl.protocol.template_checks import OBJECT_PROTOTYPE_NAMES
from paictl.protocol.templates import (JS_WHITESPACE, Tag, TagKind, TemplateError, js_trim, rewrite_indexes,
                                       scan_tags)

if TYPE_CHECKING:
    from paictl.protocol.model import Job

#: The prerequisite types a task role selects by name, as the context roots the rest-server gives them.
ROLE_ROOTS = (("$script", "script"), ("$output", "output"), ("$data", "data"))

#: mustache.js `isWhitespace`: not matched by JavaScript's `\S`.
_JS_SPACE = frozenset(JS_WHITESPACE)

#: Tags after which mustache.js keeps the line (a name or an unescaped tag counts as content on it).
_CONTENT_TAGS = (TagKind.NAME, TagKind.UNESCAPED)


def render_entrypoint(job: Job, role_name: str, parameters: Mapping[str, Any] | None = None) -> str:
    """The `entrypoint` (`USER_CMD`) the rest-server computes for a task role.

    `parameters` overrides the job's parameters key by key (a submission-time override), as if the job had been
    written with them. `$secrets` is left unrendered, as upstream does: the runtime substitutes it in the
    container, so secrets never appear in the submitted Framework. Raises KeyError for an unknown task role and
    TemplateError for text mustache.js cannot parse (the rest-server rejects such a job).
    """
    role = job.task_role(role_name)
    commands = list(role.commands)
    deployment = job.default_deployment()
    if deployment is not None and role_name in deployment.task_roles:
        extra = deployment.task_roles[role_name]
        commands = [*extra.pre_commands, *commands, *extra.post_commands]
    text = "\n".join(js_trim(command) for command in commands)
    return js_trim(render(text, role_context(job, role_name, parameters)))


def role_context(job: Job, role_name: str, parameters: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The view the rest-server renders a task role's commands with (no `$secrets`, on purpose)."""
    role = job.task_role(role_name)
    merged = {**job.parameters, **(parameters or {})}
    # The model cannot tell `parameters: {}` from no parameters; the latter is far more common, and upstream it is
    # undefined (so a bare `<% $parameters %>` stays literal instead of becoming `[object Object]`).
    context: dict[str, Any] = {"$parameters": _plain(merged) if merged else None}
    for root, type_ in ROLE_ROOTS:
        selected = getattr(role, type_)
        prerequisite = job.prerequisite(type_, selected if selected is not None else ABSENT_SELECTION)
        if prerequisite is not None:
            context[root] = _plain(prerequisite.fields)
        elif selected in OBJECT_PROTOTYPE_NAMES:  # upstream looks the name up in a plain object (W304)
            context[root] = js_get({}, selected)
        else:
            context[root] = None
    return context


def render_with_secrets(text: str, secrets: Mapping[str, Any]) -> str:
    """A dockerimage prerequisite's `auth` value as the rest-server renders it: with `$secrets` and nothing else.

    Not trimmed: upstream trims commands and entrypoints, not credentials.
    """
    return render(text, {"$secrets": _plain(secrets)})


def render(text: str, context: Mapping[str, Any]) -> str:
    """`text` rendered with OpenPAI's renderer semantics against `context` (a mapping of root name to value)."""
    compiled = _compile(text)
    if not compiled.has_names:
        return "".join(compiled.texts)  # type: ignore[arg-type]
    view = dict(context)
    names = compiled.names
    values: dict[str, str] = {}  # a name's value, looked up once per text: the view does not change meanwhile
    pieces = []
    for index, piece in enumerate(compiled.texts):
        if piece is None:
            tag = names[index]
            assert tag is not None
            piece = values.get(tag.name)
            if piece is None:
                piece = values[tag.name] = _name_value(tag, view)
        pieces.append(piece)
    return "".join(pieces)


def _name_value(tag: Tag, view: dict[str, Any]) -> str:
    """One name tag's output: the value as JavaScript prints it, or the tag written back when it is null/undefined.

    The lookup is a model of JavaScript property access over plain data (protocol/jsvalues.py): dict keys, list and
    string indexes, and tables of the built-in prototypes; no Python attribute is ever reached (`__class__` is
    simply not found).
    """
    try:
        text = printed(js_lookup(tag.path, view))
    except (JsThrow, Unmodeled) as exc:  # compile_checks refuses these first (E810)
        raise TemplateError(f"OpenPAI's renderer fails on {tag.raw}: {exc}", tag.start) from None
    return text if text is not None else f"<% {rewrite_indexes(tag.name)} %>"


@dataclasses.dataclass(frozen=True)
class _Compiled:
    """A text split into the tokens the rest-server's loop emits (a docstring also spares dataclasses an
    `inspect.signature` call at import)."""

    #: Per token: its text (None for a name token).
    texts: tuple[str | None, ...]
    #: Per token: its tag (None for a text token).
    names: tuple[Tag | None, ...]
    has_names: bool


@functools.lru_cache(maxsize=512)
def _compile(text: str) -> _Compiled:
    """`text`'s output tokens, split once: commands repeat across renders (task roles, instances, profiles)."""
    tokens = output_tokens(text)
    texts = tuple(token if isinstance(token, str) else None for token in tokens)
    names = tuple(token if isinstance(token, Tag) else None for token in tokens)
    return _Compiled(texts, names, any(name is not None for name in names))


def output_tokens(text: str) -> list[str | Tag]:
    """What the rest-server's loop emits, in order: text (str) and name tags, as mustache.js 2.3.2 parses `text`.

    Besides dropping sections, mustache.js `parseTemplate` removes "standalone" lines: on a line whose only
    non-blank content is tags other than names (a section, comment, delimiter change...), its blanks and its
    newline are deleted. Commands such as `<%# x %>` on a line of their own therefore leave no empty line behind.
    """
    tokens: list[str | Tag | None] = []
    depths: list[int] = []
    line = _Line()
    depth = 0
    position = 0
    for tag in scan_tags(text):
        line.add_text(text[position:tag.start], tokens, depths, depth)
        line.has_tag = True
        position = tag.end
        tokens.append(tag)
        depths.append(depth)
        if tag.kind in (TagKind.SECTION, TagKind.INVERTED):
            depth += 1
        elif tag.kind is TagKind.CLOSE:
            depth -= 1
        elif tag.kind in _CONTENT_TAGS:
            line.non_space = True
    line.add_text(text[position:], tokens, depths, depth)
    return _squash(token for token, level in zip(tokens, depths)
                   if token is not None and level == 0 and (isinstance(token, str) or token.kind is TagKind.NAME))


@dataclasses.dataclass
class _Line:
    """mustache.js's per-line state for standalone stripping (`spaces`, `hasTag`, `nonSpace`)."""

    spaces: list[int] = dataclasses.field(default_factory=list)  # indexes of the line's whitespace tokens
    has_tag: bool = False
    non_space: bool = False

    def add_text(self, text: str, tokens: list[str | Tag | None], depths: list[int], depth: int) -> None:
        for piece in _chars(text):
            if piece[0] in _JS_SPACE:
                self.spaces.append(len(tokens))
            else:
                self.non_space = True
            tokens.append(piece)
            depths.append(depth)
            if piece == "\n":
                if self.has_tag and not self.non_space:
                    for index in self.spaces:
                        tokens[index] = None
                self.spaces = []
                self.has_tag = self.non_space = False


def _chars(text: str) -> list[str]:
    """Text split as the stripping needs it: each whitespace character alone, runs of anything else together (by a
    regular expression: a loop over the characters took 0.3 s for 2 MiB of commands)."""
    return [piece for piece in _SPACE_SPLIT.split(text) if piece]


_SPACE_SPLIT = re.compile("([" + re.escape(JS_WHITESPACE) + "])")


def _squash(tokens: Any) -> list[str | Tag]:
    """Adjacent text pieces joined into one (mustache.js `squashTokens`). Each run is joined once: `+=` on a string
    held in a list copies it every time (2 MiB of commands took 6 s)."""
    out: list[str | Tag] = []
    run: list[str] = []
    for token in tokens:
        if isinstance(token, str):
            run.append(token)
            continue
        if run:
            out.append("".join(run))
            run = []
        out.append(token)
    if run:
        out.append("".join(run))
    return out


def _plain(value: Any, memo: dict[int, Any] | None = None) -> Any:
    """A copy made of dicts and lists only, the two shapes `resolve` walks (the model holds read-only mappings and
    tuples). Shared and cyclic parts stay shared and cyclic, as YAML aliases made them."""
    memo = {} if memo is None else memo
    if isinstance(value, Mapping) or isinstance(value, (list, tuple)):
        if id(value) in memo:
            return memo[id(value)]
        if isinstance(value, Mapping):
            copy: Any = {}
            memo[id(value)] = copy
            # js-yaml makes every mapping key a string (`1: x` is looked up as "1").
            copy.update((key if isinstance(key, str) else js_string(key), _plain(item, memo))
                        for key, item in value.items())
        else:
            copy = []
            memo[id(value)] = copy
            copy.extend(_plain(item, memo) for item in value)
        return copy
    return value
