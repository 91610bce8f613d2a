"""Reading Framework status objects: the state machine of reference frameworkcontroller.md b, task by task.

The objects are written the way FrameworkController writes them (field names and nesting from its Go types), for
the sequences a job really goes through: pending on an image pull, running, a failed task deciding the attempt, a
retry scheduled after AttemptCompleted, a stop (-210), success.
"""

from __future__ import annotations

import base64
import gzip
import json

import pytest

from paictl.targets.framework.status import FRAMEWORK_STATES, decode_task_role_statuses, job_state, job_view
from paictl.targets.states import JobState


def completion(code, phrase, type_name, trigger=None, containers=None):
    status = {"code": code, "phrase": phrase, "type": {"name": type_name, "attributes": []},
              "diagnostics": "free text from the controller"}
    if trigger:
        status["trigger"] = trigger
    if containers is not None:
        status["pod"] = {"reason": "", "message": "", "containers": containers}
    return status


def task(index, state, *, retried=0, node=None, completion_status=None):
    return {"index": index, "state": state, "transitionTime": "2026-01-01T00:00:00Z", "deletionPending": False,
            "retryPolicyStatus": {"totalRetriedCount": retried, "accountableRetriedCount": retried,
                                  "retryDelaySec": None},
            "attemptStatus": {"id": retried, "podName": f"demo-main-{index}", "podNodeName": node,
                              "completionStatus": completion_status}}


def framework(state=None, *, attempt_id=0, tasks=(), completion_status=None, execution="Start", retry_delay=None):
    obj = {"apiVersion": "frameworkcontroller.microsoft.com/v1", "kind": "Framework",
           "metadata": {"name": "demo", "namespace": "team"},
           "spec": {"executionType": execution, "taskRoles": [{"name": "main", "taskNumber": len(tasks) or 1}]}}
    if state is None:
        return obj
    obj["status"] = {
        "state": state, "startTime": "2026-01-01T00:00:00Z", "transitionTime": "2026-01-01T00:00:01Z",
        "retryPolicyStatus": {"totalRetriedCount": attempt_id, "accountableRetriedCount": attempt_id,
                              "retryDelaySec": retry_delay},
        "attemptStatus": {"id": attempt_id, "configMapName": "demo-attempt", "completionStatus": completion_status,
                          "taskRoleStatuses": [{"name": "main", "taskStatuses": list(tasks)}]},
    }
    return obj


def test_no_status_yet_is_pending():
    view = job_view(framework())
    assert view.state is JobState.PENDING
    assert "FrameworkController" in view.message
    assert view.where == "Framework team/demo"


@pytest.mark.parametrize("state", ["AttemptCreationPending", "AttemptCreationRequested", "AttemptPreparing"])
def test_attempt_before_any_task_ran_is_pending(state):
    assert job_state(framework(state, tasks=[task(0, "AttemptPreparing")])) is JobState.PENDING


def test_running_with_task_details():
    view = job_view(framework("AttemptRunning", tasks=[task(1, "AttemptRunning", node="node-b"),
                                                       task(0, "AttemptRunning", node="node-a", retried=2)]))
    assert view.state is JobState.RUNNING
    assert [(t.role, t.index, t.state, t.attempt, t.node) for t in view.tasks] == [
        ("main", 0, "AttemptRunning", 2, "node-a"), ("main", 1, "AttemptRunning", 0, "node-b")]


def test_attempt_completed_is_not_final():
    failed = completion(1, "ContainerUnrecognizedFailed", "Failed")
    view = job_view(framework("AttemptCompleted", completion_status=failed))
    assert view.state is JobState.RUNNING
    assert not view.state.is_final
    assert "decides whether to retry" in view.message


def test_attempt_completed_with_a_scheduled_retry_is_restarting():
    failed = completion(201, "ContainerTransientConflictFailed", "Failed")
    view = job_view(framework("AttemptCompleted", completion_status=failed, retry_delay=120))
    assert view.state is JobState.RESTARTING
    assert view.message == "ContainerTransientConflictFailed; retrying in 120s"


def test_completed_succeeded():
    done = completion(0, "Succeeded", "Succeeded",
                      trigger={"message": "CompletedTaskCount 1 has reached TotalTaskCount 1", "taskRoleName": "main",
                               "taskIndex": 0})
    view = job_view(framework("Completed", tasks=[task(0, "Completed", completion_status=completion(
        0, "Succeeded", "Succeeded", containers=[{"name": "app", "code": 0}]))], completion_status=done))
    assert view.state is JobState.SUCCEEDED
    assert view.completion_code == 0
    assert view.triggered_by == ("main", 0)
    assert view.tasks[0].exit_code == 0
    assert view.tasks[0].diagnosis is None


def test_completed_failed_inherits_the_task_that_triggered():
    task_failed = completion(1, "ContainerUnrecognizedFailed", "Failed",
                             containers=[{"name": "frameworkbarrier", "code": 0}, {"name": "app", "code": 1}])
    done = completion(1, "ContainerUnrecognizedFailed", "Failed",
                      trigger={"message": "FailedTaskCount 1 has reached MinFailedTaskCount 1",
                               "taskRoleName": "main", "taskIndex": 1})
    stopped = completion(-220, "FrameworkAttemptCompletion", "Failed")
    view = job_view(framework("Completed", attempt_id=1,
                              tasks=[task(0, "Completed", completion_status=stopped),
                                     task(1, "Completed", completion_status=task_failed)],
                              completion_status=done))
    assert view.state is JobState.FAILED
    assert view.attempt == 1
    assert view.completion_code == 1
    assert view.triggered_by == ("main", 1)
    assert view.message == "ContainerUnrecognizedFailed; FailedTaskCount 1 has reached MinFailedTaskCount 1"
    assert view.tasks[1].exit_code == 1
    assert view.tasks[1].diagnosis == "1 ContainerUnrecognizedFailed"
    assert view.tasks[0].diagnosis == "-220 FrameworkAttemptCompletion"


@pytest.mark.parametrize("code", [-210, -220])
def test_completed_with_a_stop_code_is_stopped(code):
    stopped = completion(code, "StopFrameworkRequested", "Failed")
    assert job_state(framework("Completed", completion_status=stopped, execution="Stop")) is JobState.STOPPED


def test_stop_asked_but_not_yet_seen_is_stopping():
    assert job_state(framework("AttemptRunning", execution="Stop")) is JobState.STOPPING
    assert job_state(framework(execution="Stop")) is JobState.STOPPING


def test_attempt_completing_after_a_stop_is_stopping():
    stopped = completion(-210, "StopFrameworkRequested", "Failed")
    for state in ("AttemptDeletionPending", "AttemptDeletionRequested", "AttemptDeleting", "AttemptCompleted"):
        assert job_state(framework(state, completion_status=stopped)) is JobState.STOPPING


def test_completing_after_a_failure_is_still_running():
    failed = completion(137, "SigKill", "Failed")
    assert job_state(framework("AttemptDeletionPending", completion_status=failed)) is JobState.RUNNING


def test_an_unknown_state_is_unknown_not_a_guess():
    assert job_state(framework("AttemptSomethingNew")) is JobState.UNKNOWN


def test_only_completed_is_final():
    finals = [name for name in FRAMEWORK_STATES
              if job_state(framework(name, completion_status=completion(0, "Succeeded", "Succeeded"))).is_final]
    assert finals == ["Completed"]


def test_compressed_task_role_statuses_are_read():
    roles = [{"name": "main", "taskStatuses": [task(0, "AttemptRunning", node="n1")]}]
    packed = base64.b64encode(gzip.compress(json.dumps(roles).encode())).decode()
    obj = framework("AttemptRunning")
    del obj["status"]["attemptStatus"]["taskRoleStatuses"]
    obj["status"]["attemptStatus"]["taskRoleStatusesCompressed"] = packed
    assert decode_task_role_statuses(obj["status"]["attemptStatus"]) == roles
    assert job_view(obj).tasks[0].node == "n1"


def test_diagnostics_text_is_not_shown():
    """FC's diagnostics can quote a container's termination message (its log tail): never printed."""
    failed = completion(1, "ContainerUnrecognizedFailed", "Failed")
    failed["diagnostics"] = "PodPattern unmatched: password=hunter2"
    view = job_view(framework("Completed", completion_status=failed))
    assert "hunter2" not in json.dumps([view.message] + [t.diagnosis for t in view.tasks])
