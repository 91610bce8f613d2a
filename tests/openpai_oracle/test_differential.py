"""paictl against OpenPAI's unchanged rest-server submission path (oracle.js), job by job, in both scheduler modes.

Jobs: every valid job of the upstream corpus, then hypothesis-generated mutations of them (jobs.py; pinned
hypothesis, derandomized, so CI sees the same jobs every run). For each job and mode the oracle's verdict,
entrypoints and request body are compared with what `compile --target framework` makes with the `openpai` profile
(HiveD on for the hivedscheduler mode). Every difference not listed in justified.yaml fails the test; all of them
are reported at once, grouped by kind, with one job text per kind.

Needs ../shared (the peer and the corpus), node and npm: skipped without them, except under CI, where a missing
tool fails. The npm install is cached (install.py); CI provisions it with .ci/provision-openpai-oracle.sh.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections import Counter

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from .compare import compare, hived_profile, kind_of_difference, paictl_side
from .install import PEER, REST_SERVER
from .jobs import corpus_jobs, mutated_jobs

#: Mutated jobs per run (each is asked in both modes). About 40 ms per job on an idle 2-core machine.
EXAMPLES = int(os.environ.get("PAICTL_ORACLE_EXAMPLES", "1500"))

IN_CI = bool(os.environ.get("CI"))


def _available() -> str | None:
    if not REST_SERVER.is_dir():
        return "../shared/peers/openpai is not beside this checkout"
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        return f"{' and '.join(missing)} not installed"
    return None


@pytest.fixture(scope="module")
def oracles():
    why = _available()
    if why is not None:
        if IN_CI and REST_SERVER.is_dir():
            pytest.fail(f"the differential test cannot run in CI: {why}")
        pytest.skip(why)
    from .install import oracle_dir
    from .oracle import Oracle

    rest_server = oracle_dir()
    spec = PEER / "k8s-job-exit-spec" / "config" / "k8s-job-exit-spec.yaml"
    scratch = tempfile.mkdtemp(prefix="paictl-oracle-profiles-")
    started = {}
    try:
        for hived in (False, True):
            started[hived] = Oracle(rest_server, spec, hived=hived)
        yield {hived: (oracle, "openpai" if not hived else hived_profile(scratch))
               for hived, oracle in started.items()}
    finally:
        for oracle in started.values():
            oracle.close()
        shutil.rmtree(scratch, ignore_errors=True)


class Findings:
    """Differences collected over many jobs, reported once, grouped by kind."""

    def __init__(self) -> None:
        self.kinds: Counter[str] = Counter()
        self.example: dict[str, tuple[str, str, str]] = {}
        self.jobs = 0

    def check(self, oracles, name: str, text: str) -> None:
        self.jobs += 1
        for hived, (oracle, profile) in oracles.items():
            mode = "hivedscheduler" if hived else "defaultscheduler"
            for difference in compare(text, oracle.ask(text), paictl_side(text, profile)):
                kind = f"{mode}: {kind_of_difference(difference)}"
                self.kinds[kind] += 1
                self.example.setdefault(kind, (name, difference, text))

    def report(self) -> str:
        lines = [f"{sum(self.kinds.values())} unjustified differences over {self.jobs} jobs "
                 "(add a justified one to tests/openpai_oracle/justified.yaml, with its reason):"]
        for kind, count in self.kinds.most_common():
            name, difference, text = self.example[kind]
            shown = text if len(text) < 2000 else text[:2000] + "..."
            lines += [f"- {count} x {kind}", f"  e.g. {name}: {difference}", "  " + shown.replace("\n", "\n  ")]
        return "\n".join(lines)


def test_corpus_jobs_agree_with_the_rest_server(oracles):
    jobs = corpus_jobs()
    assert len(jobs) >= 100
    findings = Findings()
    for name, text in jobs:
        findings.check(oracles, name, text)
    assert not findings.kinds, findings.report()


def test_mutated_jobs_agree_with_the_rest_server(oracles):
    findings = Findings()

    @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(mutated_jobs())
    def run(job):
        findings.check(oracles, *job)

    run()
    assert findings.jobs >= EXAMPLES * 0.9
    assert not findings.kinds, findings.report()


def test_the_oracle_can_tell_a_difference(oracles):
    """The comparison is able to fail: a changed entrypoint and a refusal of a job upstream accepts are reported."""
    oracle, profile = oracles[False]
    name, text = corpus_jobs()[0]
    answer = oracle.ask(text)
    ours = paictl_side(text, profile)
    assert answer["verdict"] == ours["verdict"] == "accepted"
    role = next(iter(ours["entrypoints"]))
    ours["entrypoints"][role] += " changed"
    assert any(d.startswith(f"entrypoint of {role}") for d in compare(text, answer, ours))
    refused = {"verdict": "refused", "codes": ["E999"], "messages": ["made up"]}
    assert compare(text, answer, refused) == ["upstream accepted, paictl refused: E999: ['made up']"]
