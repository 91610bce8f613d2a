"""Golden (syrupy) tests of what `paictl validate` prints, text and JSON.

Cases are files: tests/cases/{loading,schema,semantic}/<CODES>-<what>.yaml, each expected to produce at least the
codes its name starts with. The upstream corpus's rejected files are goldened too; for those the snapshot leaves out
the echoed source lines, so no upstream text is stored in this project.
"""

from __future__ import annotations

import json
import re

import pytest

from conftest import CASES, OPENPAI, corpus_files, needs_corpus

CASE_FILES = sorted(p for p in CASES.rglob("*.yaml"))


def run_validate(run_cli, path, *extra):
    return run_cli("validate", *extra, str(path))


@pytest.mark.parametrize("case", CASE_FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_case_text_and_json(case, run_cli, snapshot, monkeypatch):
    monkeypatch.chdir(CASES)
    relative = case.relative_to(CASES)
    code, text, _ = run_validate(run_cli, relative)
    _, as_json, _ = run_validate(run_cli, relative, "--format", "json")
    expected = re.findall(r"[EW]\d{3}", case.stem.split("-")[0] + "-" + "-".join(
        t for t in case.stem.split("-") if re.fullmatch(r"[EW]\d{3}", t)))
    emitted = {d["code"] for r in json.loads(as_json)["results"] for d in r["diagnostics"]}
    assert set(expected) <= emitted, f"{case.name} should emit {expected}, emitted {sorted(emitted)}"
    assert code == (1 if any(c.startswith("E") for c in emitted) else 0)
    assert text == snapshot(name="text")
    assert json.loads(as_json) == snapshot(name="json")


def _strip_source(report: dict) -> dict:
    for result in report["results"]:
        for d in result["diagnostics"]:
            d.pop("source_line")
    return report


@needs_corpus
@pytest.mark.parametrize("case", corpus_files("invalid") + corpus_files("nonconforming"),
                         ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_upstream_rejected_file(case, run_cli, snapshot, monkeypatch):
    monkeypatch.chdir(OPENPAI)
    relative = case.relative_to(OPENPAI)
    code, _, _ = run_validate(run_cli, relative)
    _, as_json, _ = run_validate(run_cli, relative, "--format", "json")
    report = _strip_source(json.loads(as_json))
    assert code == 1
    errors = [d for d in report["results"][0]["diagnostics"] if d["severity"] == "error"]
    assert errors and all(d["line"] and d["column"] for d in errors)
    text = "\n".join(f"{d['file']}:{d['line']}:{d['column']}: {d['severity']}[{d['code']}]: {d['message']}"
                     + (f"\n   = hint: {d['hint']}" if d["hint"] else "")
                     for d in report["results"][0]["diagnostics"])
    assert text == snapshot(name="text")
    assert report == snapshot(name="json")
