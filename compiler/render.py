"""Task-role entrypoints and registry credentials rendered exactly as OpenPAI's rest-server renders them.

The rest-server (`protocolRender`, src/middlewares/v2/protocol.js) does not call `mustache.render`: it walks the
tokens of `mustache.parse(text, ['<%', '%>'])` itself, emits text and name tokens only, writes a name that
resolves to null/undefined back as `<% name %>`, and appends values with `+=` (so JavaScript's `String()`, no HTML
escaping). Every other tag is dropped, and a section with everything inside it. The entrypoint becomes the
container's `USER_CMD`, so any difference here is a different program run; the upstream corpus checks it byte for
byte.

Rendering goes through jinja2's SandboxedEnvironment (the project's one template engine), but no user text is ever
jinja source: the text is split into mustache tokens once (cached per text), and the template is built from the
token list's shape alone, as `<% t[i] %>` for text (the text is passed in as a value) and `<% n(i) %>` for a name (a
plain function that looks the name up as JavaScript would, in protocol/jsvalues.py's model of plain data and
built-in prototypes, and returns the JavaScript string or the literal tag). So `{{ }}`, `{% %}` or
`<% $parameters.__class__ %>` in a job are inert text or a name that is not found, and no attribute of a Python
object is reachable. Templates are shared by every text of the same shape (one compile for a
hundred task roles with similar commands), and a text without names needs no template. jinja2 is imported on the
first render with a name only: `paictl validate` never loads it.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from paictl.protocol.jsstring import js_string
from paictl.protocol.jsvalues import JsThrow, Unmodeled, lookup as js_lookup, printed
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
        prerequisite = job.prerequisite(type_, selected) if selected is not None else None
        context[root] = _plain(prerequisite.fields) if prerequisite is not None else None
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
    if len(compiled.texts) > _SLICE:
        return "".join(_render_slices(compiled.texts, compiled.names, dict(context)))
    lookup = functools.partial(_name_value, compiled.names, dict(context))
    return _template(compiled.shape).render(t=compiled.texts, n=lookup)


#: A text of more tokens than this is rendered in slices of this many names, each through a template that depends
#: only on the slice's length: jinja2 compiles a template in time and memory that grow with it (one with 110,000
#: names took 16 s and 1.4 GB), and the slices share one compiled template.
_SLICE = 256


def _render_slices(texts: tuple[str | None, ...], names: tuple[Tag | None, ...], view: dict[str, Any]) -> Any:
    """Each name with the text before it is one call `u(k)` (one jinja2 call per name, not per token); the text after
    the last name needs no template, as a text without names needs none. A name's value is looked up once per text:
    the view does not change while it renders."""
    values: dict[str, str] = {}

    def lookup(index: int) -> str:
        name = names[index].name  # type: ignore[union-attr]
        value = values.get(name)
        if value is None:
            value = values[name] = _name_value(names, view, index)
        return value

    units: list[tuple[str, int]] = []
    before: list[str] = []
    for index, text in enumerate(texts):
        if text is None:
            units.append(("".join(before), index))
            before = []
        else:
            before.append(text)
    for start in range(0, len(units), _SLICE):
        chunk = units[start:start + _SLICE]

        def unit(k: int, chunk: list[tuple[str, int]] = chunk) -> str:
            text, index = chunk[k]
            return text + lookup(index)

        yield _template("".join("<% u({0}) %>".format(k) for k in range(len(chunk)))).render(u=unit)
    yield "".join(before)


def _name_value(names: tuple[Tag | None, ...], view: dict[str, Any], index: int) -> str:
    """One name tag's output: the value as JavaScript prints it, or the tag written back when it is null/undefined.

    The lookup is a model of JavaScript property access over plain data (protocol/jsvalues.py): dict keys, list and
    string indexes, and tables of the built-in prototypes; no Python attribute is ever reached (`__class__` is
    simply not found).
    """
    tag = names[index]
    assert tag is not None
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
    #: The jinja source for this token list: indexes only, never a character of the text.
    shape: str


@functools.lru_cache(maxsize=512)
def _compile(text: str) -> _Compiled:
    """`text`'s output tokens, split once: commands repeat across renders (task roles, instances, profiles)."""
    tokens = output_tokens(text)
    texts = tuple(token if isinstance(token, str) else None for token in tokens)
    names = tuple(token if isinstance(token, Tag) else None for token in tokens)
    shape = "".join("<% t[{0}] %>".format(i) if isinstance(token, str) else "<% n({0}) %>".format(i)
                    for i, token in enumerate(tokens))
    return _Compiled(texts, names, any(name is not None for name in names), shape)


#: jinja2 needs block and comment delimiters; these (private-use characters) never occur in the generated source.
_UNUSED_DELIMITERS = {
    "block_start_string": "\ue000{%", "block_end_string": "%}\ue000",
    "comment_start_string": "\ue000{#", "comment_end_string": "#}\ue000",
}


@functools.lru_cache(maxsize=256)
def _template(shape: str):
    """The compiled template of a token-list shape, shared by every text with that shape."""
    return _environment().from_string(shape)


@functools.cache
def _environment():
    from jinja2 import StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    return SandboxedEnvironment(variable_start_string="<%", variable_end_string="%>", autoescape=False,
                                undefined=StrictUndefined, **_UNUSED_DELIMITERS)


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
