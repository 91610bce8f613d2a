"""Renders docs/images/status-live.svg: the live view of a real `paictl submit --follow` run on this machine.

paictl runs on a pseudo-terminal (so it draws its live table, as it does for a user), the job is the tutorial's
examples/local-ping-pong.yaml as host processes, and the terminal's last frame is saved as SVG by rich, the library
that drew it. Run from the repository root: `python docs/scripts/status_screenshot.py` (a few seconds).
"""

from __future__ import annotations

import io
import os
import pty
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COLUMNS = 110
#: rich's Live redraws a frame by moving the cursor up over the previous one and erasing its lines.
REDRAW = re.compile(r"(?:\x1b\[2K)?(?:\x1b\[1A\x1b\[2K)+")


def run_on_a_terminal(argv: list[str], cwd: Path, env: dict[str, str]) -> str:
    controller, terminal = pty.openpty()
    os.set_blocking(controller, True)
    process = subprocess.Popen(argv, cwd=cwd, env=env, stdin=terminal, stdout=terminal, stderr=subprocess.DEVNULL)
    os.close(terminal)
    chunks = []
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    process.wait(timeout=120)
    os.close(controller)
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {process.returncode}")
    return b"".join(chunks).decode("utf-8", "replace")


def last_frame(stream: str) -> str:
    frame = REDRAW.split(stream)[-1]
    frame = re.sub(r"\x1b\[\?25[lh]", "", frame)  # cursor hide/show
    return frame.replace("\r\n", "\n").strip("\n")


def main() -> None:
    from rich.console import Console
    from rich.text import Text

    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        shutil.copytree(ROOT / "examples", work / "examples")
        env = {**os.environ, "HOME": str(work / "home"), "COLUMNS": str(COLUMNS), "LINES": "40", "TERM": "xterm-256color",
               "KUBECONFIG": str(work / "no-cluster"), "XDG_STATE_HOME": str(work / "state")}
        stream = run_on_a_terminal([os.path.join(os.path.dirname(sys.executable), "paictl"), "submit",
                                    "examples/local-ping-pong.yaml", "--target", "local", "--runtime", "host",
                                    "--follow"], work, env)
    frame = last_frame(stream).replace(scratch, "/home/you")
    console = Console(record=True, width=COLUMNS, force_terminal=True, color_system="truecolor", file=io.StringIO())
    console.print("$ paictl submit examples/local-ping-pong.yaml --target local --follow", style="bold")
    console.print(Text.from_ansi(frame))
    out = ROOT / "docs" / "images" / "status-live.svg"
    console.save_svg(str(out), title="paictl submit --follow (live view)")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
