"""The secrets canary (tests/test_secrets_canary.py) for MarsJob output: every valid corpus job, made a Mars job.

Corpus jobs have task roles such as `train`, `ps` or `worker`, which the Mars target refuses (E701). Each is turned
into a Mars job by renaming roles in their order: the first becomes `scheduler` (with one instance), the second
`worker`, the third `webservice`; a one-role job uses its role for both the scheduler and the worker; later roles are
dropped. Deployments follow the renaming and `extras.hivedScheduler` (which names roles) is dropped. Everything else,
commands with `$secrets`, registry `auth`, parameters, ports, is the corpus job's. The canary planted in its secrets
and registry credentials must appear only inside Secret objects, and in no diagnostic. Under the `openpai` profile every
job compiles; under `default`, jobs naming storages are refused (E601), and the refusal must not leak either.
"""

from __future__ import annotations

import json

import pytest

from conftest import corpus_files, needs_corpus
from paictl.compiler.profiles import load_profile
from paictl.errors import InvalidJobError
from paictl.protocol import job_from_data
from paictl.protocol.loading import load_located
from paictl.protocol.validate import validate_text
from paictl.targets import get_target
from paictl.targets.output_check import check_objects
from test_mars import crd_errors
from canary import CANARIES, assert_only_in_secrets, dump, plant

MARS_ROLES = ("scheduler", "worker", "webservice")


def as_mars_job(data: dict) -> dict:
    roles = [(name, role) for name, role in data["taskRoles"].items() if isinstance(role, dict)]
    sources = [roles[0], roles[1] if len(roles) > 1 else roles[0], *roles[2:3]]
    data["taskRoles"] = {}
    renamed: dict[str, list[str]] = {}
    for mars_role, (name, role) in zip(MARS_ROLES, sources):
        role = json.loads(json.dumps(role))
        if mars_role == "scheduler":
            role.pop("instances", None)
        data["taskRoles"][mars_role] = role
        renamed.setdefault(name, []).append(mars_role)
    for deployment in data.get("deployments") or []:
        deployment["taskRoles"] = {new: spec for old, spec in (deployment.get("taskRoles") or {}).items()
                                   for new in renamed.get(old, [])}
    if isinstance(data.get("extras"), dict):
        data["extras"].pop("hivedScheduler", None)
    return data


@needs_corpus
@pytest.mark.parametrize("path", corpus_files("valid"), ids=lambda p: p.stem)
def test_canary_only_inside_secret_objects(path):
    original = load_located(path.read_text(encoding="utf-8"), path.name).data
    text = dump(as_mars_job(plant(original)))
    result = validate_text(text, path.name)
    assert not [d for d in result.diagnostics if any(c in json.dumps(d.to_dict()) for c in CANARIES)]
    assert result.ok, [d.message for d in result.errors]
    job = job_from_data(result.data)
    document = load_located(text, path.name)
    for name in ("default", "openpai"):
        try:
            objects = get_target("mars").compile(job, load_profile(name), document=document)
        except InvalidJobError as error:  # storages the plain profile lacks (E601): the messages must not leak
            assert name == "default" and {d.code for d in error.diagnostics} == {"E601"}
            assert not any(c in str(d.to_dict()) for d in error.diagnostics for c in CANARIES)
            continue
        check_objects(objects)
        assert_only_in_secrets(objects, f"{path.name} [{name}]")
        assert crd_errors(objects[-1]) == []
