"""Output under hostile conditions: `compile -o DIR` writes all objects or none and never through a planted symlink;
nothing a user or a file controls reaches the terminal raw; standard output that cannot be written gives a
documented exit code, never a traceback."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paictl.compiler import emit
from paictl.compiler.emit import write_files
from paictl.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
JOB = ROOT / "examples" / "local-ping-pong.yaml"

OBJECTS = [{"kind": "Secret", "metadata": {"name": "job-configcred"}, "data": {"k": "c2VjcmV0"}},
           {"kind": "PriorityClass", "metadata": {"name": "job-priority"}, "value": 1},
           {"kind": "Framework", "metadata": {"name": "job"}, "spec": {}}]


def test_secret_files_are_owner_only_and_others_readable(tmp_path):
    written = {p.name: p for p in write_files(OBJECTS, tmp_path / "out")}
    assert stat.S_IMODE(written["secret-job-configcred.yaml"].stat().st_mode) == 0o600
    assert stat.S_IMODE(written["framework-job.yaml"].stat().st_mode) == 0o644
    assert sorted(os.listdir(tmp_path / "out")) == sorted(written)  # no temporary folder left behind


def test_a_planted_symlink_is_replaced_not_followed(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "secret-job-configcred.yaml").symlink_to(outside)
    write_files(OBJECTS, out)
    assert outside.read_text() == "keep me\n"
    assert not (out / "secret-job-configcred.yaml").is_symlink()
    assert "c2VjcmV0" in (out / "secret-job-configcred.yaml").read_text()


def test_stale_companions_of_the_job_are_removed_other_files_kept(tmp_path):
    out = tmp_path / "out"
    write_files([*OBJECTS, {"kind": "Secret", "metadata": {"name": "job-regcred"}}], out)
    (out / "notes.yaml").write_text("mine\n")
    (out / "secret-job-2-configcred.yaml").write_text("another job's\n")
    write_files(OBJECTS, out)
    assert sorted(os.listdir(out)) == sorted(["framework-job.yaml", "priorityclass-job-priority.yaml",
                                              "secret-job-configcred.yaml", "notes.yaml",
                                              "secret-job-2-configcred.yaml"])


def test_a_failure_midway_leaves_the_previous_set_untouched(tmp_path, monkeypatch):
    out = tmp_path / "out"
    write_files(OBJECTS, out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    real = emit.to_yaml
    calls = []

    def failing(objects):
        calls.append(1)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        return real(objects).replace("job", "new")

    monkeypatch.setattr(emit, "to_yaml", failing)
    with pytest.raises(InputError, match="No space left on device"):
        write_files(OBJECTS, out)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_a_destination_that_is_a_file_is_one_line_exit_2(tmp_path, run_cli):
    target = tmp_path / "file"
    target.write_text("x")
    code, out, err = run_cli("compile", str(JOB), "--output-dir", str(target))
    assert code == 2 and out == "" and err.count("\n") == 1 and "not a directory" in err


def test_an_unwritable_destination_is_one_line_exit_2(tmp_path, run_cli):
    code, out, err = run_cli("compile", str(JOB), "--output-dir", "/proc/self/paictl-cannot-be-here")
    assert code == 2 and err.count("\n") == 1 and "paictl: error:" in err and "Traceback" not in err


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(st.characters(categories=["Cc", "Cf", "Zl", "Zp"]), min_size=1, max_size=12))
def test_no_control_character_of_a_file_name_reaches_the_terminal(run_cli, controls):
    name = f"job{controls}.yaml".replace("/", "").replace("\x00", "")
    code, out, err = run_cli("validate", "-", "--stdin-name", name, input="a: 1\n")
    shown = out + err
    assert code == 1
    assert not any(c in shown for c in controls if c not in "\n\t" and (ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f
                                                                         or c in "\u2028\u2029\u202e"))


def test_profile_values_and_file_names_are_escaped_in_errors(run_cli, tmp_path):
    code, _, err = run_cli("compile", str(JOB), "--profile", "evil\x1b]0;title\x07\x9b")
    assert code == 2 and "\x1b" not in err and "\x9b" not in err and "\\x1b" in err
    code, _, err = run_cli("validate", str(tmp_path / "missing\x1b[31m\x85.yaml"))
    assert code == 2 and "\x1b" not in err and "\x85" not in err


def test_c1_controls_in_a_source_line_are_escaped_in_text_and_json(run_cli):
    text = "protocolVersion: 2\nname: \"a\\x9b\u009d\"\nnmae: \u009b31m\n"
    for output_format in ("text", "json"):
        code, out, _ = run_cli("validate", "-", "--format", output_format, input=text)
        assert code == 1 and "\u009b" not in out and "\u009d" not in out


def _paictl(args, stdout) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "paictl", *args], stdout=stdout, stderr=subprocess.PIPE, timeout=120)


def test_a_closed_pipe_on_stdout_exits_141_quietly():
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = _paictl(["schema"], write_end)
    finally:
        os.close(write_end)
    assert done.returncode == 141 and done.stderr == b""


@pytest.mark.parametrize("unbuffered", ["1", None], ids=["PYTHONUNBUFFERED", "buffered"])
@pytest.mark.parametrize("output", [["-o", "json"], ["-ojson"]], ids=["typer-free", "typer"])  # -ojson: typer parses
def test_a_reader_that_goes_away_mid_write_exits_141_quietly(tmp_path, unbuffered, output):
    """The reader takes a few bytes of a report larger than a pipe holds, then closes: the write the kernel cut
    short must not pass for a whole one (Python's unbuffered text streams ignore a short write), whether or not
    PYTHONUNBUFFERED is set, as it is in many CI images."""
    job = tmp_path / "job.yaml"
    job.write_text((ROOT / "examples" / "hello-world.yaml").read_text().replace(
        "taskRoles:\n", "taskRoles:\n" + "".join(f"  role{i}: 1\n" for i in range(1000)), 1))
    env = {key: value for key, value in os.environ.items() if key != "PYTHONUNBUFFERED"}
    env.update({"PYTHONUNBUFFERED": unbuffered} if unbuffered else {})
    process = subprocess.Popen([sys.executable, "-m", "paictl", "validate", str(job), *output],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert process.stdout.read(10) == b'{\n  "summa'
    process.stdout.close()
    assert process.wait(timeout=120) == 141 and process.stderr.read() == b""


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
def test_a_full_disk_on_stdout_exits_74_with_one_line():
    with open("/dev/full", "wb") as full:
        done = _paictl(["compile", str(JOB)], full)
    assert done.returncode == 74
    assert done.stderr.decode().count("\n") == 1 and b"No space left on device" in done.stderr


@settings(max_examples=500, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.text(alphabet=st.one_of(st.characters(max_codepoint=0x7F), st.characters(), st.sampled_from(
    ["\x1b", "\x7f", "\x9b", "\u2028", "\u202e", "\u200b", "\ufeff", "\t", "\n", "\r"]))))
def test_status_text_is_escaped_as_one_line_escapes_it(text):
    """`status` tables skip the escaping of plain ASCII (cli/live.py `shown`), which must not let through anything
    `one_line` escapes."""
    from paictl.cli.live import shown
    from paictl.protocol.diagnostics import one_line

    assert shown(text) == one_line(text)
