"""`paictl marketplace validate` of items against `paictl validate` of the same jobs alone, interleaved (A B A B).

The items are made in a temporary folder from the corpus' 31 upstream marketplace jobs
(`openpaimarketplace__*.yaml`), in the two forms an item carries its job: inline, as a mapping under `protocol:`
(item files only), and as `protocol: {file: job.yaml}` beside the item (a folder per item: the search skips the
jobs). The baseline validates the 31 jobs as files. Nothing is written into the project.

    python benchmarks/marketplace_validate.py [--rounds 9] [--corpus ../shared/corpus/openpai/valid]

Goal (issue 26): each form costs at most 1.2x validating the jobs alone (median of per-round ratios).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from interleave import ROOT, Report, interleaved, prepare, ratio

DEFAULT_CORPUS = ROOT.parent / "shared" / "corpus" / "openpai" / "valid"
GOAL = 1.2


def _item_header(name: str) -> str:
    return (f"name: {name}\nauthor: bench\ntype: template\nsummary: {name} from the upstream marketplace\n"
            f"tags: [bench]\ndescription: |\n  # {name}\n  A job shared through the marketplace.\n")


def make_inputs(jobs: list[Path], folder: Path) -> dict[str, Path]:
    plain, inline, by_file = folder / "jobs", folder / "inline", folder / "by-file"
    for made in (plain, inline, by_file):
        made.mkdir()
    for number, job in enumerate(jobs):
        text = job.read_text(encoding="utf-8")
        name = job.stem.split("__")[-1].lower().replace("_", "-") + f"-{number:02d}"  # `00-x` reads as a number
        (plain / job.name).write_text(text, encoding="utf-8")
        body = "".join(f"  {line}\n" if line.strip() else "\n" for line in text.splitlines()
                       if line.strip() != "---")
        (inline / f"{name}.yaml").write_text(_item_header(name) + "protocol:\n" + body, encoding="utf-8")
        own = by_file / name
        own.mkdir()
        (own / "job.yaml").write_text(text, encoding="utf-8")
        (own / "item.yaml").write_text(_item_header(name) + "protocol: {file: job.yaml}\n", encoding="utf-8")
    return {"jobs": plain, "inline": inline, "by-file": by_file}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    options = parser.parse_args()
    jobs = sorted(options.corpus.glob("openpaimarketplace__*.yaml"))
    if not jobs:
        sys.exit(f"no openpaimarketplace__*.yaml jobs in {options.corpus}")
    prepare()
    paictl = [sys.executable, "-m", "paictl"]
    report = Report(f"marketplace validate vs validate of the same {len(jobs)} jobs ({options.rounds} rounds)")
    with tempfile.TemporaryDirectory() as temporary:
        inputs = make_inputs(jobs, Path(temporary))
        commands = {
            "jobs": [*paictl, "validate", "--quiet", str(inputs["jobs"])],
            "inline": [*paictl, "marketplace", "validate", str(inputs["inline"])],
            "by-file": [*paictl, "marketplace", "validate", str(inputs["by-file"])],
        }
        samples = interleaved(commands, options.rounds)
        for name, sample in samples.items():
            if sample.codes - {0, 1}:
                sys.exit(f"{name}: exit codes {sorted(sample.codes)} (a crash or an unreadable input)")
        print(f"  validate {len(jobs)} jobs: {samples['jobs'].median * 1000:.0f} ms (median)")
        for form in ("inline", "by-file"):
            measured = ratio(samples[form], samples["jobs"])
            report.add(f"{len(jobs)} items, job {form}: {samples[form].median * 1000:.0f} ms", f"{measured:.2f}x",
                       f"<= {GOAL}x", measured <= GOAL)
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
