"""What a JobSet cannot express is never dropped silently: one located warning per semantic (W901-W903), shown by
`compile`/`submit` on standard error, and errors (exit 1, nothing printed on standard output) under `--strict`."""

from __future__ import annotations

import pytest

from conftest import ROOT
from jobset_checks import compiled, warnings_of
from paictl.compiler.profiles import profile_from_text
from test_jobset_compile import BASE, job, role

NO_GANG = "  gangAllocation: false\n"


def queue_profile():
    base = (ROOT / "compiler" / "profiles" / "default.yaml").read_text()
    return profile_from_text(base + "jobset:\n  queueName: team-a\n", "p.yaml")


def test_a_job_jobset_expresses_exactly_has_no_warning():
    assert warnings_of(job(role("a"), role("b"), extras=NO_GANG)) == []
    assert warnings_of(BASE, queue_profile()) == []


def test_min_failed_minus_one_is_w901():
    text = job(role("a", "completion: {minFailedInstances: -1}"), role("b"), extras=NO_GANG)
    (warning,) = warnings_of(text)
    assert warning.startswith("12:38 W901 minFailedInstances -1 of task role 'a' tolerates every failed instance; "
                              "on JobSet a task that fails (after its retries) makes the role's Job end Failed "
                              "(FailedIndexes) once the other instances finish, and the JobSet then fails where "
                              "OpenPAI would go on")
    compiled(text)  # still compiles: the warning says what differs


def test_min_failed_above_one_is_w901_and_says_the_early_failure_holds():
    text = job(role("a", "completion: {minFailedInstances: 2}", instances=3), top="jobRetryCount: 1\n",
               extras=NO_GANG)
    (warning,) = warnings_of(text)
    assert "W901 minFailedInstances 2 of task role 'a' tolerates up to 1 failed instance(s)" in warning
    assert "the JobSet then restarts where OpenPAI would go on (the Job still fails at once at 2 failures" in warning


def test_the_all_finished_fallback_is_w902_for_a_role_that_cannot_trigger_success():
    text = job(role("a", "completion: {minSucceededInstances: -1}"), role("b"),
               role("c", "completion: {minFailedInstances: 2}"), extras=NO_GANG)
    assert warnings_of(text)[0] == (
        "12:41 W902 minSucceededInstances -1 of task role 'a' leaves the job to OpenPAI's fallback (every task "
        "finished, so the job succeeded), which JobSet does not have: the JobSet succeeds only when one of 'b', 'c' "
        "completes")
    assert [w.split()[1] for w in warnings_of(text)] == ["W902", "W901"]


def test_w902_when_no_role_can_trigger_success():
    text = job(role("a", "completion: {minSucceededInstances: 3, minFailedInstances: -1}"), extras=NO_GANG)
    assert warnings_of(text)[1] == (
        "12:41 W902 minSucceededInstances 3, above its 2 instance(s), of task role 'a' leaves the job to OpenPAI's "
        "fallback (every task finished, so the job succeeded), which JobSet does not have: the JobSet succeeds "
        "only when the Jobs of all task roles complete without a failure")


@pytest.mark.parametrize("completions", [
    ["{minSucceededInstances: -1}", ""],                                   # Any over 'b'
    ["{minSucceededInstances: -1}", "{minSucceededInstances: -1}"],         # All
    ["{minSucceededInstances: 5, minFailedInstances: 1}", "{minSucceededInstances: 1}"],
])
def test_no_w902_when_no_role_tolerates_a_failure(completions):
    """FrameworkController's fallback (rule 5: all tasks completed, no trigger, so Succeeded) needs every task
    finished without a failure trigger; with minFailedInstances 1 everywhere that means every task succeeded, and
    then a targeted role's Job (Any) or every Job (All) completed too: the JobSet succeeds exactly when OpenPAI does,
    and a warning (an error under --strict) would claim a difference there is none."""
    roles = [role(name, f"completion: {completion}" if completion else "")
             for name, completion in zip("ab", completions)]
    text = job(*roles, extras=NO_GANG)
    assert warnings_of(text) == []
    compiled(text)


def test_gang_allocation_without_a_queue_is_w903():
    (default,) = warnings_of(job(role("a")))
    assert default.startswith("6:1 W903 gang allocation is on (OpenPAI's default) but JobSet starts each pod as "
                              "soon as it is scheduled")
    (explicit,) = warnings_of(job(role("a"), extras="  gangAllocation: true\n"))
    assert explicit.startswith("13:3 W903")
    assert warnings_of(job(role("a")), queue_profile()) == []


# --- through the CLI ---------------------------------------------------------------------------------------------

@pytest.fixture
def tolerant(tmp_path):
    path = tmp_path / "tolerant.yaml"
    path.write_text(job(role("a", "completion: {minFailedInstances: -1}"), role("b"), extras=NO_GANG))
    return str(path)


def test_compile_shows_the_warning_and_prints_the_objects(run_cli, tolerant):
    code, out, err = run_cli("compile", tolerant, "--target", "jobset")
    assert code == 0
    assert "kind: JobSet" in out
    assert f"{tolerant}:12:38: warning[W901]" in err


@pytest.mark.parametrize("command", ["compile", "submit"])
def test_strict_makes_the_warning_an_error(run_cli, tolerant, command, tmp_path):
    extra = ["--kubeconfig", str(tmp_path / "none")] if command == "submit" else []
    code, out, err = run_cli(command, tolerant, "--target", "jobset", "--strict", *extra)
    assert code == 1
    assert out == ""
    assert f"{tolerant}:12:38: error[W901]" in err


def test_strict_passes_a_job_without_warnings(run_cli, tmp_path):
    path = tmp_path / "exact.yaml"
    path.write_text(job(role("a"), extras=NO_GANG))
    code, out, _ = run_cli("compile", str(path), "--target", "jobset", "--strict")
    assert code == 0 and "kind: JobSet" in out


def test_hived_scheduling_is_w904():
    text = job(role("a"), extras=NO_GANG + "  hivedScheduler:\n    jobPriorityClass: prod\n")
    assert warnings_of(text) == [
        "14:3 W904 HiveD scheduling (SKU types, pinned cells, job priority) has no JobSet equivalent: the pods ask "
        "for the resources the task roles state (resourcePerInstance), on any node the Kubernetes scheduler picks"]


def test_the_python_api_has_strict_too():
    import paictl
    from paictl.errors import InvalidJobError

    text = job(role("a")).encode()
    compiled_job = paictl.compile_job(text, target="jobset", name="job.yaml")
    assert [w.code for w in compiled_job.warnings] == ["W903"]
    with pytest.raises(InvalidJobError) as caught:
        paictl.compile_job(text, target="jobset", name="job.yaml", strict=True)
    assert [(d.code, d.severity.value, d.line) for d in caught.value.diagnostics] == [("W903", "error", 6)]
