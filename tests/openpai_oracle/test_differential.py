"""paictl against what OpenPAI's rest-server answered, and against js-yaml 3 (npm) for how a text reads.

No upstream code runs here (tests/openpai_oracle/upstream.py says where the answers come from):
- every valid corpus job, in both scheduler modes: paictl's verdict, entrypoints and objects against the body the
  unchanged rest-server sent (golden/) and its entrypoints (UPSTREAM_RESULTS.json);
- every corpus job upstream refused, and every recorded submission to the real server: the same verdict (a 500 for
  YAML js-yaml cannot read is a loading error, E1xx, here);
- mutated corpus jobs (jobs.py: pinned hypothesis, derandomized, so CI sees the same jobs every run), rewritten by
  YAML-level operators: paictl never crashes on them in `compile` (both modes) or `validate`, its two loaders read
  each text alike, and, where node and the provisioned js-yaml are present, it reads each as js-yaml does.
Every difference not listed in justified.yaml fails the test; all are reported at once, grouped by kind.

Skipped without ../shared (the corpus and the recordings); the js-yaml comparison is skipped without node or the
provisioned npm packages (.ci/provision-npm-peers.sh), except under CI, where that fails.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections import Counter

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from . import upstream
from .compare import compare, hived_profile, justified, kind_of_difference, paictl_side
from .jobs import corpus_jobs, yaml_mutated_jobs
from .npm_peers import IN_CI, JsYaml, installed, plain_of, unavailable

#: Mutated jobs per run (each compiled in both modes, validated, and read by both loaders and by js-yaml).
EXAMPLES = int(os.environ.get("PAICTL_ORACLE_EXAMPLES", "600"))

pytestmark = pytest.mark.skipif(not upstream.available(), reason="../shared/corpus is not beside this checkout")


@pytest.fixture(scope="module")
def profiles():
    scratch = tempfile.mkdtemp(prefix="paictl-oracle-profiles-")
    yield {False: "openpai", True: hived_profile(scratch)}
    shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture(scope="module")
def js_yaml():
    why = unavailable()
    if why is not None:
        if IN_CI:
            pytest.fail(f"the js-yaml peer cannot run in CI: {why}")
        yield None
        return
    peer = JsYaml(installed())
    yield peer
    peer.close()


class Findings:
    """Differences collected over many jobs, reported once, grouped by kind."""

    def __init__(self) -> None:
        self.kinds: Counter[str] = Counter()
        self.example: dict[str, tuple[str, str, str]] = {}
        self.jobs = 0

    def add(self, kind: str, name: str, difference: str, text: str) -> None:
        self.kinds[kind] += 1
        self.example.setdefault(kind, (name, difference, text))

    def report(self) -> str:
        lines = [f"{sum(self.kinds.values())} unjustified differences over {self.jobs} jobs "
                 "(add a justified one to tests/openpai_oracle/justified.yaml, with its reason):"]
        for kind, count in self.kinds.most_common():
            name, difference, text = self.example[kind]
            shown = text if len(text) < 2000 else text[:2000] + "..."
            lines += [f"- {count} x {kind}", f"  e.g. {name}: {difference}", "  " + repr(shown)]
        return "\n".join(lines)


def test_corpus_jobs_agree_with_the_recorded_answers(profiles):
    jobs = corpus_jobs()
    assert len(jobs) >= 100
    findings = Findings()
    for name, text in jobs:
        findings.jobs += 1
        for hived, profile in profiles.items():
            mode = "hivedscheduler" if hived else "defaultscheduler"
            for difference in compare(text, upstream.accepted_answer(name, hived), paictl_side(text, profile)):
                findings.add(f"{mode}: {kind_of_difference(difference)}", name, difference, text)
    assert not findings.kinds, findings.report()


def test_jobs_upstream_refused_are_refused(profiles):
    refused = upstream.refused_corpus_jobs()
    assert len(refused) >= 15
    for name, text, reason in refused:
        ours = paictl_side(text, profiles[False])
        assert ours["verdict"] == "refused", f"{name}: upstream answered {reason}; paictl {ours}"
        if "YAMLException" in reason:  # js-yaml could not read it: a loading error here too
            assert all(code.startswith("E1") for code in ours["codes"]), (name, ours)


def test_recorded_submissions_get_the_real_servers_verdict(profiles):
    submissions = upstream.recorded_submissions()
    assert {status for _, _, status, _ in submissions} >= {202, 400, 500}
    for where, text, status, message in submissions:
        hived = "hived" in where
        ours = paictl_side(text, profiles[hived])
        if status == 202:
            assert ours["verdict"] == "accepted", f"{where}: the server accepted the job; paictl {ours}"
        else:
            assert ours["verdict"] == "refused", f"{where}: the server answered {status} {message}; paictl {ours}"
            if status == 500:
                assert all(code.startswith("E1") for code in ours["codes"]), (where, message, ours)


def _loaded(text: str):
    from paictl.protocol.loading import DocumentError, load_located

    try:
        return load_located(text, "job.yaml").data
    except DocumentError as error:
        return ("refused", [(d.code, d.message) for d in error.diagnostics])


def _justified_reading(code: str, message: str) -> bool:
    return any(entry["code"] == code and entry.get("message", "") in message for entry in justified()["reading"])


def _reading_differences(text: str, answer: dict | None) -> list[tuple[str, str]]:
    """(kind, difference) where paictl's two loaders, or paictl and js-yaml, read `text` differently."""
    from paictl.protocol.loading import load_fast

    found = []
    located = _loaded(text)
    fast = load_fast(text)
    if fast is not None and (isinstance(located, tuple) or plain_of(fast) != plain_of(located)):
        found.append(("fast path and located loader differ", f"fast {fast!r:.200}, located {located!r:.200}"))
    if answer is None:
        return found
    if not answer["ok"]:
        if not isinstance(located, tuple):
            found.append(("js-yaml fails, paictl reads", answer["error"]))
        return found
    if isinstance(located, tuple):
        unjustified = [code for code, message in located[1] if not _justified_reading(code, message)]
        if unjustified:
            found.append((f"js-yaml reads, paictl refuses {unjustified}", f"{located}"))
    elif plain_of(located) != answer["data"]:
        found.append(("js-yaml reads another value", f"js-yaml {answer['data']!r:.300}, paictl "
                      f"{plain_of(located)!r:.300}"))
    return found


def test_mutated_jobs_never_crash_and_read_as_js_yaml_reads_them(profiles, js_yaml):
    from paictl.protocol.validate import validate_text

    findings = Findings()
    texts: list[tuple[str, str]] = []

    @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(yaml_mutated_jobs())
    def run(job):
        name, text = job
        findings.jobs += 1
        texts.append(job)
        for hived, profile in profiles.items():
            ours = paictl_side(text, profile)
            if ours["verdict"] == "crashed":
                findings.add(f"compile crashed: {ours['error'][:80]}", name, ours["error"], text)
        try:
            validate_text(text, "job.yaml")
        except Exception as error:  # noqa: BLE001 - every escape is paictl's bug
            findings.add(f"validate crashed: {type(error).__name__}", name, str(error), text)

    run()
    assert findings.jobs >= EXAMPLES * 0.9
    answers = js_yaml.load_many([text for _, text in texts]) if js_yaml is not None else [None] * len(texts)
    for (name, text), answer in zip(texts, answers):
        for kind, difference in _reading_differences(text, answer):
            findings.add(kind, name, difference, text)
    assert not findings.kinds, findings.report()


def test_the_comparison_can_tell_a_difference(profiles):
    """The comparison is able to fail: a changed entrypoint and a refusal of a job upstream accepts are reported."""
    name, text = corpus_jobs()[0]
    answer = upstream.accepted_answer(name, False)
    ours = paictl_side(text, profiles[False])
    assert answer["verdict"] == ours["verdict"] == "accepted"
    assert compare(text, answer, ours) == []
    role = next(iter(ours["entrypoints"]))
    ours["entrypoints"][role] += " changed"
    assert any(d.startswith(f"entrypoint of {role}") for d in compare(text, answer, ours))
    refused = {"verdict": "refused", "codes": ["E999"], "messages": ["made up"]}
    assert compare(text, answer, refused) == ["upstream accepted, paictl refused: E999: ['made up']"]
    assert _reading_differences("a: 0X1f\n", {"ok": True, "data": {"$map": {"a": 31}}})
