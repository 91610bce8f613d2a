"""targets/jobset/status.py: each row of its table, on JobSet and pod objects as the JobSet controller writes them."""

from __future__ import annotations

import pytest

from paictl.targets.jobset.status import job_state, job_view, pod_task, progress
from paictl.targets.states import JobState

NAME = "demo-1234abcd"


def jobset(status=None, *, suspend=None, deleting=False, annotations=None) -> dict:
    obj = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
           "metadata": {"name": NAME, "namespace": "team", "annotations": annotations or {"jobName": "demo"}},
           "spec": {"replicatedJobs": [{"name": "ps-server"}, {"name": "worker"}]}}
    if suspend is not None:
        obj["spec"]["suspend"] = suspend
    if deleting:
        obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if status is not None:
        obj["status"] = status
    return obj


def condition(kind: str, status: str = "True", reason: str = "", message: str = "") -> dict:
    return {"type": kind, "status": status, "reason": reason, "message": message}


def counts(name: str, **values) -> dict:
    return {"name": name, "ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0, **values}


def pod(role_label: str, index: int, *, role: str | None = None, attempt: int = 0, created: str = "2026-01-01T00:00:01Z",
        state: dict | None = None, name: str | None = None) -> dict:
    return {"metadata": {"name": name or f"{NAME}-{role_label}-0-{index}-abcde", "creationTimestamp": created,
                         "labels": {"jobset.sigs.k8s.io/jobset-name": NAME,
                                    "jobset.sigs.k8s.io/replicatedjob-name": role_label,
                                    "jobset.sigs.k8s.io/restart-attempt": str(attempt),
                                    "batch.kubernetes.io/job-completion-index": str(index)},
                         "annotations": {"paictl.dev/task-role": role or role_label}},
            "spec": {"nodeName": "node-1"},
            "status": {"phase": "Running", "containerStatuses": [{"name": "app", "restartCount": 0,
                                                                 "state": state or {"running": {}}}]}}


@pytest.mark.parametrize("obj, expected", [
    (jobset(), JobState.PENDING),
    (jobset({"replicatedJobsStatus": [counts("worker", active=1)]}), JobState.PENDING),
    (jobset({"replicatedJobsStatus": [counts("worker", active=1, ready=1)]}), JobState.RUNNING),
    (jobset({"terminalState": "Completed"}), JobState.SUCCEEDED),
    (jobset({"conditions": [condition("Completed", reason="AllJobsCompleted")]}), JobState.SUCCEEDED),
    (jobset({"terminalState": "Failed"}), JobState.FAILED),
    (jobset({"conditions": [condition("Failed", reason="FailedJobs")]}), JobState.FAILED),
    (jobset({"conditions": [condition("Completed", "False")]}), JobState.PENDING),
    (jobset({"conditions": [condition("RestartingJobSet", reason="Restarting")], "restarts": 1}),
     JobState.RESTARTING),
    (jobset({"conditions": [condition("RestartingJobSet", "False", "JobsReady")],
             "replicatedJobsStatus": [counts("worker", ready=1)]}), JobState.RUNNING),
    (jobset(suspend=True), JobState.PENDING),
    (jobset({"conditions": [condition("Suspended", reason="SuspendedJobs")]}), JobState.PENDING),
    (jobset(suspend=True, annotations={"paictl.dev/suspended-by": "paictl stop --suspend"}), JobState.STOPPED),
    (jobset(deleting=True), JobState.STOPPING),
    (jobset({"terminalState": "Failed"}, deleting=True), JobState.FAILED),  # a verdict outlives the deletion
])
def test_state_table(obj, expected):
    assert job_state(obj) is expected


def test_a_running_pod_makes_it_running_before_the_counts_do():
    view = job_view(jobset({"replicatedJobsStatus": [counts("worker", active=1)]}), [pod("worker", 0)])
    assert view.state is JobState.RUNNING


def test_failed_view_names_the_failed_task_and_the_reason():
    failed = {"terminated": {"exitCode": 137, "reason": "Error"}}
    status = {"terminalState": "Failed", "restarts": 1,
              "conditions": [condition("Failed", reason="ReachedMaxRestarts",
                                       message="jobset failed due to reaching max number of restarts")]}
    pods = [pod("worker", 0, attempt=1), pod("worker", 1, attempt=1, state=failed),
            pod("worker", 1, attempt=0, state=failed, name="old")]  # the previous attempt's pod is not shown
    view = job_view(jobset(status), pods)
    assert view.state is JobState.FAILED and view.attempt == 1
    assert view.message == "ReachedMaxRestarts: jobset failed due to reaching max number of restarts"
    assert (view.triggered_by, view.completion_code) == (("worker", 1), 137)
    assert [(t.role, t.index, t.state, t.exit_code) for t in view.tasks] == [
        ("worker", 0, "Running", None), ("worker", 1, "Error", 137)]
    assert view.where == f"JobSet team/{NAME}"


def test_a_retried_index_shows_its_newest_pod_and_counts_attempts():
    first = pod("worker", 0, created="2026-01-01T00:00:01Z", state={"terminated": {"exitCode": 1}}, name="b")
    second = pod("worker", 0, created="2026-01-01T00:00:09Z", name="a")
    (task,) = job_view(jobset({}), [first, second]).tasks
    assert (task.state, task.attempt) == ("Running", 1)


def test_tasks_in_spec_order_with_original_role_names():
    pods = [pod("worker", 1), pod("worker", 0), pod("ps-server", 0, role="ps_server")]
    tasks = job_view(jobset({}), pods).tasks
    assert [(t.role, t.index) for t in tasks] == [("ps_server", 0), ("worker", 0), ("worker", 1)]


def test_progress_per_role():
    obj = jobset({"replicatedJobsStatus": [counts("ps-server", active=1, ready=1), counts("worker", succeeded=1)]})
    assert progress(obj) == "ps-server: 1 ready, 1 active; worker: 1 succeeded"
    assert job_view(obj, []).message == progress(obj)


def test_pod_task_reads_the_completion_index_label_or_annotation():
    assert pod_task(pod("ps-server", 3, role="ps_server")) == ("ps_server", 3)
    bare = pod("worker", 2)
    index = bare["metadata"]["labels"].pop("batch.kubernetes.io/job-completion-index")
    bare["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] = index
    assert pod_task(bare) == ("worker", 2)
    assert pod_task({"metadata": {"name": "x"}}) is None


def test_a_failed_jobset_is_decided_by_the_job_its_failed_condition_names():
    """kubernetes-sigs/jobset pkg/controllers/failure_policy.go: the Failed condition's message ends with
    "(first failed job: <name>)", the Job whose failure came first (findFirstFailedJob), which need not be the
    first in spec order: here the worker failed first, the ps-server's pod failed after it."""
    failed = {"terminated": {"exitCode": 1, "finishedAt": "2026-01-01T00:01:00Z"}}
    later = {"terminated": {"exitCode": 137, "finishedAt": "2026-01-01T00:02:00Z"}}
    ps, worker = pod("ps-server", 0, state=later), pod("worker", 1, state=failed)
    ps["metadata"]["labels"]["batch.kubernetes.io/job-name"] = f"{NAME}-ps-server-0"
    worker["metadata"]["labels"]["batch.kubernetes.io/job-name"] = f"{NAME}-worker-0"
    obj = jobset({"terminalState": "Failed", "conditions": [condition(
        "Failed", reason="FailedJobs",
        message=f"jobset failed due to one or more job failures (first failed job: {NAME}-worker-0)")]})
    view = job_view(obj, [ps, worker])
    assert view.triggered_by == ("worker", 1) and view.completion_code == 1
    # without a name to go by (an older controller's message), the first failed task in spec order
    obj["status"]["conditions"][0]["message"] = "jobset failed due to one or more job failures"
    assert job_view(obj, [ps, worker]).triggered_by == ("ps-server", 0)


_STOPPED = {"paictl.dev/suspended-by": "paictl stop --suspend", "paictl.dev/deactivated-kueue-workloads": "jobset-w"}


def kueue_workload(active: bool, *conditions: dict, cluster_queue: str = "") -> dict:
    """A Workload of the shape Kueue v0.17 writes (tests/targets/kube/test_kube_kueue.py reads them on the real
    plane): spec.active, spec.queueName, the conditions, status.admission once admitted."""
    status: dict = {"conditions": list(conditions)}
    if cluster_queue:
        status["admission"] = {"clusterQueue": cluster_queue}
    return {"metadata": {"name": "jobset-w", "namespace": "team"}, "spec": {"active": active, "queueName": "q"},
            "status": status}


@pytest.mark.parametrize("workloads,state,message", [
    (None, JobState.STOPPED, "suspended by paictl stop --suspend, Kueue workload jobset-w deactivated (resume: "
                             "kubectl --context c patch workloads.kueue.x-k8s.io jobset-w -n team --type merge -p "
                             """'{"spec":{"active":true}}' && kubectl --context c annotate jobset demo-1234abcd -n """
                             "team paictl.dev/suspended-by- paictl.dev/deactivated-kueue-workloads-)"),
    ([kueue_workload(False, condition("Evicted", reason="Deactivated"))], JobState.STOPPED, "suspended by paictl"),
    # made active again: Kueue's eviction for the deactivation is history, not a preemption
    ([kueue_workload(True, condition("Evicted", reason="Deactivated"),
                     condition("QuotaReserved", "False", "Pending", "insufficient quota"))],
     JobState.PENDING, "resumed: queued in Kueue's LocalQueue q, not admitted yet (Pending: insufficient quota)"),
    ([kueue_workload(True, condition("Admitted", reason="Admitted"), cluster_queue="cq")],
     JobState.PENDING, "resumed: Kueue workload jobset-w admitted into ClusterQueue cq, starting"),
    ([kueue_workload(True, condition("Evicted", reason="PodsReadyTimeout", message="not ready in time"))],
     JobState.PENDING, "evicted by Kueue after a resume (workload jobset-w: PodsReadyTimeout: not ready in time); "
                       "queued to be admitted again"),
])
def test_a_suspension_paictl_made_reads_as_the_workloads_kueue_keeps_say(workloads, state, message):
    view = job_view(jobset(suspend=True, annotations=_STOPPED), [], kubectl="kubectl --context c",
                    kueue_workloads=workloads)
    assert view.state is state and view.message.startswith(message), view.message
