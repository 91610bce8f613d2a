"""The bodies of the OpenPAI fixtures declared in tests/conftest.py: one real server stack per test session.

Without ../shared/peers the real-server tests are skipped; under CI (CI set) a missing node, npm or PostgreSQL
fails them instead, as a missing kubectl fails the kubectl tests.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

from . import install
from .stack import Stack, unavailable_reason


def running_stack() -> Iterator[Stack]:
    reason = unavailable_reason()
    if reason is not None:
        if os.environ.get("CI") and install.PEER.is_dir():
            pytest.fail(f"the OpenPAI server stack cannot run under CI: {reason}")
        pytest.skip(reason)
    # its own folder, not pytest's: another pytest session of the same user prunes old pytest-N folders
    folder = Path(tempfile.mkdtemp(prefix="paictl-openpai-stack-"))
    try:
        stack = Stack(folder).start()
        yield stack
        stack.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
