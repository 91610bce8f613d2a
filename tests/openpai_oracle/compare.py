"""paictl's verdict, entrypoints and Framework for a job, set beside upstream's recorded answer (upstream.py), with
the justified differences (justified.yaml) taken out."""

from __future__ import annotations

import base64
import fnmatch
import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


@lru_cache(maxsize=None)
def justified() -> dict[str, Any]:
    """The one list of justified differences: every entry has a reason (tests/openpai_oracle/justified.yaml)."""
    return yaml.safe_load((HERE / "justified.yaml").read_text())


@lru_cache(maxsize=None)
def hived_profile(directory: str) -> str:
    """The built-in `openpai` profile with HiveD on (the golden files' hived/ settings), as a profile file."""
    text = (REPO / "compiler" / "profiles" / "openpai.yaml").read_text()
    assert "  enabled: false\n" in text
    path = Path(directory) / "openpai-hived.yaml"
    path.write_text(text.replace("  enabled: false\n", "  enabled: true\n", 1))
    return str(path)


def paictl_side(text: str, profile: str) -> dict[str, Any]:
    """What paictl makes of the job for `--target framework --profile PROFILE`: accepted with its objects and
    entrypoints, refused with its error codes, or crashed (anything but a located refusal)."""
    from paictl.errors import InvalidJobError
    from paictl.compiler.render import render_entrypoint
    from paictl.targets.compiled import compile_job

    try:
        compiled = compile_job(text.encode("utf-8"), target="framework", profile=profile, name="job.yaml")
    except InvalidJobError as exc:
        return {"verdict": "refused", "codes": sorted({d.code for d in exc.diagnostics if d.is_error}),
                "messages": [d.message for d in exc.diagnostics if d.is_error][:3]}
    except Exception as exc:  # noqa: BLE001 - the harness reports every escape as paictl's bug
        return {"verdict": "crashed", "error": f"{type(exc).__name__}: {exc}"}
    entrypoints = {role.name: render_entrypoint(compiled.job, role.name) for role in compiled.job.task_roles}
    return {"verdict": "accepted", "objects": compiled.objects, "entrypoints": entrypoints}


def upstream_view(objects: list[dict[str, Any]]) -> dict[str, Any]:
    """paictl's objects arranged like the body the rest-server sends (golden files' shape)."""
    view: dict[str, Any] = {"configSecretDef": None, "dockerSecretDef": None, "priorityClassDef": None}
    for obj in objects:
        if obj["kind"] == "Framework":
            view["frameworkRequest"] = obj
        elif obj["kind"] == "PriorityClass":
            view["priorityClassDef"] = obj
        elif obj.get("type") == "kubernetes.io/dockerconfigjson":
            view["dockerSecretDef"] = obj
        else:
            view["configSecretDef"] = obj
    return json.loads(json.dumps(view))


def recorded_view(body: dict[str, Any]) -> dict[str, Any]:
    return {key: body.get(key) for key in ("frameworkRequest", "configSecretDef", "dockerSecretDef",
                                           "priorityClassDef")}


def _parsed_secret(secret: dict[str, Any] | None) -> None:
    """secrets.yaml compared as data: upstream's js-yaml and paictl's emitter lay the same YAML out differently."""
    if secret and isinstance(secret.get("data"), dict) and "secrets.yaml" in secret["data"]:
        secret["data"]["secrets.yaml"] = yaml.safe_load(base64.b64decode(secret["data"]["secrets.yaml"]))


def differences(expected: Any, actual: Any, path: str = "") -> list[str]:
    """Every path where `actual` differs from `expected` (`a.b[2].c: expected X, got Y`)."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        found = []
        for key in sorted(expected.keys() | actual.keys(), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in actual:
                found.append(f"{where}: missing (expected {_short(expected[key])})")
            elif key not in expected:
                found.append(f"{where}: unexpected {_short(actual[key])}")
            else:
                found += differences(expected[key], actual[key], where)
        return found
    if isinstance(expected, list) and isinstance(actual, list):
        found = [f"{path}: {len(actual)} items, expected {len(expected)}"] if len(expected) != len(actual) else []
        for index, (e, a) in enumerate(zip(expected, actual)):
            found += differences(e, a, f"{path}[{index}]")
        return found
    if expected != actual or type(expected) is not type(actual):
        return [f"{path}: expected {_short(expected)}, got {_short(actual)}"]
    return []


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 160 else text[:157] + "..."


def _field_justified(difference: str) -> bool:
    where, _, what = difference.partition(": ")
    if any(fnmatch.fnmatchcase(where, pattern) for pattern in justified()["fields"]):
        return True
    return any(fnmatch.fnmatchcase(where, entry["path"])
               and what == f"expected {_short(entry['upstream'])}, got {_short(entry['paictl'])}"
               for entry in justified().get("values", ()))


def compare(text: str, upstream: dict[str, Any], ours: dict[str, Any]) -> list[str]:
    """The unjustified differences between upstream's answer and paictl's for one job ([] when they agree)."""
    if ours["verdict"] == "crashed":
        return [f"paictl crashed: {ours['error']}"]
    if upstream["verdict"] != "accepted":
        if ours["verdict"] == "accepted":
            return [f"upstream {upstream['verdict']} ({upstream.get('code')}: {upstream.get('message')}), "
                    "paictl accepted"]
        return []
    if ours["verdict"] == "refused":
        unjustified = [code for code in ours["codes"] if code not in justified()["refusals"]]
        if unjustified:
            return [f"upstream accepted, paictl refused: {', '.join(unjustified)}: {ours['messages']}"]
        return []
    found = [f"entrypoint of {role}: upstream {_short(upstream['entrypoints'].get(role))}, paictl {_short(entry)}"
             for role, entry in ours["entrypoints"].items() if upstream["entrypoints"].get(role) != entry]
    theirs, mine = recorded_view(upstream["body"]), upstream_view(ours["objects"])
    for view in (theirs, mine):
        _parsed_secret(view["configSecretDef"])
    found += [d for d in differences(theirs, mine) if not _field_justified(d)]
    return found


#: The keys of a difference report that vary per job without meaning (used to group a report by kind).
_NUMBERS = re.compile(r"\[\d+\]")


def kind_of_difference(difference: str) -> str:
    """What a difference is about: the verdicts and paictl's codes, or the field's path with indexes as `[*]`."""
    if difference.startswith(("upstream ", "paictl crashed")):
        return difference.partition(": [")[0].partition(" (")[0][:120]
    return _NUMBERS.sub("[*]", difference.partition(": ")[0])
