"""The command line as users and pre-commit drive it: exit codes, inputs, formats, start-up cost."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, corpus_files, needs_corpus

EXAMPLES = ROOT / "examples"
BROKEN = "protocolVersion: 2\nname: demo\ntype: job\ntaskrole: {}\n"


def test_examples_are_valid_and_warning_free(run_cli):
    code, out, _ = run_cli("validate", "--strict", str(EXAMPLES))
    assert code == 0, out
    assert out.strip() == f"{len(list(EXAMPLES.rglob('*.yaml')))} files valid"


def test_stdin_and_stdin_name(run_cli):
    code, out, _ = run_cli("validate", "--stdin-name", "jobs/demo.yaml", "-", input=BROKEN)
    assert code == 1
    assert "jobs/demo.yaml:4:1: error[E202]: unknown key 'taskrole' in the job; did you mean 'taskRoles'?" in out
    assert "jobs/demo.yaml:1:1: error[E201]" in out
    assert out.rstrip().endswith("2 errors; 1 of 1 file invalid")


def test_json_format_is_parseable_and_complete(run_cli):
    code, out, _ = run_cli("validate", "--format", "json", "-", input=BROKEN)
    report = json.loads(out)
    assert code == 1
    assert report["summary"] == {"files": 1, "invalid": 1, "errors": 2, "warnings": 0, "strict": False}
    (record,) = [d for d in report["results"][0]["diagnostics"] if d["code"] == "E202"]
    assert record["pointer"] == "/taskrole" and (record["line"], record["column"]) == (4, 1)


def test_strict_turns_warnings_into_failure(run_cli, tmp_path):
    job = tmp_path / "retry.yaml"
    job.write_text((EXAMPLES / "retry-without-gang.yaml").read_text().replace("gangAllocation: false",
                                                                             "gangAllocation: true"))
    code, out, _ = run_cli("validate", str(job))
    assert code == 0 and "warning[W405]" in out
    code, _, _ = run_cli("validate", "--strict", str(job))
    assert code == 1


def test_missing_file_is_exit_2_but_other_files_are_still_checked(run_cli):
    code, out, err = run_cli("validate", "does-not-exist.yaml", str(EXAMPLES / "hello-world.yaml"))
    assert code == 2
    assert "does-not-exist.yaml: no such file" in err
    assert "1 file valid" in out


def test_directory_without_yaml_is_exit_2(run_cli, tmp_path):
    code, _, err = run_cli("validate", str(tmp_path))
    assert code == 2 and "no *.yaml" in err


def test_schema_command_prints_the_schema(run_cli):
    code, out, _ = run_cli("schema")
    schema = json.loads(out)
    assert code == 0 and schema["$schema"].endswith("2020-12/schema")
    code, _, err = run_cli("schema", "nope")
    assert code == 2 and "unknown schema" in err


def test_explain(run_cli):
    code, out, _ = run_cli("explain", "w405")
    assert code == 0 and out.startswith("W405  warning")
    code, _, _ = run_cli("explain", "X999")
    assert code == 2


def test_the_docs_list_exactly_the_codes():
    from paictl.protocol.codes import CODES

    readme = (ROOT / "docs" / "reference" / "codes.md").read_text()
    rows = dict((c, (s, t)) for c, s, t in
                __import__("re").findall(r"^\| ([EW]\d{3}) \| (error|warning) \| (.+?) \|$", readme, flags=8))
    assert rows == {c: (s.value, t) for c, (s, t) in CODES.items()}


def run_module(*args: str, input: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "paictl", *args], capture_output=True, input=input, timeout=60)


def test_version_and_help_as_a_real_process():
    done = run_module("--version")
    assert done.returncode == 0 and done.stdout.decode().startswith("paictl ")
    for command in ([], ["validate"], ["schema"], ["explain"]):
        done = run_module(*command, "--help")
        assert done.returncode == 0 and b"Usage" in done.stdout


def test_validate_imports_only_what_it_uses():
    # reported from an atexit handler: the console script ends with os._exit once those have run
    probe = ("import atexit, sys, runpy; sys.argv = ['paictl', 'validate', '--quiet', sys.argv[1]]\n"
             "atexit.register(lambda: print('heavy:', ','.join(sorted(m for m in ('ruamel', 'kubernetes', "
             "'jsonschema', 'rich', 'httpx') if m in sys.modules))))\n"
             "runpy.run_module('paictl', run_name='__main__')\n")
    done = subprocess.run([sys.executable, "-c", probe, str(EXAMPLES / "hello-world.yaml")], capture_output=True,
                          text=True, timeout=60)
    assert (done.returncode, done.stdout.split()) == (0, ["heavy:"]), done.stdout + done.stderr


def test_broken_job_never_tracebacks_as_a_real_process():
    done = run_module("validate", "-", input=b"protocolVersion: 2\n\tname: x\n")
    assert done.returncode == 1 and b"Traceback" not in done.stderr + done.stdout


@needs_corpus
def test_every_valid_corpus_file_exits_0(run_cli):
    files = corpus_files("valid")
    code, out, _ = run_cli("validate", *map(str, files))
    assert code == 0, out


@needs_corpus
@pytest.mark.parametrize("folder", ["invalid", "nonconforming"])
def test_every_rejected_corpus_file_exits_1(run_cli, folder):
    for path in corpus_files(folder):
        code, out, _ = run_cli("validate", "--format", "json", str(path))
        assert code == 1, path.name
        errors = [d for d in json.loads(out)["results"][0]["diagnostics"] if d["severity"] == "error"]
        assert errors and all(d["line"] for d in errors), path.name


def test_installed_console_script_runs_the_quick_start():
    from pathlib import Path

    script = Path(sys.executable).parent / "paictl"
    if not script.exists():
        pytest.skip("paictl is not installed as a console script in this environment")
    done = subprocess.run([str(script), "validate", str(EXAMPLES)], capture_output=True, text=True, timeout=60)
    count = len(list(EXAMPLES.rglob("*.yaml")))
    assert count >= 7  # every example is a valid job, whatever target it is written for
    assert done.returncode == 0 and done.stdout.strip() == f"{count} files valid", done.stdout + done.stderr


def test_ctrl_c_exits_130_without_a_traceback():
    import signal
    import time

    process = subprocess.Popen([sys.executable, "-m", "paictl", "validate", "-"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(1.5)  # let it start and block reading standard input
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 130 and b"Traceback" not in err


def test_usage_errors_exit_2_as_a_real_process():
    done = run_module("validate")
    assert done.returncode == 2 and b"Usage" in done.stderr
    done = run_module("validate", "--format", "xml", "x.yaml")
    assert done.returncode == 2


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0"])
@pytest.mark.parametrize("command", [
    ["submit", str(ROOT / "examples" / "hello-world.yaml"), "--target", "local", "--pending-timeout"],
    ["submit", str(ROOT / "examples" / "hello-world.yaml"), "-tlocal", "--pending-timeout"],  # typer's to parse
    ["openpai", "add", "lab", "http://127.0.0.1:9", "--user", "u", "--no-check", "--min-poll-interval"],
    ["grass", "master", "--cluster", "no-such-cluster.yaml", "--interval"],  # refused before the file is read
], ids=["submit", "submit-typer", "openpai-add", "grass-master"])
def test_a_duration_that_is_no_number_of_seconds_is_a_usage_error(tmp_path, command, value):
    """click's FLOAT takes nan, inf and negative numbers: time.sleep(nan) is a traceback, a wait of -1 s ends at
    once, one of inf never; each is the option's one-line usage error, before anything is run or stored."""
    env = {**os.environ, "HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_CONFIG_HOME": str(tmp_path / "config")}
    done = subprocess.run([sys.executable, "-m", "paictl", *command, value], capture_output=True, text=True,
                          timeout=60, env=env, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert done.stderr.splitlines()[-1:] == [f"paictl: error: {command[-1]} {float(value)!r}: give a number of "
                                             "seconds above 0"]
    assert not (tmp_path / "config").exists() and not (tmp_path / "state").exists()  # nothing stored, nothing run


def test_a_clusters_file_that_cannot_be_written_is_said_in_the_os_words(tmp_path):
    """XDG_CONFIG_HOME naming a file: one line with the OS's reason and where it stopped, not "[Errno 20] ..."."""
    (tmp_path / "config").write_text("")
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    done = subprocess.run([sys.executable, "-m", "paictl", "openpai", "add", "lab", "http://127.0.0.1:9", "--user",
                           "u", "--no-check"], capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr == (f"paictl: error: {tmp_path}/config/paictl/openpai-clusters.yaml: cannot write the "
                           f"clusters file: Not a directory ({tmp_path}/config/paictl)\n")


@pytest.mark.parametrize("user", ["", "a b", "alice~x", "_alice", "u" * 64])
def test_an_openpai_user_no_framework_label_can_hold_is_refused_before_anything_is_stored(tmp_path, user):
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    done = subprocess.run([sys.executable, "-m", "paictl", "openpai", "add", "lab", "http://127.0.0.1:9", "--user",
                           user, "--no-check"], capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr.startswith(f"paictl: error: --user {user!r}: ") and done.stderr.count("\n") == 1
    assert not (tmp_path / "config").exists()


@pytest.mark.parametrize("content, said", [
    ("", "the document is empty; {noun} is a YAML mapping"),
    ("- a\n", "the document is a list; {noun} is a YAML mapping"),
    ("a: 1\n---\nb: 2\n", "more than one YAML document; {file_noun} holds exactly one"),
])
@pytest.mark.parametrize("option, noun, file_noun", [
    ("--profile", "a profile", "a profile"), ("--space", "a search space", "a search space file"),
    ("--cluster", "a cluster file", "a cluster file"),
])
def test_a_file_that_is_not_a_job_is_never_told_to_be_one(run_cli, tmp_path, content, said, option, noun,
                                                           file_noun):
    """A profile, a search space or a cluster file of the wrong shape is said to be what it is: not "a job is a
    YAML mapping" with the hint to start it with `protocolVersion: 2`."""
    path = tmp_path / "given.yaml"
    path.write_text(content)
    target = ["--target", "grass"] if option == "--cluster" else []
    code, out, err = run_cli("compile", str(ROOT / "examples" / "grass-hello.yaml"), *target, option, str(path))
    assert code in (1, 2) and out == "", err
    told = err.replace(str(path), "FILE")
    assert said.format(noun=noun, file_noun=file_noun) in told and "job" not in told and "protocolVersion" not in told


def test_hostile_text_cannot_break_lines_or_drive_the_terminal(run_cli):
    code, out, _ = run_cli("validate", "-", input='protocolVersion: 2\n"bad\\nkey": 1\n')
    line = next(line for line in out.splitlines() if "E202" in line)
    assert code == 1 and "unknown key 'bad\\nkey'" in line
    code, out, _ = run_cli("validate", "-", input="name: \x1b[31mred\n")
    assert code == 1 and "\x1b" not in out and "\\x1b[31mred" in out
