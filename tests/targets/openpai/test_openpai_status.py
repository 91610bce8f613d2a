"""The table from OpenPAI job details (swagger JobDetail) to paictl's job states, one case per row."""

from __future__ import annotations

import pytest

from paictl.targets.openpai.status import diagnosis, job_state, job_view, summary_view
from paictl.targets.states import JobState


@pytest.mark.parametrize(("state", "sub_state", "retries", "expected"), [
    ("WAITING", "AttemptCreationPending", 0, JobState.PENDING),
    ("WAITING", "AttemptPreparing", 0, JobState.PENDING),
    ("WAITING", "AttemptCreationPending", 2, JobState.RESTARTING),   # a retry's next attempt
    ("WAITING", "AttemptCompleted", 1, JobState.RESTARTING),
    ("RUNNING", "AttemptRunning", 0, JobState.RUNNING),
    ("RUNNING", "AttemptRunning", 3, JobState.RUNNING),
    ("STOPPING", "AttemptDeletionPending", 0, JobState.STOPPING),
    ("STOPPED", "Completed", 0, JobState.STOPPED),
    ("SUCCEEDED", "Completed", 0, JobState.SUCCEEDED),
    ("FAILED", "Completed", 1, JobState.FAILED),
    ("UNKNOWN", "", 0, JobState.UNKNOWN),
    ("ARCHIVED", "Completed", 0, JobState.UNKNOWN),                  # a word this paictl does not know
])
def test_state_table(state, sub_state, retries, expected):
    assert job_state({"state": state, "subState": sub_state, "retries": retries}) is expected


def _detail(**status):
    return {"name": "demo", "jobStatus": {"state": "RUNNING", "subState": "AttemptRunning", "retries": 0,
                                          "attemptId": 0, **status},
            "taskRoles": {"worker": {"taskRoleStatus": {"name": "worker"}, "taskStatuses": [
                {"taskIndex": 1, "taskState": "FAILED", "retries": 2, "attemptId": 2, "containerNodeName": "n2",
                 "containerExitCode": 137, "containerExitSpec": None},
                {"taskIndex": 0, "taskState": "RUNNING", "retries": 0, "attemptId": 0, "containerIp": "10.0.0.1",
                 "containerExitCode": None}]},
                          "ps": {"taskRoleStatus": {"name": "ps"}, "taskStatuses": [
                              {"taskIndex": 0, "taskState": "SUCCEEDED", "containerExitCode": 0}]}}}


def test_tasks_are_sorted_with_retries_nodes_and_diagnoses():
    view = job_view(_detail())
    assert [(t.role, t.index, t.state, t.attempt, t.node, t.exit_code, t.diagnosis) for t in view.tasks] == [
        ("ps", 0, "SUCCEEDED", 0, None, 0, None),
        ("worker", 0, "RUNNING", 0, "10.0.0.1", None, None),
        ("worker", 1, "FAILED", 2, "n2", 137, "137 ContainerSigKillReceived"),
    ]
    assert view.state is JobState.RUNNING and view.completion_code is None and view.message == "AttemptRunning"


def test_final_view_has_code_trigger_and_message():
    view = job_view(_detail(state="FAILED", subState="Completed", attemptId=1, appExitCode=254,
                            appExitTriggerMessage="FailedTaskCount 1 has reached  MinFailedTaskCount 1",
                            appExitTriggerTaskRoleName="worker", appExitTriggerTaskIndex=1), where="x")
    assert view.state is JobState.FAILED and view.attempt == 1 and view.completion_code == 254
    assert view.triggered_by == ("worker", 1)
    assert view.message == "254 ContainerImageNotExists; FailedTaskCount 1 has reached MinFailedTaskCount 1"
    assert view.where == "x"


def test_stopped_uses_the_server_exit_spec():
    view = job_view(_detail(state="STOPPED", subState="Completed", appExitCode=-210,
                            appExitSpec={"code": -210, "phrase": "StopFrameworkRequested"}))
    assert view.state is JobState.STOPPED and view.message == "-210 StopFrameworkRequested"


def test_messages_while_not_final():
    assert job_view(_detail(state="RUNNING", subState="AttemptDeletionPending")).message == \
        "completing (AttemptDeletionPending)"
    assert job_view(_detail(state="STOPPING", subState="AttemptDeleting")).message == \
        "stop requested (AttemptDeleting)"
    assert job_view(_detail(state="WAITING", subState="AttemptCreationPending", retries=1,
                            retryDelayTime=30)).message == "retry 1 in 30s (AttemptCreationPending)"


def test_diagnosis_prefers_the_server_then_the_rules():
    assert diagnosis(0, None) is None and diagnosis(None, None) is None
    assert diagnosis(231, None) == "231 ContainerSyntaxError"          # a runtime code: looked up
    assert diagnosis(231, {"code": 231, "phrase": "FromServer"}) == "231 FromServer"
    assert diagnosis(1, None) == "255 PAIRuntimeUnknownFailed"        # a bare code: the default rule


def test_diagnosis_follows_a_custom_exit_spec():
    """The built-in rules with 231's phrase changed: the lookup must use the rules it is given (--exit-spec)."""
    from importlib.resources import files

    from paictl.compiler.exit_rules import rules_from_text

    source = files("paictl.compiler").joinpath("exit_rules.yaml").read_text(encoding="utf-8")
    assert "ContainerSyntaxError" in source
    custom = rules_from_text(source.replace("ContainerSyntaxError", "MySyntaxError"), "custom.yaml")
    assert diagnosis(231, None, custom) == "231 MySyntaxError"


def test_summary_rows():
    view = summary_view({"name": "a", "state": "SUCCEEDED", "subState": "Completed", "retries": 2,
                         "appExitCode": 0}, where="w")
    assert (view.name, view.state, view.attempt, view.completion_code, view.where) == (
        "a", JobState.SUCCEEDED, 2, 0, "w")
    running = summary_view({"name": "b", "state": "RUNNING", "subState": "AttemptRunning", "appExitCode": None})
    assert running.completion_code is None and running.message == "AttemptRunning"
