"""The secrets canary (tests/canary.py) for JobSet output: planted in every valid corpus job's secrets and registry
credentials, it must appear only inside Secret objects, never in the JobSet, a warning or an error."""

from __future__ import annotations

import json

import pytest

from canary import CANARIES, assert_only_in_secrets, dump, plant
from conftest import corpus_files, needs_corpus
from paictl.compiler.profiles import load_profile
from paictl.errors import InvalidJobError
from paictl.protocol import job_from_data
from paictl.protocol.loading import load_located
from paictl.protocol.validate import validate_text
from paictl.targets import get_target
from paictl.targets.output_check import check_objects
from test_jobset_corpus import compile_text


@needs_corpus
@pytest.mark.parametrize("path", corpus_files("valid"), ids=lambda p: p.stem)
def test_canary_only_inside_secret_objects(path):
    original = load_located(path.read_text(encoding="utf-8"), path.name).data
    text = dump(plant(original))
    try:
        objects = compile_text(text, path.name, "openpai")
    except InvalidJobError as error:  # a refusal must not leak either
        assert not any(c in json.dumps(d.to_dict()) for d in error.diagnostics for c in CANARIES)
        return
    check_objects(objects)
    assert_only_in_secrets(objects, f"{path.name} [jobset]")
    job = job_from_data(validate_text(text, path.name).data)
    notes = get_target("jobset").compile_warnings(job, load_profile("openpai"), load_located(text, path.name))
    assert not any(c in json.dumps(d.to_dict()) for d in notes for c in CANARIES)
