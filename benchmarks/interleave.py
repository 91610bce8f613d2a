"""What every benchmark here shares: commands timed A B A B (never A A A B B B), ratios taken per round, and
each figure printed next to its goal.

The machines these run on are shared: their speed drifts by 1.3-1.5x within minutes. Timing A five times and then
B five times measures the drift as much as A and B; alternating them and taking the median of the per-round ratios
does not. Absolute times are printed for context only; the goals are ratios wherever a peer exists.

Subprocesses run with bytecode caching on (`PYTHONDONTWRITEBYTECODE` removed) and the project compiled first, as a
`pip install` leaves it: otherwise every run would recompile paictl's sources and measure the compiler.
"""

from __future__ import annotations

import compileall
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Sequence

ROOT = Path(__file__).resolve().parents[1]
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
_PACKAGE_DIRS = ("src", "protocol", "compiler", "targets", "schemas", "marketplace")


def prepare() -> None:
    """Byte-compile the project (quietly), as an installed package is."""
    for folder in _PACKAGE_DIRS:
        compileall.compile_dir(str(ROOT / folder), quiet=1)


def tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if not found:
        sys.exit(f"{name} is not installed (pip install -e '.[test]')")
    return found


def run_once(argv: Sequence[str], stdin: bytes | None = None, stdout=subprocess.DEVNULL) -> tuple[float, float, int]:
    """(wall seconds, peak RSS in MB, exit code) of one process."""
    started = time.perf_counter()
    process = subprocess.Popen(list(argv), stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                               stdout=stdout, stderr=subprocess.DEVNULL, env=ENV)
    if stdin is not None:
        assert process.stdin is not None
        process.stdin.write(stdin)
        process.stdin.close()
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    return elapsed, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


class Samples:
    """The runs of one command: wall times, peak RSS and exit codes."""

    def __init__(self) -> None:
        self.walls: list[float] = []
        self.rss: list[float] = []
        self.codes: set[int] = set()

    @property
    def median(self) -> float:
        return statistics.median(self.walls)

    @property
    def peak_mb(self) -> float:
        return max(self.rss)


def interleaved(commands: dict[str, Sequence[str]], rounds: int, warmups: int = 1) -> dict[str, Samples]:
    """Run every command once per round, in order, `rounds` times after `warmups` untimed rounds."""
    samples = {name: Samples() for name in commands}
    for round_ in range(warmups + rounds):
        for name, argv in commands.items():
            wall, rss, code = run_once(argv)
            if round_ >= warmups:
                samples[name].walls.append(wall)
                samples[name].rss.append(rss)
                samples[name].codes.add(code)
    return samples


def ratio(a: Samples, b: Samples) -> float:
    """Median of the per-round ratios a/b (each pair ran back to back)."""
    return statistics.median(x / y for x, y in zip(a.walls, b.walls))


def difference(a: Samples, b: Samples) -> float:
    """Median of the per-round differences a - b, in seconds."""
    return statistics.median(x - y for x, y in zip(a.walls, b.walls))


class Report:
    """Rows of figure / measured / goal / verdict; `finish()` prints them and returns the exit status."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.rows: list[tuple[str, str, str, str]] = []

    def add(self, figure: str, measured: str, goal: str, ok: bool | None) -> None:
        verdict = "" if ok is None else ("ok" if ok else "MISS")
        self.rows.append((figure, measured, goal, verdict))
        print(f"  {figure}: {measured}  (goal {goal})  {verdict}", flush=True)

    def finish(self) -> int:
        widths = [max(len(row[i]) for row in self.rows + [("figure", "measured", "goal", "")]) for i in range(4)]
        print(f"\n{self.title}")
        for row in [("figure", "measured", "goal", ""), *self.rows]:
            print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
        return 1 if any(row[3] == "MISS" for row in self.rows) else 0
