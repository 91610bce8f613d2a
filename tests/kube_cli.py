"""Running the real CLI as a subprocess against the Kubernetes API emulator: shared by the end-to-end tests."""

from __future__ import annotations

import subprocess
import sys
import time

from conftest import ROOT


def paictl(emu, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """`python -m paictl ARGS --kubeconfig <the emulator's>`, from the checkout's root, output as text."""
    return subprocess.run([sys.executable, "-m", "paictl", *args, "--kubeconfig", str(emu.kubeconfig)],
                          capture_output=True, text=True, cwd=ROOT, timeout=timeout)


def start(emu, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "paictl", *args, "--kubeconfig", str(emu.kubeconfig)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)


def wait_for(predicate, seconds: float = 20.0):
    """The first truthy value of `predicate()`, polled every 50 ms; AssertionError after `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")
