"""The Python API example of docs/reference/python-api.md runs as written and takes a job to its verdict on the local backend; the API
is lazy (importing paictl imports nothing else) and raises the errors the CLI maps to exit codes."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT


def readme_example() -> str:
    section = (ROOT / "docs" / "reference" / "python-api.md").read_text(encoding="utf-8")
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readme_example_runs_a_job_to_its_verdict(tmp_path):
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    done = subprocess.run([sys.executable, "-c", readme_example()], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1].startswith("verdict: succeeded"), done.stdout
    # The snapshots before it: the final one shows the client succeeded (how many came before depends on timing).
    # The client's success completes the job; the server, which ends within milliseconds of it, either ended first
    # (succeeded) or is stopped by the completion, as FrameworkController stops the remaining tasks (README).
    assert lines[-2] in ("succeeded ['server-0 succeeded', 'client-0 succeeded']",
                         "succeeded ['server-0 stopped', 'client-0 succeeded']"), done.stdout
    assert (tmp_path / "state" / "paictl" / "runs" / "local-ping-pong" / "state.json").is_file()


def test_importing_paictl_imports_nothing_else():
    code = "import sys, paictl; print(sorted(m for m in sys.modules if m.startswith('paictl')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "['paictl']"


def test_api_errors_carry_the_cli_exit_codes(tmp_path):
    import paictl

    bad = tmp_path / "bad.yaml"
    bad.write_text("protocolVersion: 2\nname: demo\ntype: job\ntaskrole: {}\n")
    with pytest.raises(paictl.InvalidJobError) as caught:
        paictl.compile_job(bad, target="framework")
    assert caught.value.exit_code == 1 and {d.code for d in caught.value.diagnostics} >= {"E201", "E202"}
    with pytest.raises(paictl.UsageError) as usage:
        paictl.compile_job(bad, target="nowhere")
    assert usage.value.exit_code == 2
    with pytest.raises(paictl.NotFoundError):
        paictl.open_backend("local", run_dir=tmp_path / "runs").describe("nosuchjob")
    assert not paictl.validate(bad).ok and paictl.validate(ROOT / "examples" / "hello-world.yaml").ok


def test_compile_job_returns_the_warnings_it_reports(tmp_path):
    import paictl

    job = tmp_path / "job.yaml"
    job.write_text((ROOT / "tests" / "cases" / "semantic" / "W405-task-retry-ignored.yaml").read_text())
    compiled = paictl.compile_job(job, target="framework")
    assert [w.code for w in compiled.warnings] == ["W405"]
    assert {obj["kind"] for obj in compiled.objects} >= {"Framework"}


def test_a_diagnostic_stays_one_line_however_it_is_made_or_copied():
    """Diagnostics are named tuples built by keyword (protocol/diagnostics.py): a changed copy, a copy and a pickled
    one are sanitised like a new one, and a positional or incomplete construction is refused."""
    import copy
    import pickle

    from paictl.protocol.diagnostics import Diagnostic, Severity

    made = Diagnostic(code="E202", severity=Severity.ERROR, message="key 'a\nb'", file="job.yaml", hint="x\x1b[2J",
                      source_line="\tkey\x9b: 1")
    assert (made.message, made.hint, made.source_line) == ("key 'a\\nb'", "x\\x1b[2J", "\tkey\\x9b: 1")
    changed = made._replace(message="again\r\n", line=3)
    assert (changed.message, changed.line, changed.file) == ("again\\r\\n", 3, "job.yaml")
    assert copy.deepcopy(made) == made and pickle.loads(pickle.dumps(changed)) == changed
    with pytest.raises(TypeError):
        Diagnostic("E202", Severity.ERROR, "m", "f")
    with pytest.raises(TypeError):
        Diagnostic(code="E202", severity=Severity.ERROR, message="m")


def test_validate_does_not_import_dataclasses():
    """The validate path's records are named tuples: importing `dataclasses` (with `inspect` and `ast`) was a
    seventh of a pre-commit run."""
    probe = ("import atexit, sys, runpy; sys.argv = ['paictl', 'validate', '--quiet', sys.argv[1]]\n"
             "atexit.register(lambda: print('dataclasses' in sys.modules, 'inspect' in sys.modules))\n"
             "runpy.run_module('paictl', run_name='__main__')\n")
    done = subprocess.run([sys.executable, "-c", probe, str(ROOT / "examples" / "parameter-server.yaml")],
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout.split()) == (0, ["False", "False"]), done.stdout + done.stderr
