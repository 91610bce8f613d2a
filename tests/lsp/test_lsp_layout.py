"""Where the language server sits: an interface layer beside the CLI. It may import protocol, compiler, targets,
schemas and marketplace; nothing below it imports it, and of the CLI only the `paictl lsp` command does."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LSP = ROOT / "src" / "paictl" / "lsp"


def imported(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return {name for name in found if name.startswith("paictl.")}


def test_the_server_imports_only_the_layers_below_the_cli():
    assert sorted(p.name for p in LSP.glob("*.py"))
    for path in LSP.glob("*.py"):
        layers = {name.split(".")[1] for name in imported(path)}
        assert layers <= {"protocol", "compiler", "targets", "schemas", "marketplace", "lsp", "errors"}, (path.name, layers)


def test_nothing_but_the_lsp_command_imports_the_server():
    """The command is lsp_cmd.py (its typer options) and lsp_run.py (its body, which entry.py starts typer-free)."""
    folders = [ROOT / name for name in ("protocol", "compiler", "targets", "marketplace", "schemas")]
    folders.append(ROOT / "src" / "paictl" / "cli")
    for folder in folders:
        for path in folder.rglob("*.py"):
            if path.name in ("lsp_cmd.py", "lsp_run.py"):
                continue
            assert not {m for m in imported(path) if m.startswith("paictl.lsp")}, path
