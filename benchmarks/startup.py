"""Start-up, where users wait on every commit and keystroke: `paictl --help` against a bare `import typer`,
`paictl validate` of one file (the pre-commit case) against the floor script (floor_validate.py), `paictl lsp`
(started by an editor, its client gone at once) against importing the server's own libraries (pygls and
lsprotocol), and `paictl fix` of the examples against `paictl validate` of them.

    python benchmarks/startup.py [--rounds 15]

Goals (issues 19 and 43): --help <= 1.3x `python -c "import typer"`; validate of 1 file <= 1.5x the floor;
lsp <= 1.1x the bare pygls + lsprotocol import; fix <= 1.3x validate.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from interleave import ROOT, Report, interleaved, prepare, ratio, tool

ONE_FILE = ROOT / "examples" / "parameter-server.yaml"
HELP_GOAL = 1.3
VALIDATE_GOAL = 1.5
LSP_GOAL = 1.1
FIX_GOAL = 1.3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    prepare()
    paictl = tool("paictl")
    schema = str(ROOT / "schemas" / "job.schema.json")
    report = Report("start-up (median of per-round ratios, A B A B)")
    import shutil
    import tempfile

    examples = Path(tempfile.mkdtemp(prefix="paictl-fix-bench-")) / "examples"
    shutil.copytree(ROOT / "examples", examples)  # fix writes: never the checkout's files
    runs = interleaved({
        "help": [paictl, "--help"],
        "typer": [sys.executable, "-c", "import typer"],
        "validate": [paictl, "validate", str(ONE_FILE)],
        "floor": [sys.executable, str(ROOT / "benchmarks" / "floor_validate.py"), schema, str(ONE_FILE)],
        "lsp": [paictl, "lsp"],
        "pygls": [sys.executable, "-c", "import pygls.lsp.server, lsprotocol.types"],
        "fix": [paictl, "fix", str(examples)],
        "validate-all": [paictl, "validate", str(examples)],
    }, args.rounds)
    assert runs["validate"].codes == runs["floor"].codes == {0}, "both must find the file valid"
    for (a, b), figure, goal in ((("help", "typer"), "`paictl --help` / `import typer`", HELP_GOAL),
                                 (("validate", "floor"), "`paictl validate` 1 file / floor script", VALIDATE_GOAL),
                                 (("lsp", "pygls"), "`paictl lsp` start / `import pygls.lsp.server, lsprotocol.types`",
                                  LSP_GOAL),
                                 (("fix", "validate-all"), "`paictl fix examples/` / `paictl validate examples/`",
                                  FIX_GOAL)):
        measured = ratio(runs[a], runs[b])
        report.add(figure, f"{measured:.2f}x ({runs[a].median:.3f} s / {runs[b].median:.3f} s)", f"<= {goal}x",
                   measured <= goal)
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
