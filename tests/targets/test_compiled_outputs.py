"""Compiled output is byte-identical to what paictl printed before the speed work of issue 19 (commit d239918):
every example, for every target, with both built-in profiles, as YAML and as JSON.

`compiled_outputs.json` holds, per case, the exit code and the SHA-256 of standard output recorded from that
commit. The readable goldens (`__snapshots__`) show what the output is; this table proves that the faster emitter,
renderer, profile loading and compile pipeline changed none of it, including the target/example pairs that are
refused (their exit code and empty output are recorded too).

The `local` rows were recorded again for issue 29, whose plan changed on purpose: each task role gained `resources`
(the docker runtime's limits) and `notes` lost the image remark (the runtime is chosen at submit); the goldens in
tests/targets/local/__snapshots__ show the change. They were recorded again in session 13 (2026-12-02), when the plan
gained the FrameworkController variables a container gets (FC_FRAMEWORK_NAME as the Framework's own name in
`spec.env`, FC_FRAMEWORK_NAMESPACE, FC_CONFIGMAP_NAME, each task's FC_POD_NAME): the same goldens show that change.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from conftest import ROOT

RECORDED = json.loads((Path(__file__).parent / "compiled_outputs.json").read_text())
#: The examples that existed at that commit (later ones have their goldens only).
EXAMPLES = sorted({case.split()[0] for case in RECORDED})


def test_every_example_target_profile_and_format_is_recorded():
    assert all((ROOT / "examples" / example).is_file() for example in EXAMPLES)
    assert {"hello-world.yaml", "parameter-server.yaml", "local-ping-pong.yaml"} <= set(EXAMPLES)
    cases = {f"{e} {t} {p} {f}" for e in EXAMPLES for t in ("framework", "mars", "local")
             for p in ("default", "openpai") for f in ("yaml", "json")}
    assert set(RECORDED) == cases


@pytest.mark.parametrize("case", sorted(RECORDED))
def test_output_is_byte_identical(case, run_cli, monkeypatch):
    example, target, profile, output_format = case.split()
    monkeypatch.chdir(ROOT)
    code, out, _ = run_cli("compile", f"examples/{example}", "--target", target, "--profile", profile,
                           "--format", output_format)
    assert [code, hashlib.sha256(out.encode()).hexdigest()] == RECORDED[case]
