"""The pre-commit hook, installed and run by real pre-commit from this repository (`pre-commit try-repo`)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import ROOT

pytest.importorskip("pre_commit")
pytestmark = pytest.mark.skipif(not (ROOT / ".git").exists(), reason="try-repo needs this checkout to be a git repo")

GOOD = (ROOT / "examples" / "hello-world.yaml").read_text()
BAD = "protocolVersion: 2\nname: bad\ntype: job\ntaskrole: {}\n"


def git(*args: str, cwd) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def test_hook_validates_staged_yaml_in_one_process(tmp_path):
    repo = tmp_path / "jobs"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    (repo / "good.yaml").write_text(GOOD)
    (repo / "bad.yml").write_text(BAD)
    (repo / "notes.txt").write_text("taskrole: {}\n")
    git("add", ".", cwd=repo)
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache"), "PRE_COMMIT_COLOR": "never"}
    done = subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "paictl-validate",
                           "--all-files"], cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "bad.yml:4:1: error[E202]: unknown key 'taskrole' in the job; did you mean 'taskRoles'?" in output
    assert "good.yaml" not in output and "notes.txt" not in output
    (repo / "bad.yml").write_text(GOOD.replace("hello-paictl", "fixed"))
    git("add", ".", cwd=repo)
    done = subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "paictl-validate",
                           "--all-files"], cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
