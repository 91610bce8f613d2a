"""Cost of `paictl submit --target local --follow` over running the same commands bare.

Two figures: one task running `true`, from the command line to the verdict, against `true` run directly; and 200
instances of `true`, against a shell starting 200 `/bin/true` in the background and waiting for them, per
instance. Both pairs run interleaved (A B A B); each paictl run gets its own run folder in a scratch directory.

    python benchmarks/local_run.py [--rounds 7]

Goals (issue 19): one `true` <= +0.25 s over the bare command; 200 instances <= 3 ms per instance over the bare
commands.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from interleave import Report, prepare, run_once, tool

ONE_GOAL_S = 0.25
PER_INSTANCE_GOAL_MS = 3.0
MANY = 200


def job(name: str, instances: int) -> str:
    return (f"protocolVersion: 2\nname: {name}\ntype: job\n"
            "prerequisites:\n  - {name: img, type: dockerimage, uri: 'python:3.11'}\n"
            f"taskRoles:\n  worker:\n    instances: {instances}\n    dockerImage: img\n"
            "    resourcePerInstance: {cpu: 1, memoryMB: 512, gpu: 0}\n    commands:\n      - 'true'\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    prepare()
    paictl = tool("paictl")
    report = Report("local runs (median of per-round differences, A B A B)")
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        (folder / "one.yaml").write_text(job("bench-one", 1))
        (folder / "many.yaml").write_text(job("bench-many", MANY))

        def submit(name: str, round_: int) -> list[str]:
            # A run folder per round: replacing the previous run's folder (200 logs) is not part of running.
            return [paictl, "submit", str(folder / f"{name}.yaml"), "--target", "local", "--follow",
                    "--run-dir", str(folder / f"runs-{round_}")]

        bare = {"one": ["/bin/true"], "many": ["bash", "-c", f"for i in $(seq {MANY}); do /bin/true & done; wait"]}
        differences: dict[str, list[float]] = {name: [] for name in bare}
        walls: dict[str, list[tuple[float, float]]] = {name: [] for name in bare}
        for round_ in range(args.rounds + 1):  # the first round warms up
            for name in bare:
                mine, _, code = run_once(submit(name, round_))
                theirs, _, bare_code = run_once(bare[name])
                assert code == 0 and bare_code == 0, f"{name}: exit {code} / {bare_code}"
                if round_:
                    differences[name].append(mine - theirs)
                    walls[name].append((mine, theirs))
    one = statistics.median(differences["one"])
    report.add("local run of one `true` to its verdict - the bare command",
               f"+{one:.3f} s ({statistics.median(w[0] for w in walls['one']):.3f} s / "
               f"{statistics.median(w[1] for w in walls['one']):.3f} s)", f"<= +{ONE_GOAL_S} s", one <= ONE_GOAL_S)
    per = statistics.median(differences["many"]) / MANY * 1000
    report.add(f"local run of {MANY} instances, per instance over the bare commands",
               f"{per:.2f} ms ({statistics.median(w[0] for w in walls['many']):.3f} s / "
               f"{statistics.median(w[1] for w in walls['many']):.3f} s)", f"<= {PER_INSTANCE_GOAL_MS} ms",
               per <= PER_INSTANCE_GOAL_MS)
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
