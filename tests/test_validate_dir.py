"""`paictl validate DIR` checks the files shaped like a job or a marketplace item, and counts the YAML it skips."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import ROOT

CI_CONFIG = "repos:\n  - repo: local\n    hooks: []\n"


def repository(tmp_path):
    shutil.copytree(ROOT / "examples", tmp_path / "jobs")
    (tmp_path / ".pre-commit-config.yaml").write_text(CI_CONFIG)
    (tmp_path / "chart.yaml").write_text("apiVersion: v2\nname: chart\n")
    (tmp_path / "list.yml").write_text("- a\n- b\n")
    (tmp_path / "broken-job.yaml").write_text("protocolVersion: 2\n\tname: x\n")  # a job, however broken
    (tmp_path / "flow-job.yaml").write_text('{"protocolVersion": 2, "name": "f", "type": "job"}\n')
    return tmp_path


def test_a_directory_checks_jobs_and_items_and_counts_the_rest(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(repository(tmp_path))
    code, out, _ = run_cli("validate", ".")
    lines = out.splitlines()
    assert code == 1
    assert "broken-job.yaml:2:1: error[E105]" in out and "flow-job.yaml:1:1: error[E201]" in out
    assert "chart.yaml" not in "\n".join(lines[:-1]) and ".pre-commit-config.yaml" not in "\n".join(lines[:-1])
    assert lines[-2].endswith("of 15 files invalid")  # 13 examples and the two jobs
    assert lines[-1].startswith("3 YAML files skipped (.pre-commit-config.yaml, chart.yaml, list.yml): neither a "
                                "job nor a marketplace item") and lines[-1].endswith("--all-files checks every file")
    code, out, _ = run_cli("validate", ".", "-o", "json")
    report = json.loads(out)
    assert report["summary"]["skipped"] == 3 and report["summary"]["files"] == 15
    assert [entry["file"] for entry in report["skipped"]] == [".pre-commit-config.yaml", "chart.yaml", "list.yml"]
    code, out, _ = run_cli("validate", ".", "--all-files")
    assert "chart.yaml:1:1: error[E201]" in out and "list.yml:1:1: error[E104]" in out
    assert out.splitlines()[-1].endswith("of 18 files invalid")


def test_named_files_are_always_checked_unless_picked_by_shape(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(repository(tmp_path))
    code, out, _ = run_cli("validate", "chart.yaml")
    assert code == 1 and "chart.yaml:1:1: error[E201]" in out
    code, out, _ = run_cli("validate", "--by-shape", "chart.yaml", "jobs/hello-world.yaml")
    assert code == 0 and out.splitlines() == [
        "1 file valid", "1 YAML file skipped (chart.yaml): neither a job nor a marketplace item: no protocolVersion, "
        "taskRoles, prerequisites or deployments, and no protocol with a name or author, at its root; --all-files "
        "checks every file"]
    code, out, _ = run_cli("validate", "--by-shape", "--quiet", "chart.yaml")
    assert code == 0 and out == ""


def _paictl(*args: str, cwd):
    """The console script's own path (entry.py's typer-free commands), as a shell runs it."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "paictl", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=60)
    return done.returncode, done.stdout, done.stderr


FIXABLE = (ROOT / "examples" / "hello-world.yaml").read_text().replace("memoryMB:", "memory:")


@pytest.mark.parametrize("command", [("validate",), ("fix",), ("marketplace", "validate"), ("compile",),
                                     ("submit", "--target", "local"), ("compile", "--target", "jobset")])
def test_an_empty_argument_names_no_file_and_never_the_current_folder(tmp_path, command):
    """Path("") is ".": `paictl fix "$JOB"` with JOB unset must not check, let alone rewrite, every file here."""
    (tmp_path / "job.yaml").write_text(FIXABLE)
    code, out, err = _paictl(*command, "", cwd=tmp_path)
    assert code == 2 and err.splitlines() == ["paictl: error: '': no such file (an empty name)"], (out, err)
    assert "job.yaml" not in out and (tmp_path / "job.yaml").read_text() == FIXABLE


@pytest.mark.parametrize("command", [("validate",), ("fix", "--diff"), ("marketplace", "validate")])
def test_a_folder_without_yaml_is_an_input_error_and_the_other_inputs_are_still_checked(tmp_path, command):
    """As a missing file is (docs/reference/exit-codes.md: 'Any valid files given are still checked')."""
    (tmp_path / "empty").mkdir()
    bad = tmp_path / "bad.yaml"
    bad.write_text("protocol: v1\nname: x\ntype: template\nunknownKey: 1\n" if "marketplace" in command
                   else "protocolVersion: 2\nname: x\ntype: job\n")  # no taskRoles: no safe fix adds them
    for order in (["empty", "bad.yaml"], ["bad.yaml", "empty"]):
        code, out, err = _paictl(*command, *order, cwd=tmp_path)
        assert code == 2, (out, err)
        assert "bad.yaml:" in out + err and "error[" in out + err  # the file's own diagnostics
        assert "paictl: error: empty: no *.yaml or *.yml files in this directory" in err.splitlines()
    if command != ("fix", "--diff"):
        code, out, err = _paictl(*command, "-o", "json", "empty", cwd=tmp_path)
        assert code == 2 and json.loads(out)["results"] == [], (out, err)


@pytest.mark.parametrize("command", [("validate",), ("fix",)])
def test_standard_input_given_twice_is_read_once_and_said(tmp_path, command):
    """The second `-` would read an empty stream and report a second, empty document that was never given."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "paictl", *command, "-", "-"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60, input=FIXABLE)
    assert done.returncode == 2, done.stderr
    assert "paictl: error: '-': standard input is given more than once; it can be read only once" in done.stderr
    assert "document is empty" not in done.stdout + done.stderr
