"""Shared test fixtures: where the upstream corpus is, and an in-process CLI runner.

The corpus lives beside the checkout in ../shared/corpus (CI always has it); tests that need it skip cleanly
when it is absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
OPENPAI = CORPUS / "openpai"
CASES = Path(__file__).resolve().parent / "cases"  # validation cases: every file gets a golden diagnostic snapshot
JOBS = Path(__file__).resolve().parent / "jobs"    # valid jobs written for other tests (submit, follow)

needs_corpus = pytest.mark.skipif(not OPENPAI.is_dir(), reason="../shared/corpus is not beside this checkout")


def corpus_files(folder: str) -> list[Path]:
    base = OPENPAI / folder
    if not base.is_dir():
        return []
    return sorted(p for p in base.iterdir() if p.suffix in (".yaml", ".yml"))


@pytest.fixture(autouse=True)
def state_home(tmp_path, monkeypatch):
    """Local runs go to $XDG_STATE_HOME/paictl/runs: every test gets its own, never the user's."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path / "state" / "paictl" / "runs"


@pytest.fixture
def run_cli():
    """Run the real CLI in-process; returns (exit_code, stdout, stderr)."""
    from typer.testing import CliRunner

    from paictl.cli.app import app

    def run(*args: str, input: str | bytes | None = None):
        result = CliRunner().invoke(app, list(args), input=input, catch_exceptions=False)
        return result.exit_code, result.stdout, result.stderr

    return run


@pytest.fixture
def emulator(tmp_path):
    """A Kubernetes API server emulator (tests/kube_emulator) on 127.0.0.1, one per test, with a kubeconfig for it
    at `emulator.kubeconfig`. Speed 200: a simulated 10-minute phase lasts 3 real seconds."""
    from kube_emulator import Emulator

    with Emulator(speed=200, bookmark_interval=0.5) as emu:
        emu.write_kubeconfig(tmp_path / "kubeconfig")
        yield emu


@pytest.fixture(scope="session")
def peer(request):
    """The unchanged OpenPAI marketplace server (tests/marketplace_peer), one per session, started on first use; its
    identity provider is the session's real OpenPAI rest-server (`openpai_stack`).

    Without `../shared` (or node, npm, PostgreSQL) the tests that use it skip; under CI a missing tool fails them,
    since CI provisions it (`.ci/provision-marketplace.sh`, `.ci/provision-openpai.sh`)."""
    import os

    from marketplace_peer import MarketplacePeer, PeerUnavailable, missing
    from marketplace_peer.peer import UPSTREAM

    reason = missing()
    if reason is not None and (not os.environ.get("CI") or not UPSTREAM.is_dir()):
        pytest.skip(reason)
    if reason is not None:
        pytest.fail(f"CI provisions the marketplace server's tools, yet {reason}")
    running = MarketplacePeer(request.getfixturevalue("openpai_stack"))
    try:
        running.__enter__()
    except PeerUnavailable as error:
        if os.environ.get("CI"):
            raise
        pytest.skip(str(error))
    yield running
    running.__exit__(None, None, None)


@pytest.fixture(scope="session")
def openpai_stack():
    """The unchanged OpenPAI rest-server and database-controller with their stand-ins (tests/openpai_peer), started
    once per session; skipped without ../shared/peers."""
    from openpai_peer.fixtures import running_stack

    yield from running_stack()


@pytest.fixture
def pai_user(openpai_stack, tmp_path):
    """Alice on `openpai_stack`: her clusters file (alias `lab`, through pylon), her token, the CLI."""
    from openpai_peer.harness import PaiUser

    return PaiUser(openpai_stack, tmp_path)


@pytest.fixture
def hived_user(openpai_stack, tmp_path):
    """Alice on the stack's second rest-server, the one with LAUNCHER_SCHEDULER=hivedscheduler."""
    from openpai_peer.harness import PaiUser

    return PaiUser(openpai_stack, tmp_path, server=openpai_stack.hived())


@pytest.fixture(scope="session")
def kube_control_plane(tmp_path_factory):
    """A real Kubernetes control plane (tests/kube_real: kube-apiserver, controllers, kwok nodes, JobSet,
    FrameworkController, Kueue), one per session, from the binaries .ci/provision-kube.sh builds. Skipped when they
    are not built; under CI a missing part fails."""
    from kube_real.fixtures import running_control_plane

    yield from running_control_plane(tmp_path_factory.mktemp("kube-real"))


@pytest.fixture
def real_cluster(kube_control_plane, request, tmp_path):
    """The session's real control plane seen from a namespace of this test's own (`real_cluster.kubeconfig`)."""
    from kube_real.fixtures import RealCluster

    cluster = RealCluster(kube_control_plane, request.node.name, tmp_path)
    yield cluster
    cluster.cleanup()
