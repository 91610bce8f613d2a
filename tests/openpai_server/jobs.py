"""Jobs of the test OpenPAI server: a scripted clock moves each job through OpenPAI's states.

Every read of a job's detail is one tick of that job's clock, so a follower sees the same sequence on a fast or a
loaded machine: no wall-clock timing is involved. A scenario is a list of phases (state, sub-state, ticks); the
last phase is final. `stop` (executionType STOP) replaces the rest of the script with STOPPING, then STOPPED.
The detail is built to the swagger's `JobDetail` schema.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any, Optional


@dataclasses.dataclass(frozen=True)
class Phase:
    state: str                 # WAITING / RUNNING / STOPPING / STOPPED / SUCCEEDED / FAILED
    sub_state: str             # FrameworkController's word
    ticks: int = 1
    retries: int = 0
    task_state: str = ""       # the tasks' state in this phase (default: from the job state)


@dataclasses.dataclass(frozen=True)
class Scenario:
    phases: tuple[Phase, ...]
    exit_code: int = 0                    # the failing task's containerExitCode in a FAILED end
    with_exit_spec: bool = False          # whether the server fills containerExitSpec (else paictl diagnoses)
    log: tuple[str, ...] = ("starting", "epoch 1 done", "epoch 2 done")


SCENARIOS: dict[str, Scenario] = {
    "succeed": Scenario(phases=(Phase("WAITING", "AttemptCreationPending", 2), Phase("RUNNING", "AttemptRunning", 3),
                                Phase("SUCCEEDED", "Completed"))),
    "fail": Scenario(phases=(Phase("WAITING", "AttemptPreparing", 1), Phase("RUNNING", "AttemptRunning", 2),
                             Phase("FAILED", "Completed")),
                     exit_code=231, log=("starting", "  File \"train.py\", line 3", "SyntaxError: invalid syntax")),
    "retry": Scenario(phases=(Phase("WAITING", "AttemptCreationPending", 1), Phase("RUNNING", "AttemptRunning", 1),
                              Phase("WAITING", "AttemptCreationPending", 2, retries=1),
                              Phase("RUNNING", "AttemptRunning", 1, retries=1),
                              Phase("SUCCEEDED", "Completed", retries=1))),
    "long": Scenario(phases=(Phase("WAITING", "AttemptCreationPending", 1), Phase("RUNNING", "AttemptRunning", 10**6),
                             Phase("SUCCEEDED", "Completed"))),
    "stuck": Scenario(phases=(Phase("WAITING", "AttemptPreparing", 10**6), Phase("SUCCEEDED", "Completed"))),
}

_STOPPING = (Phase("STOPPING", "AttemptDeletionPending", 2), Phase("STOPPED", "Completed"))


class Job:
    def __init__(self, *, user: str, protocol: dict[str, Any], text: str, virtual_cluster: str, scenario: Scenario,
                 submitted_ms: int):
        self.user, self.protocol, self.text = user, protocol, text
        self.name = str(protocol["name"])
        self.virtual_cluster, self.scenario = virtual_cluster, scenario
        self.phases = list(scenario.phases)
        self.tick = 0
        self.execution_type = "START"
        self.submitted_ms = submitted_ms
        self.reads = 0

    # -- clock ------------------------------------------------------------------------------------------------

    def phase(self) -> Phase:
        elapsed = self.tick
        for phase in self.phases[:-1]:
            if elapsed < phase.ticks:
                return phase
            elapsed -= phase.ticks
        return self.phases[-1]

    def advance(self) -> None:
        if not self.final:
            self.tick += 1

    @property
    def final(self) -> bool:
        return self.phase() is self.phases[-1] and self.phase().state in ("SUCCEEDED", "FAILED", "STOPPED")

    def stop(self) -> None:
        """STOP: from the next read on the script is STOPPING, then STOPPED (unless the job already ended)."""
        if self.final:
            return
        self.execution_type = "STOP"
        current = self.phase()
        spent = [Phase(current.state, current.sub_state, self.tick, current.retries)] if self.tick else []
        self.phases = [*spent, *_STOPPING]

    # -- the swagger's shapes ---------------------------------------------------------------------------------

    def roles(self) -> list[tuple[str, int]]:
        return [(name, int((role or {}).get("instances") or 1))
                for name, role in (self.protocol.get("taskRoles") or {}).items()]

    def task_state(self, phase: Phase) -> str:
        if phase.task_state:
            return phase.task_state
        return {"STOPPING": "RUNNING"}.get(phase.state, phase.state)

    def exit_code(self, phase: Phase, role_index: int, task_index: int) -> Optional[int]:
        if phase.state == "SUCCEEDED":
            return 0
        if phase.state == "FAILED":
            return self.scenario.exit_code if (role_index, task_index) == (0, 0) else -220
        if phase.state == "STOPPED":
            return -210
        return None

    def started(self, phase: Phase) -> bool:
        return phase.state not in ("WAITING",) or phase.retries > 0

    def detail(self) -> dict[str, Any]:
        phase = self.phase()
        roles: dict[str, Any] = {}
        for role_index, (role, instances) in enumerate(self.roles()):
            statuses = []
            for index in range(instances):
                code = self.exit_code(phase, role_index, index)
                spec = None
                if code not in (None, 0) and (self.scenario.with_exit_spec or code < 0):
                    spec = {"code": code, "phrase": {-210: "StopFrameworkRequested",
                                                     -220: "FrameworkAttemptCompletion"}.get(code, "ServerPhrase")}
                statuses.append({
                    "taskIndex": index, "taskUid": f"uid-{role}-{index}", "taskState": self.task_state(phase),
                    "retries": phase.retries, "accountableRetries": phase.retries,
                    "attemptId": phase.retries, "attemptState": self.task_state(phase),
                    "containerNodeName": f"node{index + 1}" if self.started(phase) else None,
                    "containerIp": f"10.0.0.{index + 1}" if self.started(phase) else None,
                    "containerExitCode": code, "containerExitSpec": spec,
                    "containerLog": self.log_path(role, index, phase.retries),
                })
            roles[role] = {"taskRoleStatus": {"name": role}, "taskStatuses": statuses}
        final = phase.state in ("SUCCEEDED", "FAILED", "STOPPED")
        app_code = self.exit_code(phase, 0, 0) if final else None
        status = {
            "username": self.user, "state": phase.state, "subState": phase.sub_state,
            "executionType": self.execution_type, "retries": phase.retries, "retryDelayTime": None,
            "submissionTime": self.submitted_ms, "createdTime": self.submitted_ms,
            "launchedTime": self.submitted_ms + 1000 if self.started(phase) else None,
            "completedTime": self.submitted_ms + 9000 if final else None, "attemptId": phase.retries,
            "attemptState": phase.state, "appId": f"{self.user}~{self.name}", "appCreatedTime": self.submitted_ms,
            "appLaunchedTime": None, "appCompletedTime": None, "appExitCode": app_code,
            "appExitSpec": {"code": app_code, "phrase": "StopFrameworkRequested"} if app_code == -210 else None,
            "appExitTriggerMessage": ("TaskAttempt failed and the FailedTaskCount reached MinFailedTaskCount"
                                      if phase.state == "FAILED" else None),
            "appExitTriggerTaskRoleName": self.roles()[0][0] if phase.state == "FAILED" else None,
            "appExitTriggerTaskIndex": 0 if phase.state == "FAILED" else None,
            "virtualCluster": self.virtual_cluster,
        }
        return {"name": self.name, "tags": [], "jobStatus": status, "taskRoles": roles,
                "debugId": hashlib.md5(f"{self.user}~{self.name}".encode()).hexdigest()}

    def summary(self) -> dict[str, Any]:
        status = self.detail()["jobStatus"]
        keys = ("username", "state", "subState", "executionType", "retries", "submissionTime", "createdTime",
                "launchedTime", "completedTime", "appExitCode", "virtualCluster")
        return {"name": self.name, **{key: status[key] for key in keys}}

    def log_path(self, role: str, index: int, attempt: int) -> str:
        return (f"/api/v2/jobs/{self.user}~{self.name}/attempts/{self.phase().retries}/taskRoles/{role}/taskIndex/"
                f"{index}/attempts/{attempt}/logs")

    def log_text(self) -> str:
        phase = self.phase()
        lines = list(self.scenario.log)
        if phase.state == "WAITING" and not phase.retries:
            return ""
        if phase.state == "RUNNING":
            lines = lines[:2]
        return "".join(line + "\n" for line in lines)


def etag(body: Any) -> str:
    return 'W/"' + hashlib.sha1(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16] + '"'
