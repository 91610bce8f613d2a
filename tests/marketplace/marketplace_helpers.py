"""Shared by the marketplace tests: item files written into a temporary folder, and running paictl for real."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_ITEMS = ROOT / "examples" / "marketplace"

VALID_JOB = textwrap.dedent("""\
    protocolVersion: 2
    name: tiny
    type: job
    prerequisites:
      - name: base
        type: dockerimage
        uri: python:3.11-slim
    taskRoles:
      main:
        instances: 1
        dockerImage: base
        resourcePerInstance: {cpu: 1, memoryMB: 256, gpu: 0}
        commands:
          - echo hello
    """)


def write_item(folder: Path, name: str = "tiny-template", *, author: str = "alice", extra: str = "",
               protocol: str | None = None, file_name: str = "item.yaml",
               summary: str = "A tiny job for tests") -> Path:
    """An item file whose job is `protocol` (YAML text, written as a literal block), by default VALID_JOB."""
    folder.mkdir(parents=True, exist_ok=True)
    body = textwrap.indent(protocol if protocol is not None else VALID_JOB, "  ")
    path = folder / file_name
    path.write_text(f"name: {name}\nauthor: {author}\ntype: template\nsummary: {summary}\n{extra}"
                    f"protocol: |\n{body}", encoding="utf-8")
    return path


def paictl(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
           input: str | None = None) -> subprocess.CompletedProcess:
    """paictl as a real process (what CI runs), with a clean environment apart from `env`."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("PAICTL_")}
    return subprocess.run([sys.executable, "-m", "paictl", *args], capture_output=True, text=True, timeout=120,
                          env={**base, **(env or {})}, cwd=cwd, input=input)
