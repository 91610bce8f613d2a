"""The job JSON Schema against the upstream corpus (../shared/corpus/openpai): each file's verdict and the places
ajv reported errors, as upstream recorded them, and the two validators we ship agreeing on every file.

Apart from tests/test_schema.py (the schema file itself and hand-written documents, which run everywhere) because
this evidence needs ../shared beside the checkout, and because reading ajv 6's error records (dataPath to JSON
pointer, which errors locate a problem) is machinery only these tests use.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

import pytest

from paictl.protocol.loading import DocumentError, decode_source, load_located
from test_schema import py_validator, rs_validator, schema  # noqa: F401 - the fixtures these tests share

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
OPENPAI = CORPUS / "openpai"

needs_corpus = pytest.mark.skipif(not OPENPAI.is_dir(), reason="../shared/corpus is not beside this checkout")


def _corpus(*folders: str) -> list[Path]:
    files: list[Path] = []
    for folder in folders:
        base = OPENPAI / folder
        if base.is_dir():
            files += sorted(p for p in base.iterdir() if p.suffix in (".yaml", ".yml"))
    return files


def _load(path: Path) -> dict:
    """The document's data; DocumentError when it is not one YAML mapping."""
    return load_located(decode_source(path.read_bytes(), str(path)), str(path)).data


@functools.lru_cache(maxsize=None)
def _json(relative: str) -> dict:
    return json.loads((OPENPAI / relative).read_text(encoding="utf-8"))


def _upstream(path: Path) -> dict:
    """Upstream's recorded result for a corpus file: UPSTREAM_RESULTS.json (keys `name` for valid/, `folder/name`
    otherwise), else invalid/EXPECTED_UPSTREAM_OUTPUT.json (keyed by file name) for upstream's own unit-test cases."""
    results = _json("UPSTREAM_RESULTS.json")
    key = path.name if path.parent.name == "valid" else f"{path.parent.name}/{path.name}"
    if key in results:
        return results[key]
    return _json("invalid/EXPECTED_UPSTREAM_OUTPUT.json")[path.name]


_AJV_STEP = re.compile(r"\.([A-Za-z_$][A-Za-z0-9_$]*)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]")
_AJV_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "f": "\f", "b": "\b"}


def ajv_pointer(data_path: str) -> str:
    """ajv 6 dataPath (`.taskRoles['train'].completion`, `.prerequisites[0]`) to a JSON pointer."""
    tokens, position = [], 0
    while position < len(data_path):
        step = _AJV_STEP.match(data_path, position)
        assert step, f"unparsed ajv dataPath {data_path!r} at {position}"
        name, index, quoted = step.groups()
        if quoted is not None:
            name = re.sub(r"\\(.)", lambda m: _AJV_ESCAPES.get(m.group(1), m.group(1)), quoted)
        tokens.append(index if index is not None else name)
        position = step.end()
    return "".join("/" + t.replace("~", "~0").replace("/", "~1") for t in tokens)


def test_ajv_pointer():
    assert ajv_pointer("") == ""
    assert ajv_pointer(".taskRoles['train'].completion") == "/taskRoles/train/completion"
    assert ajv_pointer(".prerequisites[0].type") == "/prerequisites/0/type"
    assert ajv_pointer(r".a['x/y~\'z']") == "/a/x~1y~0'z"


def upstream_error_pointers(errors: list[dict]) -> set[str]:
    """Where upstream reported errors. Errors from inside a oneOf branch (and ajv-merge-patch's `$merge` wrappers)
    only explain why each branch failed; the `oneOf` error at the item itself is the one that locates the problem.
    For ajv 6 `additionalProperties` (and `required`) errors the dataPath is already the parent object."""
    return {ajv_pointer(e["dataPath"]) for e in errors
            if e["keyword"] != "$merge" and "/oneOf/" not in e["schemaPath"]}


def our_error_pointers(validator, data: Any) -> set[str]:
    pointers: set[str] = set()
    stack = list(validator.iter_errors(data))
    while stack:
        error = stack.pop()
        pointers.add("".join("/" + str(t).replace("~", "~0").replace("/", "~1") for t in error.absolute_path))
        stack.extend(error.context or [])
    return pointers


@needs_corpus
@pytest.mark.parametrize("path", _corpus("valid"), ids=lambda p: p.name)
def test_valid_corpus_file_is_accepted(path, py_validator, rs_validator):
    assert _upstream(path)["ok"] is True
    data = _load(path)
    errors = list(py_validator.iter_errors(data))
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors]
    assert rs_validator.is_valid(data)


@needs_corpus
@pytest.mark.parametrize("path", _corpus("nonconforming", "invalid"), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_rejected_corpus_file_is_rejected_where_upstream_says(path, py_validator, rs_validator):
    upstream = _upstream(path)
    assert upstream["ok"] is False
    try:
        data = _load(path)
    except DocumentError:
        return  # rejected by the loader (multi-document, broken YAML, non-scalar key, ...)
    assert upstream.get("name") != "YAMLException", "upstream could not parse this file; neither should we"
    assert not rs_validator.is_valid(data)
    ours = our_error_pointers(py_validator, data)
    assert ours, "accepted by the schema, rejected upstream"
    theirs = upstream_error_pointers(upstream["message"])
    assert theirs <= ours
    # and nothing is reported outside the places upstream complained about
    for pointer in ours:
        assert any(pointer == t or pointer.startswith(t + "/") for t in theirs), pointer


@needs_corpus
def test_corpus_is_complete():
    """Every upstream verdict has a file, so the parametrized tests above cover the whole corpus."""
    results = _json("UPSTREAM_RESULTS.json")
    names = {p.name if p.parent.name == "valid" else f"{p.parent.name}/{p.name}"
             for p in _corpus("valid", "nonconforming")}
    assert names == set(results)
    expected = _json("invalid/EXPECTED_UPSTREAM_OUTPUT.json")
    assert {p.name for p in _corpus("invalid")} == set(expected)


@needs_corpus
def test_upstream_yaml_errors_are_loader_errors():
    """Files js-yaml could not parse never reach the schema here either."""
    results = _json("UPSTREAM_RESULTS.json")
    broken = [name for name, result in results.items() if result.get("name") == "YAMLException"]
    assert broken
    for name in broken:
        with pytest.raises(DocumentError):
            _load(OPENPAI / name)


@needs_corpus
@pytest.mark.parametrize("path", _corpus("valid", "nonconforming", "invalid"),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_python_and_rust_validators_agree_on_corpus(path, py_validator, rs_validator):
    try:
        data = _load(path)
    except DocumentError:
        return  # never reaches a validator
    assert py_validator.is_valid(data) is rs_validator.is_valid(data)
