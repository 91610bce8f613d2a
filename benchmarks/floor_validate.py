"""The floor for `paictl validate`: the least a validator in Python can do, with the fastest libraries paictl uses
(yaml-rs and jsonschema-rs, both Rust). It reads each file, parses it, checks it against the schema and counts.
No positions, no semantics, no messages: `benchmarks/startup.py` compares `paictl validate` against it.

    python benchmarks/floor_validate.py SCHEMA.json FILE...
    python benchmarks/floor_validate.py --in-process [--rounds 9] [--corpus ../shared/corpus/openpai/valid]

The second form is the per-file figure (issue 43): in one process, the floor's work on each upstream job (read the
file, yaml-rs, jsonschema-rs) against paictl's (read the file, `validate_bytes`), the two timed in turn round after
round as CPU time (the machine is shared: wall time also counts other processes), the ratio the median of the
rounds'. Goal: <= 3x the floor per file. paictl is imported from a normal, non-editable install (benchmarks/
installed.py refuses an editable one, and the import must not come from this checkout): run it with the interpreter
of such an install.
"""
import json
import sys

import jsonschema_rs
import yaml_rs

IN_PROCESS_GOAL = 3.0


def floor(schema: str, paths: list[str]) -> int:
    validator = jsonschema_rs.validator_for(json.load(open(schema, encoding="utf-8")))
    invalid = [path for path in paths if not validator.is_valid(yaml_rs.loads(open(path, encoding="utf-8").read()))]
    print(f"{len(paths) - len(invalid)} files valid")
    return 1 if invalid else 0


def in_process(argv: list[str]) -> int:
    import argparse
    import statistics
    import time
    from pathlib import Path

    from installed import console_script, load
    from interleave import ROOT, Report

    parser = argparse.ArgumentParser(description="paictl validate per file in process, against the floor")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--repeat", type=int, default=5, help="passes over the files per timed round")
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus" / "openpai" / "valid")
    args = parser.parse_args(argv)
    if not args.corpus.is_dir():
        sys.exit(f"no corpus at {args.corpus}")
    console_script()  # a non-editable install of paictl for this interpreter, or exit with advice
    import paictl
    from paictl.protocol.validate import validate_bytes

    if Path(paictl.__file__).resolve().is_relative_to(ROOT):
        sys.exit(f"paictl is imported from this checkout ({paictl.__file__}), not from the install")
    paths = [str(p) for p in sorted(args.corpus.iterdir()) if p.suffix in (".yaml", ".yml")]
    validator = jsonschema_rs.validator_for(json.load(open(ROOT / "schemas" / "job.schema.json", encoding="utf-8")))

    def floor_pass() -> None:
        for path in paths:
            with open(path, encoding="utf-8") as file:
                validator.is_valid(yaml_rs.loads(file.read()))

    def paictl_pass() -> None:
        for path in paths:
            with open(path, "rb") as file:
                validate_bytes(file.read(), path)

    def timed(one_pass) -> float:
        started = time.process_time()
        for _ in range(args.repeat):
            one_pass()
        return (time.process_time() - started) / args.repeat / len(paths)

    assert all(not validate_bytes(open(p, "rb").read(), p).errors for p in paths), "the corpus must be valid"
    floor_pass(), paictl_pass()  # imports, caches
    report = Report(f"validate per file in process (median of per-round ratios, CPU time; {load()} at start)")
    pairs = [(timed(paictl_pass), timed(floor_pass)) for _ in range(args.rounds)]
    measured = statistics.median(p / f for p, f in pairs)
    report.add(f"`validate_bytes` / the floor (read, yaml-rs, jsonschema-rs), per file, {len(paths)} upstream jobs",
               f"{measured:.2f}x ({statistics.median(p for p, _ in pairs) * 1000:.3f} ms / "
               f"{statistics.median(f for _, f in pairs) * 1000:.3f} ms)", f"<= {IN_PROCESS_GOAL}x",
               measured <= IN_PROCESS_GOAL)
    print(f"\n{load()} at the end")
    return report.finish()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--in-process"]:
        sys.exit(in_process(sys.argv[2:]))
    sys.exit(floor(sys.argv[1], sys.argv[2:]))
