"""No test sends a DNS query off the machine (issue 38): a name under .invalid, .test or .example is answered inside
the test's own processes (offline_resolver/sitecustomize.py), as a resolver answers a name that does not exist.

Shown in a network namespace with no network at all (`unshare -rn`): there the machine's resolver cannot answer
("Temporary failure in name resolution", EAI_AGAIN), so an EAI_NONAME answer can only come from the hook.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys

import pytest

LOOKUP = ("import socket\n"
          "try:\n"
          "    socket.getaddrinfo('paictl-test.invalid', 443)\n"
          "except socket.gaierror as error:\n"
          "    print(error.errno)\n")


def without_network(command: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    probe = subprocess.run(["unshare", "-rn", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"no network namespace can be made here: {probe.stderr.decode().strip()}")
    return subprocess.run(["unshare", "-rn", *command], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def test_a_reserved_name_is_answered_in_the_process_without_a_query():
    done = without_network([sys.executable, "-c", LOOKUP])
    assert done.stdout.strip() == str(socket.EAI_NONAME), done.stdout + done.stderr


def test_paictl_hears_no_such_name_without_a_network(tmp_path):
    """paictl's own answer, in a child with no network: the name does not exist (the hook's answer); the machine's
    resolver, unreachable there, would have said "Temporary failure in name resolution"."""
    clusters = tmp_path / "paictl" / "openpai-clusters.yaml"
    clusters.parent.mkdir()
    clusters.write_text("clusters:\n  lab: {url: 'http://paictl-test.invalid', user: alice, tokenEnv: LAB_TOKEN}\n")
    done = without_network([sys.executable, "-m", "paictl", "status", "job", "--target", "openpai"],
                           {"XDG_CONFIG_HOME": str(tmp_path), "LAB_TOKEN": "lab-token-0c5e"})
    assert done.returncode == 3 and "Name or service not known" in done.stderr, done.stderr


def test_other_names_still_reach_the_real_resolver():
    assert socket.getaddrinfo("localhost", 80)  # /etc/hosts: no query either
    assert socket.getaddrinfo("127.0.0.1", 80)
