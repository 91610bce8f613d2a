"""The editor integration stays off the start-up path of validate/compile/submit, and `paictl lsp` without pygls
says so in one line with its documented status."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EDITOR_MODULES = ("pygls", "lsprotocol", "paictl.lsp", "paictl.protocol.fixes", "paictl.cli.fix_cmd")
PROBE = ("import atexit, sys; from paictl.cli.entry import main; sys.argv[0] = 'paictl'\n"
         f"atexit.register(lambda: sys.stderr.write('\\nloaded: %s' % sorted(m for m in {EDITOR_MODULES!r} "
         "if m in sys.modules)))\n"
         "main()")


def test_validate_compile_and_the_typer_path_import_nothing_of_the_editor_integration(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("protocolVersion: 2\nname: x\ntype: job\ntaskRoles: {w: {dockerImage: i, comands: []}}\n")
    for args in (["validate", "examples/hello-world.yaml"], ["validate", str(broken)],
                 ["compile", "examples/hello-world.yaml"], ["explain", "E202"], ["--help"]):
        done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, cwd=ROOT,
                              timeout=120)
        assert done.stderr.rpartition("loaded: ")[2] == "[]", (args, done.stderr[-300:])


def test_lsp_without_pygls_is_one_line_and_exit_2(tmp_path):
    # A pygls that cannot be imported, ahead of the installed one on the path.
    (tmp_path / "pygls").mkdir()
    (tmp_path / "pygls" / "__init__.py").write_text("raise ImportError('pygls is not installed')\n")
    done = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(tmp_path)!r}); "
                           "sys.argv[0] = 'paictl'; from paictl.cli.entry import main; main()", "lsp"],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 2
    assert done.stdout == "" and done.stderr == "paictl: error: `paictl lsp` needs pygls: pip install 'paictl[lsp]'\n"


def test_a_misspelt_target_or_profile_is_one_line_and_exit_2_before_serving():
    """As on every command: the editor would only hear of it once a job is open; run by hand it exited 1 silently."""
    for args, line in ((["--target", "jobsett"], "paictl: error: unknown target 'jobsett'; available: "),
                       (["-t", "nope", "--stdio"], "paictl: error: unknown target 'nope'; available: "),
                       (["--profile", "opnepai"], "paictl: error: opnepai: no such profile file (built-in profiles: ")):
        for form in (args, ["--stdio", *args]):
            done = subprocess.run([sys.executable, "-m", "paictl", "lsp", *form], capture_output=True, text=True,
                                  timeout=120, stdin=subprocess.DEVNULL, cwd=ROOT)
            assert (done.returncode, done.stdout) == (2, ""), (form, done.stderr)
            assert done.stderr.startswith(line) and done.stderr.count("\n") == 1, (form, done.stderr)
