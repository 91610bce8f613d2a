"""`paictl compile` as users pipe it: deterministic YAML on stdout, diagnostics on stderr, secrets only in Secrets."""

from __future__ import annotations

import base64
import json

import pytest

from ruamel.yaml import YAML

from conftest import ROOT

EXAMPLES = ROOT / "examples"
PS = str(EXAMPLES / "parameter-server.yaml")


def documents(text: str) -> list[dict]:
    return [d for d in YAML(typ="safe", pure=True).load_all(text) if d is not None]


def test_yaml_output_is_deterministic_and_ends_with_the_framework(run_cli):
    code, first, err = run_cli("compile", PS, "--profile", "openpai")
    assert code == 0, err
    _, second, _ = run_cli("compile", PS, "--profile", "openpai")
    assert first == second
    kinds = [d["kind"] for d in documents(first)]
    assert kinds[-1] == "Framework" and kinds.count("Secret") == 1 and "PriorityClass" in kinds


def test_json_output_is_a_v1_list_with_the_same_objects(run_cli):
    _, as_yaml, _ = run_cli("compile", PS, "--profile", "openpai")
    code, as_json, _ = run_cli("compile", PS, "--profile", "openpai", "--format", "json")
    listed = json.loads(as_json)
    assert code == 0 and listed["kind"] == "List" and listed["items"] == documents(as_yaml)


def test_output_dir_writes_one_file_per_object(run_cli, tmp_path):
    code, out, _ = run_cli("compile", PS, "--profile", "openpai", "--output-dir", str(tmp_path / "out"))
    files = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert code == 0 and len(files) == len(out.split()) and any(f.startswith("framework-") for f in files)


def test_parameter_overrides_reach_the_entrypoint(run_cli, tmp_path):
    overrides = tmp_path / "p.yaml"
    overrides.write_text("learningRate: 0.5\n")
    code, out, _ = run_cli("compile", PS, "--profile", "openpai", "-p", "epochs=99", "--parameters", str(overrides))
    framework = documents(out)[-1]
    worker = next(r for r in framework["spec"]["taskRoles"] if r["name"] == "worker")
    env = {e["name"]: e.get("value") for e in worker["task"]["pod"]["spec"]["initContainers"][0]["env"]}
    assert code == 0 and "--epochs=99 --lr=0.5" in env["USER_CMD"]


def test_secret_values_appear_only_inside_secret_objects(run_cli):
    code, out, err = run_cli("compile", PS, "--profile", "openpai")
    assert code == 0
    secret_value = "replace-me"
    for obj in documents(out):
        text = json.dumps(obj)
        if obj["kind"] == "Secret":
            decoded = "".join(base64.b64decode(v).decode() for v in obj["data"].values())
            assert secret_value in decoded
        else:
            assert secret_value not in text, obj["kind"]
    assert secret_value not in err


def test_secrets_from_references_an_existing_secret(run_cli):
    code, out, _ = run_cli("compile", PS, "--profile", "openpai", "--secrets-from", "team-secrets")
    assert code == 0 and "replace-me" not in out and "team-secrets" in out
    assert not [d for d in documents(out) if d["kind"] == "Secret"]


def test_invalid_job_exits_1_with_diagnostics_on_stderr_only(run_cli):
    code, out, err = run_cli("compile", "-", input="protocolVersion: 2\nname: x\ntype: job\ntaskrole: {}\n")
    assert code == 1 and out == ""
    assert "<stdin>:4:1: error[E202]" in err


def test_a_refused_job_is_reported_as_validate_reports_it(run_cli, tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text("protocolVersion: 2\nname: demo\ntype: job\ntaskrole: {}\n"
                   "prerequisites: [{name: img, type: dockerimage, uri: ubuntu}]\n"
                   "taskRoles:\n  train:\n    instances: 1\n    dockerImage: img\n    taskRetryCount: 3\n"
                   "    resourcePerInstance: {cpu: 1, memoryMB: 64, gpu: 0}\n"
                   "    commands: ['echo <% $parameters.x %>']\n")
    code, out, err = run_cli("compile", str(job))
    _, validated, _ = run_cli("validate", str(job))
    assert code == 1 and out == ""
    assert err == validated  # the same diagnostics, warnings included, in the same order, and the summary line
    assert err.rstrip().splitlines()[-1] == "1 error, 2 warnings; 1 of 1 file invalid"


def test_warnings_go_to_stderr_and_yaml_stays_clean(run_cli, tmp_path):
    job = tmp_path / "w.yaml"
    job.write_text((EXAMPLES / "retry-without-gang.yaml").read_text().replace("gangAllocation: false", "x: 1"))
    code, out, err = run_cli("compile", str(job))
    assert code == 0 and "warning[W405]" in err and "W405" not in out
    assert documents(out)[-1]["kind"] == "Framework"


def test_every_example_compiles_under_both_builtin_profiles(run_cli):
    for example in sorted(EXAMPLES.glob("*.yaml")):
        for profile in ("default", "openpai"):
            code, out, err = run_cli("compile", str(example), "--profile", profile)
            assert code == 0, (example.name, profile, err)
            assert documents(out)[-1]["kind"] == "Framework"


def test_unknown_target_and_profile_are_usage_errors(run_cli):
    code, _, err = run_cli("compile", PS, "--target", "nope")
    assert code == 2 and "unknown target" in err
    code, _, err = run_cli("compile", PS, "--profile", "no-such-profile")
    assert code == 2


def test_a_user_no_label_value_can_hold_is_a_usage_error_for_the_kubernetes_targets(run_cli, tmp_path):
    """The Kubernetes targets label their objects and pods `userName: <user>`; a user the profile schema and
    `--user` allowed (`_alice`, `alice.`, 64 characters) but no label value can hold was compiled into objects the
    API server refuses, which paictl's output check reported as a bug of its own (exit 70). The profile schema now
    holds the user to a label value, on every target (OpenPAI labels every Framework with it)."""
    mars = str(EXAMPLES / "mars-dataframe.yaml")
    for user in ("_alice", "alice.", "a" * 64):
        for target, job in (("framework", PS), ("jobset", PS), ("mars", mars)):
            code, out, err = run_cli("compile", job, "--target", target, "--user", user)
            assert (code, out) == (2, ""), (target, user, err)
            assert err.count("\n") == 1 and f"--user {user!r}: the user is the value of the objects' userName label" in err
    profile = tmp_path / "p.yaml"
    profile.write_text((ROOT / "compiler" / "profiles" / "default.yaml").read_text().replace(
        "\nuser: paictl", "\nuser: _alice"))
    assert "user: _alice" in profile.read_text()
    code, _, err = run_cli("compile", PS, "--target", "jobset", "--profile", str(profile))
    assert code == 1 and f"{profile}:4:7: error[E205]: user string '_alice' does not match" in err, err
    for user in ("alice", "a.b_c-d", "a" * 63):
        assert run_cli("compile", PS, "--target", "jobset", "--user", user)[0] == 0


@pytest.mark.parametrize("option, value", [
    ("-n", "Team-A"), ("--namespace", ""), ("-n", "a_b"), ("-n", "x" * 64), ("-n", "ok\n"),
    ("--user", "_alice"), ("--user", "alice~bob"), ("--user", "u" * 64),
    ("--secrets-from", "Team_Secret"), ("--secrets-from", ""), ("--secrets-from", "s" * 254),
])
@pytest.mark.parametrize("target", ["framework", "jobset", "local"])
def test_a_name_no_object_can_carry_is_a_usage_error_not_a_bug(run_cli, option, value, target):
    """`-n`/`--user` replace a profile value: held to the profile schema's rule for it, they are the user's mistake
    (exit 2, one line naming the option), never an object the output check refuses as paictl's bug (exit 70). So is
    a `--secrets-from` no Secret can be named, which the output check let through to fail when the pods are made."""
    code, out, err = run_cli("compile", PS, "--target", target, option, value)
    lines = [line for line in err.splitlines() if line.startswith("paictl: error:")]
    assert (code, out) == (2, ""), err
    assert len(lines) == 1 and "bug" not in err and ("--namespace" if option == "-n" else option) in lines[0]


def test_the_longest_names_a_kubernetes_object_carries_compile(run_cli):
    secret = ".".join(["s" * 63] * 4)[:253]
    code, out, err = run_cli("compile", PS, "-n", "n" * 63, "--user", "A.b-C_" + "u" * 57, "--secrets-from", secret)
    assert code == 0, err
    assert documents(out)[-1]["metadata"]["namespace"] == "n" * 63 and f"secretName: {secret}\n" in out
