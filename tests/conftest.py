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
CASES = Path(__file__).resolve().parent / "cases"

needs_corpus = pytest.mark.skipif(not OPENPAI.is_dir(), reason="../shared/corpus is not beside this checkout")


def corpus_files(folder: str) -> list[Path]:
    base = OPENPAI / folder
    if not base.is_dir():
        return []
    return sorted(p for p in base.iterdir() if p.suffix in (".yaml", ".yml"))


@pytest.fixture
def run_cli():
    """Run the real CLI in-process; returns (exit_code, stdout, stderr)."""
    from typer.testing import CliRunner

    from paictl.cli.app import app

    def run(*args: str, input: str | bytes | None = None):
        result = CliRunner().invoke(app, list(args), input=input, catch_exceptions=False)
        return result.exit_code, result.stdout, result.stderr

    return run
