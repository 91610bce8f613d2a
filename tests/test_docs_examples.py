"""Every console example in the README and in docs/*.md is run as written, or says why it is not.

A ```console block is preceded by an HTML comment that says how it is checked:
- none, or `<!-- console: compare -->`: each `$ ` line runs in bash (pipes, redirections and `# comments` as a
  reader's shell sees them) from a copy of the checkout's examples/ and clusters/, with HOME in a temporary folder;
  what it prints (standard output, then standard error) must be the lines shown below it, where `...` stands for
  any text within a line, a line of its own `...` for any lines, and /home/you for HOME (its exit status is then
  not checked: a refused job's example exits 1). A command followed by no lines must print nothing, and exit 0.
- `<!-- console: status (why) -->`: the commands run and must exit 0 (or, for `cmd; echo "exit $?"`, what it shows);
  their output is not compared (e.g. it depends on timing, or is abridged).
- `<!-- console: skip (why) -->`: not run here (needs a cluster, a server, installs...), the reason is required.
The Python examples (docs/reference/python-api.md, docs/how-to/marketplace.md) are run by their own tests.

A page in SESSIONS (the tutorial) is one reader's session: its blocks run in order in one folder with one HOME, so a
file one step writes (or a run one step starts) is there for the next.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
SESSIONS = {ROOT / "docs" / "tutorial.md"}
BLOCK = re.compile(r"(?:<!-- console: (?P<mode>compare|status|skip)(?: \((?P<why>[^)]*)\))? -->\n)?"
                   r"```console\n(?P<body>.*?)```", re.S)


def blocks():
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in BLOCK.finditer(text):
            line = text.count("\n", 0, match.start("body"))
            yield pytest.param(page, match.group("mode") or "compare", match.group("why"), match.group("body"),
                               id=f"{page.relative_to(ROOT)}:{line}")


def commands(body: str) -> list[tuple[str, list[str]]]:
    steps: list[tuple[str, list[str]]] = []
    for line in body.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            assert steps, f"output before any command: {line!r}"
            steps[-1][1].append(line)
    return steps


def matches(expected: list[str], actual: list[str]) -> bool:
    """`expected` against `actual`: `...` in a line is any text, a line `...` any lines (doctest's ELLIPSIS)."""
    if not expected:
        return not actual
    head, rest = expected[0], expected[1:]
    if head.strip() == "...":
        return any(matches(rest, actual[i:]) for i in range(len(actual) + 1))
    if not actual:
        return False
    pattern = ".*".join(map(re.escape, head.split("...")))
    return re.fullmatch(pattern, actual[0]) is not None and matches(rest, actual[1:])


def test_every_console_example_is_run_or_says_why_not():
    found = list(blocks())
    assert len(found) >= 10
    for param in found:
        page, mode, why, body = param.values
        assert mode != "skip" or why, f"{param.id}: a skipped example must say why"


@pytest.mark.parametrize("page, mode, why, body", [p for p in blocks() if p.values[0] not in SESSIONS])
def test_console_example(page, mode, why, body, tmp_path):
    if mode == "skip":
        pytest.skip(why)
    run_block(mode, body, *reader_folders(tmp_path))


@pytest.mark.parametrize("page", sorted(SESSIONS), ids=lambda page: str(page.relative_to(ROOT)))
def test_session_page(page, tmp_path):
    work, home = reader_folders(tmp_path)
    ran = 0
    for param in blocks():
        block_page, mode, why, body = param.values
        if block_page == page and mode != "skip":
            run_block(mode, body, work, home)
            ran += 1
    assert ran >= 3


def reader_folders(tmp_path: Path) -> tuple[Path, Path]:
    work = tmp_path / "work"
    work.mkdir()
    for folder in ("examples", "clusters"):
        shutil.copytree(ROOT / folder, work / folder)
    home = tmp_path / "home"
    home.mkdir()
    return work, home


def run_block(mode: str, body: str, work: Path, home: Path) -> None:
    bin_dir = os.path.dirname(sys.executable)  # the environment's paictl console script
    env = {"PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}", "HOME": str(home), "LANG": "C.UTF-8",
           "KUBECONFIG": str(home / "no-cluster")}
    for command, expected in commands(body):
        done = subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True,
                              timeout=120)
        actual = (done.stdout + done.stderr).replace(str(home), "/home/you").splitlines()
        shown_exit = next((line for line in expected if line.startswith("exit ")), None)
        if shown_exit is None and (mode == "status" or not expected):
            assert done.returncode == 0, f"{command}\n{done.stdout}{done.stderr}"
        if mode == "compare":
            assert matches(expected, actual), f"$ {command}\nexpected:\n" + "\n".join(expected) + \
                "\nactual:\n" + "\n".join(actual)
        elif shown_exit is not None:
            assert actual[-1:] == [shown_exit], f"$ {command}\n" + "\n".join(actual)
