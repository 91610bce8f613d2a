"""A MarsJob's status in paictl's words: condition sequences as KubeDL writes them (marsjob.md 3), pods as it labels
them (marsjob.md 4)."""

from __future__ import annotations

import pytest

from paictl.targets.mars.target import API_VERSIONS, KIND, PLURAL, job_state, job_view, task_views
from paictl.targets.states import JobState

NAME = "mars-demo-1a2b3c4d"
T0 = "2026-11-22T05:00:00Z"


def condition(type_, status="True", reason=None, message=None):
    return {"type": type_, "status": status, "reason": reason or f"Job{type_}", "message": message or f"{type_}.",
            "lastUpdateTime": T0, "lastTransitionTime": T0}


def marsjob(*conditions, replica_statuses=None, **metadata):
    obj = {"apiVersion": "training.kubedl.io/v1alpha1", "kind": "MarsJob",
           "metadata": {"name": NAME, "namespace": "team", **metadata}, "spec": {"marsReplicaSpecs": {}}}
    if conditions or replica_statuses is not None:
        obj["status"] = {"conditions": list(conditions), "replicaStatuses": replica_statuses or {}}
    return obj


CREATED = condition("Created", reason="JobCreated", message=f"MarsJob {NAME} is created.")
RUNNING = condition("Running", reason="JobRunning", message=f"MarsJob {NAME} is running.")
RUNNING_DONE = {**RUNNING, "status": "False"}
SUCCEEDED = condition("Succeeded", reason="JobSucceeded", message=f"MarsJob {NAME} has successfully completed.")
SCHEDULER_FAILED = condition("Failed", reason="MarsJobFailed",
                             message=f"MarsJob {NAME} is failed because 1 Scheduler replica(s) failed.")
DEADLINE = condition("Failed", reason="JobFailed",
                     message=f"Job {NAME} has failed because it was active longer than specified deadline")
RESTARTING = condition("Restarting", reason="MarsJobRestarting",
                       message=f"MarsJob {NAME} is restarting because 1 Worker replica(s) failed.")


@pytest.mark.parametrize("obj,state", [
    (marsjob(), JobState.PENDING),                                                    # not reconciled yet
    (marsjob(CREATED), JobState.PENDING),
    (marsjob(CREATED, condition("Queuing", reason="JobEnqueued")), JobState.PENDING),
    (marsjob(CREATED, RUNNING), JobState.RUNNING),
    (marsjob(CREATED, RESTARTING), JobState.RESTARTING),                              # Running replaced by Restarting
    (marsjob(CREATED, RUNNING_DONE, SUCCEEDED), JobState.SUCCEEDED),
    (marsjob(CREATED, RUNNING_DONE, SCHEDULER_FAILED), JobState.FAILED),
    (marsjob(CREATED, RUNNING_DONE, DEADLINE), JobState.FAILED),
    (marsjob(SUCCEEDED, CREATED), JobState.SUCCEEDED),                                # a final condition anywhere
    (marsjob(CREATED, RUNNING, deletionTimestamp=T0), JobState.STOPPING),
    (marsjob(CREATED, RUNNING_DONE, SUCCEEDED, deletionTimestamp=T0), JobState.SUCCEEDED),
    (marsjob(CREATED, {**RUNNING, "status": "Unknown"}), JobState.PENDING),
    (marsjob(CREATED, condition("Suspended")), JobState.UNKNOWN),
])
def test_job_state(obj, state):
    assert job_state(obj) is state


def pod(replica_type, index, *, job=NAME, phase="Running", node="node-1", state=None, restarts=0, last=None, **meta):
    status = {"phase": phase}
    if state is not None:
        container = {"name": "mars", "restartCount": restarts, "state": state}
        if last:
            container["lastState"] = last
        status["containerStatuses"] = [{"name": "sidecar", "restartCount": 9, "state": {"running": {}}}, container]
    return {"metadata": {"name": f"{job}-{replica_type}-{index}", "labels": {
        "group-name": "training.kubedl.io", "job-name": job, "replica-type": replica_type,
        "replica-index": str(index)}, **meta}, "spec": {"nodeName": node} if node else {}, "status": status}


RUN = {"running": {"startedAt": T0}}


def test_task_views_sorted_and_read_from_the_mars_container():
    pods = [
        pod("worker", 1, state={"waiting": {"reason": "CrashLoopBackOff"}}, restarts=3,
            last={"terminated": {"exitCode": 137, "reason": "OOMKilled"}}),
        pod("worker", 0, state=RUN, node="node-2"),
        pod("webservice", 0, state=RUN),
        pod("scheduler", 0, state={"terminated": {"exitCode": 0, "reason": "Completed"}}),
        pod("worker", 10, phase="Pending", node=None),
        pod("worker", 2, state=RUN, deletionTimestamp=T0),
        pod("worker", 3, phase="Failed", node="node-3") | {"status": {"phase": "Failed", "reason": "Evicted"}},
        pod("worker", 0, job="other-job", state=RUN),                     # another job's pod
        pod("ps", 0, state=RUN),                                          # not a Mars replica type
    ]
    views = task_views(marsjob(CREATED, RUNNING), pods)
    assert [(v.role, v.index, v.state, v.attempt, v.node, v.exit_code) for v in views] == [
        ("Scheduler", 0, "Completed", 0, "node-1", 0),
        ("WebService", 0, "Running", 0, "node-1", None),
        ("Worker", 0, "Running", 0, "node-2", None),
        ("Worker", 1, "CrashLoopBackOff", 3, "node-1", None),
        ("Worker", 2, "Terminating", 0, "node-1", None),
        ("Worker", 3, "Evicted", 0, "node-3", None),
        ("Worker", 10, "Pending", 0, None, None),
    ]


def test_failed_scheduler_decides_the_job():
    pods = [pod("scheduler", 0, phase="Failed", state={"terminated": {"exitCode": 1, "reason": "Error"}}),
            pod("worker", 0, state=RUN)]
    view = job_view(marsjob(CREATED, RUNNING_DONE, SCHEDULER_FAILED), pods)
    assert view.state is JobState.FAILED and view.state.is_final
    assert view.message == f"MarsJobFailed: MarsJob {NAME} is failed because 1 Scheduler replica(s) failed."
    assert (view.triggered_by, view.completion_code) == (("Scheduler", 0), 1)
    assert view.where == f"MarsJob team/{NAME}" and view.name == NAME
    assert [t.role for t in view.tasks] == ["Scheduler", "Worker"]


def test_succeeded_and_deadline_views():
    done = job_view(marsjob(CREATED, RUNNING_DONE, SUCCEEDED),
                    [pod("scheduler", 0, phase="Succeeded", state={"terminated": {"exitCode": 0}})])
    assert (done.state, done.triggered_by, done.completion_code) == (JobState.SUCCEEDED, ("Scheduler", 0), 0)
    assert done.tasks[0].state == "Completed"
    deadline = job_view(marsjob(CREATED, RUNNING_DONE, DEADLINE), [pod("scheduler", 0, state=RUN)])
    assert deadline.state is JobState.FAILED and deadline.triggered_by is None
    assert deadline.message.startswith("JobFailed: Job ") and deadline.message.endswith("specified deadline")


def test_messages_are_one_line():
    multi = condition("Restarting", reason="MarsJobRestarting", message="worker 1 failed:\n  exit code 137\n")
    view = job_view(marsjob(CREATED, multi), [])
    assert view.state is JobState.RESTARTING
    assert view.message == "MarsJobRestarting: worker 1 failed: exit code 137"
    assert job_view(marsjob(), []).message == "waiting for the KubeDL operator to take the MarsJob"
    assert job_view(marsjob(CREATED, RUNNING, deletionTimestamp=T0), []).message == "the MarsJob is being deleted"


def test_identity():
    assert API_VERSIONS == ("training.kubedl.io/v1alpha1", "kubedl.io/v1alpha1")
    assert (KIND, PLURAL) == ("MarsJob", "marsjobs")


class EventsOnly:
    """A cluster that answers event lists only (what PodDiagnoser asks of a MarsJob without pods)."""

    def __init__(self, events):
        self.events, self.asked = events, []

    def json(self, method, path, query=()):
        assert method == "GET" and path == "/api/v1/namespaces/team/events", path
        self.asked.append(dict(query)["fieldSelector"])
        return {"items": self.events}


def event(name, reason, message, stamp, kind="MarsJob"):
    return {"involvedObject": {"kind": kind, "name": name}, "type": "Warning", "reason": reason, "message": message,
            "lastTimestamp": stamp}


def test_a_marsjob_without_pods_says_why_from_kubedls_events_on_it():
    """KubeDL records a pod it could not create on the MarsJob (pkg/job_controller/pod_control.go: FailedCreatePod,
    "Error creating: <the API server's refusal>"); the MarsJob's own status stays Created, which read as waiting
    for the operator. An event from before the MarsJob was created is about an earlier one of that name."""
    from paictl.targets.kube.pods import PodDiagnoser
    from paictl.targets.kube.workloads import workload

    refused = event(NAME, "FailedCreatePod", 'Error creating: pods "mars-demo-1a2b3c4d-scheduler-0" is forbidden: '
                    "exceeded quota: compute", "2026-11-22T05:00:07Z")
    stale = event(NAME, "FailedCreateService", "an earlier MarsJob's", "2026-11-22T04:10:00Z")
    other = event("another", "FailedCreatePod", "not this MarsJob's", "2026-11-22T05:00:09Z")
    cluster = EventsOnly([stale, refused, other])
    job = marsjob(CREATED, creationTimestamp="2026-11-22T05:00:00Z", uid="u-1")
    diagnoser = PodDiagnoser(cluster, "team", workload("mars"), None, events_after=0)
    view = diagnoser.enrich(job_view(job, []), [], job)
    assert view.state is JobState.PENDING
    assert view.message == (f"JobCreated: MarsJob {NAME} is created. (event FailedCreatePod: Error creating: pods "
                            '"mars-demo-1a2b3c4d-scheduler-0" is forbidden: exceeded quota: compute)')
    assert cluster.asked == [f"involvedObject.kind=MarsJob,type=Warning,involvedObject.name={NAME}"]
    running = marsjob(CREATED, RUNNING, creationTimestamp="2026-11-22T05:00:00Z", uid="u-1")
    assert diagnoser.enrich(job_view(running, []), [], running).message == f"JobRunning: MarsJob {NAME} is running."
    assert len(cluster.asked) == 1  # a job that is not pending costs no request
