"""Golden (syrupy) output of `paictl compile` for the bundled examples under both built-in profiles.

Reviewed by reading the snapshots: a change here is a change in what users apply to their clusters.
"""

from __future__ import annotations

import pytest

from conftest import ROOT

EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))


@pytest.mark.parametrize("profile", ["default", "openpai"])
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_compiled_example(example, profile, run_cli, snapshot, monkeypatch):
    monkeypatch.chdir(ROOT)
    code, out, err = run_cli("compile", str(example.relative_to(ROOT)), "--profile", profile)
    assert code == 0, err
    assert out == snapshot
