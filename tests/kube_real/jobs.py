"""Jobs for the real control plane, where kwok decides a pod's outcome from its commands (stages.yaml)."""

from __future__ import annotations

from pathlib import Path


def with_commands(source: Path, command: str, path: Path) -> Path:
    """`source` with every task role's commands replaced by the one `command` (`exit 1`: the task fails;
    `sleep infinity`: it runs until deleted), written to `path`."""
    lines: list[str] = []
    skipping = None
    for line in source.read_text().splitlines():
        indent = len(line) - len(line.lstrip())
        if skipping is not None:
            if line.strip().startswith("- ") and indent >= skipping:
                continue
            skipping = None
        lines.append(line)
        if line.strip() == "commands:":
            skipping = indent
            lines.append(" " * (indent + 2) + f"- {command}")
    path.write_text("\n".join(lines) + "\n")
    return path
