"""The Kubernetes API server emulator (tests/kube_emulator) seen through the official `kubernetes` python client:
the emulator is only useful if a real client gets what a real API server would answer. This file: the scripted
controllers (the state sequences a watcher sees) and pod logs."""

from __future__ import annotations

import time

import pytest

kubernetes = pytest.importorskip("kubernetes")
from kubernetes import watch  # noqa: E402

from kube_emulator.samples import (  # noqa: E402
    ATTEMPT, FC_GROUP, FC_PLURAL, FC_VERSION, MARS_GROUP, MARS_VERSION, create_framework, create_marsjob, error_of,
    follow_mars, follow_states, framework, marsjob, message)
from kube_emulator import samples  # noqa: E402

api, core, custom = samples.api, samples.core, samples.custom  # fixtures: python clients for the emulator


# -- scripted Framework controller ---------------------------------------------------------------------------------

def test_framework_succeeded_goes_through_every_state(emulator, custom, core):
    emulator.scenario("Framework", "ok", "succeeded")
    created = create_framework(custom, framework("ok", tasks=2))
    states, obj = follow_states(custom, "ok", since=created)
    assert states == ATTEMPT + ["Completed"]
    status = obj["status"]
    completion = status["attemptStatus"]["completionStatus"]
    assert (completion["code"], completion["phrase"], completion["type"]) == \
        (0, "Succeeded", {"name": "Succeeded", "attributes": []})
    assert "CompletedTaskCount 2 has reached TotalTaskCount 2" in completion["diagnostics"]
    tasks = status["attemptStatus"]["taskRoleStatuses"][0]["taskStatuses"]
    assert [(t["index"], t["state"], t["attemptStatus"]["podName"]) for t in tasks] == \
        [(0, "Completed", "ok-worker-0"), (1, "Completed", "ok-worker-1")]
    assert tasks[0]["attemptStatus"]["podNodeName"] == "node-0"
    assert tasks[0]["attemptStatus"]["completionStatus"]["code"] == 0
    assert status["retryPolicyStatus"]["totalRetriedCount"] == 0 and status["completionTime"]
    assert core.list_namespaced_pod("default").items == []  # FC deletes a task's pod when the task completes
    assert emulator.get_object("v1", "ConfigMap", "default", "ok-attempt") is None


def test_framework_pods_carry_what_frameworkcontroller_puts_on_them(emulator, custom, core):
    emulator.scenario("Framework", "lbl", "running", seconds=600)
    create_framework(custom, framework("lbl"))
    follow_states(custom, "lbl", final=lambda o: (o.get("status") or {}).get("state") == "AttemptRunning")
    pod = core.read_namespaced_pod("lbl-worker-0", "default")
    assert pod.metadata.labels == {"app": "lbl", "FC_FRAMEWORK_NAME": "lbl", "FC_TASKROLE_NAME": "worker",
                                   "FC_TASK_INDEX": "0"}
    assert pod.metadata.annotations["FC_CONFIGMAP_NAME"] == "lbl-attempt"
    assert pod.metadata.owner_references[0].kind == "ConfigMap"
    assert pod.status.phase == "Running" and pod.spec.node_name == "node-0"
    env = [e.name for e in pod.spec.containers[0].env]
    assert env[:2] == ["FC_FRAMEWORK_NAMESPACE", "FC_FRAMEWORK_NAME"] and "FC_POD_UID" in env
    configmap = core.read_namespaced_config_map("lbl-attempt", "default")
    assert configmap.metadata.owner_references[0].kind == "Framework"
    selected = core.list_namespaced_pod("default", label_selector="FC_FRAMEWORK_NAME=lbl,FC_TASK_INDEX in (0)")
    assert [p.metadata.name for p in selected.items] == ["lbl-worker-0"]


def test_framework_failed_retries_the_task_then_completes_with_its_code(emulator, custom):
    emulator.scenario("Framework", "bad", "failed", exit_code=1, log="Traceback\nValueError: boom\n")
    created = create_framework(custom, framework("bad", tasks=2, task_retries=2))
    states, obj = follow_states(custom, "bad", since=created)
    assert states == ATTEMPT + ["Completed"]
    status = obj["status"]
    completion = status["attemptStatus"]["completionStatus"]
    assert (completion["code"], completion["phrase"], completion["type"]["name"]) == \
        (1, "ContainerUnrecognizedFailed", "Failed")
    assert completion["trigger"] == {"message": "FailedTaskCount 1 has reached MinFailedTaskCount 1 in the TaskRole",
                                     "taskRoleName": "worker", "taskIndex": 0}
    failed, other = status["attemptStatus"]["taskRoleStatuses"][0]["taskStatuses"]
    assert failed["retryPolicyStatus"]["totalRetriedCount"] == 2 and failed["attemptStatus"]["id"] == 2
    assert failed["attemptStatus"]["completionStatus"]["pod"]["containers"][0]["code"] == 1
    assert other["attemptStatus"]["completionStatus"]["code"] == 0


def test_framework_retries_whole_attempts_under_its_retry_policy(emulator, custom):
    emulator.scenario("Framework", "again", "failed", exit_code=137, failures=1)
    created = create_framework(custom, framework("again", framework_retries=1))
    states, obj = follow_states(custom, "again", since=created)
    assert states == ATTEMPT + ATTEMPT + ["Completed"]  # attempt 0 fails with 137, attempt 1 succeeds
    assert obj["status"]["retryPolicyStatus"]["totalRetriedCount"] == 1
    assert obj["status"]["attemptStatus"]["id"] == 1
    assert obj["status"]["attemptStatus"]["completionStatus"]["code"] == 0


def test_fancy_retry_policy_does_not_count_transient_failures(emulator, custom):
    emulator.scenario("Framework", "fancy", "failed", exit_code=137, failures=2)
    create_framework(custom, framework("fancy", task_retries=0, fancy=True))
    _, obj = follow_states(custom, "fancy")
    task = obj["status"]["attemptStatus"]["taskRoleStatuses"][0]["taskStatuses"][0]
    assert task["retryPolicyStatus"] == {"totalRetriedCount": 2, "accountableRetriedCount": 0, "retryDelaySec": None}
    assert obj["status"]["attemptStatus"]["completionStatus"]["code"] == 0


def test_framework_stopped_completes_with_210_and_its_tasks_with_220(emulator, custom, core):
    emulator.scenario("Framework", "halt", "stopped")
    create_framework(custom, framework("halt", tasks=2))
    follow_states(custom, "halt", final=lambda o: (o.get("status") or {}).get("state") == "AttemptRunning")
    stopped = custom.patch_namespaced_custom_object(FC_GROUP, FC_VERSION, "default", FC_PLURAL, "halt",
                                                    {"spec": {"executionType": "Stop"}})
    states, obj = follow_states(custom, "halt", since=stopped)
    assert states[-5:] == ["AttemptDeletionPending", "AttemptDeletionRequested", "AttemptDeleting",
                           "AttemptCompleted", "Completed"]
    completion = obj["status"]["attemptStatus"]["completionStatus"]
    assert (completion["code"], completion["phrase"], completion["type"]) == \
        (-210, "StopFrameworkRequested", {"name": "Failed", "attributes": ["Permanent"]})
    codes = {t["attemptStatus"]["completionStatus"]["code"]
             for t in obj["status"]["attemptStatus"]["taskRoleStatuses"][0]["taskStatuses"]}
    assert codes == {-220}
    assert core.list_namespaced_pod("default").items == []
    assert obj["spec"]["executionType"] == "Stop"  # the object stays (PostStop pattern)


def test_framework_stuck_pending_stays_preparing_until_stopped(emulator, custom, core):
    emulator.scenario("Framework", "stuck", "stuck-pending")
    create_framework(custom, framework("stuck"))
    follow_states(custom, "stuck", final=lambda o: (o.get("status") or {}).get("state") == "AttemptPreparing"
                  and o["status"]["attemptStatus"]["taskRoleStatuses"][0]["taskStatuses"][0]["state"] ==
                  "AttemptPreparing")
    emulator.clock.sleep(120)  # two simulated minutes later, still pending
    obj = custom.get_namespaced_custom_object(FC_GROUP, FC_VERSION, "default", FC_PLURAL, "stuck")
    assert obj["status"]["state"] == "AttemptPreparing"
    pod = core.read_namespaced_pod("stuck-worker-0", "default")
    assert pod.status.phase == "Pending"
    assert pod.status.container_statuses[0].state.waiting.reason == "ImagePullBackOff"
    error = error_of(core.read_namespaced_pod_log, "stuck-worker-0", "default")
    assert error.status == 400 and "is waiting to start: image can't be pulled" in message(error)
    events = core.list_namespaced_event("default", field_selector="involvedObject.name=stuck-worker-0")
    by_reason = {e.reason: e for e in events.items}
    assert sorted(by_reason) == ["BackOff", "Failed"] and by_reason["Failed"].type == "Warning"
    assert by_reason["BackOff"].message == 'Back-off pulling image "busybox"'
    custom.patch_namespaced_custom_object(FC_GROUP, FC_VERSION, "default", FC_PLURAL, "stuck",
                                          {"spec": {"executionType": "Stop"}})
    _, obj = follow_states(custom, "stuck")
    assert obj["status"]["attemptStatus"]["completionStatus"]["code"] == -210


def test_a_pod_the_server_refuses_fails_its_task_with_200(emulator, custom):
    emulator.scenario("Framework", "noimage", "succeeded")
    body = framework("noimage")
    del body["spec"]["taskRoles"][0]["task"]["pod"]["spec"]["containers"][0]["image"]
    created = create_framework(custom, body)
    _, obj = follow_states(custom, "noimage", since=created)
    completion = obj["status"]["attemptStatus"]["completionStatus"]
    assert (completion["code"], completion["phrase"]) == (-200, "PodCreationPermanentError")
    assert "spec.containers[0].image: Required value" in completion["diagnostics"]


def test_create_execution_type_waits_for_start(emulator, custom):
    emulator.scenario("Framework", "later", "succeeded")
    create_framework(custom, framework("later", execution="Create"))
    emulator.clock.sleep(60)
    obj = custom.get_namespaced_custom_object(FC_GROUP, FC_VERSION, "default", FC_PLURAL, "later")
    assert obj["status"]["state"] == "AttemptCreationPending"
    custom.patch_namespaced_custom_object(FC_GROUP, FC_VERSION, "default", FC_PLURAL, "later",
                                          {"spec": {"executionType": "Start"}})
    _, obj = follow_states(custom, "later")
    assert obj["status"]["attemptStatus"]["completionStatus"]["code"] == 0


def test_following_a_ten_minute_job_costs_one_watch_plus_one_per_disconnect(emulator, custom):
    """Simulated 10 minutes (3 s at speed 200) followed with watches: one request, plus one per dropped stream,
    resumed from the last resourceVersion seen without losing or repeating a state."""
    emulator.scenario("Framework", "long", "running", seconds=600)
    create_framework(custom, framework("long"))
    seen, version, drops = [], None, 0
    while not seen or seen[-1] != "Completed":
        try:
            for event in watch.Watch().stream(custom.list_namespaced_custom_object, FC_GROUP, FC_VERSION, "default",
                                              FC_PLURAL, field_selector="metadata.name=long", timeout_seconds=30,
                                              **({"resource_version": version} if version else {})):
                version = event["object"]["metadata"]["resourceVersion"]
                state = (event["object"].get("status") or {}).get("state")
                if state and (not seen or seen[-1] != state):
                    seen.append(state)
                if state == "AttemptRunning" and drops == 0:
                    drops += 1
                    emulator.drop_watches()
                if state == "Completed":
                    break
        except Exception:  # noqa: BLE001 - the client's error for a broken stream; resume below
            continue
    assert drops == 1 and emulator.count(watch=True) == 2
    assert emulator.count(method="GET", path_contains="/frameworks", watch=False) == 0
    assert seen[-6:] == ATTEMPT[3:] + ["Completed"]
    status = custom.get_namespaced_custom_object(FC_GROUP, FC_VERSION, "default", FC_PLURAL, "long")["status"]
    from datetime import datetime

    def at(stamp: str) -> datetime:
        return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")

    assert (at(status["completionTime"]) - at(status["runTime"])).total_seconds() >= 600


def test_foreground_deletion_waits_for_the_pods(emulator, custom, core):
    emulator.scenario("Framework", "del", "running", seconds=600)
    create_framework(custom, framework("del", tasks=2))
    follow_states(custom, "del", final=lambda o: (o.get("status") or {}).get("state") == "AttemptRunning")
    version = custom.get_namespaced_custom_object(FC_GROUP, FC_VERSION, "default", FC_PLURAL, "del")[
        "metadata"]["resourceVersion"]
    answer = custom.delete_namespaced_custom_object(FC_GROUP, FC_VERSION, "default", FC_PLURAL, "del",
                                                    propagation_policy="Foreground")
    assert answer["metadata"]["deletionTimestamp"] and "foregroundDeletion" in answer["metadata"]["finalizers"]
    events = [(e["type"], bool(e["object"]["metadata"].get("deletionTimestamp"))) for e in watch.Watch().stream(
        custom.list_namespaced_custom_object, FC_GROUP, FC_VERSION, "default", FC_PLURAL, resource_version=version,
        timeout_seconds=1)]
    assert events[-2:] == [("MODIFIED", True), ("DELETED", True)]
    assert core.list_namespaced_pod("default").items == []
    assert core.list_namespaced_config_map("default").items == []


# -- pod logs ------------------------------------------------------------------------------------------------------

def test_pod_log_reads_and_follows_until_the_container_ends(emulator, custom, core):
    text = "".join(f"line {i}\n" for i in range(10))
    emulator.scenario("Framework", "logs", "failed", exit_code=3, log=text, run_seconds=400)
    create_framework(custom, framework("logs"))
    follow_states(custom, "logs", final=lambda o: (o.get("status") or {}).get("state") == "AttemptRunning")
    assert core.read_namespaced_pod_log("logs-worker-0", "default") == "line 0\nline 1\nline 2\nline 3\nline 4\n"
    assert core.read_namespaced_pod_log("logs-worker-0", "default", tail_lines=2) == "line 3\nline 4\n"
    assert error_of(core.read_namespaced_pod_log, "logs-worker-0", "default", container="nope").status == 400
    followed = "".join(line + "\n" for line in watch.Watch().stream(
        core.read_namespaced_pod_log, "logs-worker-0", "default"))
    assert followed == text  # the stream ended by itself when the container exited, with every line
    # The pod goes with its task, right after the container ended: wait for it (a loaded machine may lag).
    deadline = time.monotonic() + 30
    while True:
        try:
            core.read_namespaced_pod_log("logs-worker-0", "default")
        except kubernetes.client.ApiException as missing:
            assert missing.status == 404
            break
        assert time.monotonic() < deadline, "the pod outlived its task"
        time.sleep(0.05)


def test_seeded_pod_logs(emulator, core):
    emulator.create_object({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                            "spec": {"nodeName": "node-0",  # a pod that ran was on a node (else its log is 204)
                                     "containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]},
                            })
    emulator.store.mutate(emulator.registry.by_kind("v1", "Pod"), "default", "p", lambda pod: pod["status"].update(
        phase="Succeeded", containerStatuses=[{"name": n, "state": {"terminated": {"exitCode": 0}}}
                                              for n in ("a", "b")]), "kubelet", "status")
    emulator.pod_logs[("default", "p", "b")] = "from b\n"
    emulator.pod_logs[("default", "p")] = "from any\n"
    assert core.read_namespaced_pod_log("p", "default", container="b") == "from b\n"
    assert core.read_namespaced_pod_log("p", "default", container="a") == "from any\n"
    error = error_of(core.read_namespaced_pod_log, "p", "default")
    assert message(error) == "a container name must be specified for pod p, choose one of: [a b]"


# -- scripted MarsJob controller -----------------------------------------------------------------------------------

def test_marsjob_succeeded(emulator, custom, core):
    emulator.scenario("MarsJob", "mars", "succeeded")
    created = create_marsjob(custom, marsjob("mars", workers=2))
    states, obj = follow_mars(custom, "mars", since=created)
    assert states == ["Created", "Running", "Succeeded"]
    conditions = {c["type"]: c for c in obj["status"]["conditions"]}
    assert conditions["Running"]["status"] == "False" and conditions["Succeeded"]["reason"] == "JobSucceeded"
    assert obj["status"]["replicaStatuses"]["Scheduler"] == {"succeeded": 1}
    assert obj["status"]["replicaStatuses"]["Worker"] == {"succeeded": 2}
    pods = core.list_namespaced_pod("default", label_selector="group-name=training.kubedl.io,job-name=mars")
    assert sorted(p.metadata.name for p in pods.items) == ["mars-scheduler-0", "mars-webservice-0", "mars-worker-0",
                                                            "mars-worker-1"]  # cleanPodPolicy None keeps them
    service = core.read_namespaced_service("mars-worker-1", "default")
    assert service.spec.cluster_ip == "None" and service.spec.selector["replica-index"] == "1"
    assert obj["metadata"]["managedFields"][-1]["subresource"] == "status"


def test_marsjob_failed_after_worker_restarts(emulator, custom):
    emulator.scenario("MarsJob", "mf", "failed", exit_code=2, worker_restarts=1)
    created = create_marsjob(custom, marsjob("mf"))
    states, obj = follow_mars(custom, "mf", since=created)
    assert states == ["Created", "Running", "Restarting", "Running", "Failed"]
    failed = obj["status"]["conditions"][-1]
    assert (failed["reason"], failed["message"]) == \
        ("MarsJobFailed", "MarsJob mf is failed because 1 Scheduler replica(s) failed.")
    assert obj["status"]["replicaStatuses"]["Scheduler"] == {"failed": 1}


def test_marsjob_stuck_pending_then_deleted_in_the_foreground(emulator, custom, core):
    emulator.scenario("MarsJob", "ms", "stuck-pending")
    create_marsjob(custom, marsjob("ms"))
    emulator.clock.sleep(60)
    obj = custom.get_namespaced_custom_object(MARS_GROUP, MARS_VERSION, "default", "marsjobs", "ms")
    assert [c["type"] for c in obj["status"]["conditions"]] == ["Created"]
    assert {p.status.phase for p in core.list_namespaced_pod("default").items} == {"Pending"}
    custom.delete_namespaced_custom_object(MARS_GROUP, MARS_VERSION, "default", "marsjobs", "ms",
                                           propagation_policy="Foreground")
    for _ in range(100):
        if emulator.get_object(f"{MARS_GROUP}/{MARS_VERSION}", "MarsJob", "default", "ms") is None:
            break
        emulator.clock.sleep(1)
    assert emulator.get_object(f"{MARS_GROUP}/{MARS_VERSION}", "MarsJob", "default", "ms") is None
    assert core.list_namespaced_pod("default").items == [] and core.list_namespaced_service("default").items == []


def test_marsjob_status_is_a_subresource(emulator, custom):
    create_marsjob(custom, {**marsjob("sub"), "status": {"conditions": [{"type": "Succeeded", "status": "True"}]}})
    obj = custom.get_namespaced_custom_object(MARS_GROUP, MARS_VERSION, "default", "marsjobs", "sub")
    assert "status" not in obj  # ignored on the main resource, as with any CRD that has a status subresource
    custom.patch_namespaced_custom_object_status(MARS_GROUP, MARS_VERSION, "default", "marsjobs", "sub",
                                                 {"status": {"replicaStatuses": {}}})
    assert custom.get_namespaced_custom_object(MARS_GROUP, MARS_VERSION, "default", "marsjobs", "sub")[
        "status"] == {"replicaStatuses": {}}


def test_transient_conflict_failure_schedules_a_delayed_framework_retry(emulator, custom):
    emulator.scenario("Framework", "gang", "failed", exit_code=201, failures=1, retry_delay_seconds=120)
    body = framework("gang", framework_retries=3)
    body["spec"]["retryPolicy"]["fancyRetryPolicy"] = True
    created = create_framework(custom, body)
    delays = []
    _, obj = follow_states(custom, "gang", since=created, state=lambda o: (
        delays.append(o["status"]["retryPolicyStatus"]["retryDelaySec"]) if o.get("status") else None))
    assert 120 in delays and delays[-1] is None
    assert obj["status"]["retryPolicyStatus"] == {"totalRetriedCount": 1, "accountableRetriedCount": 0,
                                                  "retryDelaySec": None}
    assert obj["status"]["attemptStatus"]["completionStatus"]["code"] == 0


def test_a_stop_during_the_retry_delay_retries_at_once_and_ends_stopped(emulator, custom):
    """frameworkcontroller pkg/controller/controller.go syncFrameworkState: with a retry scheduled
    (retryDelaySec set) and executionType Stop, "User has requested to stop the Framework, so immediately retry
    without delay"; the new attempt is then completed by the Stop (-210 StopFrameworkRequested), never retried."""
    emulator.scenario("Framework", "late", "failed", exit_code=201, failures=1, retry_delay_seconds=100000)
    body = framework("late", framework_retries=3)
    body["spec"]["retryPolicy"]["fancyRetryPolicy"] = True
    created = create_framework(custom, body)
    follow_states(custom, "late", since=created, final=lambda o: (
        (o.get("status") or {}).get("retryPolicyStatus") or {}).get("retryDelaySec") == 100000)
    custom.patch_namespaced_custom_object(FC_GROUP, FC_VERSION, "default", FC_PLURAL, "late",
                                          {"spec": {"executionType": "Stop"}})
    _, obj = follow_states(custom, "late", since=created)
    assert obj["status"]["state"] == "Completed"
    assert obj["status"]["attemptStatus"]["completionStatus"]["code"] == -210
    assert obj["status"]["retryPolicyStatus"]["totalRetriedCount"] == 1
