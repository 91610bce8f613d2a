"""Start-up, where users wait on every commit and keystroke: `paictl --help` against a bare `import typer`,
`paictl validate` of one file (the pre-commit case) against the floor script (floor_validate.py), `paictl lsp`
(started by an editor, its client gone at once) against importing the server's own libraries (pygls and
lsprotocol), `paictl fix` of the examples against `paictl validate` of them, `paictl status` of a local run
(and the listing of local runs) against `paictl --version`, and the groups' start-up against `paictl --version` too:
the help of `paictl marketplace`, `grass` and `openpai`, and one offline command of each (listing a local
marketplace index of the three example items, the plan of examples/grass-hello.yaml on clusters/grass-lab.yaml, one
configured OpenPAI cluster), which build only their own command.

paictl is the console script of a normal install (benchmarks/installed.py refuses an editable one, whose import hook
slows every interpreter of its venv and compresses every ratio here).

    python benchmarks/startup.py [--rounds 15]    # with the interpreter of a non-editable install

Goals (issues 19 and 43): --help <= 1.3x `python -c "import typer"`; validate of 1 file <= 1.5x the floor;
lsp <= 1.1x the bare pygls + lsprotocol import; fix <= 1.3x validate; status of local runs <= 1.3x --version.
The groups' rows have no goal: they show what a group and one of its commands add to `--version`.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from installed import console_script, load
from interleave import ENV, ROOT, Report, interleaved, ratio

ONE_FILE = ROOT / "examples" / "parameter-server.yaml"
HELP_GOAL = 1.3
VALIDATE_GOAL = 1.5
LSP_GOAL = 1.1
FIX_GOAL = 1.3
STATUS_GOAL = 1.3
#: A job of one short task, run on the host (no docker engine needed): what `status` then shows.
LOCAL_JOB = ROOT / "examples" / "hello-world.yaml"
#: A Grass job and a cluster it fits on: what `paictl grass plan` places, offline.
GRASS_JOB, GRASS_CLUSTER = ROOT / "examples" / "grass-hello.yaml", ROOT / "clusters" / "grass-lab.yaml"
#: A group's help and one offline command of it, each against `paictl --version` (figure, key, arguments).
GROUP_ROWS = (("`paictl marketplace --help`", "marketplace-help", ["marketplace", "--help"]),
              ("`paictl grass --help`", "grass-help", ["grass", "--help"]),
              ("`paictl openpai --help`", "openpai-help", ["openpai", "--help"]),
              ("`paictl marketplace list --from INDEX`", "marketplace-list",
               ["marketplace", "list", "--from", "{index}"]),
              ("`paictl grass plan JOB --cluster FILE`", "grass-plan",
               ["grass", "plan", str(GRASS_JOB), "--cluster", str(GRASS_CLUSTER)]),
              ("`paictl openpai clusters`", "openpai-clusters", ["openpai", "clusters"]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    paictl = console_script()
    schema = str(ROOT / "schemas" / "job.schema.json")
    report = Report(f"start-up (median of per-round ratios, A B A B; {load()} at start)")
    import shutil
    import tempfile

    scratch = Path(tempfile.mkdtemp(prefix="paictl-fix-bench-"))
    examples = scratch / "examples"
    shutil.copytree(ROOT / "examples", examples)  # fix writes: never the checkout's files
    runs_dir = str(scratch / "runs")
    subprocess.run([paictl, "submit", str(LOCAL_JOB), "--target", "local", "--runtime", "host",
                    "--follow", "--run-dir", runs_dir], check=True, env=ENV, capture_output=True)
    ENV["XDG_CONFIG_HOME"] = str(scratch / "config")  # every command reads this clusters file, not the user's
    index = str(scratch / "index")
    for setup in (["marketplace", "publish", str(examples / "marketplace"), "--to", index],
                  ["openpai", "add", "lab", "http://127.0.0.1:9", "--user", "alice", "--no-check"]):
        subprocess.run([paictl, *setup], check=True, env=ENV, capture_output=True)
    runs = interleaved({
        "help": [paictl, "--help"],
        "typer": [sys.executable, "-c", "import typer"],
        "validate": [paictl, "validate", str(ONE_FILE)],
        "floor": [sys.executable, str(ROOT / "benchmarks" / "floor_validate.py"), schema, str(ONE_FILE)],
        "lsp": [paictl, "lsp"],
        "pygls": [sys.executable, "-c", "import pygls.lsp.server, lsprotocol.types"],
        "fix": [paictl, "fix", str(examples)],
        "validate-all": [paictl, "validate", str(examples)],
        "status": [paictl, "status", "hello-paictl", "--run-dir", runs_dir],
        "status-list": [paictl, "status", "--target", "local", "--run-dir", runs_dir],
        "version": [paictl, "--version"],
        **{key: [paictl, *(part.format(index=index) for part in line)] for _, key, line in GROUP_ROWS},
    }, args.rounds)
    assert runs["status"].codes == runs["status-list"].codes == {0}, "the local run must have succeeded"
    assert runs["validate"].codes == runs["floor"].codes == {0}, "both must find the file valid"
    assert all(runs[key].codes == {0} for _, key, _ in GROUP_ROWS), "every group command must have succeeded"
    for (a, b), figure, goal in ((("help", "typer"), "`paictl --help` / `import typer`", HELP_GOAL),
                                 (("validate", "floor"), "`paictl validate` 1 file / floor script", VALIDATE_GOAL),
                                 (("lsp", "pygls"), "`paictl lsp` start / `import pygls.lsp.server, lsprotocol.types`",
                                  LSP_GOAL),
                                 (("fix", "validate-all"), "`paictl fix examples/` / `paictl validate examples/`",
                                  FIX_GOAL),
                                 (("status", "version"), "`paictl status NAME` (a local run) / `paictl --version`",
                                  STATUS_GOAL),
                                 (("status-list", "version"), "`paictl status --target local` / `paictl --version`",
                                  STATUS_GOAL)):
        measured = ratio(runs[a], runs[b])
        report.add(figure, f"{measured:.2f}x ({runs[a].median:.3f} s / {runs[b].median:.3f} s)", f"<= {goal}x",
                   measured <= goal)
    for figure, key, _ in GROUP_ROWS:
        measured = ratio(runs[key], runs["version"])
        report.add(f"{figure} / `paictl --version`",
                   f"{measured:.2f}x ({runs[key].median:.3f} s / {runs['version'].median:.3f} s)", "none", None)
    print(f"\n{load()} at the end")
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
