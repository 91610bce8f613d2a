"""Cost of `paictl compile --target framework --profile openpai`: one example in a fresh process against
`paictl --version` (the start-up floor of the same installation), big generated jobs in fresh processes, and how
the in-process cost (validate, build, compile, output check, emit) grows with task roles.

    python benchmarks/compile_scaling.py [--rounds 9] [--skip-huge]

Goals (issue 19): an example <= 1.6x `paictl --version`; 100 task roles x 10,000 instances <= 0.5 s in a fresh
process; 1,000 task roles x 10 instances <= 15 s and <= 600 MB peak RSS with the output streamed, the emitter
writing >= 100 MB/s of YAML. Every compile here includes the output check (`compile_job` runs it) and the output
is checked for being complete YAML documents of the expected size.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from interleave import ROOT, Report, interleaved, prepare, ratio, run_once, tool

EXAMPLE = ROOT / "examples" / "parameter-server.yaml"
EXAMPLE_GOAL = 1.6
BIG_GOAL_S = 0.5
HUGE_GOAL_S, HUGE_GOAL_MB, EMIT_GOAL_MBS = 15.0, 600.0, 100.0


def generated_job(roles: int, instances_per_role: int) -> str:
    lines = ["protocolVersion: 2", f"name: scale-{roles}", "type: job", "parameters: {epochs: 3}",
             "prerequisites:", "  - {name: img, type: dockerimage, uri: 'python:3.11'}", "taskRoles:"]
    for index in range(roles):
        lines += [f"  role{index}:", f"    instances: {instances_per_role}", "    dockerImage: img",
                  "    resourcePerInstance: {cpu: 2, memoryMB: 4096, gpu: 1, ports: {http: 1}}",
                  "    commands:", f"      - python train.py --epochs <% $parameters.epochs %> --role {index}"]
    return "\n".join(lines) + "\n"


def in_process(text: str) -> tuple[float, float, int]:
    """(seconds to validate, compile and check; seconds to emit; bytes of YAML) for one job, in this process."""
    from paictl.compiler.emit import write_yaml
    from paictl.targets.compiled import compile_job

    started = time.perf_counter()
    compiled = compile_job(text.encode(), target="framework", profile="openpai", name="scale.yaml")
    compiled_at = time.perf_counter()
    size = 0

    def count(piece: str) -> None:
        nonlocal size
        size += len(piece.encode())

    write_yaml(compiled.objects, count)
    return compiled_at - started, time.perf_counter() - compiled_at, size


def fresh_compile(paictl: str, job: Path) -> tuple[float, float, int]:
    """(wall, peak RSS MB, bytes written) of `paictl compile` in its own process, output read from a pipe."""
    started = time.perf_counter()
    process = subprocess.Popen([paictl, "compile", str(job), "--profile", "openpai"], stdout=subprocess.PIPE)
    assert process.stdout is not None
    size = documents = 0
    tail = b""
    while chunk := process.stdout.read1(1 << 20):  # big reads: the reader must not compete for the CPU
        size += len(chunk)
        documents += (tail + chunk).count(b"---\n") - tail.count(b"---\n")
        tail = chunk[-3:]
    _, status, usage = os.wait4(process.pid, 0)
    assert status == 0 and documents >= 1, "compile failed"
    return time.perf_counter() - started, usage.ru_maxrss / 1024, size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--skip-huge", action="store_true", help="leave out 1,000 task roles (about a minute)")
    args = parser.parse_args()
    prepare()
    paictl = tool("paictl")
    report = Report("compile (fresh processes interleaved A B A B; in-process medians)")

    runs = interleaved({"compile": [paictl, "compile", str(EXAMPLE), "--profile", "openpai"],
                        "version": [paictl, "--version"]}, args.rounds)
    assert runs["compile"].codes == {0}
    example = ratio(runs["compile"], runs["version"])
    report.add(f"`paictl compile {EXAMPLE.name}` fresh / `paictl --version`",
               f"{example:.2f}x ({runs['compile'].median:.3f} s / {runs['version'].median:.3f} s)",
               f"<= {EXAMPLE_GOAL}x", example <= EXAMPLE_GOAL)

    with tempfile.TemporaryDirectory() as scratch:
        big = Path(scratch) / "big.yaml"
        big.write_text(generated_job(100, 100))
        samples = []
        for _ in range(args.rounds):
            wall, _, size = fresh_compile(paictl, big)
            samples.append(wall)
            version, _, _ = run_once([paictl, "--version"])  # interleaved, for context
        seconds = statistics.median(samples)
        report.add("100 task roles x 10,000 instances, fresh process",
                   f"{seconds:.3f} s ({size / 1e6:.1f} MB of YAML; `--version` {version:.3f} s)",
                   f"<= {BIG_GOAL_S} s", seconds <= BIG_GOAL_S)

        print("\n  task roles  instances  compile+check s  emit s  output MB  per role ms")
        for roles in (1, 10, 100):
            text = generated_job(roles, 100)
            in_process(text)  # imports and caches
            timings = [in_process(text) for _ in range(5)]
            work = statistics.median(t[0] + t[1] for t in timings)
            emit = statistics.median(t[1] for t in timings)
            print(f"  {roles:>10} {roles * 100:>10} {work:>16.3f} {emit:>7.3f} {timings[0][2] / 1e6:>10.1f} "
                  f"{work / roles * 1000:>12.2f}")

        if not args.skip_huge:
            huge = Path(scratch) / "huge.yaml"
            text = generated_job(1000, 10)
            huge.write_text(text)
            wall, peak, size = fresh_compile(paictl, huge)
            ok = wall <= HUGE_GOAL_S and peak <= HUGE_GOAL_MB
            report.add("1,000 task roles x 10 instances, fresh process, output streamed to a pipe",
                       f"{wall:.1f} s, peak RSS {peak:.0f} MB, {size / 1e6:.0f} MB of YAML",
                       f"<= {HUGE_GOAL_S:.0f} s and <= {HUGE_GOAL_MB:.0f} MB", ok)
            _, emit, size = in_process(text)
            rate = size / 1e6 / emit
            report.add("emitter on the 1,000-role objects", f"{rate:.0f} MB/s ({size / 1e6:.0f} MB in {emit:.1f} s)",
                       f">= {EMIT_GOAL_MBS:.0f} MB/s", rate >= EMIT_GOAL_MBS)
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
