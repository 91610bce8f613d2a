"""The Framework compiler against upstream: every golden output, field by field, plus its own unit properties.

`golden/{default,hived}/<stem>.json` hold what the unchanged upstream rest-server sends for `valid/<stem>.yaml`
(settings in golden/README.md, which the built-in `openpai` profile reproduces). Whole objects are compared, and a
mismatch reports every differing path; only clock-dependent values and DELIBERATE_DIFFERENCES are left out.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from conftest import OPENPAI, needs_corpus

#: Where paictl's output differs from upstream on purpose. Path patterns use `*` for any key or index.
DELIBERATE_DIFFERENCES: dict[str, str] = {
    "frameworkRequest.metadata.namespace":
        "paictl sets the Framework's namespace from the profile; upstream leaves it implicit (always `default`), "
        "which would make `kubectl apply -f` use whatever namespace the current context has.",
    "configSecretDef.data.secrets.yaml":
        "compared as parsed YAML: upstream serialises the secrets with js-yaml (which folds long strings at 80 "
        "columns), paictl with its own emitter (compiler/emit.py); the secrets the runtime reads are identical.",
    "frameworkRequest.metadata.annotations.totalGpuNumber":
        "not exercised by the corpus: upstream multiplies by `instances` before applying its default, so a job that "
        "omits `instances` gets \"NaN\"; paictl writes the real total (the default of 1 applied).",
    "priorityClassDef.value":
        "upstream adds the submission time (in 16 s units) to the value; a compiled object must not depend on the "
        "clock, so paictl uses 0 for it: the job keeps its priority band, and equal-priority jobs tie instead of "
        "going first-come first-served.",
}

#: Paths the golden files hold as "<time-dependent>" (README), never compared.
CLOCK_DEPENDENT = ("priorityClassDef.value", "submissionTime")

GOLDEN = OPENPAI / "golden"


def golden_cases(folder: str) -> list[Path]:
    base = GOLDEN / folder
    return sorted(base.glob("*.json")) if base.is_dir() else []


def job_file(golden: Path) -> Path:
    for suffix in (".yaml", ".yml"):
        candidate = OPENPAI / "valid" / (golden.stem + suffix)
        if candidate.exists():
            return candidate
    raise FileNotFoundError(golden.stem)


def differences(expected: Any, actual: Any, path: str = "") -> list[str]:
    """Every path where `actual` differs from `expected`: `a.b[2].c: expected X, got Y` (or missing/unexpected)."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        found = []
        for key in expected.keys() | actual.keys():
            where = f"{path}.{key}" if path else str(key)
            if key not in actual:
                found.append(f"{where}: missing (expected {_short(expected[key])})")
            elif key not in expected:
                found.append(f"{where}: unexpected {_short(actual[key])}")
            else:
                found += differences(expected[key], actual[key], where)
        return sorted(found)
    if isinstance(expected, list) and isinstance(actual, list):
        found = [f"{path}: {len(actual)} items, expected {len(expected)}"] if len(expected) != len(actual) else []
        for index, (e, a) in enumerate(zip(expected, actual)):
            found += differences(e, a, f"{path}[{index}]")
        return found
    if expected != actual or type(expected) is not type(actual):
        return [f"{path}: expected {_short(expected)}, got {_short(actual)}"]
    return []


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 120 else text[:117] + "..."


def _openpai_profile(hived: bool):
    from paictl.compiler.profiles import load_profile

    profile = load_profile("openpai")
    return dataclasses.replace(profile, hived=dataclasses.replace(profile.hived, enabled=True)) if hived else profile


def upstream_view(objects: list[dict[str, Any]]) -> dict[str, Any]:
    """paictl's objects arranged like the golden request body, deliberate differences taken out."""
    by_kind: dict[str, Any] = {"configSecretDef": None, "dockerSecretDef": None, "priorityClassDef": None}
    for obj in objects:
        if obj["kind"] == "Framework":
            framework = json.loads(json.dumps(obj))
            framework["metadata"].pop("namespace")
            by_kind["frameworkRequest"] = framework
        elif obj["kind"] == "PriorityClass":
            by_kind["priorityClassDef"] = {k: v for k, v in obj.items() if k != "value"}
        elif obj["type"] == "Opaque":
            by_kind["configSecretDef"] = _parsed_secret(obj)
        else:
            by_kind["dockerSecretDef"] = obj
    return by_kind


def golden_view(golden: dict[str, Any]) -> dict[str, Any]:
    data = golden["data"]
    priority = data["priorityClassDef"]
    return {
        "frameworkRequest": data["frameworkRequest"],
        "configSecretDef": _parsed_secret(data["configSecretDef"]),
        "dockerSecretDef": data["dockerSecretDef"],
        "priorityClassDef": priority and {k: v for k, v in priority.items() if k != "value"},
    }


def _parsed_secret(secret: dict[str, Any] | None) -> dict[str, Any] | None:
    if secret is None:
        return None
    from ruamel.yaml import YAML

    secret = json.loads(json.dumps(secret))
    secret["data"]["secrets.yaml"] = YAML(typ="safe", pure=True).load(
        base64.b64decode(secret["data"]["secrets.yaml"]).decode("utf-8"))
    return secret


def compile_golden(golden: Path, hived: bool) -> list[str]:
    from paictl.targets.framework.target import compile_framework_file

    objects = compile_framework_file(job_file(golden), _openpai_profile(hived))
    return differences(golden_view(json.loads(golden.read_text())), upstream_view(objects))


@needs_corpus
@pytest.mark.parametrize("golden", golden_cases("default"), ids=lambda p: p.stem)
def test_default_golden(golden):
    assert compile_golden(golden, hived=False) == []


@needs_corpus
@pytest.mark.parametrize("golden", golden_cases("hived"), ids=lambda p: p.stem)
def test_hived_golden(golden):
    assert compile_golden(golden, hived=True) == []


def test_differences_reports_paths():
    assert differences({"a": {"b": [1, 2]}, "c": 1}, {"a": {"b": [1, 3]}, "d": 1}) == [
        "a.b[1]: expected 2, got 3", "c: missing (expected 1)", "d: unexpected 1"]
    assert differences({"x": 1}, {"x": 1.0}) == ["x: expected 1, got 1.0"]
