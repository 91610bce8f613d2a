"""`paictl validate` against `check-jsonschema --schemafile` on the same files, interleaved (A B A B), plus what
validate costs per file when a file has a warning, and its peak memory over thousands of files.

Both tools run as real processes on the same inputs with paictl's own schema: 1 corpus job, the valid corpus jobs
(108), and 1,000 and 10,000 distinct copies of them generated into a temporary folder. Nothing is written into the
project. paictl is the console script of a normal, non-editable install (benchmarks/installed.py refuses an editable
one): run this with the interpreter of such an install (which has check-jsonschema too: `pip install '.[test]'`).

    python benchmarks/validate_vs_check_jsonschema.py [--rounds 7] [--big-rounds 3] [--corpus ../shared/corpus/openpai/valid]

Goals (issues 19 and 43): wall time against check-jsonschema <= 0.3x (1 file), <= 0.2x (108 files), <= 0.1x (1,000
files), <= 0.07x (10,000 files); a file with a warning <= 2x a clean file of the same size (in process, per file);
peak RSS validating 10,000 files <= 50 MB, and flat in the file count: paictl's own growth from 1,000 to 10,000 files
within 5 MB. Peak RSS is each process's own, taken by a small launcher: a child's ru_maxrss includes the RSS of the
process that spawned it (Linux records the old image's high-water mark at exec), and this benchmark, holding 10,000
file names and every run's samples, had made a flat paictl look like a miss. Its own growth is its peak less that of
a Python process holding the same list of files (what `collect_paths` builds for the folder), at both counts. The
per-file figure against the floor is floor_validate.py's.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from installed import console_script, load
from interleave import ENV, ROOT, Report, interleaved, ratio, tool

DEFAULT_CORPUS = ROOT.parent / "shared" / "corpus" / "openpai" / "valid"
GOALS = {"1 file": 0.3, "108 files": 0.2, "1,000 files": 0.1, "10,000 files": 0.07}
WARNING_GOAL = 2.0
MEMORY_GOAL_MB, FLAT_MB = 50.0, 5.0
#: The baseline for paictl's own memory: Python holding the list of files `paictl validate FOLDER` builds.
HOLD_THE_FILE_LIST = "import sys; from paictl.cli.validate_cmd import collect_paths; held = collect_paths(sys.argv[1:])"
#: Runs a command (its output to /dev/null) and prints its own peak RSS in KB: a bare interpreter spawns it, so the
#: high-water mark inherited at exec is this launcher's few MB, not the benchmark's.
LAUNCHER = ("import os, sys; pid = os.posix_spawn(sys.argv[1], sys.argv[1:], dict(os.environ), file_actions=[(os.POSIX_"
            "SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)]); _, status, usage = os.wait4(pid, 0); print(usage.ru_maxrss);"
            " sys.exit(os.waitstatus_to_exitcode(status))")


def own_peak_mb(argv: list[str]) -> float:
    """The command's own peak RSS in MB (the best of three runs: other processes only add)."""
    import subprocess

    peaks = []
    for _ in range(3):
        done = subprocess.run([sys.executable, "-c", LAUNCHER, *argv], capture_output=True, text=True, env=ENV)
        assert done.returncode == 0, done.stderr
        peaks.append(int(done.stdout) / 1024)
    return min(peaks)


def copies(corpus: list[Path], folder: Path, count: int) -> Path:
    folder.mkdir()
    for i in range(count):
        source = corpus[i % len(corpus)]
        (folder / f"job_{i:05d}{source.suffix}").write_bytes(source.read_bytes() + f"\n# copy {i}\n".encode())
    return folder


def job_text(placeholder: str, roles: int = 12) -> bytes:
    """A job of a few KB; with `epochs` it is clean, with `epoch_` (same length) it has one warning (W401)."""
    lines = ["protocolVersion: 2", "name: bench", "type: job", "parameters: {epochs: 3}",
             "prerequisites:", "  - {name: img, type: dockerimage, uri: 'python:3.11'}", "taskRoles:"]
    for index in range(roles):
        lines += [f"  role{index}:", "    instances: 2", "    dockerImage: img",
                  "    resourcePerInstance: {cpu: 2, memoryMB: 4096, gpu: 1}", "    commands:",
                  f"      - python train.py --epochs <% $parameters.{placeholder if index == 0 else 'epochs'} %>"]
    return ("\n".join(lines) + "\n").encode()


def per_file_seconds(raw: bytes, repeats: int) -> float:
    from paictl.protocol.validate import validate_bytes

    started = time.perf_counter()
    for _ in range(repeats):
        validate_bytes(raw, "bench.yaml")
    return (time.perf_counter() - started) / repeats


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds per comparison (medians are reported)")
    parser.add_argument("--big-rounds", type=int, default=3,
                        help="rounds for 10,000 files (check-jsonschema takes about 30 s a run)")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="folder of valid OpenPAI jobs")
    args = parser.parse_args()
    if not args.corpus.is_dir():
        sys.exit(f"no corpus at {args.corpus}")
    corpus = sorted(p for p in args.corpus.iterdir() if p.suffix in (".yaml", ".yml"))
    paictl, check = console_script(), tool("check-jsonschema")
    schema = str(ROOT / "schemas" / "job.schema.json")
    report = Report(f"validate (median of per-round ratios, A B A B; {load()} at start)")

    with tempfile.TemporaryDirectory() as scratch:
        thousand = copies(corpus, Path(scratch) / "thousand", 1000)
        ten_thousand = copies(corpus, Path(scratch) / "ten-thousand", 10_000)
        sets = {"1 file": [str(corpus[0])], f"{len(corpus)} files": [str(p) for p in corpus],
                "1,000 files": [str(p) for p in sorted(thousand.iterdir())],
                "10,000 files": [str(p) for p in sorted(ten_thousand.iterdir())]}
        for label, files in sets.items():
            rounds = args.big_rounds if label == "10,000 files" else args.rounds
            runs = interleaved({"paictl": [paictl, "validate", "--quiet", *files],
                                "check-jsonschema": [check, "--schemafile", schema, *files]}, rounds)
            assert runs["paictl"].codes == runs["check-jsonschema"].codes == {0}, f"{label}: both must pass"
            goal = GOALS.get(label, GOALS["108 files"])
            measured = ratio(runs["paictl"], runs["check-jsonschema"])
            report.add(f"`paictl validate` / check-jsonschema, {label} ({rounds} rounds)",
                       f"{measured:.2f}x ({runs['paictl'].median:.3f} s / {runs['check-jsonschema'].median:.3f} s)",
                       f"<= {goal}x", measured <= goal)

        clean, warned = job_text("epochs"), job_text("epoch_")
        assert len(clean) == len(warned)
        from paictl.protocol.validate import validate_bytes

        assert not validate_bytes(clean, "c").diagnostics and validate_bytes(warned, "w").warnings
        per_file_seconds(warned, 3)  # imports and caches
        pairs = [(per_file_seconds(warned, 20), per_file_seconds(clean, 20)) for _ in range(args.rounds)]
        measured = statistics.median(w / c for w, c in pairs)
        report.add(f"a file with a warning / a clean file ({len(clean):,} B each), per file in process",
                   f"{measured:.1f}x ({statistics.median(w for w, _ in pairs) * 1000:.2f} ms / "
                   f"{statistics.median(c for _, c in pairs) * 1000:.2f} ms)", f"<= {WARNING_GOAL}x",
                   measured <= WARNING_GOAL)

        (small_mb, small_held), (big_mb, big_held) = (
            (own_peak_mb([paictl, "validate", "--quiet", str(folder)]),
             own_peak_mb([sys.executable, "-c", HOLD_THE_FILE_LIST, str(folder)])) for folder in (thousand, ten_thousand))
        report.add("peak RSS of `paictl validate`, 10,000 files (1,000 files)", f"{big_mb:.1f} MB ({small_mb:.1f} MB)",
                   f"<= {MEMORY_GOAL_MB:.0f} MB", big_mb <= MEMORY_GOAL_MB)
        growth = (big_mb - big_held) - (small_mb - small_held)
        report.add("paictl's own growth from 1,000 to 10,000 files (its peak RSS less a Python process holding the "
                   "same file list)", f"{growth:+.1f} MB (paictl {small_mb:.1f} -> {big_mb:.1f} MB; the file list "
                   f"alone {small_held:.1f} -> {big_held:.1f} MB)", f"within {FLAT_MB:.0f} MB", growth <= FLAT_MB)
    print(f"\n{load()} at the end")
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
