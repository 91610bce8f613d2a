"""Secrets under hostile layouts: a canary planted in `secrets` and registry `auth`, in every YAML layout a job can be
written in, reaches only Secret objects (framework, jobset, mars) or no object at all (local, which keeps `$secrets` tags; grass;
openpai, whose printed document masks them),
and never a diagnostic, whether the job is valid, wrongly typed or broken."""

from __future__ import annotations

import json

import pytest

from canary import CANARIES, PASSWORD, SECRET, USERNAME, assert_only_in_secrets, dump
from paictl.protocol.validate import validate_text
from paictl.targets.compiled import compile_job

NUMBER_SECRET = 987654321987


def job_data(mars: bool = False, reference: bool = True) -> dict:
    role = {"dockerImage": "img", "resourcePerInstance": {"cpu": 1, "memoryMB": 512, "gpu": 0},
            "commands": ["echo <% $secrets.canary %>" if reference else "echo no secret used here"]}
    roles = {"scheduler": dict(role), "worker": {**role, "instances": 2}} if mars else {"worker": role}
    return {"protocolVersion": 2, "name": "canary-layouts", "type": "job",
            "prerequisites": [{"type": "dockerimage", "name": "img", "uri": "registry.example.org/img:1",
                               "auth": {"username": USERNAME, "password": PASSWORD,
                                        "registryuri": "registry.example.org"}}],
            "secrets": {"canary": SECRET}, "taskRoles": roles}


def without_secrets(data: dict) -> dict:
    return {k: v for k, v in data.items() if k != "secrets"}


LAYOUTS = {
    "block": lambda d: dump(d),
    "one-line-json": lambda d: json.dumps(d),
    "flow-root-multiline": lambda d: json.dumps(d, indent=2),
    "document-start-flow": lambda d: "--- " + json.dumps(d) + "\n",
    "complex-key": lambda d: dump(without_secrets(d)) + f"? secrets\n:\n  canary: {SECRET}\n",
    "complex-key-first": lambda d: f"? secrets\n: {{canary: {SECRET}}}\n" + dump(without_secrets(d)),
    "merge-key": lambda d: f"<<: {{secrets: {{canary: {SECRET}}}}}\n" + dump(without_secrets(d)),
    "merge-alias": lambda d: f"<<: &base\n  secrets:\n    canary: {SECRET}\n" + dump(without_secrets(d)),
    "quoted-continuing-at-column-0": lambda d: dump(without_secrets(d)) + f'secrets:\n  canary: "x\n{SECRET}"\n',
    "secrets-first-quoted-key": lambda d: f'"secrets":\n  canary: {SECRET}\n' + dump(without_secrets(d)),
    "anchored-secret": lambda d: dump(without_secrets(d)) + f"secrets: &s\n  canary: {SECRET}\n",
    "escaped-key": lambda d: dump(without_secrets(d)) + f'"\\u0073ecrets":\n  canary: {SECRET}\n',
}

TARGETS = [("framework", "default"), ("framework", "openpai"), ("mars", "default"), ("local", "default"),
           ("jobset", "default"), ("grass", "default"), ("openpai", "default")]
#: Targets whose output has no Secret object: the canary must reach none of their objects. Grass refuses a job whose
#: commands use $secrets (E821), so its jobs here define secrets without using them; the openpai target's printed
#: document masks them (only `submit` sends them to the REST server).
NO_SECRET_OBJECTS = {"local", "grass", "openpai"}


def _no_canary_in(diagnostics, where: str) -> None:
    for d in diagnostics:
        text = json.dumps(d.to_dict())
        assert not any(c in text for c in (*CANARIES, str(NUMBER_SECRET))), f"{where}: {text}"


@pytest.mark.parametrize("target, profile", TARGETS, ids=lambda v: v)
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_canary_in_every_layout_reaches_only_secret_objects(layout, target, profile):
    text = LAYOUTS[layout](job_data(mars=target == "mars", reference=target != "grass"))
    result = validate_text(text, f"{layout}.yaml")
    assert result.ok, [d.message for d in result.errors]
    assert "canary" in result.data["secrets"]
    _no_canary_in(result.diagnostics, layout)
    warnings = []
    compiled = compile_job(text.encode(), target=target, profile=profile, name=f"{layout}.yaml",
                           on_warnings=warnings.extend)
    _no_canary_in(warnings, layout)
    if target in NO_SECRET_OBJECTS:  # local keeps `<% $secrets.x %>` tags; values reach tasks through a pipe only
        assert not any(c in json.dumps(compiled.objects) for c in CANARIES), f"{layout} [{target}]"
    else:
        assert_only_in_secrets(compiled.objects, f"{layout} [{target}/{profile}]")


def test_the_config_annotation_keeps_the_users_text_when_the_mask_provably_works():
    data = job_data()
    del data["prerequisites"][0]["auth"]
    text = dump(without_secrets(data)) + f"secrets:\n  canary: {SECRET}\n"
    compiled = compile_job(text.encode(), target="framework", name="j.yaml")
    framework = next(o for o in compiled.objects if o["kind"] == "Framework")
    config = framework["metadata"]["annotations"]["config"]
    # upstream's mask takes the final line break with a trailing secrets block (checked on protocolSecret.js)
    assert config.endswith('secrets: "******"') and config.startswith(dump(without_secrets(data)))


BROKEN = {
    "secrets-a-string": f"protocolVersion: 2\nname: x\ntype: job\nsecrets: {SECRET}\ntaskRoles: {{}}\n",
    "secrets-a-number": f"protocolVersion: 2\nname: x\ntype: job\nsecrets: {NUMBER_SECRET}\ntaskRoles: {{}}\n",
    "auth-password-a-number": dump(job_data()).replace(PASSWORD, str(NUMBER_SECRET)),
    "auth-password-a-list": dump(job_data()).replace(PASSWORD, f"[{PASSWORD}]"),
    "password-with-unclosed-tag": dump(job_data()).replace(PASSWORD, f"'{PASSWORD}<%'"),
    "password-with-unknown-tag": dump(job_data()).replace(PASSWORD, f"'{PASSWORD}<% $parameters.x %>'"),
    "typo-on-a-one-line-job": json.dumps({**job_data(), "nmae": "x"}),
    "syntax-error-in-secrets": f"protocolVersion: 2\nsecrets:\n  canary: \"{SECRET}\n",
    "syntax-error-on-secret-line": f"protocolVersion: 2\nsecrets:\n  canary: {SECRET}: [\n",
    "duplicate-secret-key": f"protocolVersion: 2\nsecrets:\n  canary: {SECRET}\n  canary: {SECRET}\n",
    "tab-in-secrets": f"protocolVersion: 2\nsecrets:\n\tcanary: {SECRET}\n",
    "bad-tag-on-secret": f"protocolVersion: 2\nsecrets:\n  canary: !!int {SECRET}\n",
    "flow-secrets-typo": f"{{protocolVersion: 2, secrets: {{canary: {SECRET}}}, nmae: x}}\n",
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_no_diagnostic_shows_a_secret(case, run_cli):
    text = BROKEN[case]
    result = validate_text(text, "job.yaml")
    assert result.diagnostics, case
    _no_canary_in(result.diagnostics, case)
    for output_format in ("text", "json"):
        code, out, err = run_cli("validate", "-", "--format", output_format, input=text)
        assert code in (0, 1)
        assert not any(c in out + err for c in (*CANARIES, str(NUMBER_SECRET))), (case, out)


def test_redacted_source_line_keeps_the_key_and_hides_the_value():
    text = BROKEN["auth-password-a-number"]
    [diagnostic] = [d for d in validate_text(text, "job.yaml").diagnostics if d.pointer.endswith("/password")]
    assert "password: ***" in diagnostic.source_line and "auth:" in diagnostic.source_line
    assert "***" in diagnostic.message and str(NUMBER_SECRET) not in diagnostic.message


def test_a_secret_reference_in_auth_is_shown_it_is_not_a_secret():
    text = dump(job_data()).replace(PASSWORD, "<% $secrets.missing %>")
    [w402] = [d for d in validate_text(text, "job.yaml").diagnostics if d.code == "W402"]
    assert "<% $secrets.missing %>" in w402.source_line and "'missing'" in w402.message


def test_compile_refusals_do_not_show_secrets(run_cli):
    text = BROKEN["password-with-unclosed-tag"]
    code, out, err = run_cli("compile", "-", input=text)
    assert code == 1 and "E803" in err and out == ""
    assert not any(c in err for c in CANARIES), err
