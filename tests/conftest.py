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


def _answer_reserved_names_here() -> None:
    """No test sends a DNS query off the machine: names under .invalid/.test/.example are answered inside this
    process and every Python process it starts (offline_resolver/sitecustomize.py, first on PYTHONPATH)."""
    import os
    import runpy

    site = str(Path(__file__).resolve().parent / "offline_resolver")
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    if site not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([site, *filter(None, paths)])
    runpy.run_path(os.path.join(site, "sitecustomize.py"))


_answer_reserved_names_here()

needs_corpus = pytest.mark.skipif(not OPENPAI.is_dir(), reason="../shared/corpus is not beside this checkout")


def corpus_files(folder: str) -> list[Path]:
    base = OPENPAI / folder
    if not base.is_dir():
        return []
    return sorted(p for p in base.iterdir() if p.suffix in (".yaml", ".yml"))


def every_corpus_job() -> list[Path]:
    """The corpus's valid, nonconforming and invalid jobs; skips the calling test when the corpus is absent."""
    files = corpus_files("valid") + corpus_files("nonconforming") + corpus_files("invalid")
    if not files:
        pytest.skip("../shared/corpus is not beside this checkout")
    return files


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


@pytest.fixture
def peer():
    """The marketplace double (tests/marketplace_double) on 127.0.0.1, a fresh one per test, seeded with the 30
    example items the real server seeds; `peer.user()` makes users of its identity provider, `peer.items_of(author)`
    shows what it holds. It answers as the unchanged server's recordings do (tests/marketplace/
    test_marketplace_double_contract.py); the marketplace server is in no package registry, so no test runs it."""
    from marketplace_double import MarketplaceDouble

    with MarketplaceDouble() as double:
        yield double


@pytest.fixture
def pai_user(tmp_path, monkeypatch):
    """Alice on a default-scheduler OpenPAI double (tests/openpai_server), known by the alias `lab` through pylon
    (`.../rest-server`, as a deployment is reached), with a real login token of the double in
    PAICTL_TEST_OPENPAI_TOKEN. Each test has its own server: the double starts in milliseconds. The OpenPAI
    rest-server is in no package registry; the double answers as its recordings do (tests/openpai_server/
    test_contract.py)."""
    from openpai_server import OpenPaiServer

    with OpenPaiServer() as server:
        yield _openpai_user(server, tmp_path, monkeypatch)


@pytest.fixture
def hived_user(tmp_path, monkeypatch):
    """Alice on a HiveD-scheduler OpenPAI double (JOB_HISTORY=false, virtual clusters default and vc1), a member of
    vc1's group."""
    from openpai_server import OpenPaiServer

    with OpenPaiServer(hived=True) as server:
        server.accounts.add_group(server.accounts.groups["vc1"], "alice")
        yield _openpai_user(server, tmp_path, monkeypatch)


def _openpai_user(server, tmp_path, monkeypatch):
    from openpai_server.harness import TOKEN_ENV, Harness

    harness = Harness(server, tmp_path, server.accounts.login("alice"), alias="lab", url=server.api_url)
    monkeypatch.setenv(TOKEN_ENV, harness.token)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(harness.config_home))
    return harness


@pytest.fixture(scope="session")
def kube_control_plane(tmp_path_factory):
    """A real Kubernetes control plane (tests/kube_real: kube-apiserver, controllers, kwok nodes, JobSet,
    FrameworkController; Kueue's tests start a plane of their own), one per session, from the binaries
    .ci/provision-kube.sh builds. Skipped when they are not built; under CI a missing part fails."""
    from kube_real.fixtures import running_control_plane

    yield from running_control_plane(tmp_path_factory.mktemp("kube-real"))


@pytest.fixture
def real_cluster(kube_control_plane, request, tmp_path):
    """The session's real control plane seen from a namespace of this test's own (`real_cluster.kubeconfig`)."""
    from kube_real.fixtures import RealCluster

    cluster = RealCluster(kube_control_plane, request.node.name, tmp_path)
    yield cluster
    cluster.cleanup()
