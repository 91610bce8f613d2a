"""Wall time and peak memory of `paictl validate` against `check-jsonschema --schemafile` on the same files.

Both tools run as real processes in the same session, on the same inputs, with paictl's own schema; the script
prints medians and the ratios the issue sets targets for (1 file <= 0.5x, 108 files <= 0.35x, 1,000 files <= 0.25x
of check-jsonschema's wall time; paictl's peak memory on 1,000 files <= 120 MB).

    python benchmarks/validate_vs_check_jsonschema.py [--runs 5] [--corpus ../shared/corpus/openpai/valid]

The 1,000 files are generated in a temporary folder from the corpus (each a distinct copy); nothing is written into
the project.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = ROOT.parent / "shared" / "corpus" / "openpai" / "valid"
TARGETS = {"1 file": 0.5, "108 files": 0.35, "1000 files": 0.25}
MEMORY_TARGET_MB = 120


def run_once(argv: list[str]) -> tuple[float, float, int]:
    """(wall seconds, peak RSS in MB, exit code) of one process."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    return elapsed, usage.ru_maxrss / 1024, process.returncode


def measure(argv: list[str], runs: int) -> tuple[float, float, int]:
    run_once(argv)  # warm-up: page cache, .pyc files
    samples = [run_once(argv) for _ in range(runs)]
    codes = {code for _, _, code in samples}
    return statistics.median(s for s, _, _ in samples), max(m for _, m, _ in samples), codes.pop()


def make_thousand(corpus: list[Path], folder: Path) -> list[Path]:
    files = []
    for i in range(1000):
        source = corpus[i % len(corpus)]
        target = folder / f"job_{i:04d}{source.suffix}"
        target.write_bytes(source.read_bytes() + f"\n# generated copy {i}\n".encode())
        files.append(target)
    return files


def tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if not found:
        sys.exit(f"{name} is not installed (pip install '.[test]')")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs per measurement (median is reported)")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="folder of valid OpenPAI jobs")
    args = parser.parse_args()
    if not args.corpus.is_dir():
        sys.exit(f"no corpus at {args.corpus}")
    corpus = sorted(p for p in args.corpus.iterdir() if p.suffix in (".yaml", ".yml"))
    paictl, check = tool("paictl"), tool("check-jsonschema")
    schema = ROOT / "schemas" / "job.schema.json"

    with tempfile.TemporaryDirectory() as tmp:
        sets = {"1 file": [corpus[0]], f"{len(corpus)} files": corpus,
                "1000 files": make_thousand(corpus, Path(tmp))}
        print(f"{'set':<12} {'paictl s':>9} {'check-jsonschema s':>19} {'ratio':>6} {'target':>7} "
              f"{'paictl MB':>10} {'cj MB':>7}")
        failed = False
        for label, files in sets.items():
            names = [str(f) for f in files]
            ours, our_mb, our_code = measure([paictl, "validate", "--quiet", *names], args.runs)
            theirs, their_mb, _ = measure([check, "--schemafile", str(schema), *names], args.runs)
            ratio = ours / theirs
            target = TARGETS.get(label, TARGETS["108 files"] if "files" in label else None)
            verdict = "ok" if target and ratio <= target else "MISS"
            failed |= verdict == "MISS" or our_code != 0
            print(f"{label:<12} {ours:>9.3f} {theirs:>19.3f} {ratio:>6.2f} {'<=' + str(target):>7} "
                  f"{our_mb:>10.1f} {their_mb:>7.1f}  {verdict}{'' if our_code == 0 else f' (exit {our_code})'}")
        if our_mb > MEMORY_TARGET_MB:
            print(f"peak memory {our_mb:.1f} MB on 1,000 files exceeds {MEMORY_TARGET_MB} MB")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
