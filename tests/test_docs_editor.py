"""The Neovim recipe of docs/how-to/editor.md for Neovim 0.7-0.10, run as written in a real Neovim (Debian 12's
0.7.2): a broken job opened headless gets paictl's diagnostics. Skipped without `nvim` on PATH (or a newer one, which
the 0.11 recipe is for), except under CI."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

pytest.importorskip("pygls")
NVIM = shutil.which("nvim")


def nvim_version() -> tuple[int, int]:
    first = subprocess.run([NVIM, "--version"], capture_output=True, text=True, timeout=30).stdout.splitlines()[0]
    major, minor = re.search(r"v(\d+)\.(\d+)", first).groups()
    return int(major), int(minor)


def recipe(heading: str) -> str:
    text = (ROOT / "docs" / "how-to" / "editor.md").read_text(encoding="utf-8")
    section = text[text.index(heading):]
    return re.search(r"```lua\n(.*?)```", section, re.S).group(1)


@pytest.mark.skipif(NVIM is None and not os.environ.get("CI"), reason="no nvim on PATH")
def test_the_neovim_07_recipe_shows_paictl_diagnostics(tmp_path):
    assert NVIM, "CI needs nvim for the editor recipe's test (.ci/run installs Debian's neovim)"
    if nvim_version() >= (0, 11):
        pytest.skip("the 0.7-0.10 recipe needs Neovim 0.7-0.10 (Debian 12's nvim)")
    (tmp_path / "init.lua").write_text(recipe("## Neovim 0.7 to 0.10"))
    (tmp_path / "bad.yaml").write_text("protocolVersion: 2\nname: demo\ntype: job\ntaskrole: {}\n")
    report = ("lua vim.defer_fn(function() for _, d in ipairs(vim.diagnostic.get(0)) do "
              "io.stdout:write(d.lnum + 1, ':', d.col + 1, ' ', d.code, ' ', d.message, '\\n') end "
              "vim.cmd('qa!') end, 6000)")
    env = {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}", "HOME": str(tmp_path),
           "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_STATE_HOME": str(tmp_path / "state")}
    done = subprocess.run([NVIM, "--headless", "-u", "init.lua", "bad.yaml", "-c", report], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=90)
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert lines == ["1:1 E201 the job is missing the required key 'taskRoles'",
                     "4:1 E202 unknown key 'taskrole' in the job; did you mean 'taskRoles'?"], done.stdout + done.stderr
