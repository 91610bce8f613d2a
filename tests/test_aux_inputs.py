"""Inputs besides the job (--profile FILE, --exit-spec FILE) are read as a job is: bounded, devices refused, one line
and exit 2, never a hang or a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import ROOT

HELLO = str(ROOT / "examples" / "hello-world.yaml")


def paictl(*args: str, timeout: float = 60):
    return subprocess.run([sys.executable, "-m", "paictl", *args], capture_output=True, text=True, timeout=timeout)


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
