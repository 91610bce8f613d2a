"""The OpenPAI tests' fixtures: one real server stack for the whole session (tests/openpai_peer), a user per test.

Without ../shared/peers the real-server tests are skipped; under CI (CI set) a missing node, npm or PostgreSQL
fails them instead, as a missing kubectl fails the kubectl tests.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def openpai_stack():
    from openpai_peer import install
    from openpai_peer.stack import Stack, unavailable_reason

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


@pytest.fixture
def pai_user(openpai_stack, tmp_path):
    from openpai_peer.harness import PaiUser

    return PaiUser(openpai_stack, tmp_path)


@pytest.fixture
def hived_user(openpai_stack, tmp_path):
    from openpai_peer.harness import PaiUser

    return PaiUser(openpai_stack, tmp_path, server=openpai_stack.hived())
