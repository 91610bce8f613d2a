"""FrameworkController's part, played by the test: Framework status written through the Kubernetes API.

No FrameworkController runs here (it needs a real API server and kubelets), so tests move each Framework the way
the controller would, with whole-object Updates (the CRD has no status subresource) and the shapes and state names
of ../shared/reference/frameworkcontroller.md b: FrameworkState AttemptCreationPending → AttemptCreationRequested →
AttemptPreparing → AttemptRunning → AttemptDeletionPending → AttemptDeletionRequested → AttemptDeleting →
AttemptCompleted → Completed (or the next attempt); TaskState the same words, a task's pod fields (podName, podUID,
podIP, podHostIP, podNodeName) and `instanceUID`s as the controller composes them. Each step is one write, so a
follower can observe every state. Logs go to the log-manager stand-in's folder, as the node's collector would write
them, keyed by the pod's uid.
"""

from __future__ import annotations

import datetime
import hashlib
import time
import uuid
from typing import Any, Callable, Optional

import httpx

GROUP = "/apis/frameworkcontroller.microsoft.com/v1"
STOP = (-210, "StopFrameworkRequested", ["Permanent"])
ATTEMPT_COMPLETION = (-220, "FrameworkAttemptCompletion", ["Permanent"])


def framework_name(user: str, job: str) -> str:
    """The rest-server's encodeName for a `user~job`: the md5 of it."""
    return hashlib.md5(f"{user}~{job}".encode()).hexdigest()


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def completion(code: int, phrase: str, attributes: list[str], diagnostics: str = "") -> dict[str, Any]:
    return {"code": code, "phrase": phrase, "type": {"name": "Succeeded" if code == 0 else "Failed",
                                                     "attributes": list(attributes)},
            "diagnostics": diagnostics}


class FrameworkController:
    """Moves the Frameworks of one namespace. `node_ip` is every pod's host IP: the log-manager's address."""

    def __init__(self, api_url: str, *, namespace: str = "default", node_ip: str = "127.0.0.1",
                 node_name: str = "node-0", log_writer: Optional[Callable[..., None]] = None,
                 history_writer: Optional[Callable[[dict[str, Any]], None]] = None):
        self.api = httpx.Client(base_url=api_url, timeout=10)
        self.namespace, self.node_ip, self.node_name = namespace, node_ip, node_name
        self.log_writer = log_writer
        # FrameworkController logs a snapshot of each completed attempt; OpenPAI's fluentd (pgjson plugin) stores
        # it in the `framework_history` table, where the rest-server finds earlier attempts.
        self.history_writer = history_writer

    def close(self) -> None:
        self.api.close()

    def _path(self, name: str) -> str:
        return f"{GROUP}/namespaces/{self.namespace}/frameworks/{name}"

    def get(self, name: str) -> Optional[dict[str, Any]]:
        reply = self.api.get(self._path(name))
        return reply.json() if reply.status_code == 200 else None

    def wait_created(self, name: str, timeout: float = 30) -> dict[str, Any]:
        """The database-controller's poller creates the Framework shortly after the submission."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.get(name)
            if found is not None:
                return found
            time.sleep(0.05)
        raise TimeoutError(f"Framework {name} was not created within {timeout}s")

    def wait(self, name: str, predicate: Callable[[dict[str, Any]], bool], timeout: float = 30) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.get(name)
            if found is not None and predicate(found):
                return found
            time.sleep(0.05)
        raise TimeoutError(f"Framework {name}: condition not met within {timeout}s")

    def update(self, name: str, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        """One Update of the whole object, retried on a 409 conflict as the controller's client does."""
        for _ in range(50):
            obj = self.get(name)
            if obj is None:
                raise LookupError(f"Framework {name} is gone")
            change(obj)
            reply = self.api.put(self._path(name), json=obj)
            if reply.status_code == 200:
                return reply.json()
            if reply.status_code != 409:
                raise RuntimeError(f"update of Framework {name}: HTTP {reply.status_code} {reply.text[:300]}")
        raise RuntimeError(f"update of Framework {name}: conflicts without end")

    # -- the controller's states -------------------------------------------------------------------------------

    @staticmethod
    def _task(index: int, attempt: int = 0, retried: int = 0) -> dict[str, Any]:
        now = _now()
        return {"index": index, "instanceUID": None, "startTime": now, "runTime": None, "completionTime": None,
                "state": "AttemptCreationPending", "transitionTime": now, "deletionPending": False,
                "retryPolicyStatus": {"totalRetriedCount": retried, "accountableRetriedCount": retried,
                                      "retryDelaySec": None},
                "attemptStatus": {"id": attempt, "startTime": now, "runTime": None, "completionTime": None,
                                  "instanceUID": None, "podName": "", "podUID": None, "podNodeName": None,
                                  "podIP": None, "podHostIP": None, "completionStatus": None}}

    def _attempt(self, obj: dict[str, Any], attempt: int) -> dict[str, Any]:
        now = _now()
        roles = [{"name": role["name"], "instanceUID": None, "podGracefulDeletionTimeoutSec":
                  (role.get("task") or {}).get("podGracefulDeletionTimeoutSec"),
                  "taskStatuses": [self._task(i) for i in range(int(role.get("taskNumber") or 0))]}
                 for role in obj["spec"].get("taskRoles") or []]
        return {"id": attempt, "startTime": now, "runTime": None, "completionTime": None, "instanceUID": None,
                "configMapName": f"{obj['metadata']['name']}-attempt", "configMapUID": None,
                "completionStatus": None, "taskRoleStatuses": roles}

    def _set(self, name: str, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        def apply(obj: dict[str, Any]) -> None:
            change(obj)
            obj["status"]["transitionTime"] = _now()
        return self.update(name, apply)

    def _tasks(self, status: dict[str, Any]):
        for role in status["attemptStatus"]["taskRoleStatuses"]:
            for task in role["taskStatuses"]:
                yield role["name"], task

    def _unfinished(self, status: dict[str, Any], role: Optional[str], index: Optional[int]):
        """The tasks a call chose (all, one role's, or one task) that have not completed."""
        for role_name, task in self._tasks(status):
            if (role is None or role_name == role) and (index is None or task["index"] == index) \
                    and task["state"] != "Completed":
                yield role_name, task

    def create_attempt(self, name: str) -> dict[str, Any]:
        """AttemptCreationPending with all tasks pending (what the controller writes when it first sees it)."""
        def change(obj: dict[str, Any]) -> None:
            now = _now()
            obj["status"] = {"startTime": now, "runTime": None, "completionTime": None,
                             "state": "AttemptCreationPending", "transitionTime": now,
                             "retryPolicyStatus": {"totalRetriedCount": 0, "accountableRetriedCount": 0,
                                                   "retryDelaySec": None},
                             "attemptStatus": self._attempt(obj, 0)}
        return self.update(name, change)

    def framework_state(self, name: str, state: str) -> dict[str, Any]:
        def change(obj: dict[str, Any]) -> None:
            obj["status"]["state"] = state
            attempt = obj["status"]["attemptStatus"]
            if state in ("AttemptCreationRequested", "AttemptPreparing") and attempt["configMapUID"] is None:
                attempt["configMapUID"] = str(uuid.uuid4())
                attempt["instanceUID"] = f"{attempt['id']}_{attempt['configMapUID']}"
            if state == "AttemptRunning" and attempt["runTime"] is None:
                attempt["runTime"] = obj["status"]["runTime"] = _now()
        return self._set(name, change)

    def task_state(self, name: str, state: str, *, role: Optional[str] = None,
                   index: Optional[int] = None) -> dict[str, Any]:
        """Every chosen task to `state`; entering AttemptPreparing creates its pod (name, uid, node, IPs)."""
        def change(obj: dict[str, Any]) -> None:
            fw = obj["metadata"]["name"]
            for role_name, task in self._unfinished(obj["status"], role, index):
                attempt = task["attemptStatus"]
                if state in ("AttemptCreationRequested", "AttemptPreparing", "AttemptRunning") \
                        and attempt["podUID"] is None:
                    attempt["podName"] = f"{fw}-{role_name}-{task['index']}"
                    attempt["podUID"] = str(uuid.uuid4())
                    attempt["instanceUID"] = f"{attempt['id']}_{attempt['podUID']}"
                    task["instanceUID"] = f"{task['index']}_{attempt['podUID']}"
                    attempt["podNodeName"], attempt["podHostIP"] = self.node_name, self.node_ip
                    attempt["podIP"] = "10.244.0.%d" % (10 + task["index"])
                if state == "AttemptRunning" and attempt["runTime"] is None:
                    attempt["runTime"] = task["runTime"] = _now()
                task["state"], task["transitionTime"] = state, _now()
        return self._set(name, change)

    def complete_tasks(self, name: str, code: int, phrase: str, attributes: list[str], *,
                       role: Optional[str] = None, index: Optional[int] = None, diagnostics: str = "",
                       state: str = "Completed") -> dict[str, Any]:
        """The chosen unfinished tasks end with `code` (their pods observed Succeeded/Failed, then deleted)."""
        def change(obj: dict[str, Any]) -> None:
            for _, task in self._unfinished(obj["status"], role, index):
                attempt = task["attemptStatus"]
                attempt["completionStatus"] = completion(code, phrase, attributes, diagnostics)
                attempt["completionTime"] = task["completionTime"] = _now()
                task["state"], task["transitionTime"] = state, _now()
        return self._set(name, change)

    def complete_attempt(self, name: str, code: int, phrase: str, attributes: list[str], *,
                         trigger: Optional[tuple[str, int, str]] = None, diagnostics: str = "") -> dict[str, Any]:
        """The FrameworkAttemptCompletionPolicy was met: AttemptDeletionPending with the completion status."""
        def change(obj: dict[str, Any]) -> None:
            attempt = obj["status"]["attemptStatus"]
            attempt["completionStatus"] = completion(code, phrase, attributes, diagnostics)
            if trigger is not None:
                attempt["completionStatus"]["trigger"] = {"message": trigger[2], "taskRoleName": trigger[0],
                                                          "taskIndex": trigger[1]}
            obj["status"]["state"] = "AttemptDeletionPending"
        return self._set(name, change)

    def finish(self, name: str, *, final: bool = True) -> dict[str, Any]:
        """AttemptDeletionRequested → AttemptDeleting → AttemptCompleted (→ Completed when `final`)."""
        for state in ("AttemptDeletionRequested", "AttemptDeleting"):
            self.framework_state(name, state)

        def change(obj: dict[str, Any]) -> None:
            now = _now()
            obj["status"]["attemptStatus"]["completionTime"] = now
            obj["status"]["state"] = "AttemptCompleted"
        completed = self._set(name, change)
        if self.history_writer is not None:
            self.history_writer(completed)
        if not final:
            return completed

        def done(obj: dict[str, Any]) -> None:
            obj["status"]["state"] = "Completed"
            obj["status"]["completionTime"] = _now()
        return self._set(name, done)

    def next_attempt(self, name: str, *, delay: Optional[int] = None) -> dict[str, Any]:
        """After AttemptCompleted: the Framework retries (a new attempt, id + 1, all tasks pending again)."""
        def change(obj: dict[str, Any]) -> None:
            status = obj["status"]
            retried = status["retryPolicyStatus"]["totalRetriedCount"] + 1
            status["retryPolicyStatus"] = {"totalRetriedCount": retried, "accountableRetriedCount": retried,
                                           "retryDelaySec": delay}
            status["attemptStatus"] = self._attempt(obj, retried)
            status["state"] = "AttemptCreationPending"
        return self._set(name, change)

    # -- whole stories -----------------------------------------------------------------------------------------

    def start(self, name: str, *, logs: Optional[dict[tuple[str, int], str]] = None, user: str = "",
              steps: bool = True) -> dict[str, Any]:
        """Created (or the next attempt, after `next_attempt`) → preparing → every task running; `logs`
        (role, index) → text written once running."""
        if not (self.wait_created(name).get("status") or {}).get("attemptStatus"):
            self.create_attempt(name)
        if steps:
            self.framework_state(name, "AttemptCreationRequested")
        self.framework_state(name, "AttemptPreparing")
        self.task_state(name, "AttemptPreparing")
        self.task_state(name, "AttemptRunning")
        obj = self.framework_state(name, "AttemptRunning")
        for (role, index), text in (logs or {}).items():
            self.write_log(obj, role, index, text, user=user)
        return obj

    def write_log(self, obj: dict[str, Any], role: str, index: int, text: str, *, user: str,
                  stderr: str = "") -> None:
        if self.log_writer is None:
            return
        for role_name, task in self._tasks(obj["status"]):
            if role_name == role and task["index"] == index:
                self.log_writer(user, obj["metadata"]["name"], role, task["attemptStatus"]["podUID"],
                                stdout=text, stderr=stderr)

    def succeed(self, name: str) -> dict[str, Any]:
        self.task_state(name, "AttemptDeletionPending")
        self.complete_tasks(name, 0, "Succeeded", [])
        self.complete_attempt(name, 0, "Succeeded", [], diagnostics="all tasks succeeded")
        return self.finish(name)

    def fail(self, name: str, role: str, index: int, code: int, phrase: str, *, final: bool = True) -> dict:
        """One task fails with `code`; the policy (minFailedTaskCount 1) completes the attempt, the others -220."""
        self.complete_tasks(name, code, phrase, ["Permanent"], role=role, index=index,
                            diagnostics=f"Container exited with {code}")
        message = "TaskAttempt failed and the FailedTaskCount reached MinFailedTaskCount"
        self.complete_attempt(name, code, phrase, ["Permanent"], trigger=(role, index, message))
        self.complete_tasks(name, *ATTEMPT_COMPLETION)
        return self.finish(name, final=final)

    def stop_when_asked(self, name: str, timeout: float = 30) -> dict[str, Any]:
        """Wait for executionType Stop (the rest-server's PUT executionType), then complete with -210/-220."""
        self.wait(name, lambda obj: obj["spec"].get("executionType") == "Stop", timeout)
        self.complete_attempt(name, *STOP, diagnostics="User has requested to stop the Framework")
        self.complete_tasks(name, *ATTEMPT_COMPLETION)
        return self.finish(name)

