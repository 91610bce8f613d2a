"""Bounded Grass compile (issue 27): `paictl compile --target grass` of a 1,000-role job in a fresh process, its peak
memory and output size, and the size of the job's record in the master's Redis, against the goals and against
`paictl --version` (the start-up floor of the same installation) in the same run.

    python benchmarks/grass_compile.py [--roles 1000] [--rounds 3]

Goals: 1,000 roles in <= 2 s and <= 200 MB; the Redis record linear in the roles (the per-role PAI_* table once per
job, not once per role: the record of 2R roles is about twice that of R roles, not four times).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOAL_S, GOAL_MB = 2.0, 200.0


def job(roles: int) -> str:
    lines = ["protocolVersion: 2", f"name: grass-{roles}", "type: job",
             "prerequisites:", "  - {name: img, type: dockerimage, uri: 'python:3.11'}", "taskRoles:"]
    for index in range(roles):
        lines += [f"  role{index}:", "    instances: 1", "    dockerImage: img",
                  "    resourcePerInstance: {cpu: 1, memoryMB: 1024, gpu: 0}",
                  "    commands:", f"      - python train.py --role {index} --peer $PAI_HOST_IP_role0_0"]
    return "\n".join(lines) + "\n"


def fresh(argv: list[str]) -> tuple[float, float, int]:
    """Wall seconds, peak RSS (MB) and stdout bytes of one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, check=True)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return seconds, max(peak, before) / 1024, len(done.stdout)


def record_bytes(path: Path) -> int:
    from paictl.targets.compiled import compile_job
    from paictl.targets.grass.redis_records import standardise

    (job_file,) = compile_job(str(path), target="grass").objects
    return len(json.dumps(standardise(job_file, seed="bench")))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--roles", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    paictl = [sys.executable, "-m", "paictl"]
    with tempfile.TemporaryDirectory() as folder:
        big, half = Path(folder) / "big.yaml", Path(folder) / "half.yaml"
        big.write_text(job(args.roles))
        half.write_text(job(args.roles // 2))
        floor = min(fresh([*paictl, "--version"])[0] for _ in range(args.rounds))
        runs = [fresh([*paictl, "compile", str(big), "--target", "grass"]) for _ in range(args.rounds)]
        seconds = min(r[0] for r in runs)
        peak = max(r[1] for r in runs)
        output = runs[0][2]
        full, halved = record_bytes(big), record_bytes(half)
        size = big.stat().st_size
    print(f"compile --target grass, {args.roles} roles ({size / 1e3:.0f} KB input): "
          f"{seconds:.2f} s (goal <= {GOAL_S} s; {seconds / floor:.1f}x `paictl --version` {floor:.2f} s), "
          f"peak RSS {peak:.0f} MB (goal <= {GOAL_MB:.0f} MB), output {output / 1e6:.1f} MB")
    print(f"Redis job record: {full / 1e6:.2f} MB for {args.roles} roles, {halved / 1e6:.2f} MB for "
          f"{args.roles // 2}: ratio {full / halved:.2f} (linear: ~2; quadratic: ~4)")
    ok = seconds <= GOAL_S and peak <= GOAL_MB and full / halved < 2.5
    print("goals met" if ok else "GOALS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
