"""`paictl validate DIR` checks the files shaped like a job or a marketplace item, and counts the YAML it skips."""

from __future__ import annotations

import json
import shutil

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
