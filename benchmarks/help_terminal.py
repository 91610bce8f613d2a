"""`paictl --help` on a terminal (rich's help, as a user sees it) against the fair peer: a minimal typer app's
`--help` on a terminal, which draws the same rich help for one command. Both run on a pseudo-terminal of 120 columns,
A B A B; the ratio is the median of the per-round ratios.

    python benchmarks/help_terminal.py [--rounds 15]

Goal (issue 43): <= 1.3x the minimal app. (The pipe case, <= 1.3x `import typer`, is in startup.py.)

    python benchmarks/help_terminal.py    # with the interpreter of a non-editable install (benchmarks/installed.py)
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time

from installed import console_script
from interleave import ENV

GOAL = 1.3
MINIMAL_APP = '''import typer

app = typer.Typer()


@app.command()
def hello(name: str = typer.Option("world", help="Who to greet.")) -> None:
    """Say hello."""
    print(f"hello {name}")


@app.command()
def bye() -> None:
    """Say goodbye."""


app()
'''


def on_a_terminal(argv: list[str]) -> tuple[float, int, bytes]:
    """(wall seconds, exit code, what it drew) of one run with a pseudo-terminal as stdout and stderr."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave,
                               env={**ENV, "TERM": "xterm-256color", "COLUMNS": "120"})
    os.close(slave)
    drawn = bytearray()
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        drawn += chunk
    code = process.wait()
    elapsed = time.perf_counter() - started
    os.close(master)
    return elapsed, code, bytes(drawn)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    rounds = parser.parse_args().rounds
    paictl = console_script()  # a normal install: an editable one's import hook slows both sides
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as script:
        script.write(MINIMAL_APP)
    commands = {"paictl": [paictl, "--help"], "typer-app": [sys.executable, script.name, "--help"]}
    for argv in commands.values():  # warm-up, and both must draw rich's help
        _, code, drawn = on_a_terminal(argv)
        assert code == 0 and b"\xe2\x94\x80" in drawn, (argv, drawn[:200])  # rich's box lines
    ratios, times = [], {name: [] for name in commands}
    for _ in range(rounds):
        walls = {name: on_a_terminal(argv)[0] for name, argv in commands.items()}
        for name, wall in walls.items():
            times[name].append(wall)
        ratios.append(walls["paictl"] / walls["typer-app"])
    os.unlink(script.name)
    ratio = statistics.median(ratios)
    load = os.getloadavg()[0]
    print(f"`paictl --help` / a minimal typer app's `--help`, both on a terminal: {ratio:.2f}x "
          f"({statistics.median(times['paictl']):.3f} s / {statistics.median(times['typer-app']):.3f} s), "
          f"goal <= {GOAL}x, {'ok' if ratio <= GOAL else 'MISS'} (load {load:.1f})")
    return 0 if ratio <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
