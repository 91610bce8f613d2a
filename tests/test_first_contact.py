"""A newcomer's first hour: `explain` says what to do, `-o` means the output format, typos in `-p` are reported,
the exit codes are documented, `status` shows the local runs even when the cluster is unreachable."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from conftest import ROOT

PS = str(ROOT / "examples" / "parameter-server.yaml")


def test_every_code_has_an_explanation_an_example_and_a_fix():
    from paictl.protocol.codes import CODES
    from paictl.protocol.explanations import EXPLANATIONS

    assert set(EXPLANATIONS) == set(CODES)
    for code, texts in EXPLANATIONS.items():
        assert len(texts) == 3 and all(isinstance(t, str) and len(t.strip()) > 5 for t in texts), code


def test_explain_code_prints_the_explanation_the_example_and_the_fix(run_cli):
    code, out, _ = run_cli("explain", "w405")
    assert code == 0
    assert out.startswith("W405  warning: taskRetryCount is ignored while gang allocation is on\n")
    assert "\nexample:\n    taskRetryCount: 3" in out
    assert out.rstrip().endswith("fix: set `extras.gangAllocation: false` to let tasks retry, or remove "
                                 "taskRetryCount")
    code, out, _ = run_cli("explain", "E202", "-o", "json")
    (record,) = json.loads(out)
    assert code == 0 and set(record) == {"code", "severity", "title", "explanation", "example", "fix"}


def test_the_fix_is_the_hint_validation_prints(run_cli, tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text("protocolVersion: 2\nname: demo\ntype: job\n"
                   "prerequisites: [{name: img, type: dockerimage, uri: 'ubuntu'}]\n"
                   "taskRoles:\n  train:\n    instances: 1\n    dockerImage: img\n    taskRetryCount: 3\n"
                   "    resourcePerInstance: {cpu: 1, memoryMB: 64, gpu: 0}\n    commands: [x]\n")
    _, out, _ = run_cli("validate", str(job))
    hint = re.search(r"= hint: (.*?) \(microsoft", out).group(1)
    _, explained, _ = run_cli("explain", "W405")
    assert f"fix: {hint}" in explained


def test_o_is_the_output_format_and_the_folder_is_output_dir(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_cli("compile", PS, "-o", "json")
    assert code == 0 and json.loads(out)["kind"] == "List"
    assert not (tmp_path / "json").exists()
    code, out, _ = run_cli("compile", PS, "--format", "json")  # the old spelling still works
    assert code == 0 and json.loads(out)["kind"] == "List"
    code, _, err = run_cli("compile", PS, "-o", "out")
    assert code == 2 and not (tmp_path / "out").exists()
    code, out, _ = run_cli("compile", PS, "--output-dir", "out")
    assert code == 0 and (tmp_path / "out").is_dir() and out.splitlines()
    code, out, _ = run_cli("status", "-o", "json", "--target", "local")
    assert code == 0 and json.loads(out) == []


def test_a_misspelt_parameter_is_warned_with_the_parameters_the_job_defines(run_cli, tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text("protocolVersion: 2\nname: demo\ntype: job\nparameters:\n  epochs: 3\n  lr: 0.1\n"
                   "prerequisites: [{name: img, type: dockerimage, uri: 'ubuntu'}]\n"
                   "taskRoles:\n  train:\n    instances: 1\n    dockerImage: img\n"
                   "    resourcePerInstance: {cpu: 1, memoryMB: 64, gpu: 0}\n"
                   "    commands: ['echo <% $parameters.epochs %>']\n")
    code, out, err = run_cli("compile", str(job), "-p", "epoch=5", "-p", "lr=1")
    assert code == 0 and out
    assert err.splitlines()[0] == (f"{job}:4:1: warning[W510]: parameter override 'epoch' (-p/--parameters) names "
                                   "no parameter of the job (its parameters: epochs, lr); it changes nothing")
    assert "= hint: did you mean 'epochs'?" in err and "'lr'" not in err.split("its parameters")[0]
    assert err.count("W510") == 1


def test_status_lists_local_runs_before_the_cluster_error(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts: [{name: c, context: "
                          "{cluster: k, user: u}}]\nclusters: [{name: k, cluster: {server: 'https://127.0.0.1:9'}}]\n"
                          "users: [{name: u, user: {token: t}}]\n")
    job = tmp_path / "job.yaml"
    job.write_text("protocolVersion: 2\nname: mine\ntype: job\n"
                   "prerequisites: [{name: img, type: dockerimage, uri: 'ubuntu'}]\n"
                   "taskRoles:\n  train:\n    instances: 1\n    dockerImage: img\n"
                   "    resourcePerInstance: {cpu: 1, memoryMB: 64, gpu: 0}\n    commands: ['true']\n")
    env_run = dict(cwd=tmp_path, capture_output=True, text=True, timeout=120)
    done = subprocess.run([sys.executable, "-m", "paictl", "submit", str(job), "--target", "local", "--follow"],
                          **env_run)
    assert done.returncode == 0, done.stderr
    listed = subprocess.run([sys.executable, "-m", "paictl", "status", "--kubeconfig", str(kubeconfig)], **env_run)
    assert listed.returncode == 3
    assert listed.stdout.splitlines()[0].split() == ["NAME", "WHERE", "STATE", "ATTEMPT", "CODE", "AGE"]
    assert listed.stdout.splitlines()[1].split()[0] == "mine"
    assert listed.stderr.count("\n") == 1 and listed.stderr.startswith("paictl: error: cannot reach the cluster")


def test_the_documented_exit_code_table_covers_every_exit_code():
    readme = (ROOT / "docs" / "reference" / "exit-codes.md").read_text() + "\n"
    table = readme[readme.index("# Exit codes"):]
    documented = {int(m) for m in re.findall(r"^\| (\d+) \|", table[:table.index("\n\n", table.index("| code"))],
                                             re.M)}
    from paictl import errors
    from paictl.targets.states import VERDICT_EXIT_CODES

    raised = {cls.exit_code for cls in vars(errors).values() if isinstance(cls, type) and hasattr(cls, "exit_code")}
    assert raised | set(VERDICT_EXIT_CODES.values()) | {0, 130, 141} <= documented
