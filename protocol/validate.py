"""Validation of one job document: load, schema, semantics; every problem collected, then located.

The fast path (yaml-rs + jsonschema-rs) can only say "clean": a file with no error and no warning. Anything else is
validated again by the located path, which is the authority for every diagnostic, so positions are exact and the
two paths can never disagree about what is reported.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, NamedTuple

from paictl.schemas import fast_validator

from .clean_screen import CLEAN, Unvouched, unvouched_parts
from .diagnostics import Anchor, Diagnostic, Finding, Severity, pointer_of, split_pointer
from .loading import Document, DocumentError, decode_source, load_fast, load_located


class ValidationResult(NamedTuple):
    """One file's verdict: its diagnostics in text order and, until summarised, its parsed data (a named tuple, not
    a dataclass: see protocol/diagnostics.py)."""

    path: str
    diagnostics: tuple[Diagnostic, ...]
    data: dict[str, Any] | None

    @property
    def errors(self) -> tuple[Diagnostic, ...]:
        return tuple(d for d in self.diagnostics if d.is_error)

    @property
    def warnings(self) -> tuple[Diagnostic, ...]:
        return tuple(d for d in self.diagnostics if not d.is_error)

    @property
    def ok(self) -> bool:
        return not self.errors

    def summary(self) -> ValidationResult:
        """This result without the parsed document: what a report of many files keeps (7 KB less per file)."""
        return self._replace(data=None)


def _semantic_findings(data: dict[str, Any], text: str, *, commands_only: bool = False) -> list[Finding]:
    from .semantics import check_semantics

    # No string of the job can hold `<%` when the text has none and no backslash (a double-quoted escape such as
    # `\x3c` or an escaped line break could make one): two-thirds of real jobs skip the placeholder walk.
    return check_semantics(data, tags="<%" in text or "\\" in text, text=text, commands_only=commands_only)


def _compile_findings(data: dict[str, Any], *, commands_only: bool = False) -> list[Finding]:
    """What no compile target can build (protocol/compile_checks.py), for a schema-valid job: `validate` reports it
    too, so a job `validate` passes is one every target compiles (or refuses for a target-specific reason)."""
    from .compile_checks import compile_findings

    return compile_findings(data, commands_only=commands_only)


def _with_compile_findings(semantic: list[Finding], data: dict[str, Any]) -> list[Finding]:
    return _joined(semantic, _compile_findings(data))


def _joined(semantic: list[Finding], compiled: list[Finding]) -> list[Finding]:
    """The semantic findings plus the compile findings; a W409 parse failure gives way to the E803 that reports the
    same text as unrenderable (the warning checks each text alone, E803 the template upstream really renders)."""
    if any(f.code == "E803" for f in compiled):
        semantic = [f for f in semantic if not (f.code == "W409" and f.message.startswith(_PARSE_FAILURE))]
    return [*semantic, *compiled]


_PARSE_FAILURE = "OpenPAI's template parser"


def job_findings(data: dict[str, Any], text: str) -> list[Finding]:
    """Every semantic and compile finding of a schema-valid job: each check over the whole job."""
    return _with_compile_findings(_semantic_findings(data, text), data)


def task_role_findings(data: dict[str, Any], text: str, unvouched: Unvouched) -> list[Finding] | None:
    """What `job_findings` gives for a schema-valid job whose every part but the `unvouched` task roles the screen
    (protocol/clean_screen.py) vouched for; None when this cannot tell.

    The checks run on the job with only those task roles (and only the placeholder checks of their commands, when
    only those were in doubt; not the compile checks, when only lookups that find nothing were): each check of a
    task role reads that task role and the top-level sections, so they find there what they find in the whole job,
    in the same order (the task roles keep their places), and nothing elsewhere, which the screen vouched for. A
    finding anywhere else comes from leaving the other task roles out (HiveD settings naming one, say): the answer
    is then None, and the caller runs every check over the whole job, as it does whenever the screen is not sure.
    """
    names, commands_only, lookups_only = unvouched
    job = {**data, "taskRoles": {name: role for name, role in data["taskRoles"].items() if name in names}}
    semantic = _semantic_findings(job, text, commands_only=commands_only)
    compiled = [] if lookups_only else _compile_findings(job, commands_only=commands_only)
    if all(_in_task_roles(f.pointer, names) for f in (*semantic, *compiled)):
        return _joined(semantic, compiled)
    return None


def _in_task_roles(pointer: str, names: frozenset[str]) -> bool:
    """Is the pointer in one of these task roles, or in a deployment's commands for one?"""
    tokens = split_pointer(pointer)
    if len(tokens) >= 2 and tokens[0] == "taskRoles":
        return tokens[1] in names
    return len(tokens) >= 5 and tokens[0] == "deployments" and tokens[2] == "taskRoles" and tokens[3] in names


#: Validates a document that is not a job but another kind paictl knows (a marketplace item): given the plain data,
#: the text and the path, it returns that kind's result, or None for "not mine, validate it as a job". The CLI
#: passes one in; the protocol core itself knows no other kind (imports point one way: protocol <- the rest).
OtherKinds = Callable[[dict[str, Any], str, str], "ValidationResult | None"]


def validate_bytes(raw: bytes, path: str, *, other_kinds: OtherKinds | None = None) -> ValidationResult:
    try:
        text = decode_source(raw, path)
    except DocumentError as exc:
        return ValidationResult(path=path, diagnostics=tuple(exc.diagnostics), data=None)
    return validate_text(text, path, other_kinds=other_kinds)


def validate_text(text: str, path: str, *, other_kinds: OtherKinds | None = None) -> ValidationResult:
    data = load_fast(text)
    schema_valid = data is not None and fast_validator("job").is_valid(data)
    semantic = None
    if schema_valid and data is not None:
        unvouched = unvouched_parts(data, text)
        if unvouched is CLEAN:  # one walk instead of every check: most jobs are clean
            return ValidationResult(path=path, diagnostics=(), data=data)
        if unvouched is not None:  # only these task roles' checks can find anything: run those
            semantic = task_role_findings(data, text, unvouched)
        if semantic is None:
            semantic = job_findings(data, text)
    elif data is not None:
        semantic = _semantic_findings(data, text)
    if schema_valid and not semantic:
        return ValidationResult(path=path, diagnostics=(), data=data)
    # Only a document that is not a clean job is offered to the other kinds: ordinary jobs pay nothing for them.
    if other_kinds is not None and data is not None:
        other = other_kinds(data, text, path)
        if other is not None:
            return other
    if schema_valid and semantic:
        warned = _warnings_located(text, path, data, semantic)
        if warned is not None:
            return warned
    return validate_located(text, path, schema_valid_data=data if schema_valid else None,
                            other_kinds=other_kinds if data is None else None,
                            fast=(data, semantic) if data is not None else None)


def _warnings_located(text: str, path: str, data: dict[str, Any], semantic: list[Finding]) -> ValidationResult | None:
    """A schema-valid job with semantic findings only (the usual warning), located without reading it again.

    The located loader would build the whole document a second time for a few positions; `locate_pointers` walks
    libyaml's events only as far as the last finding. The result is what `validate_located` gives (the same
    findings, located the same way), or None where the walk cannot vouch for that: a job holding secrets (their
    redaction needs the located loader's secret spans), or a text the walk does not read.
    """
    from .redaction import secret_values
    from .yamlpositions import locate_pointers

    if secret_values(data):
        return None
    kept = _at_most(semantic, MAX_DIAGNOSTICS, path)
    positions = locate_pointers(text, data, (f.pointer for f in kept))
    if positions is None:
        return None
    document = Document(path=path, text=text, data=data, positions=positions)
    return ValidationResult(path=path, diagnostics=tuple(_in_text_order(locate(f, document) for f in kept)),
                            data=data)


def validate_located(text: str, path: str, *, schema_valid_data: dict[str, Any] | None = None,
                     other_kinds: OtherKinds | None = None,
                     fast: tuple[dict[str, Any], list[Finding]] | None = None) -> ValidationResult:
    """The authoritative path: every diagnostic, each with its line and column.

    `schema_valid_data` is what the fast path already found schema-valid; when the located loader reads exactly the
    same data, the schema phase has nothing to report and jsonschema is not even imported (a file with only
    warnings then costs a re-parse, not ~100 ms of imports). `fast` is the fast path's data and semantic findings:
    reused when the located loader reads the same data (the semantic phase costs 0.4 s for 10,000 task roles).
    """
    try:
        document = load_located(text, path)
    except DocumentError as exc:
        return ValidationResult(path=path, diagnostics=tuple(exc.diagnostics), data=None)
    if other_kinds is not None:  # the fast loader gave up on this text (tags, merge keys...): ask once loaded here
        other = other_kinds(document.data, text, path)
        if other is not None:
            return other
    diagnostics = check_document(document, schema_valid_data=schema_valid_data, fast=fast)
    return ValidationResult(path=path, diagnostics=tuple(diagnostics), data=document.data)


def check_document(document: Document, *, schema_valid_data: dict[str, Any] | None = None,
                   fast: tuple[dict[str, Any], list[Finding]] | None = None) -> list[Diagnostic]:
    """Schema and semantic phases of an already loaded job, every finding located through `document.positions`.

    Also used for a job embedded in another document (a marketplace item's inline protocol): that caller builds a
    Document whose data is the job and whose positions are the job's entries in the outer file.
    """
    if schema_valid_data is not None and document.data == schema_valid_data:
        findings: list[Finding] = []
    else:
        from .schema_check import check_schema

        findings = check_schema(_as_ajv_sees_it(document), limit=MAX_DIAGNOSTICS)
    # Semantic checks run on every document, valid or not (upstream stops at the schema; a user fixing a file wants
    # every problem at once). They skip values of the wrong shape, and whatever they still find at or below a spot
    # the schema already rejects is dropped: the schema's error there is the one to fix first.
    rejected = _rejected_spots(findings)
    if fast is not None and document.data == fast[0]:
        semantic = fast[1]  # the fast path's semantic findings, and its compile findings when the schema passed
        if schema_valid_data is None and not any(f.severity is Severity.ERROR for f in findings):
            # jsonschema-rs refused what ajv's reading accepts (an infinite integer): the compile checks are due
            semantic = _with_compile_findings(semantic, document.data)
    else:
        semantic = _semantic_findings(document.data, document.text)
        if not any(f.severity is Severity.ERROR for f in findings):
            semantic = _with_compile_findings(semantic, document.data)
    semantic = [*semantic, *(_stringified_key(pointer) for pointer in document.stringified_keys)]
    findings += [f for f in semantic if not _at_or_below(f.pointer, rejected)]
    return _in_text_order(locate(f, document) for f in _at_most(findings, MAX_DIAGNOSTICS, document.path))


#: A file reports at most this many problems (a 2 MiB file can hold 100,000 unknown keys; nobody reads past the
#: first screens, and the report must stay within the memory bound).
MAX_DIAGNOSTICS = 1000


def _as_ajv_sees_it(document: Document) -> Any:
    """The data with each unquoted date as the empty object ajv takes a JavaScript Date for (protocol/timestamps.py).

    The text is searched first (a few ms on 2 MiB) so that files without a date-like scalar skip the walk."""
    from .loading import DATE_LIKE

    binary = "binary" in document.text  # a !!binary tag (or its long form): a Buffer, an object for ajv
    if DATE_LIKE.search(document.text) is None and not binary:
        return document.data
    from .timestamps import contains_timestamp, dates_as_objects

    if not binary:
        return dates_as_objects(document.data) if contains_timestamp(document.data) else document.data
    return _buffers_as_objects(dates_as_objects(document.data))


def _buffers_as_objects(value: Any) -> Any:
    from .yamltags import JSBuffer

    if isinstance(value, JSBuffer):
        # A Buffer's own keys are its byte indexes: ajv's additionalProperties and patternProperties see "0", "1",
        # ... One stand-in key gives the same verdicts for this schema (no maxProperties, no rule naming "1"); an
        # empty `!!binary ''` gets it too, as upstream's verdicts for it were the same.
        return {"0": 0}
    if type(value) is dict:  # a DateView (dates_as_objects) is kept as it is
        return {k: _buffers_as_objects(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_buffers_as_objects(v) for v in value]
    return value


def _stringified_key(pointer: str) -> Finding:
    from .codes import finding
    from .diagnostics import Anchor, split_pointer

    key = split_pointer(pointer)[-1]
    return finding("W102", pointer, f"this key is written as a list or a mapping; OpenPAI's YAML reader (js-yaml) makes "
                   f"it the text {key!r}, and so does paictl: a name was probably meant",
                   "write the key as a string (quote it if it holds `[`, `{` or `,`)", Anchor.KEY)


def _at_most(findings: list[Finding], limit: int, path: str) -> list[Finding]:
    """The first `limit` findings, errors before warnings (so validity never changes), then a note of the rest."""
    if len(findings) <= limit:
        return findings
    from .codes import finding

    errors = [f for f in findings if f.severity is Severity.ERROR]
    kept = (errors + [f for f in findings if f.severity is not Severity.ERROR])[:limit]
    # Not counted: past the limit the schema phase stops making errors (protocol/schema_check.py).
    note = finding("W101", "", f"more problems are not shown; only the first {limit} of a file are reported",
                   "fix these and validate again")
    return [*kept, note]


def load_checked(text: str, path: str, schema_name: str,
                 rules: Callable[[dict[str, Any]], list[Finding]] | None = None) -> Document:
    """Any input besides a job (a cluster profile, an exit-rules file): one YAML mapping, its schema, then its own
    consistency `rules` (run only once the schema passes); every problem located, else InvalidJobError."""
    from paictl.errors import InvalidJobError

    from .schema_check import check_schema

    try:
        document = load_located(text, path, kind=schema_name)
    except DocumentError as exc:
        raise InvalidJobError(exc.diagnostics) from None
    findings = check_schema(document.data, schema_name)
    if not findings and rules is not None:
        findings = rules(document.data)
    diagnostics = _in_text_order(locate(f, document) for f in findings)
    if any(d.is_error for d in diagnostics):
        raise InvalidJobError(diagnostics)
    return document


def _in_text_order(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    return sorted(diagnostics, key=lambda d: (d.line or 0, d.column or 0, d.code))


def _rejected_spots(schema_findings: list[Finding]) -> list[list[str]]:
    """The pointers (as token lists) of the schema's errors, except E201.

    E201 (a required key is missing) sits at the mapping that lacks the key, since the key has no node to point at;
    it says nothing about what the mapping does hold, so it must not hide the rest of the job's findings.
    """
    return [split_pointer(f.pointer) for f in schema_findings
            if f.severity is Severity.ERROR and f.code != "E201"]


def _at_or_below(pointer: str, spots: list[list[str]]) -> bool:
    tokens = split_pointer(pointer)
    return any(tokens[:len(spot)] == spot for spot in spots)


def locate(finding: Finding, document: Document) -> Diagnostic:
    """Give a pointer-located finding its line, column and source line (the nearest existing node if need be)."""
    positions = document.positions or {}
    tokens = split_pointer(finding.pointer)
    anchor = finding.anchor
    while tokens and _join(tokens) not in positions:
        tokens.pop()
        anchor = Anchor.KEY  # the node itself is missing: point at the entry of its nearest ancestor
    key_line, key_column, value_line, value_column = positions.get(_join(tokens), (1, 1, 1, 1))
    line, column = (key_line, key_column) if anchor is Anchor.KEY else (value_line, value_column)
    lines = document.lines
    end_column = None
    if finding.excerpt and tokens == split_pointer(finding.pointer):
        line, column, end_column = _find_excerpt(lines, line, column, finding.excerpt)
    source_line = lines[line - 1] if 0 < line <= len(lines) else None
    message, hint = finding.message, finding.hint
    # The redaction rule (protocol/redaction.py): no secret in a message, a hint or a source line.
    from .redaction import is_secret_pointer, redact_line, redact_text, secret_values

    values = secret_values(document.data)
    if values:
        aggressive = is_secret_pointer(finding.pointer)
        message = redact_text(message, values, aggressive=aggressive)
        hint = redact_text(hint, values, aggressive=aggressive)
        source_line = redact_text(redact_line(document, line, source_line), values, aggressive=False)
    return Diagnostic(code=finding.code, severity=finding.severity, message=message, file=document.path,
                      line=line, column=column, end_column=end_column, pointer=finding.pointer, hint=hint,
                      source_line=source_line)


#: How far below a value's start an excerpt is looked for (a block scalar's lines follow its `|` line).
_EXCERPT_REACH = 200


def _find_excerpt(lines: list[str], line: int, column: int, excerpt: str) -> tuple[int, int, int | None]:
    """Narrow a value's position to where `excerpt` (e.g. one placeholder in a long command) starts in the text.

    A value written with escapes or folded over lines may not contain the excerpt verbatim; it then keeps pointing at
    the value's start, which is still right, only less precise.
    """
    needle = excerpt.splitlines()[0] if excerpt.strip() else excerpt
    for number in range(line, min(len(lines), line + _EXCERPT_REACH) + 1):
        start = lines[number - 1].find(needle, column - 1 if number == line else 0)
        if start >= 0:
            end = start + len(needle) if needle == excerpt else len(lines[number - 1])
            return number, start + 1, end
    return line, column, None


def _join(tokens: list[str]) -> str:
    return pointer_of(*tokens)
