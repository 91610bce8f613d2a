"""The OpenPAI fixtures: a user of the OpenPAI double (tests/openpai_server), as the real server was reached.

`pai_user` is alice on a default-scheduler server, known by the alias `lab` through pylon (`.../rest-server`, as a
deployment is reached), with a real login token of the double in PAICTL_TEST_OPENPAI_TOKEN; `hived_user` is alice on a
HiveD-scheduler server (JOB_HISTORY=false, virtual clusters default and vc1), a member of vc1's group. Each test has
its own server: the double starts in milliseconds.
"""

from __future__ import annotations

import pytest
from openpai_server import OpenPaiServer
from openpai_server.harness import TOKEN_ENV, Harness

ALIAS = "lab"


def _user(server: OpenPaiServer, tmp_path, monkeypatch) -> Harness:
    harness = Harness(server, tmp_path, server.accounts.login("alice"), alias=ALIAS, url=server.api_url)
    monkeypatch.setenv(TOKEN_ENV, harness.token)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(harness.config_home))
    return harness


@pytest.fixture
def pai_user(tmp_path, monkeypatch):
    with OpenPaiServer() as server:
        yield _user(server, tmp_path, monkeypatch)


@pytest.fixture
def hived_user(tmp_path, monkeypatch):
    with OpenPaiServer(hived=True) as server:
        server.accounts.add_group(server.accounts.groups["vc1"], "alice")
        yield _user(server, tmp_path, monkeypatch)
