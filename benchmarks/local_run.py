"""Cost of `paictl submit --target local --follow` over running the same commands bare.

Two figures: one task running `true`, from the command line to the verdict, against `true` run directly; and 200
instances of `true`, against a shell starting 200 `/bin/true` in the background and waiting for them, per
instance. Both pairs run interleaved (A B A B); each paictl run gets its own run folder in a scratch directory.

For context (no goal), the 200 instances are also compared with the same shells started bare the way paictl
starts them: a Python process that `posix_spawn`s 200 `bash -o errexit -o nounset -o pipefail -c true` with the
environment a task of that job gets (captured from a paictl run; about 1,000 `PAI_*` variables at 200 instances)
and waits for them. bash 5 copies its whole environment into an export list with a linear duplicate check per
variable (quadratic), so that environment alone costs each bash about 3 ms of CPU, most of the first figure; this
row shows what paictl adds to it (its start-up, the compile, the run folder, the logs and the verdict).

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


def job(name: str, instances: int, command: str = "true") -> str:
    return (f"protocolVersion: 2\nname: {name}\ntype: job\n"
            "prerequisites:\n  - {name: img, type: dockerimage, uri: 'python:3.11'}\n"
            f"taskRoles:\n  worker:\n    instances: {instances}\n    dockerImage: img\n"
            f"    resourcePerInstance: {{cpu: 1, memoryMB: 512, gpu: 0}}\n    commands:\n      - '{command}'\n")


def task_environment(paictl: str, folder: Path) -> list[str]:
    """The environment of task 0 of the 200-instance job, as `NAME=value` items, from a real run."""
    dump = folder / "env0"
    (folder / "dump.yaml").write_text(job("bench-many", MANY, f"[ $PAI_TASK_INDEX != 0 ] || env -0 > {dump}"))
    _, _, code = run_once([paictl, "submit", str(folder / "dump.yaml"), "--target", "local", "--follow",
                           "--runtime", "host", "--run-dir", str(folder / "runs-env")])
    assert code == 0, f"environment capture: exit {code}"
    return [item for item in dump.read_text().split("\0") if item]


#: Starts the task shells as the runner does (posix_spawn, a new session each) and waits for them.
SPAWN_SHELLS = """
import os, sys
env = dict(item.split(b"=", 1) for item in open(sys.argv[1], "rb").read().split(b"\\0") if item)
argv = ["/bin/bash", "-o", "errexit", "-o", "nounset", "-o", "pipefail", "-c", "true"]
pids = [os.posix_spawn(argv[0], argv, env, setsid=True) for _ in range(int(sys.argv[2]))]
sys.exit(max(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids))
"""


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

        def submit(name: str, run: str) -> list[str]:
            # A run folder per round: replacing the previous run's folder (200 logs) is not part of running.
            # host processes: this compares with bare commands (benchmarks/local_docker.py measures containers)
            return [paictl, "submit", str(folder / f"{name}.yaml"), "--target", "local", "--follow",
                    "--runtime", "host", "--run-dir", str(folder / f"runs-{run}")]

        environment = folder / "task-environment"
        environment.write_bytes(b"\0".join(item.encode() for item in task_environment(paictl, folder)))
        bare = {"one": ["/bin/true"], "many": ["bash", "-c", f"for i in $(seq {MANY}); do /bin/true & done; wait"],
                "shells": [sys.executable, "-c", SPAWN_SHELLS, str(environment), str(MANY)]}
        differences: dict[str, list[float]] = {name: [] for name in bare}
        walls: dict[str, list[tuple[float, float]]] = {name: [] for name in bare}
        for round_ in range(args.rounds + 1):  # the first round warms up
            for name in bare:
                mine, _, code = run_once(submit("many" if name == "shells" else name, f"{name}-{round_}"))
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
    shells = statistics.median(differences["shells"]) / MANY * 1000
    report.add(f"  context: {MANY} instances, per instance over their shells started bare (Python posix_spawn)",
               f"{shells:.2f} ms ({statistics.median(w[0] for w in walls['shells']):.3f} s / "
               f"{statistics.median(w[1] for w in walls['shells']):.3f} s)", "none", None)
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
