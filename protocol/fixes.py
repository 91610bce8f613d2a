"""The fixes a diagnostic's hint states, as text edits on the original file.

A hint that says exactly what to write is a mechanical fix: "did you mean 'commands'?" renames the misspelt key,
name or placeholder; "quote it ('2020-01-01')" quotes an unquoted date; a missing required key (E201) gets the key
with the value the hint names (`gpu: 0`) or a skeleton built from the schema. Each fix is a list of edits of exact
character ranges, so everything else in the file (comments, quoting, indentation, key order) stays as written. The
same fixes are `paictl lsp`'s code actions and what `paictl fix` applies.

An edit is made only where the text says exactly what the diagnostic says (the scalar at the reported position is
the misspelt word, plain or simply quoted); anything else (escapes, a key folded over lines) gets no fix rather than
a wrong one. Fixes work on text and positions, never on a re-serialised document.
"""

from __future__ import annotations

import difflib
import re
from typing import Any, Callable, Iterable, NamedTuple, Sequence

from .diagnostics import Diagnostic, split_pointer
from .textedits import Fix, TextEdit, value_at  # noqa: F401 - Fix and TextEdit are imported from here by the LSP

#: `did you mean 'x'?` as every check words it (f"'{guess}'" or `{guess!r}`, which may use double quotes).
_DID_YOU_MEAN = re.compile(r"""did you mean (?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")\?""")
_WORDS = re.compile(r"\$?[A-Za-z_][\w-]*")


#: A job's or a marketplace item's own root keys, or the schema header: other YAML (Kubernetes manifests, CI
#: configs) is never fixed, since a did-you-mean against the job schema would rename its keys.
_LOOKS_FIXABLE = re.compile(r"^(?:(?:protocolVersion|taskRoles|prerequisites|deployments|protocol)\s*:|type:\s*job\s*$)",
                            re.M)
_SCHEMA_HEADER = re.compile(r"#\s*yaml-language-server:\s*\$schema=\S{0,2000}?(?:job|marketplace-item)\.schema\.json")


def looks_like_job_or_item(text: str) -> bool:
    return _LOOKS_FIXABLE.search(text) is not None or _SCHEMA_HEADER.search(text) is not None


# ------------------------------------------------------------------------------------------------------------
# What a hint says


def suggested_name(diagnostic: Diagnostic) -> str | None:
    """The name a "did you mean" in the hint (or the message) proposes."""
    for text in (diagnostic.hint, diagnostic.message):
        match = _DID_YOU_MEAN.search(text or "")
        if match:
            quoted = match.group(1) if match.group(1) is not None else match.group(2)
            return quoted.replace("\\'", "'").replace('\\"', '"').replace("\\\\", "\\")
    return None


def fixes_for(diagnostics: Iterable[Diagnostic], text: str, data: Any = None) -> list[Fix]:
    """Every mechanical fix for `diagnostics` of the document `text` (whose parsed value is `data`, if known)."""
    lines = _split_lines(text)
    located = None
    fixes: list[Fix] = []
    for diagnostic in diagnostics:
        if diagnostic.line is None or diagnostic.column is None or not 0 < diagnostic.line <= len(lines):
            continue
        fix: Fix | None = None
        guess = suggested_name(diagnostic)
        if guess is not None:
            fix = _rename(diagnostic, lines, guess, data)
        elif (diagnostic.hint or "").startswith("quote it"):
            fix = _quote(diagnostic, lines)
        elif diagnostic.code == "E201":
            from .missing_keys import Located, add_required_key

            if located is None:
                located = Located(text)
            fix = add_required_key(diagnostic, lines, located)
        if fix is not None:
            fixes.append(fix)
    return fixes


# ------------------------------------------------------------------------------------------------------------
# Scalars in the text


class _Scalar(NamedTuple):
    line: int  # 0-based
    start: int  # first character of the content (inside the quotes)
    end: int  # one past its last character
    content: str
    style: str  # "plain", "'" or '"'


def _scalar_at(lines: list[str], line: int, column: int) -> _Scalar | None:
    """The one-line scalar starting at 0-based (line, column), or None for anything a fix should not touch."""
    text = lines[line]
    if column >= len(text):
        return None
    first = text[column]
    if first == "'":
        index = column + 1
        while index < len(text):
            if text[index] == "'":
                if text[index + 1:index + 2] == "'":
                    index += 2
                    continue
                return _Scalar(line, column + 1, index, text[column + 1:index].replace("''", "'"), "'")
            index += 1
        return None
    if first == '"':
        close = text.find('"', column + 1)
        if close < 0 or "\\" in text[column + 1:close]:
            return None  # escapes: the text is not the value, so renaming it in place is not exact
        return _Scalar(line, column + 1, close, text[column + 1:close], '"')
    if first in "|>{}[]&*!%@`#,":
        return None
    in_flow = "{" in text[:column] or "[" in text[:column]
    end = len(text)
    for stop in (re.compile(r":(\s|$)"), re.compile(r"\s#"), *([re.compile(r"[,\]}]")] if in_flow else [])):
        found = stop.search(text, column)
        if found is not None:
            end = min(end, found.start())
    content = text[column:end].rstrip()
    if not content:
        return None
    return _Scalar(line, column, column + len(content), content, "plain")


def _replace(scalar: _Scalar, start: int, end: int, new_text: str) -> TextEdit:
    return TextEdit(scalar.line, start, scalar.line, end, new_text)


# ------------------------------------------------------------------------------------------------------------
# did you mean


def _rename(diagnostic: Diagnostic, lines: list[str], guess: str, data: Any) -> Fix | None:
    line, column = diagnostic.line - 1, diagnostic.column - 1
    tokens = split_pointer(diagnostic.pointer)
    scalar = _scalar_at(lines, line, column)
    title = f"Replace with '{guess}'"
    if diagnostic.end_column is None and scalar is not None and tokens and scalar.content == tokens[-1]:
        # The key itself (an unknown key, a deployment's unknown task role): renaming onto a key the mapping already
        # has would make a duplicate key, so that is left to the user.
        parent = value_at(data, tokens[:-1])
        if isinstance(parent, dict) and guess in parent:
            return None
        if not _fits(guess, scalar.style):
            return None
        return Fix(title, diagnostic, (_replace(scalar, scalar.start, scalar.end, guess),))
    if diagnostic.end_column is None and scalar is not None and _WORDS.fullmatch(scalar.content):
        # A one-word value naming something (a prerequisite, a deployment, an enum value).
        if not _fits(guess, scalar.style) or scalar.content == guess:
            return None
        return Fix(title, diagnostic, (_replace(scalar, scalar.start, scalar.end, guess),))
    # A word inside a longer value: a placeholder's root or key in a command. The span is the excerpt the
    # diagnostic underlines; the word to replace is the one there closest to the guess. Without an excerpt (the
    # text is escaped or folded, or the scalar is not what the pointer names) nothing is exact enough to edit.
    if diagnostic.end_column is None:
        return None
    text = lines[line]
    end = diagnostic.end_column
    scored = sorted(((_similarity(word.group(), guess), word.start(), word.end()) for word in _WORDS.finditer(text, column, end)
                     if word.group() != guess and word.group().lstrip("$") != guess.lstrip("$")), reverse=True)
    if not scored or scored[0][0] < 0.5 or (len(scored) > 1 and scored[1][0] == scored[0][0]):
        return None
    _, start, stop = scored[0]
    return Fix(title, diagnostic, (TextEdit(line, start, line, stop, guess),))


def _similarity(word: str, guess: str) -> float:
    return difflib.SequenceMatcher(None, word.lower().lstrip("$"), guess.lower().lstrip("$")).ratio()


def _fits(name: str, style: str) -> bool:
    """Can `name` be written in place of a scalar of this style without changing how YAML reads it?"""
    if style == "'":
        return "'" not in name and "\n" not in name
    if style == '"':
        return not any(c in name for c in '"\\\n')
    return re.fullmatch(r"[A-Za-z_$][\w$.-]*", name) is not None


# ------------------------------------------------------------------------------------------------------------
# quote it


def _quote(diagnostic: Diagnostic, lines: list[str]) -> Fix | None:
    scalar = _scalar_at(lines, diagnostic.line - 1, diagnostic.column - 1)
    if scalar is None or scalar.style != "plain":
        return None
    quoted = "'" + scalar.content.replace("'", "''") + "'"
    return Fix(f"Quote {scalar.content} as {quoted}", diagnostic,
               (_replace(scalar, scalar.start, scalar.end, quoted),), kind="quote")


# ------------------------------------------------------------------------------------------------------------
# Applying fixes


def _split_lines(text: str) -> list[str]:
    from .loading import source_lines

    return source_lines(text) or [""]


def apply_edits(text: str, edits: Sequence[TextEdit]) -> str:
    """`text` with `edits` made (non-overlapping), in one pass. A line break in an edit's new text is written as
    the file's own (CRLF files stay CRLF)."""
    newline = "\r\n" if "\r\n" in text else "\n"
    starts = [0]
    for match in re.finditer(r"\r\n|\r|\n", text):
        starts.append(match.end())

    def offset(line: int, column: int) -> int:
        return (starts[line] if line < len(starts) else len(text)) + column

    pieces, done = [], 0
    for edit in sorted(edits, key=lambda e: (e.start_line, e.start_column)):
        start, end = offset(edit.start_line, edit.start_column), offset(edit.end_line, edit.end_column)
        pieces += [text[done:start], edit.new_text.replace("\n", newline)]
        done = max(done, end)
    return "".join(pieces) + text[done:]


def _overlaps(a: TextEdit, b: TextEdit) -> bool:
    return not ((a.end_line, a.end_column) < (b.start_line, b.start_column)
                or (b.end_line, b.end_column) < (a.start_line, a.start_column))


class FixOutcome(NamedTuple):
    text: str
    applied: tuple[Fix, ...]
    #: The validator's verdict on `text` when the last round made it (no second validation of the same text), else
    #: None (the text is not a job or an item, or the rounds ran out after a change).
    result: Any = None


#: Validates a text as `paictl validate` does: (text, path) -> a ValidationResult.
Validate = Callable[[str, str], Any]

#: A fix can reveal the next one (a renamed key's value then gets checked); the loop stops well before this.
_MAX_ROUNDS = 8


def fix_text(text: str, path: str, validate: Validate, *, unsafe: bool = False) -> FixOutcome:
    """`text` with every safe fix applied, validated again after each round until nothing more is fixable.
    A text that does not look like a job or an item (`looks_like_job_or_item`) is returned unchanged.

    Renames and quoting go first: a misspelt key is also reported as a missing required one, and it is the rename
    that fixes both. Fixes that touch the same text in one round wait for the next; applying the result again
    changes nothing (the fixes are idempotent because each round starts from the validator's new verdict).
    """
    applied: list[Fix] = []
    if not looks_like_job_or_item(text):
        return FixOutcome(text=text, applied=())
    verdict = None
    for _ in range(_MAX_ROUNDS):
        result = validate(text, path)
        verdict = result
        own = [d for d in result.diagnostics if d.file == path]
        fixes = [f for f in fixes_for(own, text, result.data) if f.safe or unsafe]
        if not fixes:
            break
        first = [f for f in fixes if f.kind != "add-key"] or fixes
        chosen: list[Fix] = []
        for fix in first:
            if all(not _overlaps(e, c) for e in fix.edits for other in chosen for c in other.edits):
                chosen.append(fix)
        new_text = apply_edits(text, [e for f in chosen for e in f.edits])
        if new_text == text:
            break
        text = new_text
        verdict = None  # made for the text before this round's fixes
        applied.extend(chosen)
    return FixOutcome(text=text, applied=tuple(applied), result=verdict)
