"""Inputs besides the job (--profile FILE, --exit-spec FILE, the OpenPAI clusters file) are read as a job is: bounded,
devices refused, one line and exit 2, never a hang or a traceback. A task's log (`diagnose --log`) may be large: only
its last 10 MiB is read (its size costs nothing), and a stream is refused past 256 MiB."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys

import pytest

from conftest import ROOT

HELLO = str(ROOT / "examples" / "hello-world.yaml")


def paictl(*args: str, timeout: float = 60, **options):
    return subprocess.run([sys.executable, "-m", "paictl", *args], capture_output=True, text=True, timeout=timeout,
                          **options)


def _address_space_limited() -> None:
    """1.6 GB of address space: paictl maps about 1.1 GB whatever it reads (tests/test_hostile_bounds.py), so reading
    a 3 GiB file whole fails."""
    resource.setrlimit(resource.RLIMIT_AS, (1600 * 1024 * 1024,) * 2)


@pytest.mark.parametrize("option", ["--profile", "--exit-spec"])
def test_a_device_is_refused_in_one_line(option):
    args = ["compile", HELLO, "--profile", "/dev/zero"] if option == "--profile" else \
        ["submit", HELLO, "--target", "local", "--dry-run", "--exit-spec", "/dev/zero"]
    done = paictl(*args)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "not a regular file" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("option", ["--profile", "--exit-spec"])
def test_an_oversized_file_is_refused_without_reading_it_all(tmp_path, option):
    big = tmp_path / "big.yaml"
    with open(big, "wb") as out:
        out.truncate(3 * 1024 ** 3)  # sparse: 3 GiB that would cost 3 GB to read
    args = ["compile", HELLO, "--profile", str(big)] if option == "--profile" else \
        ["submit", HELLO, "--target", "local", "--dry-run", "--exit-spec", str(big)]
    done = paictl(*args)
    assert done.returncode == 2 and "larger than the limit" in done.stderr, done.stderr


def test_a_fifo_without_a_writer_does_not_hang(tmp_path):
    fifo = tmp_path / "profile.yaml"
    os.mkfifo(fifo)
    done = paictl("compile", HELLO, "--profile", str(fifo), timeout=30)
    assert done.returncode in (1, 2) and "Traceback" not in done.stderr


def test_a_missing_profile_file_still_names_the_built_in_ones():
    done = paictl("compile", HELLO, "--profile", "opnepai")
    assert done.returncode == 2
    assert done.stderr == "paictl: error: opnepai: no such profile file (built-in profiles: default, openpai)\n"


def test_a_huge_log_is_read_from_its_end_only(tmp_path):
    log = tmp_path / "task.log"
    with open(log, "wb") as out:
        out.seek(3 * 1024 ** 3)  # sparse: 3 GiB of NUL bytes that would cost 3 GB to read
        out.write(b"\nTraceback (most recent call last):\nSyntaxError: invalid syntax\n")
    done = paictl("diagnose", "--exit-code", "1", "--log", str(log), "--format", "json",
                  preexec_fn=_address_space_limited)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["code"] == 231 and report["tail_only"] == ["user"]
    assert report["matched"][0]["text"] == "SyntaxError: invalid syntax"
    text = paictl("diagnose", "--exit-code", "1", "--log", str(log), preexec_fn=_address_space_limited)
    assert "user log line 2 of its last 10 MiB: SyntaxError" in text.stdout


def test_a_small_log_is_read_whole_with_its_line_numbers(tmp_path):
    log = tmp_path / "task.log"
    log.write_text("ok\n" * 5 + "SyntaxError: invalid syntax\n")
    report = json.loads(paictl("diagnose", "--exit-code", "1", "--log", str(log), "-o", "json").stdout)
    assert report["tail_only"] == [] and report["matched"][0]["line"] == 6


@pytest.mark.parametrize("option", ["--log", "--platform-log"])
def test_a_device_log_is_refused_in_one_line(option):
    done = paictl("diagnose", "--exit-code", "1", option, "/dev/zero")
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "not a regular file" in done.stderr and option in done.stderr


def test_an_endless_log_on_standard_input_is_refused_past_256_mib():
    with open("/dev/zero", "rb") as endless:
        done = paictl("diagnose", "--exit-code", "1", "--log", "-", stdin=endless, preexec_fn=_address_space_limited)
    assert done.returncode == 2 and "past 256 MiB" in done.stderr and done.stderr.count("\n") == 1


def test_a_log_fifo_is_read_to_its_end(tmp_path):
    fifo = tmp_path / "task.log"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", f"printf 'x\\nbash: nvcc: command not found\\n' > {fifo}"])
    done = paictl("diagnose", "--exit-code", "127", "--log", str(fifo), "-o", "json")
    writer.wait(timeout=30)
    assert json.loads(done.stdout)["matched"] == [{"log": "user", "line": 2, "text": "bash: nvcc: command not found"}]


def test_the_clusters_file_is_read_bounded(tmp_path):
    config = tmp_path / "config" / "paictl"
    config.mkdir(parents=True)
    clusters = config / "openpai-clusters.yaml"
    with open(clusters, "wb") as out:
        out.truncate(3 * 1024 ** 3)
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    done = paictl("openpai", "clusters", env=env, preexec_fn=_address_space_limited)
    # an environment file: exit 3 (the exit-code table), one line
    assert done.returncode == 3 and "larger than the limit" in done.stderr and done.stderr.count("\n") == 1
    clusters.unlink()
    os.symlink("/dev/zero", clusters)
    done = paictl("openpai", "clusters", env=env)
    assert done.returncode == 3 and "not a regular file" in done.stderr and "the job" not in done.stderr
