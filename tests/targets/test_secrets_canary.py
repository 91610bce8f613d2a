"""Secrets never leak: a canary planted in `secrets` and in every docker `auth` of every valid corpus job appears in
the compiled output only inside Secret objects (base64-decoded too), and in no diagnostic."""

from __future__ import annotations

import json

import pytest

from canary import CANARIES, assert_only_in_secrets, dump, plant, profiles
from conftest import corpus_files, needs_corpus
from paictl.protocol import job_from_data
from paictl.protocol.loading import load_located
from paictl.protocol.validate import validate_text
from paictl.targets import get_target


@needs_corpus
@pytest.mark.parametrize("path", corpus_files("valid"), ids=lambda p: p.stem)
def test_canary_only_inside_secret_objects(path):
    from paictl.errors import InvalidJobError

    original = load_located(path.read_text(encoding="utf-8"), path.name).data
    text = dump(plant(original))
    result = validate_text(text, path.name)
    assert not [d for d in result.diagnostics if any(c in json.dumps(d.to_dict()) for c in CANARIES)]
    assert result.ok, [d.message for d in result.errors]
    job = job_from_data(result.data)
    document = load_located(text, path.name)
    for name, profile in profiles().items():
        try:
            objects = get_target("framework").compile(job, profile, document=document)
        except InvalidJobError as error:  # a HiveD misfit under the test SKU table: its messages must not leak either
            assert not any(c in str(d.to_dict()) for d in error.diagnostics for c in CANARIES)
            continue
        assert_only_in_secrets(objects, f"{path.name} [{name}]")
