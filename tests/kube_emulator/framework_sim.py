"""FrameworkController, scripted: status, the `{name}-attempt` ConfigMap and the task pods of a Framework.

States and codes follow reference b-d: FrameworkState AttemptCreationPending → AttemptCreationRequested →
AttemptPreparing → AttemptRunning → AttemptDeletionPending → AttemptDeletionRequested → AttemptDeleting →
AttemptCompleted → (next attempt | Completed); tasks likewise, each completed task's pod deleted. Tasks move in
lockstep rounds: every running task ends at the end of a round; a failed task is retried as its retryPolicy says,
then the FrameworkAttemptCompletionPolicy and the Framework retryPolicy decide. Stop (executionType Stop) completes
the attempt with -210 and its unfinished tasks with -220. Status is written with Updates by `frameworkcontroller`
(no status subresource), a handful of writes per step as the real controller batches them.

"stopped" runs until the Stop. A pod the API server refuses completes its task with -200 PodCreationPermanentError
(422/413) or -310 PodCreationUnknownError (400/403), without the retries FC would make.

Scenario params (times are simulated seconds): preparing_seconds (5), run_seconds (30; "running": `seconds`),
exit_code (1), task_role / task_index (the failing task: first role, 0), failures (failing attempts of that task;
default every attempt), log (the failing task's log), logs ({pod name: text}), node ("node-0"),
retry_delay_seconds (60: the delay before a Framework retry after a Transient Conflict failure, exit code 201, under
fancyRetryPolicy; retryPolicyStatus.retryDelaySec shows it meanwhile).
"""

from __future__ import annotations

import copy
import json

from . import errors
from .controller import Run
from .pods import PodMaker, completion_code, should_retry

STOP_CODE = (-210, "StopFrameworkRequested", ["Permanent"])
ATTEMPT_COMPLETION_CODE = (-220, "FrameworkAttemptCompletion", ["Permanent"])


def _completion(code: int, phrase: str, attributes: list[str], diagnostics: str) -> dict:
    name = "Succeeded" if code == 0 else "Failed"
    return {"code": code, "phrase": phrase, "type": {"name": name, "attributes": list(attributes)},
            "diagnostics": diagnostics}


class FrameworkRun(Run):
    manager = "frameworkcontroller"

    def run(self) -> None:
        p = self.params
        scenario = p["scenario"]
        self.preparing = float(p.get("preparing_seconds", 5))
        self.run_seconds = None if scenario == "stopped" else float(p.get("seconds", p.get("run_seconds", 30)))
        fw = self.current()
        self.roles = [(r["name"], int(r.get("taskNumber", 0)), r) for r in fw["spec"].get("taskRoles") or []]
        first = self.roles[0][0] if self.roles else ""
        self.failing = (p.get("task_role", first), int(p.get("task_index", 0))) if scenario == "failed" else None
        self.failures_left = p.get("failures")
        self.pods = PodMaker(self, fw)
        self.status = fw.get("status") or self._initial_status(fw)
        self.write_status(self.status)
        self.wait(None, until=lambda o: o["spec"].get("executionType") != "Create")
        if self._stop_requested(self.current()):
            self._finish_attempt(self._stop([]), [])
            return
        while True:
            completion = self._attempt()
            if completion is None:
                continue
            if not completion:
                return

    # -- status helpers ------------------------------------------------------------------------------------------

    def _now(self) -> str:
        return self.emu.clock.stamp()

    def _task_status(self, index: int, attempt_id: int, retried: tuple[int, int] = (0, 0)) -> dict:
        now = self._now()
        return {"index": index, "instanceUID": None, "startTime": now, "runTime": None, "completionTime": None,
                "state": "AttemptCreationPending", "transitionTime": now, "deletionPending": False,
                "retryPolicyStatus": {"totalRetriedCount": retried[0], "accountableRetriedCount": retried[1],
                                      "retryDelaySec": None},
                "attemptStatus": {"id": attempt_id, "startTime": now, "runTime": None, "completionTime": None,
                                  "instanceUID": None, "podName": "", "podUID": None, "podNodeName": None,
                                  "podIP": None, "podHostIP": None, "completionStatus": None}}

    def _attempt_status(self, attempt_id: int) -> dict:
        now = self._now()
        roles = []
        for name, number, spec in self.roles:
            roles.append({"name": name, "instanceUID": None,
                          "podGracefulDeletionTimeoutSec": (spec.get("task") or {}).get(
                              "podGracefulDeletionTimeoutSec"),
                          "taskStatuses": [self._task_status(i, 0) for i in range(number)]})
        return {"id": attempt_id, "startTime": now, "runTime": None, "completionTime": None, "instanceUID": None,
                "configMapName": f"{self.name}-attempt", "configMapUID": None, "completionStatus": None,
                "taskRoleStatuses": roles}

    def _initial_status(self, fw: dict) -> dict:
        now = self._now()
        return {"startTime": now, "runTime": None, "completionTime": None, "state": "AttemptCreationPending",
                "transitionTime": now,
                "retryPolicyStatus": {"totalRetriedCount": 0, "accountableRetriedCount": 0, "retryDelaySec": None},
                "attemptStatus": self._attempt_status(0)}

    def _set_state(self, state: str) -> None:
        self.status["state"] = state
        self.status["transitionTime"] = self._now()

    def _tasks(self):
        for role in self.status["attemptStatus"]["taskRoleStatuses"]:
            for task in role["taskStatuses"]:
                yield role["name"], task

    def _set_task(self, task: dict, state: str) -> None:
        task["state"] = state
        task["transitionTime"] = self._now()

    def _stop_requested(self, obj: dict) -> bool:
        return obj["spec"].get("executionType") == "Stop"

    # -- one framework attempt ---------------------------------------------------------------------------------

    def _attempt(self) -> bool | None:
        """Run one attempt; returns None to start the next attempt, False when the Framework is Completed."""
        attempt = self.status["attemptStatus"]
        if self._stop_requested(self.current()):  # stopped before the attempt made anything: completed at once
            return self._finish_attempt(self._stop([]), [])
        configmap = self.pods.create_configmap(attempt["id"])
        self._set_state("AttemptCreationRequested")
        self.write_status(self.status)
        attempt["configMapUID"] = configmap["metadata"]["uid"]
        attempt["instanceUID"] = f"{attempt['id']}_{configmap['metadata']['uid']}"
        self._set_state("AttemptPreparing")
        self.write_status(self.status)
        running = [(role, task) for role, task in self._tasks()]
        trigger, running = self._start_tasks(running, configmap)
        while trigger is None:
            if self.params["scenario"] == "stuck-pending":
                self.wait(None, until=self._stop_requested)
                trigger = self._stop(running)
                break
            if self.wait(self.preparing, until=self._stop_requested):
                trigger = self._stop(running)
                break
            self._run_tasks(running)
            if self.wait(self.run_seconds, until=self._stop_requested):
                trigger = self._stop(running)
                break
            trigger, running = self._end_round(running, configmap)
        return self._finish_attempt(trigger, running)

    def _start_tasks(self, tasks, configmap: dict):
        """Create the tasks' pods; returns (trigger or None, the tasks whose pod exists)."""
        if not tasks:
            return None, tasks
        for role, task in tasks:
            self._set_task(task, "AttemptCreationRequested")
        self.write_status(self.status)
        created, trigger = [], None
        for role, task in tasks:
            try:
                pod = self.pods.create_pod(role, task, configmap, self.status)
            except errors.ApiError as error:  # ClassifyPodCreationError; the emulator does not retry creation
                code, phrase, attributes = (-200, "PodCreationPermanentError", ["Permanent"]) \
                    if error.code in (413, 422) else (-310, "PodCreationUnknownError", [])
                task["attemptStatus"]["completionStatus"] = _completion(code, phrase, attributes,
                                                                        f"Pod creation failed: {error.message}")
                task["attemptStatus"]["completionTime"] = task["completionTime"] = self._now()
                self._set_task(task, "Completed")
                self.write_status(self.status)
                trigger = trigger or self._check_policy(role, task)
                continue
            attempt = task["attemptStatus"]
            attempt["podName"] = pod["metadata"]["name"]
            attempt["podUID"] = pod["metadata"]["uid"]
            attempt["instanceUID"] = f"{attempt['id']}_{pod['metadata']['uid']}"
            self._set_task(task, "AttemptPreparing")
            if self.params["scenario"] == "stuck-pending":
                self.pods.pull_backoff(pod)
            created.append((role, task))
        self.write_status(self.status)
        return trigger, created

    def _run_tasks(self, tasks) -> None:
        now = self._now()
        for role, task in tasks:
            pod = self.pods.set_running(task["attemptStatus"]["podName"], self._log_for(role, task, False))
            attempt = task["attemptStatus"]
            attempt.update(runTime=now, podNodeName=pod["spec"]["nodeName"], podIP=pod["status"]["podIP"],
                           podHostIP=pod["status"]["hostIP"])
            task["runTime"] = task["runTime"] or now
            self._set_task(task, "AttemptRunning")
        if tasks and self.status["state"] == "AttemptPreparing":
            self.status["runTime"] = self.status["runTime"] or now
            self.status["attemptStatus"]["runTime"] = now
            self._set_state("AttemptRunning")
        self.write_status(self.status)

    def _exit_code(self, role: str, task: dict) -> int:
        if self.failing != (role, task["index"]):
            return 0
        if self.failures_left is None:
            return int(self.params.get("exit_code", 1))
        if self.failures_left > 0:
            self.failures_left -= 1
            return int(self.params.get("exit_code", 1))
        return 0

    def _log_for(self, role: str, task: dict, finished: bool, exit_code: int = 0) -> str:
        pod = f"{self.name}-{role}-{task['index']}"
        logs = self.params.get("logs") or {}
        if pod in logs:
            text = logs[pod]
        elif self.failing == (role, task["index"]) and "log" in self.params:
            text = self.params["log"]
        else:
            text = "".join(f"[{pod}] step {i}\n" for i in range(1, 5))
            if finished:
                text += f"[{pod}] exiting with code {exit_code}\n"
        if not finished:
            lines = text.splitlines(keepends=True)
            text = "".join(lines[: max(1, len(lines) // 2)])
        return text

    def _complete_task(self, role: str, task: dict, completion: dict) -> None:
        attempt = task["attemptStatus"]
        attempt["completionStatus"] = completion
        self._set_task(task, "AttemptDeletionPending")
        self.write_status(self.status)
        self.pods.delete_pod(attempt["podName"])
        now = self._now()
        attempt["completionTime"] = now
        self._set_task(task, "AttemptCompleted")

    def _end_round(self, running, configmap: dict):
        """Every running task exits; returns (trigger or None, tasks still to run)."""
        restart, trigger = [], None
        for role, task in sorted(running, key=lambda item: (item[0], item[1]["index"]) != self.failing):
            if trigger is not None:
                break
            code = self._exit_code(role, task)
            pod = task["attemptStatus"]["podName"]
            self.pods.set_terminated(pod, code, self._log_for(role, task, True, code))
            completion = completion_code(code, pod, self.pods.main_container(pod))
            self._complete_task(role, task, completion)
            policy = self._role_spec(role).get("task", {}).get("retryPolicy") or {}
            retry, accountable = should_retry(policy, completion, task["retryPolicyStatus"])
            if retry and trigger is None:
                retried = task["retryPolicyStatus"]
                counts = (retried["totalRetriedCount"] + 1, retried["accountableRetriedCount"] + int(accountable))
                fresh = self._task_status(task["index"], counts[0], counts)
                fresh.update(startTime=task["startTime"], instanceUID=task["instanceUID"], runTime=task["runTime"])
                task.clear()
                task.update(fresh)
                restart.append((role, task))
                continue
            task["completionTime"] = self._now()
            self._set_task(task, "Completed")
            self.write_status(self.status)
            trigger = trigger or self._check_policy(role, task)
        if trigger is not None:
            return trigger, restart
        if restart:
            self.write_status(self.status)
            return self._start_tasks(restart, configmap)
        return None, restart

    def _role_spec(self, role: str) -> dict:
        return next(spec for name, _, spec in self.roles if name == role)

    def _check_policy(self, role: str, task: dict) -> dict | None:
        completed = [(r, t) for r, t in self._tasks() if r == role and t["state"] == "Completed"]
        failed = [t for r, t in completed if t["attemptStatus"]["completionStatus"]["type"]["name"] == "Failed"]
        succeeded = [t for r, t in completed if t["attemptStatus"]["completionStatus"]["type"]["name"] == "Succeeded"]
        policy = self._role_spec(role).get("frameworkAttemptCompletionPolicy") or {}
        min_failed, min_succeeded = policy.get("minFailedTaskCount", 0), policy.get("minSucceededTaskCount", 0)
        inherited = task["attemptStatus"]["completionStatus"]
        if min_failed >= 1 and len(failed) >= min_failed and inherited["type"]["name"] == "Failed":
            message = f"FailedTaskCount {len(failed)} has reached MinFailedTaskCount {min_failed} in the TaskRole"
            return self._trigger(inherited, message, role, task)
        if min_succeeded >= 1 and len(succeeded) >= min_succeeded and inherited["type"]["name"] == "Succeeded":
            message = (f"SucceededTaskCount {len(succeeded)} has reached MinSucceededTaskCount {min_succeeded} in "
                       "the TaskRole")
            return self._trigger(inherited, message, role, task)
        every = list(self._tasks())
        done = [t for _, t in every if t["state"] == "Completed"]
        if every and len(done) == len(every):
            message = (f"CompletedTaskCount {len(done)} has reached TotalTaskCount {len(every)} and no user specified "
                       "conditions in FrameworkAttemptCompletionPolicy have ever been triggered")
            return self._trigger(_completion(0, "Succeeded", [], message), message, role, task)
        return None

    def _trigger(self, inherited: dict, message: str, role: str, task: dict) -> dict:
        completion = {k: copy.deepcopy(v) for k, v in inherited.items() if k != "pod"}
        completion["diagnostics"] = f"{message}: {inherited['diagnostics']}" if inherited["code"] else message
        completion["trigger"] = {"message": message, "taskRoleName": role, "taskIndex": task["index"]}
        return completion

    def _stop(self, running) -> dict:
        code, phrase, attributes = STOP_CODE
        completion = _completion(code, phrase, attributes, "User has requested to stop the Framework")
        self._stop_remaining(completion)
        return completion

    def _stop_remaining(self, framework_completion: dict) -> None:
        self.status["attemptStatus"]["completionStatus"] = framework_completion
        self._set_state("AttemptDeletionPending")
        self.write_status(self.status)
        code, phrase, attributes = ATTEMPT_COMPLETION_CODE
        for role, task in self._tasks():
            if task["state"] in ("Completed", "AttemptCompleted"):
                continue
            completion = _completion(code, phrase, attributes, "Stop to complete current FrameworkAttempt")
            if task["attemptStatus"]["podName"]:
                self._complete_task(role, task, completion)
            else:
                task["attemptStatus"]["completionStatus"] = completion
            task["completionTime"] = self._now()
            self._set_task(task, "Completed")
        self.write_status(self.status)

    def _finish_attempt(self, completion: dict, running) -> bool | None:
        attempt = self.status["attemptStatus"]
        if attempt["completionStatus"] is None:
            self._stop_remaining(completion)
        self._set_state("AttemptDeletionRequested")
        self.write_status(self.status)
        self.pods.delete_configmap()
        self._set_state("AttemptDeleting")
        self.write_status(self.status)
        self.pods.wait_configmap_gone()
        now = self._now()
        attempt["completionTime"] = now
        self._set_state("AttemptCompleted")
        self.write_status(self.status)
        fw = self.current()
        retried = self.status["retryPolicyStatus"]
        policy = fw["spec"].get("retryPolicy") or {}
        retry, accountable = should_retry(policy, attempt["completionStatus"], retried)
        retry = retry and not self._stop_requested(fw)
        attributes = set(attempt["completionStatus"]["type"].get("attributes") or [])
        if retry and policy.get("fancyRetryPolicy") and {"Transient", "Conflict"} <= attributes:
            # a retry after a delay (the real one is random in [60, 900] s); a Stop skips the delay and retries at
            # once (frameworkcontroller controller.go syncFrameworkState: "User has requested to stop the
            # Framework, so immediately retry without delay"), and the new attempt is then stopped: -210
            retried["retryDelaySec"] = int(self.params.get("retry_delay_seconds", 60))
            self.write_status(self.status)
            self.wait(retried["retryDelaySec"], until=self._stop_requested)
            retried["retryDelaySec"] = None
        if retry:
            counts = (retried["totalRetriedCount"] + 1, retried["accountableRetriedCount"] + int(accountable))
            self.status["retryPolicyStatus"] = {"totalRetriedCount": counts[0], "accountableRetriedCount": counts[1],
                                                "retryDelaySec": None}
            self.status["attemptStatus"] = self._attempt_status(counts[0])
            self._set_state("AttemptCreationPending")
            self.write_status(self.status)
            return None
        self.status["completionTime"] = now
        self._set_state("Completed")
        self.write_status(self.status)
        return False


def describe(status: dict) -> str:
    """One line for debugging a test: the state and each task's state."""
    tasks = [f"{r['name']}-{t['index']}:{t['state']}" for r in status["attemptStatus"]["taskRoleStatuses"]
             for t in r["taskStatuses"]]
    return json.dumps({"state": status["state"], "tasks": tasks})
