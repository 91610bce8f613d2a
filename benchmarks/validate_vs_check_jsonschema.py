"""`paictl validate` against `check-jsonschema --schemafile` on the same files, interleaved (A B A B), plus what
validate costs per file when a file has a warning, and its peak memory over thousands of files.

Both tools run as real processes on the same inputs with paictl's own schema: 1 corpus job, the valid corpus jobs
(108), and 1,000 distinct copies of them generated into a temporary folder. Nothing is written into the project.

    python benchmarks/validate_vs_check_jsonschema.py [--rounds 7] [--corpus ../shared/corpus/openpai/valid]

Goals (issue 19): wall time against check-jsonschema <= 0.3x (1 file), <= 0.2x (108 files), <= 0.1x (1,000 files);
a file with a warning <= 2x a clean file of the same size (in process, per file); peak RSS validating 10,000 files
<= 50 MB, flat in the file count (10,000 files within 5 MB of 1,000).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from interleave import ROOT, Report, interleaved, prepare, ratio, run_once, tool

DEFAULT_CORPUS = ROOT.parent / "shared" / "corpus" / "openpai" / "valid"
GOALS = {"1 file": 0.3, "108 files": 0.2, "1000 files": 0.1}
WARNING_GOAL = 2.0
MEMORY_GOAL_MB, FLAT_MB = 50.0, 5.0


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
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="folder of valid OpenPAI jobs")
    args = parser.parse_args()
    if not args.corpus.is_dir():
        sys.exit(f"no corpus at {args.corpus}")
    prepare()
    corpus = sorted(p for p in args.corpus.iterdir() if p.suffix in (".yaml", ".yml"))
    paictl, check = tool("paictl"), tool("check-jsonschema")
    schema = str(ROOT / "schemas" / "job.schema.json")
    report = Report("validate (median of per-round ratios, A B A B)")

    with tempfile.TemporaryDirectory() as scratch:
        thousand = copies(corpus, Path(scratch) / "thousand", 1000)
        sets = {"1 file": [str(corpus[0])], f"{len(corpus)} files": [str(p) for p in corpus],
                "1000 files": [str(p) for p in sorted(thousand.iterdir())]}
        for label, files in sets.items():
            runs = interleaved({"paictl": [paictl, "validate", "--quiet", *files],
                                "check-jsonschema": [check, "--schemafile", schema, *files]}, args.rounds)
            assert runs["paictl"].codes == runs["check-jsonschema"].codes == {0}, f"{label}: both must pass"
            goal = GOALS.get(label, GOALS["108 files"])
            measured = ratio(runs["paictl"], runs["check-jsonschema"])
            report.add(f"`paictl validate` / check-jsonschema, {label}",
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

        ten_thousand = copies(corpus, Path(scratch) / "ten-thousand", 10_000)
        _, small_mb, code_small = run_once([paictl, "validate", "--quiet", str(thousand)])
        _, big_mb, code_big = run_once([paictl, "validate", "--quiet", str(ten_thousand)])
        assert code_small == code_big == 0
        report.add("peak RSS of `paictl validate`, 10,000 files (1,000 files)",
                   f"{big_mb:.1f} MB ({small_mb:.1f} MB)", f"<= {MEMORY_GOAL_MB:.0f} MB, within {FLAT_MB:.0f} MB",
                   big_mb <= MEMORY_GOAL_MB and big_mb - small_mb <= FLAT_MB)
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
