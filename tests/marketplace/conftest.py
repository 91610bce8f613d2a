"""The real marketplace server, one per test session (tests/marketplace_peer): started on first use.

Without `../shared` (or node, npm, PostgreSQL) the tests that need it skip; under CI a missing tool fails them,
since CI provisions it (`.ci/provision-marketplace.sh`).
"""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session")
def peer():
    from marketplace_peer import MarketplacePeer, PeerUnavailable, missing
    from marketplace_peer.peer import UPSTREAM

    reason = missing()
    if reason is not None and (not os.environ.get("CI") or not UPSTREAM.is_dir()):
        pytest.skip(reason)
    if reason is not None:
        pytest.fail(f"CI provisions the marketplace server's tools, yet {reason}")
    running = MarketplacePeer()
    try:
        running.__enter__()
    except PeerUnavailable as error:
        if os.environ.get("CI"):
            raise
        pytest.skip(str(error))
    yield running
    running.__exit__(None, None, None)
