"""The OpenPAI backend end to end over real HTTP: submit, follow, stop, logs and list against the test server."""

from __future__ import annotations

import pytest
import yaml
from openpai_server import OpenPaiServer
from openpai_server.harness import FAST_POLL, TOKEN, start, write_job

from paictl.errors import ClusterError, NotFoundError, UsageError
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


def test_submit_then_follow_to_success(pai, tmp_path):
    backend, submission = _submit(pai, tmp_path, "mnist")
    assert submission.lines == (f"job alice~mnist submitted to OpenPAI testpai ({pai.server.url}), virtual cluster "
                                "default",)
    views = list(backend.watch("mnist"))
    states = [v.state for v in views]
    assert states[0] is JobState.PENDING and states[-1] is JobState.SUCCEEDED
    assert JobState.RUNNING in states
    final = views[-1]
    assert final.completion_code == 0
    assert [(t.role, t.index, t.state, t.exit_code, t.diagnosis) for t in final.tasks] == [
        ("worker", 0, "SUCCEEDED", 0, None), ("worker", 1, "SUCCEEDED", 0, None)]
    assert final.where.endswith("virtual cluster default")


def test_failed_job_carries_the_diagnosed_exit_code(pai, tmp_path):
    backend, _ = _submit(pai, tmp_path, "broken", scenario="fail")
    final = list(backend.watch("broken"))[-1]
    assert final.state is JobState.FAILED
    assert final.completion_code == 231
    assert final.triggered_by == ("worker", 0)
    # the server sends no containerExitSpec here: the phrase comes from paictl's exit rules
    assert final.tasks[0].exit_code == 231 and final.tasks[0].diagnosis == "231 ContainerSyntaxError"
    assert final.message.startswith("231 ContainerSyntaxError; TaskAttempt failed")
    assert final.tasks[1].diagnosis == "-220 FrameworkAttemptCompletion"  # the server's spec wins when given
    excerpt = backend.failure_excerpt(final)
    assert excerpt is not None and excerpt.lines[-1] == "SyntaxError: invalid syntax"


def test_stop_while_running_ends_stopped(pai, tmp_path):
    backend, _ = _submit(pai, tmp_path, "endless", scenario="long")
    seen = []
    for view in backend.watch("endless"):
        seen.append(view.state)
        if view.state is JobState.RUNNING and JobState.STOPPING not in seen:
            result = backend.stop("endless")
            assert result.line == "job alice~endless: stop requested (stopping)"
    assert seen[-1] is JobState.STOPPED and JobState.STOPPING in seen
    stop_requests = [r for r in pai.server.requests if r.method == "PUT"]
    assert [(r.path, r.body) for r in stop_requests] == [("/api/v2/jobs/alice~endless/executionType",
                                                          b'{"value": "STOP"}')]
    assert backend.stop("endless").line == "job alice~endless already stopped"


def test_resubmit_gives_the_conflict_and_how_to_go_on(pai, tmp_path):
    backend, _ = _submit(pai, tmp_path, "twice")
    compiled = compile_job(tmp_path / "twice.yaml", target="openpai")
    with pytest.raises(ClusterError) as caught:
        backend.submit(compiled)
    message = str(caught.value)
    assert "\n" not in message and caught.value.exit_code == 3
    assert "HTTP 409 ConflictJobError: Job alice~twice already exists; OpenPAI never reuses a job name" in message
    assert "rename the job" in message and "paictl status twice --target openpai --cluster testpai" in message


def test_unknown_virtual_cluster_is_refused_before_anything_is_sent(pai, tmp_path):
    with pytest.raises(NotFoundError) as caught:
        _submit(pai, tmp_path, "lost", virtual_cluster="nowhere")
    assert str(caught.value) == (f"OpenPAI testpai ({pai.server.url}): virtual cluster 'nowhere' does not exist; "
                                 "available: default, gpu, restricted (choose with --virtual-cluster)")
    assert not [r for r in pai.server.requests if r.method == "POST"]


def test_a_virtual_cluster_the_user_may_not_use(pai, tmp_path):
    with pytest.raises(ClusterError, match="user alice may not submit to virtual cluster 'restricted'; theirs: "
                                           "default, gpu"):
        _submit(pai, tmp_path, "sneaky", virtual_cluster="restricted")
    assert not [r for r in pai.server.requests if r.method == "POST"]


def test_the_virtual_cluster_option_wins_and_is_sent_in_the_job(pai, tmp_path):
    pai.server.scenarios["ongpu"] = "succeed"
    compiled = compile_job(write_job(tmp_path, "ongpu"), target="openpai")
    pai.backend(virtual_cluster="gpu").submit(compiled)
    assert pai.server.jobs["alice~ongpu"].virtual_cluster == "gpu"
    assert pai.server.jobs["alice~ongpu"].protocol["defaults"] == {"virtualCluster": "gpu"}


def test_unknown_storage_is_refused(pai, tmp_path):
    with pytest.raises(NotFoundError, match=r"storage 'scratch' named in extras.storages does not exist for user "
                                            r"alice; available: confignfs$"):
        _submit(pai, tmp_path, "stored", storages=("confignfs", "scratch"))
    _submit(pai, tmp_path, "stored2", storages=("confignfs",))
    assert "alice~stored2" in pai.server.jobs


def test_parameters_are_applied_and_the_job_goes_as_text_yaml(pai, tmp_path):
    _submit(pai, tmp_path, "tuned", parameters={"epochs": 9, "lr": 0.5}, secret="s3cr3t-value",
            registry_password="reg-pass-77")
    post = next(r for r in pai.server.requests if r.method == "POST" and r.path == "/api/v2/jobs")
    assert post.headers["Content-Type"] == "text/yaml"
    sent = yaml.safe_load(post.body)
    assert sent["parameters"] == {"epochs": 9, "lr": 0.5}
    # OpenPAI needs the secrets to create the job's Secrets: they go to the server, and only there
    assert sent["secrets"] == {"apiKey": "s3cr3t-value"}
    assert sent["prerequisites"][0]["auth"]["password"] == "reg-pass-77"
    assert sent["taskRoles"]["worker"]["commands"] == ["python train.py --epochs <% $parameters.epochs %>"]


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


def test_logs_list_locations_and_fetch_the_log(pai, tmp_path):
    backend, _ = _submit(pai, tmp_path, "chatty")
    list(backend.watch("chatty"))
    lines = list(backend.logs("chatty", role="worker", index=1).lines)
    notes = [line.text for line in lines if line.stream == "note"]
    assert len(notes) == 1 and notes[0].startswith("log locations: stderr http://127.0.0.1:")
    assert "token=***" in notes[0] and "showing all" in notes[0] and "log-manager-token" not in notes[0]
    assert [line.text for line in lines if line.stream == "out"] == ["starting", "epoch 1 done", "epoch 2 done"]
    assert {(line.role, line.index) for line in lines} == {("worker", 1)}
    with pytest.raises(UsageError, match="has no task role 'ps'; it has worker"):
        list(backend.logs("chatty", role="ps").lines)


def test_logs_before_a_task_starts_say_so(pai, tmp_path):
    backend, _ = _submit(pai, tmp_path, "early")
    lines = list(backend.logs("early", role="worker", index=0).lines)
    assert [(line.stream, line.text) for line in lines] == [("note", "no log yet")]


def test_logs_follow_until_the_job_ends(pai, tmp_path):
    backend, _ = _submit(pai, tmp_path, "streamed")
    lines = [line.text for line in backend.logs("streamed", role="worker", index=0, follow=True).lines
             if line.stream == "out"]
    assert lines == ["starting", "epoch 1 done", "epoch 2 done"]  # each line once, though fetched repeatedly


def test_list_and_describe(pai, tmp_path):
    backend, _ = _submit(pai, tmp_path, "first")
    _submit(pai, tmp_path, "second", scenario="fail")
    assert [(v.name, v.state) for v in backend.list()] == [("first", JobState.PENDING),
                                                           ("second", JobState.PENDING)]
    assert backend.has_job("first") and not backend.has_job("third")
    with pytest.raises(NotFoundError, match=r"HTTP 404 NoJobError: Job alice~third is not found\.$"):
        backend.describe("third")
    assert backend.describe("alice~first").name == "first"  # user~job names another user's job as OpenPAI does
    backend.close()


def test_the_token_goes_only_to_the_rest_server(pai, tmp_path):
    backend, _ = _submit(pai, tmp_path, "bearer")
    list(backend.watch("bearer"))
    list(backend.logs("bearer").lines)
    api = [r for r in pai.server.requests if r.path.startswith("/api/")]
    assert api and all(r.headers.get("Authorization") == f"Bearer {TOKEN}" for r in api)


def test_token_canary_in_everything_the_backend_returns(pai, tmp_path):
    """Views, submissions, stop results, log lines and every error text: the token appears in none of them."""
    import dataclasses
    import json

    from paictl.targets.states import view_to_data

    texts: list[str] = []
    backend, submission = _submit(pai, tmp_path, "canary1", scenario="fail")
    texts.append(repr(dataclasses.asdict(submission)))
    texts += [json.dumps(view_to_data(view)) for view in backend.watch("canary1")]
    texts += [line.text for line in backend.logs("canary1").lines]
    texts += [json.dumps(view_to_data(view)) for view in backend.list()]
    _submit(pai, tmp_path, "canary2", scenario="long")
    texts.append(repr(dataclasses.asdict(backend.stop("canary2"))))
    errors = []
    for fault, times in (("echo401", 1), ("drop", 4), ("503", 4)):  # 401 is not retried; the others 4 times
        pai.server.faults.extend([("/api/v2/jobs/alice~canary2", fault)] * times)
        with pytest.raises(ClusterError) as caught:
            backend.describe("canary2")
        assert not pai.server.faults
        errors.append(str(caught.value))
    assert errors[0].endswith("HTTP 401 UnauthorizedUserError: bad credential Bearer ***; the token is missing, "
                              "wrong or expired: run `paictl openpai login testpai`")
    assert errors[1].startswith("cannot reach the OpenPAI REST server testpai")
    assert "HTTP 503 UnknownError" in errors[2]
    texts += errors
    for failing in (lambda: backend.submit(compile_job(tmp_path / "canary1.yaml", target="openpai")),
                    lambda: _submit(pai, tmp_path, "canary3", virtual_cluster="nowhere")):
        with pytest.raises(ClusterError) as caught:
            failing()
        texts.append(str(caught.value))
    assert texts and not [text for text in texts if TOKEN in text]


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


def test_dry_run_checks_and_sends_nothing(pai, tmp_path):
    compiled = compile_job(write_job(tmp_path, "rehearsal"), target="openpai")
    submission = pai.backend().submit(compiled, dry_run=True)
    assert submission.dry_run and submission.lines == (
        f"job alice~rehearsal: checked against OpenPAI testpai ({pai.server.url}), virtual cluster default; not "
        "submitted (dry run)",)
    assert [r.path for r in pai.server.requests] == ["/api/v2/virtual-clusters", "/api/v2/users/alice"]


def test_opening_the_backend_never_fails_and_says_whether_it_is_configured(tmp_path):
    from paictl.targets import open_backend

    nothing = open_backend("openpai", cluster=None, extra={"clusters_file": tmp_path / "none.yaml"})
    assert nothing.is_configured() is False
    with pytest.raises(UsageError, match="no OpenPAI cluster configured"):
        nothing.describe("x")
    nothing.close()
