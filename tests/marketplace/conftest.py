"""The marketplace tests' server: the marketplace double (tests/marketplace_double), a fresh one per test.

Test modules across the suite write `from conftest import ROOT` (and CORPUS, OPENPAI, CASES, JOBS, needs_corpus,
corpus_files), meaning tests/conftest.py. pytest imports every conftest.py under the one module name `conftest`,
so once this file is imported that name is this module: it re-exports those names of tests/conftest.py (loaded under
a name of its own) so that such imports keep meaning the same thing wherever collection has got to.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest


def _suite_conftest():
    path = Path(__file__).resolve().parents[1] / "conftest.py"
    spec = importlib.util.spec_from_file_location("paictl_tests_suite_conftest", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_suite = _suite_conftest()
ROOT, CORPUS, OPENPAI, CASES, JOBS = _suite.ROOT, _suite.CORPUS, _suite.OPENPAI, _suite.CASES, _suite.JOBS
needs_corpus, corpus_files = _suite.needs_corpus, _suite.corpus_files


@pytest.fixture
def peer():
    """The marketplace double on 127.0.0.1, seeded with the 30 example items the real server seeds; `peer.user()`
    makes users of its identity provider, `peer.items_of(author)` shows what it holds. It answers as the unchanged
    server's recordings do (test_marketplace_double_contract.py); the marketplace server is in no package registry,
    so no test runs the real one."""
    from marketplace_double import MarketplaceDouble

    with MarketplaceDouble() as double:
        yield double
