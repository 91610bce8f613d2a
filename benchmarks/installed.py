"""The paictl a user runs, for the benchmarks that time its start-up: the console script of a normal (non-editable)
install, and the floor that script sets before paictl's first line runs.

An editable install (`pip install -e .`) puts an import hook in front of every import, which made `python -c pass`
2.2x slower there: a start-up figure taken in one compares paictl against a handicapped interpreter, and any peer
against paictl plus the hook. `console_script()` refuses one and says how to make the right environment.

The installer writes the console script (`bin/paictl`): pip 26's imports `sys` only, pip 23's imported `re` too
(to tidy `sys.argv[0]`), which costs more instructions than the interpreter's own start-up. Every `paictl` command
pays what its script does, whatever paictl does. `wrapper_floor()` is that same script with paictl's import replaced
by a function that returns at once: what the best possible paictl would cost with this installer.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
import tempfile
from pathlib import Path

ADVICE = ("make a normal install and run the benchmark with its interpreter: python3 -m venv /tmp/paictl-bench && "
          "/tmp/paictl-bench/bin/pip install '.[kubernetes]' && /tmp/paictl-bench/bin/python {script}")


def console_script() -> str:
    """`paictl` beside this interpreter, from a non-editable install of the project; exits with advice otherwise."""
    from importlib.metadata import PackageNotFoundError, distribution

    advice = ADVICE.format(script=" ".join(sys.argv))
    try:
        dist = distribution("paictl")
    except PackageNotFoundError:
        sys.exit(f"paictl is not installed for {sys.executable}; {advice}")
    direct = json.loads(dist.read_text("direct_url.json") or "{}")
    if direct.get("dir_info", {}).get("editable"):
        sys.exit(f"paictl is installed editable for {sys.executable} (its import hook slows every start-up, so the "
                 f"figures would not be what a user sees); {advice}")
    script = Path(sys.executable).parent / "paictl"
    if not os.access(script, os.X_OK):
        sys.exit(f"{script} is missing; {advice}")
    return str(script)


def wrapper_floor(script: str, folder: str) -> str:
    """A copy of the console script (in `folder`) that does all it does except import and run paictl."""
    text = Path(script).read_text(encoding="utf-8")
    floor, count = re.subn(r"^(\s*)from paictl\.cli\.entry import main$", r"\1main = int  # returns 0 at once",
                           text, flags=re.MULTILINE)
    if count != 1:
        sys.exit(f"{script} does not import paictl.cli.entry.main as an installer's console script does")
    handle, path = tempfile.mkstemp(prefix="paictl-floor-", dir=folder)
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        out.write(floor)
    os.chmod(path, stat.S_IRWXU)
    return path


def load() -> str:
    """The machine's load average (1, 5, 15 minutes), printed with every figure: the machines are shared."""
    return "load average " + ", ".join(f"{value:.2f}" for value in os.getloadavg())
