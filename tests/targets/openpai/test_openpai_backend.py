"""The OpenPAI backend's polling schedule over real HTTP, on the test double's scripted clock.

Everything a user does with a job (submit, follow, stop, logs, list, the server's refusals) is in
test_openpai_jobs.py and test_openpai_submit.py. What is here needs a job whose state changes after an exact number
of polls (the double's scripted clock, tests/openpai_server/jobs.py), to check the schedule itself (minimum
interval, backoff while nothing changes, reset on a change, conditional requests answered 304), and a pending
timeout.
"""

from __future__ import annotations

import pytest
from openpai_server import OpenPaiServer
from openpai_server.harness import FAST_POLL, start, write_job

from paictl.errors import UsageError
from paictl.targets.compiled import compile_job
from paictl.targets.states import JobState


@pytest.fixture
def pai(tmp_path, monkeypatch):
    with OpenPaiServer() as server:
        yield start(tmp_path, monkeypatch, server)


def _submit(pai, tmp_path, name, *, scenario="succeed", parameters=None, **job):
    pai.server.scenarios[name] = scenario
    compiled = compile_job(write_job(tmp_path, name, **job), target="openpai", parameters=parameters)
    backend = pai.backend()
    return backend, backend.submit(compiled)


def test_compile_output_masks_what_submit_sends(tmp_path):
    compiled = compile_job(write_job(tmp_path, "masked", secret="s3cr3t-value", registry_password="reg-pass-77"),
                           target="openpai", parameters={"epochs": 4})
    (document,) = compiled.objects
    assert document["secrets"] == {"apiKey": "******"}
    assert document["prerequisites"][0]["auth"] == {"username": "******", "password": "******",
                                                    "registryuri": "registry.example.org"}
    assert document["parameters"] == {"epochs": 4}
    assert "s3cr3t-value" not in repr(compiled.objects) and "reg-pass-77" not in repr(compiled.objects)


def test_following_polls_no_faster_than_the_minimum_and_uses_etags(pai, tmp_path):
    backend, _ = _submit(pai, tmp_path, "polite")
    backend.min_interval = 0.05
    list(backend.watch("polite"))
    reads = pai.server.job_reads("alice~polite")
    gaps = [later.at - earlier.at for earlier, later in zip(reads, reads[1:])]
    assert gaps and min(gaps) >= 0.05 * 0.95  # a lower bound only: a loaded machine is slower, never faster
    conditional = [r for r in reads if "If-None-Match" in r.headers]
    assert len(conditional) == len(reads) - 1  # every poll after the first is a conditional request
    assert backend.requests == len(reads)


def test_default_minimum_poll_interval_is_one_second(pai):
    from paictl.targets.openpai.clusters import DEFAULT_MIN_POLL_INTERVAL, load_clusters

    assert DEFAULT_MIN_POLL_INTERVAL == 1.0
    entry = load_clusters(pai.clusters_file)["testpai"]
    assert entry.min_poll_interval == FAST_POLL  # only because this test's clusters file says so


def test_a_retried_job_shows_restarting(pai, tmp_path):
    backend, _ = _submit(pai, tmp_path, "flaky", scenario="retry")
    views = list(backend.watch("flaky"))
    states = [v.state for v in views]
    assert JobState.RESTARTING in states and states[-1] is JobState.SUCCEEDED
    assert views[-1].attempt == 1


def test_pending_timeout_ends_on_a_pending_view(pai, tmp_path):
    pai.server.scenarios["queued"] = "stuck"
    compiled = compile_job(write_job(tmp_path, "queued"), target="openpai")
    backend = pai.backend(pending_timeout=0.2)
    backend.submit(compiled)
    views = list(backend.watch("queued"))
    assert views[-1].state is JobState.PENDING and views[-1].message == "AttemptPreparing"


def test_polling_backs_off_while_nothing_changes_and_resets_on_a_change(pai, tmp_path):
    backend, _ = _submit(pai, tmp_path, "patient", scenario="long")
    backend.min_interval, backend.max_interval = 1.0, 10.0  # the defaults; sleeping is recorded, not done
    slept: list[float] = []
    backend.sleep = slept.append
    states = []
    for view in backend.watch("patient"):
        states.append(view.state)
        if len(states) == 12:
            break
    # read 1 WAITING; read 2 RUNNING (a change: back to the minimum); then RUNNING unchanged, 1.5x each time to 10 s
    assert states[:2] == [JobState.PENDING, JobState.RUNNING] and set(states[2:]) == {JobState.RUNNING}
    assert slept == pytest.approx([1.0, 1.0, 1.5, 2.25, 3.375, 5.0625, 7.59375, 10.0, 10.0, 10.0, 10.0])
    reads = pai.server.job_reads("alice~patient")
    assert sum(1 for r in reads if "If-None-Match" in r.headers) == 11


def test_opening_the_backend_never_fails_and_says_whether_it_is_configured(tmp_path):
    from paictl.targets import open_backend

    nothing = open_backend("openpai", cluster=None, extra={"clusters_file": tmp_path / "none.yaml"})
    assert nothing.is_configured() is False
    with pytest.raises(UsageError, match="no OpenPAI cluster configured"):
        nothing.describe("x")
    nothing.close()


def test_the_job_list_is_read_page_by_page(pai):
    """Without `limit` the server answers 5,000 rows and nothing says more exist (recordings: job-list-5012): the
    list asks for pages until a short one, and so shows all 5,012."""
    pai.server.cluster.bulk_insert("alice", 5012)
    views = pai.backend().list()
    assert len(views) == 5012 and views[0].name == "j00000" and views[-1].name == "j05011"
    pages = [r.path for r in pai.server.requests if r.path.startswith("/api/v2/jobs?")]
    # in a stable order, newest first, so that jobs submitted between two pages neither skip nor repeat a row
    assert pages == ["/api/v2/jobs?username=alice&offset=0&limit=5000&order=submissionTime%2CDESC",
                     "/api/v2/jobs?username=alice&offset=5000&limit=5000&order=submissionTime%2CDESC"]


def test_a_follow_waits_out_the_rate_limit_and_follows_on(pai_user, caplog):
    """The API limiter (per client address) is spent while a job is followed: the 429's Retry-After (60 s) outlasts
    the client's retries, so the follower waits that long, says so, and follows on to the end."""
    from paictl.targets.states import JobState

    job = pai_user.name("limited")
    assert pai_user.paictl("submit", str(pai_user.write_job(job)), "--target", "openpai").returncode == 0
    double = pai_user.job(job)
    with pai_user.server.lock:
        double.fc_run()
    limiter = pai_user.server.limiters["api"]
    backend = pai_user.backend()
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        if seconds == 60:  # the limiter's window has passed, and the job ended meanwhile
            limiter.hits.clear()
            with pai_user.server.lock:
                double.fc_succeed()

    backend.sleep = sleep
    views = backend.watch(job)
    assert next(views).state is JobState.RUNNING
    limiter.exhaust("127.0.0.1")
    assert [view.state for view in views] == [JobState.SUCCEEDED]
    assert 60 in slept
    warned, = [r.getMessage() for r in caplog.records if "429" in r.getMessage()]
    assert warned.endswith("the server's rate limit lets this through again in 60 s; following on then")
