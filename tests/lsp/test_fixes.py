"""protocol/fixes.py on its own: each kind of fix, the cases where no fix is the right answer, and the general
property that a misspelt key anywhere in a real job is put back exactly, with nothing else in the file touched."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from paictl.protocol.fixes import apply_edits, fix_text, fixes_for
from paictl.protocol.validate import validate_text

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "cases"

BASE = textwrap.dedent("""\
    protocolVersion: 2
    name: unit
    type: job
    prerequisites:
      - {name: img, type: dockerimage, uri: ubuntu}
    taskRoles:
      main:
        dockerImage: img
        resourcePerInstance: {cpu: 1, memoryMB: 512, gpu: 0}
        commands: [echo hi]
    """)


def validate(text: str, path: str = "job.yaml"):
    return validate_text(text, path)


def fixed(text: str, **options) -> str:
    return fix_text(text, "job.yaml", validate, **options).text


def test_rename_onto_an_existing_key_is_not_offered():
    text = BASE.replace("    commands: [echo hi]\n", "    commands: [echo hi]\n    comands: [echo ho]\n")
    result = validate(text)
    assert [d.code for d in result.diagnostics] == ["E202"]
    assert fixes_for(result.diagnostics, text, result.data) == []  # it would make a duplicate key


def test_quoted_keys_are_renamed_inside_their_quotes():
    assert fixed(BASE.replace("    commands:", "    'comands':")) == BASE.replace("    commands:", "    'commands':")
    assert fixed(BASE.replace("    commands:", '    "comands":')) == BASE.replace("    commands:", '    "commands":')


def test_an_escaped_key_is_not_touched():
    text = BASE.replace("    commands:", '    "com\\x61nds2":')
    assert fixed(text) == text


def test_the_misspelt_placeholder_among_several_on_a_line():
    text = BASE.replace("commands: [echo hi]", "commands: ['echo <% $parameters.a %> <% $parameters.bettaa %>']") \
        + "parameters: {a: 1, beta: 2}\n"
    assert "<% $parameters.a %> <% $parameters.beta %>" in fixed(text)


def test_an_unquoted_date_is_quoted():
    text = BASE.replace("name: unit", "name: 2024-05-01")
    result = validate(text)
    assert "E203" in [d.code for d in result.diagnostics]
    assert fixed(text) == BASE.replace("name: unit", "name: '2024-05-01'")


def test_a_missing_key_in_a_flow_mapping_and_at_the_root():
    text = BASE.replace(", gpu: 0}", "}").replace("type: job\n", "")
    assert fixed(text) == BASE.replace("type: job\n", "") + "type: job\n"


def test_skeletons_are_applied_only_when_asked():
    text = BASE.replace("    commands: [echo hi]\n", "")
    assert fixed(text) == text
    assert fixed(text, unsafe=True) == text + "    commands: [TODO]\n"


def test_edits_keep_crlf():
    text = BASE.replace("comm", "com").replace("\n", "\r\n")
    assert fixed(text) == BASE.replace("\n", "\r\n")


def test_apply_edits_is_exact_with_wide_characters():
    from paictl.protocol.fixes import TextEdit

    assert apply_edits("a: 😀x\n", [TextEdit(0, 4, 0, 5, "y")]) == "a: 😀y\n"


def _jobs() -> list[Path]:
    found = sorted((ROOT / "examples").glob("*.yaml")) + sorted(CASES.rglob("*.yaml"))
    return [p for p in found if _clean(p)]


def _clean(path: Path) -> bool:
    try:
        return not validate(path.read_text(encoding="utf-8"), str(path)).diagnostics
    except UnicodeDecodeError:
        return False


def _misspellings(text: str):
    """Every block mapping key of the text with its last letter doubled (a typo did_you_mean knows)."""
    from paictl.protocol.loading import load_located

    document = load_located(text, "job.yaml")
    lines = text.split("\n")
    for pointer, (line, column, _, _) in sorted((document.positions or {}).items()):
        key = pointer.rsplit("/", 1)[-1]
        row = lines[line - 1]
        if not key or not row[column - 1:].startswith(key + ":") or len(key) < 4:
            continue
        broken = row[:column - 1] + key + key[-1] + row[column - 1 + len(key):]
        yield pointer, "\n".join([*lines[:line - 1], broken, *lines[line:]])


@pytest.mark.parametrize("path", _jobs(), ids=lambda p: p.name)
def test_every_misspelt_key_of_a_valid_job_is_put_back_exactly(path):
    original = path.read_text()
    tried = 0
    for pointer, text in _misspellings(original):
        result = validate(text)
        if not any(d.code in ("E202", "W201", "W204", "W205") and "did you mean" in f"{d.message} {d.hint}"
                   for d in result.diagnostics):
            continue  # a free-form mapping (parameters, extras): any key is fine there
        tried += 1
        assert fixed(text) == original, pointer
    assert tried or "taskRoles" not in original


def _corpus_jobs() -> list[Path]:
    from conftest import OPENPAI

    if not OPENPAI.is_dir():
        return []
    return sorted(p for folder in ("valid", "invalid", "nonconforming") for p in (OPENPAI / folder).glob("*.y*ml"))


@pytest.mark.skipif(not _corpus_jobs(), reason="../shared/corpus is not beside this checkout")
def test_upstream_jobs_fixed_idempotently_never_worse_and_valid_when_every_error_names_its_fix():
    """OpenPAI's own jobs (marketplace templates with the old `minSucceededTaskCount`, `default:`...): a job whose
    every error says "did you mean" is valid once fixed; no job gets more errors; fixing again changes nothing."""
    from paictl.lsp.analysis import validate_document

    made_valid = 0
    for path in _corpus_jobs():
        text = path.read_text(encoding="utf-8")
        before = validate_document(text, str(path))
        outcome = fix_text(text, str(path), validate_document)
        after = validate_document(outcome.text, str(path))
        assert len(after.errors) <= len(before.errors), path.name
        assert fix_text(outcome.text, str(path), validate_document).text == outcome.text, path.name
        if before.errors and all("did you mean" in f"{d.message} {d.hint}" for d in before.errors):
            assert after.ok, (path.name, [d.message for d in after.errors])
            made_valid += 1
    assert made_valid >= 1
