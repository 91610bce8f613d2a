"""The console script's fast path for `validate` (cli/entry.py) against the typer command it stands in for.

Both run as real processes on the same inputs; stdout, stderr and exit codes must be identical byte for byte, and
the fast path must really skip typer for the command lines it claims.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT

from paictl.cli.entry import parse_compile, parse_submit, parse_validate

EXAMPLES = ROOT / "examples"
CASES = ROOT / "tests" / "cases"
# typer's command, as `paictl` ran it before the fast path existed
TYPER = "import sys; from paictl.cli.app import main; sys.argv[0] = 'paictl'; main()"
# the fast path ends with os._exit after the atexit handlers: the marker is written by one
FAST = ("import atexit, sys; from paictl.cli.entry import main; sys.argv[0] = 'paictl'\n"
        "atexit.register(lambda: sys.stderr.write('typer imported: %s' % ('typer' in sys.modules)))\n"
        "main()")


def run(code: str, args: list[str], stdin: bytes, env: dict | None = None) -> tuple[int, bytes, bytes]:
    done = subprocess.run([sys.executable, "-c", code, *args], input=stdin, capture_output=True, timeout=60,
                          cwd=ROOT, env=env)
    return done.returncode, done.stdout, done.stderr


def cases(tmp_path):
    ansi = tmp_path / "ansi.yaml"
    ansi.write_bytes(b"protocolVersion: 2\nname: demo\ntype: job\ntaskrole: {x: \"\x1b[31mred\x1b[0m\"}\n")
    empty = tmp_path / "empty"
    empty.mkdir()
    loading = sorted(str(p.relative_to(ROOT)) for p in (CASES / "loading").glob("*.yaml"))
    semantic = sorted(str(p.relative_to(ROOT)) for p in (CASES / "semantic").glob("*.yaml"))  # errors, warnings
    broken = b"protocolVersion: 2\nname: demo\ntype: job\ntaskrole: {}\n"
    return [
        (["validate", "examples"], b""),
        (["validate", ".", "--all-files", "--output", "json"], b""),
        (["validate", "--by-shape", ".pre-commit-hooks.yaml", "examples/hello-world.yaml"], b""),
        (["validate", "tests"], b""),
        (["validate", "--strict", "-q", *loading], b""),
        (["validate", "--format", "json", *loading, *semantic], b""),
        (["validate", "--format=json", "--strict", *semantic], b""),
        (["validate", *semantic, "-o", "text"], b""),
        (["validate", "--strict", *semantic], b""),
        (["validate", "--stdin-name", "jobs/demo.yaml", "-"], broken),
        (["validate", "--stdin-name=x.yaml", "--quiet", "-", "examples/hello-world.yaml"], broken),
        (["validate", "--", "no/such/file.yaml", "examples/hello-world.yaml"], b""),
        (["validate", str(empty), "examples/hello-world.yaml"], b""),
        (["validate", str(ansi)], b""),
    ]


def assert_fast_path_prints_what_typer_prints(args: list[str], stdin: bytes) -> None:
    """The command line runs without typer and gives typer's bytes and exit code."""
    code, out, err = run(TYPER, args, stdin)
    fast_code, fast_out, fast_err = run(FAST, args, stdin)
    fast_err, _, imported = fast_err.rpartition(b"typer imported: ")
    assert imported == b"False", args
    assert (fast_code, fast_out, fast_err) == (code, out, err), args


def test_fast_path_prints_what_typer_prints(tmp_path):
    for args, stdin in cases(tmp_path):
        assert parse_validate(args[1:]) is not None, args
        assert_fast_path_prints_what_typer_prints(args, stdin)


@pytest.mark.parametrize("args", [
    [], ["--help"], ["-h", "x.yaml"], ["x.yaml", "--format", "yaml"], ["x.yaml", "--format"], ["-ojson", "x.yaml"],
    ["-o=json", "x.yaml"], ["x.yaml", "--stdin-name", "--strict"], ["--nope", "x.yaml"], ["-qo", "json", "x.yaml"],
])
def test_anything_unusual_is_left_to_typer(args):
    assert parse_validate(args) is None


def test_typer_still_owns_usage_errors_and_help():
    for args in (["validate"], ["validate", "--format", "yaml", "x.yaml"], ["validate", "--help"]):
        assert run(FAST, args, b"")[:2] == run(TYPER, args, b"")[:2], args


def test_parsed_options():
    assert parse_validate(["a.yaml", "--strict", "-q", "--format", "json", "--stdin-name", "n", "-", "--", "-x"]) == {
        "paths": ["a.yaml", "-", "-x"], "format": "json", "strict": True, "quiet": True, "stdin_name": "n",
        "all_files": False, "by_shape": False}
    assert parse_validate(["--all-files", "--by-shape", "--output", "json", "d"]) == {
        "paths": ["d"], "format": "json", "strict": False, "quiet": False, "stdin_name": "<stdin>",
        "all_files": True, "by_shape": True}


# ---------------------------------------------------------------------------------------------------------------
# compile

def compile_cases(tmp_path):
    overrides = tmp_path / "overrides.yaml"
    overrides.write_text("epochs: 7\n")
    warned = tmp_path / "warned.yaml"
    warned.write_text((EXAMPLES / "hello-world.yaml").read_text() + "defaults: {virtualCluster: default}\n")
    invalid = sorted(str(p.relative_to(ROOT)) for p in (CASES / "semantic").glob("*.yaml"))[0]
    job = (EXAMPLES / "hello-world.yaml").read_bytes()
    out_dir = tmp_path / "out"
    return [
        (["compile", "examples/parameter-server.yaml"], b""),
        (["compile", "examples/parameter-server.yaml", "--barrier-rbac"], b""),
        (["compile", "examples/parameter-server.yaml", "-o", "json", "--profile", "openpai"], b""),
        (["compile", "--target", "jobset", "examples/parameter-server.yaml", "--strict"], b""),
        (["compile", "-t", "mars", "examples/mars-dataframe.yaml", "--format=json"], b""),
        (["compile", "examples/local-ping-pong.yaml", "--target=local"], b""),
        (["compile", "examples/grass-hello.yaml", "--target", "grass"], b""),
        (["compile", "examples/parameter-server.yaml", "--target", "openpai"], b""),
        (["compile", "examples/parameter-server.yaml", "-p", "epochs=3", "-p", "nope=1", "--parameters",
          str(overrides), "--user", "alice", "-n", "team", "--secrets-from", "shared"], b""),
        (["compile", "--output-dir", str(out_dir), "examples/parameter-server.yaml", "--parameter", "epochs=5",
          "--namespace", "ml"], b""),
        (["compile", "--stdin-name", "jobs/hello.yaml", "-"], job),
        (["compile", "-", "--stdin-name=x.yaml", "--output", "json"], b"protocolVersion: 2\n"),
        (["compile", invalid], b""),
        (["compile", "--", "no/such/job.yaml"], b""),
        (["compile", "examples/hello-world.yaml", "--target", "nowhere"], b""),
        (["compile", "examples/hello-world.yaml", "--profile", "no-such-profile"], b""),
        (["compile", "examples/parameter-server.yaml", "-p", "no-equals-sign"], b""),
        (["compile", "examples/grass-hello.yaml", "--target", "grass", "--cluster", "no/such/cluster.yaml"], b""),
        (["compile", str(warned)], b""),
        (["compile", str(warned), "--strict"], b""),
        (["compile", "examples/parameter-server.yaml", "--space", "examples/sweep-grid.json", "-t", "openpai"], b""),
        (["compile", "examples/parameter-server.yaml", "--space", "examples/sweep-random.json", "--strategy",
          "random", "--seed", "7", "--max-trials", "3"], b""),
        (["compile", "examples/parameter-server.yaml", "--space", "epochs=1,2", "--space", "nope=1"], b""),
    ]


def test_compile_fast_path_prints_what_typer_prints(tmp_path):
    for args, stdin in compile_cases(tmp_path):
        assert parse_compile(args[1:]) is not None, args
        assert_fast_path_prints_what_typer_prints(args, stdin)


def test_compile_cases_cover_every_exit_status_and_every_option(tmp_path):
    """The comparison above is only as good as its cases: they must reach success, refusal and usage errors, and
    spell every option the fast path claims to parse."""
    codes = {run(FAST, args, stdin)[0] for args, stdin in compile_cases(tmp_path)}
    assert {0, 1, 2} <= codes
    spelled = {arg.partition("=")[0] for args, _ in compile_cases(tmp_path) for arg in args if arg.startswith("-")}
    from paictl.cli import entry

    form = entry._COMPILE
    assert set(form.flags) | set(form.valued) | set(form.repeated) <= spelled


def assert_form_declares_what_typer_declares(name: str, form) -> None:
    """Every option of the typer command, with its spellings, is in the fast path's table (and nothing else is), so
    an option added to one cannot be missed by the other."""
    import typer.main

    from paictl.cli.app import app

    command = typer.main.get_command(app).commands[name]
    declared = {opt for param in command.params if param.param_type_name == "option" for opt in param.opts
                if opt not in ("--help", "-h")}
    assert declared == set(form.flags) | set(form.valued) | set(form.repeated)
    repeatable = {opt for param in command.params if getattr(param, "multiple", False) for opt in param.opts}
    assert repeatable == set(form.repeated)
    flags = {opt for param in command.params if getattr(param, "is_flag", False) for opt in param.opts}
    assert flags == set(form.flags)
    defaults = {param.name: param.default for param in command.params if param.param_type_name == "option"}
    assert form.defaults == {key: (None if value == [] else value) for key, value in defaults.items()
                             if key in form.defaults}


def test_the_fast_compile_form_declares_what_typer_declares():
    from paictl.cli import entry

    assert_form_declares_what_typer_declares("compile", entry._COMPILE)


@pytest.mark.parametrize("args", [
    [], ["--help"], ["job.yaml", "--help"], ["a.yaml", "b.yaml"], ["job.yaml", "-o", "text"], ["-ojson", "job.yaml"],
    ["-o=json", "job.yaml"], ["job.yaml", "--target"], ["job.yaml", "--no-such-option"], ["-tjobset", "job.yaml"],
    ["job.yaml", "--profile", "--strict"],
])
def test_anything_unusual_in_compile_is_left_to_typer(args):
    assert parse_compile(args) is None


def test_typer_still_owns_compile_usage_errors_and_help():
    for args in (["compile"], ["compile", "--help"], ["compile", "a.yaml", "b.yaml"], ["compile", "x.yaml", "-o", "txt"]):
        assert run(FAST, args, b"")[:2] == run(TYPER, args, b"")[:2], args


# ---------------------------------------------------------------------------------------------------------------
# submit

def submit_cases(tmp_path):
    """Local runs followed to their verdict (real processes; one task, which outlives the first poll, so the lines a
    run prints do not depend on timing), dry runs, and every way a submit is refused before anything runs."""
    runs = str(tmp_path / "runs")
    job = tmp_path / "job.yaml"
    job.write_text("protocolVersion: 2\nname: parity\ntype: job\n"
                   "prerequisites:\n  - {name: img, type: dockerimage, uri: 'python:3.11'}\n"
                   "parameters: {code: 0}\n"
                   "taskRoles:\n  worker:\n    instances: 1\n    dockerImage: img\n"
                   "    resourcePerInstance: {cpu: 1, memoryMB: 512, gpu: 0}\n"
                   "    commands:\n      - sleep 0.3\n      - echo done-<% $parameters.code %>\n"
                   "      - exit <% $parameters.code %>\n")
    rules = tmp_path / "rules.yaml"
    rules.write_text("nope: [\n")
    invalid = sorted(str(p.relative_to(ROOT)) for p in (CASES / "semantic").glob("*.yaml"))[0]
    return [
        (["submit", str(job), "--target", "local", "--follow", "--run-dir", runs], b""),
        (["submit", str(job), "-t", "local", "-f", "--run-dir", runs, "-p", "code=3", "--strict"], b""),
        (["submit", "--target=local", "--follow", "-o", "json", "--run-dir", runs, "--pending-timeout", "30",
          "--profile", "openpai", "--user", "alice", str(job)], b""),
        (["submit", "-", "--stdin-name", "jobs/parity.yaml", "--target", "local", "--follow", "--format", "json",
          "--run-dir", runs, "--parameters", str(tmp_path / "none.yaml")], job.read_bytes()),
        (["submit", str(job), "--target", "local", "--dry-run", "--follow", "--run-dir", runs], b""),
        (["submit", str(job), "--target", "local", "--runtime", "host", "--pull", "never", "--follow", "--run-dir",
          runs], b""),
        (["submit", str(job), "--target", "local", "--runtime", "podman", "--run-dir", runs], b""),
        (["submit", str(job), "--target", "jobset", "--pull", "always"], b""),
        (["submit", str(job), "--kubeconfig", str(tmp_path / "no-kubeconfig"), "--dry-run", "--run-dir", runs,
          "--context", "nowhere", "-n", "team"], b""),
        (["submit", str(job), "--target", "local", "--exit-spec", str(rules), "--run-dir", runs], b""),
        (["submit", str(job), "--target", "nowhere"], b""),
        (["submit", str(job), "--target", "local", "-o", "wide"], b""),
        (["submit", invalid, "--target", "local", "--run-dir", runs], b""),
        (["submit", "--target", "local", "--", "no/such/job.yaml"], b""),
        (["submit", str(job), "--target", "grass", "--cluster", "no/such/cluster.yaml", "--replace",
          "--virtual-cluster", "vc", "--secrets-from", "s", "--namespace", "ml", "--parameter", "code=1",
          "--output", "text"], b""),
        (["submit", str(job), "--target", "local", "-p", "no-equals-sign"], b""),
    ]


def test_submit_fast_path_prints_what_typer_prints(tmp_path):
    for args, stdin in submit_cases(tmp_path):
        assert parse_submit(args[1:]) is not None, args
        assert_fast_path_prints_what_typer_prints(args, stdin)


def test_submit_cases_cover_every_exit_status_and_every_option(tmp_path):
    codes = {run(FAST, args, stdin)[0] for args, stdin in submit_cases(tmp_path)}
    assert {0, 1, 2, 3} <= codes
    spelled = {arg.partition("=")[0] for args, _ in submit_cases(tmp_path) for arg in args if arg.startswith("-")}
    from paictl.cli import entry

    form = entry._SUBMIT
    assert set(form.flags) | set(form.valued) | set(form.repeated) <= spelled


def test_the_fast_submit_form_declares_what_typer_declares():
    from paictl.cli import entry

    assert_form_declares_what_typer_declares("submit", entry._SUBMIT)


@pytest.mark.parametrize("args", [
    [], ["--help"], ["job.yaml", "--help"], ["a.yaml", "b.yaml"], ["job.yaml", "--pending-timeout", "soon"],
    ["-fo", "json", "job.yaml"], ["-tlocal", "job.yaml"], ["job.yaml", "--target"], ["job.yaml", "--follow=yes"],
    ["job.yaml", "--no-such-option"],
])
def test_anything_unusual_in_submit_is_left_to_typer(args):
    assert parse_submit(args) is None


def test_typer_still_owns_submit_usage_errors_and_help():
    for args in (["submit"], ["submit", "--help"], ["submit", "a.yaml", "--pending-timeout", "soon"]):
        assert run(FAST, args, b"")[:2] == run(TYPER, args, b"")[:2], args


def test_parsed_submit_options_have_typer_types():
    from pathlib import Path

    options = parse_submit(["j.yaml", "--pending-timeout", "1e1", "--run-dir", "r", "--exit-spec", "e.yaml",
                            "--parameters", "p.yaml", "--cluster", "a", "--cluster", "b"])
    assert options["pending_timeout"] == 10.0
    assert (options["run_dir"], options["exit_spec"], options["parameter_files"]) == \
        (Path("r"), Path("e.yaml"), [Path("p.yaml")])
    assert options["cluster"] == ["a", "b"] and parse_submit(["j.yaml"])["cluster"] is None
