"""Cost of `paictl compile --target framework`: one job in a fresh process, and scaling with task roles.

Targets from the issue: one job compiles in a fresh process in <= 0.25 s wall without importing the kubernetes
client; a generated job with 100 task roles and 10,000 instances compiles in <= 1 s; time grows linearly with task
roles (1x, 10x, 100x). The fresh-process time is also shown against `paictl --version` (the start-up floor of the
same installation), measured in the same run.

    python benchmarks/compile_scaling.py [--runs 5]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "parameter-server.yaml"
ONE_JOB_TARGET_S = 0.25
BIG_JOB_TARGET_S = 1.0


def wall(argv: list[str], runs: int) -> float:
    subprocess.run(argv, stdout=subprocess.DEVNULL, check=True)  # warm-up
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, check=True)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def generated_job(roles: int, instances_per_role: int) -> str:
    lines = ["protocolVersion: 2", f"name: scale-{roles}", "type: job", "parameters: {epochs: 3}",
             "prerequisites:", "  - {name: img, type: dockerimage, uri: 'python:3.11'}", "taskRoles:"]
    for index in range(roles):
        lines += [f"  role{index}:", f"    instances: {instances_per_role}", "    dockerImage: img",
                  "    resourcePerInstance: {cpu: 2, memoryMB: 4096, gpu: 1, ports: {http: 1}}",
                  "    commands:", f"      - python train.py --epochs <% $parameters.epochs %> --role {index}"]
    return "\n".join(lines) + "\n"


def compile_in_process(text: str, profile_name: str) -> float:
    """Validate, build the model, compile and serialise: everything `paictl compile` does after start-up."""
    from paictl.compiler.emit import to_yaml
    from paictl.compiler.profiles import load_profile
    from paictl.protocol import job_from_data
    from paictl.protocol.loading import load_located
    from paictl.protocol.validate import validate_text
    from paictl.targets import get_target

    started = time.perf_counter()
    result = validate_text(text, "scale.yaml")
    assert result.ok, result.errors
    objects = get_target("framework").compile(job_from_data(result.data), load_profile(profile_name),
                                              document=load_located(text, "scale.yaml"))
    to_yaml(objects)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    paictl = shutil.which("paictl", path=str(Path(sys.executable).parent)) or shutil.which("paictl")
    if not paictl:
        sys.exit("paictl is not installed")
    failed = False

    floor = wall([paictl, "--version"], args.runs)
    one = wall([paictl, "compile", str(EXAMPLE), "--profile", "openpai"], args.runs)
    probe = subprocess.run([sys.executable, "-c", (
        "import sys, runpy; sys.argv = ['paictl', 'compile', sys.argv[1], '--profile', 'openpai']\n"
        "import io, contextlib\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n        runpy.run_module('paictl', run_name='__main__')\n"
        "    except SystemExit:\n        pass\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'kubernetes'))"), str(EXAMPLE)],
        capture_output=True, text=True, check=True)
    kubernetes_imported = probe.stdout.strip() != "[]"
    verdict = "ok" if one <= ONE_JOB_TARGET_S and not kubernetes_imported else "MISS"
    failed |= verdict == "MISS"
    print(f"one job, fresh process: {one:.3f} s (target <= {ONE_JOB_TARGET_S} s; {one / floor:.2f}x "
          f"`paictl --version` = {floor:.3f} s); kubernetes imported: {kubernetes_imported}  {verdict}")

    print(f"\n{'task roles':>10} {'instances':>10} {'seconds':>8} {'x 1-role':>9} {'per role ms':>12}")
    base = None
    for roles in (1, 10, 100):
        text = generated_job(roles, 100)
        compile_in_process(text, "openpai")  # warm caches and imports
        seconds = statistics.median(compile_in_process(text, "openpai") for _ in range(args.runs))
        base = base or seconds
        print(f"{roles:>10} {roles * 100:>10} {seconds:>8.3f} {seconds / base:>9.1f} {seconds / roles * 1000:>12.2f}")
        if roles == 100 and seconds > BIG_JOB_TARGET_S:
            print(f"100 task roles / 10,000 instances took {seconds:.3f} s (target <= {BIG_JOB_TARGET_S} s)  MISS")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
