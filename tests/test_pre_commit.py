"""The pre-commit hook as a user meets it: the config snippet of docs/how-to/pre-commit.md, copied into a repository and
run by real pre-commit against a fresh clone of this repository (what `repo:` names), then `pre-commit autoupdate`.

The snippet is used as written, with one substitution: its `repo:` URL becomes the clone's path. In CI the clone's
`main` is the checked-out commit; in a developer's checkout on another branch the clone's `main` is moved to the
checked-out commit, as it is once the branch is merged.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT

pytest.importorskip("pre_commit")
pytestmark = pytest.mark.skipif(not (ROOT / ".git").exists(), reason="the clone needs this checkout to be a git repo")

GOOD = (ROOT / "examples" / "hello-world.yaml").read_text()
BAD = "protocolVersion: 2\nname: bad\ntype: job\ntaskrole: {}\n"
WARNED = (ROOT / "examples" / "retry-without-gang.yaml").read_text().replace("gangAllocation: false", "x: 1")
UPSTREAM_URL = "https://github.com/paictl/paictl"


def git(*args: str, cwd) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def snippet() -> str:
    text = (ROOT / "docs" / "how-to" / "pre-commit.md").read_text()
    return re.search(r"```yaml\n(.*?)```", text, re.S).group(1)


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """A fresh clone of what is committed here, with `main` at the checked-out commit."""
    path = tmp_path_factory.mktemp("clone") / "paictl"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(path)], check=True, capture_output=True)
    head = git("rev-parse", "HEAD", cwd=ROOT).strip()
    if git("rev-parse", "HEAD", cwd=path).strip() != head:
        raise AssertionError("the clone is not at this checkout's commit")
    if git("branch", "--show-current", cwd=path).strip() != "main":
        git("branch", "-f", "main", head, cwd=path)
    return path


@pytest.fixture(scope="module")
def user_repo(tmp_path_factory, clone):
    repo = tmp_path_factory.mktemp("user") / "jobs"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    config = snippet()
    assert UPSTREAM_URL in config
    (repo / ".pre-commit-config.yaml").write_text(config.replace(UPSTREAM_URL, str(clone)))
    return repo


def pre_commit(repo, *args: str, home) -> subprocess.CompletedProcess:
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}
    return subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=900)


def test_the_documented_snippet_works_from_a_fresh_clone(user_repo, tmp_path_factory):
    home = tmp_path_factory.mktemp("pre-commit-home")
    (user_repo / "good.yaml").write_text(GOOD)
    (user_repo / "bad.yml").write_text(BAD)
    (user_repo / "warned.yaml").write_text(WARNED)
    (user_repo / "notes.txt").write_text("taskrole: {}\n")
    git("add", ".", cwd=user_repo)
    done = pre_commit(user_repo, "run", "--all-files", home=home)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "bad.yml:4:1: error[E202]: unknown key 'taskrole' in the job; did you mean 'taskRoles'?" in output
    assert "warned.yaml" in output and "warning[W405]" in output
    # the config file itself is YAML but no job: not checked, no error about it
    assert ".pre-commit-config.yaml" not in output and "good.yaml" not in output and "notes.txt" not in output

    (user_repo / "bad.yml").write_text(GOOD.replace("hello-paictl", "fixed"))
    git("add", ".", cwd=user_repo)
    done = pre_commit(user_repo, "run", "--all-files", home=home)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "warning[W405]" in output  # a passing hook still shows its warnings (verbose)

    updated = pre_commit(user_repo, "autoupdate", home=home)
    assert updated.returncode == 0, updated.stdout + updated.stderr
    rev = re.search(r"rev: (\S+)", (user_repo / ".pre-commit-config.yaml").read_text()).group(1)
    clone = re.search(r"repo: (\S+)", (user_repo / ".pre-commit-config.yaml").read_text()).group(1)
    tags = git("tag", cwd=clone).split()
    assert rev in tags if tags else rev == git("rev-parse", "main", cwd=clone).strip()
