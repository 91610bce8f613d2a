"""Where the marketplace sits in the layout: on the protocol core (and schemas, errors, http_answers), below the CLI
only."""

from __future__ import annotations

from test_layout import imported_modules

from conftest import ROOT

ALLOWED = {"paictl.errors", "paictl.http_answers", "paictl.protocol", "paictl.schemas", "paictl.marketplace"}


def test_marketplace_imports_only_the_protocol_core():
    for path in (ROOT / "marketplace").glob("*.py"):
        reached = {m for m in imported_modules(path) if not any(m == a or m.startswith(a + ".") for a in ALLOWED)}
        assert not reached, f"{path.name} imports {sorted(reached)}"


def test_only_the_cli_imports_the_marketplace():
    for layer in ("protocol", "compiler", "targets", "schemas"):
        for path in (ROOT / layer).rglob("*.py"):
            assert not {m for m in imported_modules(path) if m.startswith("paictl.marketplace")}, path
