"""Jobs of the OpenPAI double: what FrameworkController writes (the stand-in part), and the answers the REST server
derives from it (the part held to recordings/openpai).

A job holds its Framework's status as FrameworkController keeps it: job attempts, each with a framework attempt
state (`AttemptCreationPending`, `AttemptPreparing`, `AttemptRunning`, `AttemptDeletionPending`, `Completed`), its
tasks and their task attempts, and a completion (exit code, FC's phrase, diagnostics, trigger). The `fc_*` methods
are FrameworkController's moves (a test, or a scenario's scripted clock, makes them); every shape below (`detail`,
`summary`, `attempt_detail`, `job_attempt`, `task_attempts`) is the server's derivation, with the keys, their order
and their null/absent cases as the recordings show them:
- no attempt yet: WAITING/AttemptCreationPending, `retryDelayTime` present, no `attemptId`/`appId`, `taskRoles: {}`
  (job-succeeded.jsonl #0, job-stopped.jsonl stop of a waiting job);
- an attempt waiting to be created after a retry: `retryDelayTime` present, `taskStatuses: []` (job-retried #1);
- `AttemptDeletionPending` is STOPPING, its completion already shown in the `app*` fields (job-stopped #6);
- a task ended by -210/-220 is STOPPED, not FAILED; a job completed with -210 is STOPPED;
- an earlier attempt (`/attempts/N`, from job history) keeps the job's own fields and shows the attempt's
  (`attemptId`, `attemptState`, `appId`, `app*`, tasks) (job-retried #4); in `/job-attempts` it is RUNNING with
  `originState: AttemptCompleted` and FC's phrase as `exitPhrase` (job-retried #6);
- `/job-attempts/N` says `isLatest: true` for any N (job-retried #7: upstream's quirk, kept).

Scripted clock (for tests of paictl's polling): a job may carry a script, a list of steps (FC moves, then how many
reads of the job's detail they last); every read of the detail is one tick, so a follower sees the same sequence
on a fast or a loaded machine. `stop` (executionType STOP) on a scripted job replaces the rest of its script by
FrameworkController's stop: STOPPING for two reads, then STOPPED.
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
import time
import uuid
from typing import Any, Callable, Optional

from .exit_spec import STOPPED_CODES, exit_spec

PENDING, PREPARING, RUNNING, DELETING, COMPLETED = ("AttemptCreationPending", "AttemptPreparing", "AttemptRunning",
                                                     "AttemptDeletionPending", "Completed")
NODE, NODE_IP = "node1", "127.0.0.1"


def now_ms() -> int:
    """The database keeps seconds: every time the server shows is a whole second, in milliseconds."""
    return int(time.time()) * 1000


def framework_name(user: str, job: str) -> str:
    """The Framework's name and the job's `debugId`: md5 of `user~job` (stable across runs in the recordings)."""
    return hashlib.md5(f"{user}~{job}".encode()).hexdigest()


def _ports() -> dict[str, str]:
    return {"ssh": str(random.randint(10000, 39999)), "http": str(random.randint(10000, 39999))}


@dataclasses.dataclass
class TaskAttempt:
    id: int
    pod: str
    state: str = PREPARING
    created: int = dataclasses.field(default_factory=now_ms)
    launched: Optional[int] = None
    completed: Optional[int] = None
    node: Optional[str] = None
    ip: Optional[str] = None
    ports: dict[str, str] = dataclasses.field(default_factory=_ports)
    exit_code: Optional[int] = None
    diagnostics: Optional[str] = None


@dataclasses.dataclass
class Task:
    index: int
    uid: str
    attempts: list[TaskAttempt]

    @property
    def current(self) -> TaskAttempt:
        return self.attempts[-1]


@dataclasses.dataclass
class Completion:
    code: int
    phrase: str
    diagnostics: Optional[str]
    trigger: Optional[tuple[str, int, str]]   # (task role, task index, FC's trigger message)
    at: int = dataclasses.field(default_factory=now_ms)


@dataclasses.dataclass
class Attempt:
    id: int
    state: str = PENDING
    created: int = dataclasses.field(default_factory=now_ms)
    launched: Optional[int] = None
    completed: Optional[int] = None
    tasks: dict[str, list[Task]] = dataclasses.field(default_factory=dict)
    completion: Optional[Completion] = None


@dataclasses.dataclass(frozen=True)
class Step:
    """One step of a scripted job: FrameworkController's move, then how many reads the job stays so."""
    move: Optional[Callable[["Job"], None]]
    reads: int = 1


def task_state(attempt: TaskAttempt, *, history: bool = False) -> str:
    if history:
        return "FAILED" if attempt.exit_code else "SUCCEEDED"
    if attempt.state in (PENDING, PREPARING):
        return "WAITING"
    if attempt.state == RUNNING:
        return "RUNNING"
    if attempt.state == DELETING:
        return "STOPPING"
    if attempt.exit_code == 0:
        return "SUCCEEDED"
    return "STOPPED" if attempt.exit_code in STOPPED_CODES else "FAILED"


class Job:
    def __init__(self, *, user: str, protocol: dict[str, Any], virtual_cluster: str, hived: bool = False,
                 submitted: Optional[int] = None, script: Optional[list[Step]] = None):
        self.user, self.protocol = user, protocol
        self.name = str(protocol["name"])
        self.virtual_cluster, self.hived = virtual_cluster, hived
        self.submitted = submitted if submitted is not None else now_ms()
        self.created = self.submitted
        self.uid = str(uuid.uuid4())
        self.execution_type = "START"
        self.retries = 0
        self.retry_delay: Optional[int] = None
        self.attempts: list[Attempt] = []
        self.attempt_uid = "fwuid"
        self.log_writer: Optional[Callable[..., None]] = None   # the log-manager's `write`, set by the server
        self.script = list(script or [])
        self.reads_in_step = 0

    def begin(self) -> None:
        """The script's first move (the server calls it once the job is stored and its log writer set)."""
        if self.script and self.script[0].move is not None:
            self.script[0].move(self)

    @property
    def full_name(self) -> str:
        return f"{self.user}~{self.name}"

    @property
    def framework(self) -> str:
        return framework_name(self.user, self.name)

    # -- the scripted clock -----------------------------------------------------------------------------------

    def tick(self) -> None:
        """One read of the detail: the script moves on once the current step has lasted its reads."""
        if not self.script:
            return
        self.reads_in_step += 1
        if self.reads_in_step >= self.script[0].reads and len(self.script) > 1:
            self.script.pop(0)
            self.reads_in_step = 0
            if self.script[0].move is not None:
                self.script[0].move(self)

    def request_stop(self) -> None:
        """PUT executionType STOP. A scripted job's FrameworkController reacts at once (STOPPING for two reads,
        then STOPPED); an unscripted one waits for the test to make FC's moves (`fc_stop`, `fc_finish`)."""
        self.execution_type = "STOP"
        if self.script and not self.is_final:
            self.script = [Step(lambda job: job.fc_stop(), 2), Step(lambda job: job.fc_finish())]
            self.reads_in_step = 0
            self.fc_stop()

    # -- FrameworkController's moves (the stand-in part) ------------------------------------------------------

    @property
    def attempt(self) -> Optional[Attempt]:
        return self.attempts[-1] if self.attempts else None

    def roles(self) -> list[tuple[str, int, int]]:
        """(name, instances, gpu per instance) of each task role, in the protocol's order."""
        found = []
        for name, role in (self.protocol.get("taskRoles") or {}).items():
            role = role if isinstance(role, dict) else {}
            gpu = (role.get("resourcePerInstance") or {}).get("gpu") or 0
            found.append((str(name), int(role.get("instances") or 1), int(gpu)))
        return found

    def _tasks(self, role: Optional[str] = None, index: Optional[int] = None) -> list[tuple[str, Task]]:
        attempt = self.attempt
        assert attempt is not None, "the job has no attempt yet"
        return [(name, task) for name, tasks in attempt.tasks.items() for task in tasks
                if (role is None or name == role) and (index is None or task.index == index)]

    def fc_prepare(self, pod: Optional[Callable[[int, str, int], str]] = None) -> None:
        """An attempt (the first, or the one waiting after a retry) gets its pods: tasks WAITING."""
        if self.attempt is None:
            self.attempts.append(Attempt(id=0))
        attempt = self.attempt
        assert attempt is not None
        attempt.state = PREPARING
        if not attempt.tasks:
            # the recorded stand-in's names (one task role: `poduid-0-0`), the role added when there are several
            several = len(self.roles()) > 1
            pod = pod or (lambda job_attempt, role, index:
                          f"poduid-{job_attempt}-{role}-{index}" if several else f"poduid-{job_attempt}-{index}")
            for role, instances, _ in self.roles():
                attempt.tasks[role] = [Task(index=i, uid=f"task-uid-{i}-{uuid.uuid4().hex[:6]}",
                                            attempts=[TaskAttempt(id=0, pod=pod(attempt.id, role, i))])
                                       for i in range(instances)]

    def fc_run(self, role: Optional[str] = None, index: Optional[int] = None, *, log: str = "") -> None:
        """Tasks (all, or one) start on node1; the attempt runs once one does. `log` goes to each one's stdout."""
        if self.attempt is None or not self.attempt.tasks:
            self.fc_prepare()
        attempt = self.attempt
        assert attempt is not None
        at = now_ms()
        for name, task in self._tasks(role, index):
            self._start(name, task.current, at)
            if log:
                self.write_log(name, task.index, log)
        attempt.state, attempt.launched = RUNNING, attempt.launched or at

    def _start(self, role: str, attempt: TaskAttempt, at: int) -> None:
        """A task attempt's container starts: it runs on node1, and the runtime opens its log files on the node (so
        the log-manager has them: before that, the server cannot list a task's logs)."""
        if attempt.state in (PENDING, PREPARING):
            attempt.state, attempt.launched, attempt.node, attempt.ip = RUNNING, at, NODE, NODE_IP
            if self.log_writer is not None:
                self.log_writer(self.user, self.framework, role, attempt.pod)

    def write_log(self, role: str, index: int, stdout: str = "", stderr: str = "") -> None:
        """What the task prints, into the log-manager's files for its current pod."""
        task = dict(((name, t.index), t) for name, t in self._tasks())[(role, index)]
        if self.log_writer is not None:
            self.log_writer(self.user, self.framework, role, task.current.pod, stdout=stdout, stderr=stderr)

    def _complete_task(self, role: str, task: Task, code: int) -> None:
        current = task.current
        if current.state == COMPLETED:
            return
        at = now_ms()
        self._start(role, current, at)
        current.state, current.exit_code, current.completed = COMPLETED, code, at

    def fc_succeed(self) -> None:
        if self.attempt is None or not self.attempt.tasks:
            self.fc_run()
        tasks = self._tasks()
        for role, task in tasks:
            self._complete_task(role, task, 0)
        count = len(tasks)
        last_role, last = tasks[-1]
        self._complete(Completion(0, "Succeeded", None, (last_role, last.index,
                                                         f"SucceededTaskCount {count} has reached "
                                                         f"MinSucceededTaskCount {count}")))

    def fc_fail(self, role: str, index: int, code: int, *, phrase: str = "", retry: bool = False) -> None:
        """One task exits with `code`: the attempt completes (minFailedTaskCount 1), the other tasks end with -220.
        With `retry`, FrameworkController retries the job: a new attempt waits to be created."""
        if self.attempt is None or not self.attempt.tasks:
            self.fc_run()
        (_, failed), = self._tasks(role, index)
        self._complete_task(role, failed, code)
        for name, task in self._tasks():
            self._complete_task(name, task, -220)
        spec = exit_spec(code) or {}
        self._complete(Completion(code, phrase or str(spec.get("phrase")), f"exit {code}",
                                  (role, index, "FailedTaskCount 1 has reached MinFailedTaskCount 1")))
        if retry:
            self.retries += 1
            self.retry_delay = 0
            self.attempts.append(Attempt(id=len(self.attempts)))

    def fc_retry_task(self, role: str, index: int, code: int = 1, *, pod: str = "") -> None:
        """A task's attempt fails and FrameworkController retries the task inside the job attempt; the failed task
        attempt stays in the task history as the history writer keeps it (`exit N`, no completion time:
        task-retried.jsonl)."""
        (_, task), = self._tasks(role, index)
        failed = task.current
        failed.state, failed.exit_code, failed.diagnostics = COMPLETED, code, f"exit {code}"
        attempt_id = failed.id + 1
        task.attempts.append(TaskAttempt(id=attempt_id, pod=pod or f"{failed.pod}-r{attempt_id}"))
        self._start(role, task.current, now_ms())

    def fc_stop(self) -> None:
        """FrameworkController's answer to executionType Stop: the attempt completes with -210 and its pods are
        being deleted (STOPPING)."""
        if self.attempt is None:
            self.attempts.append(Attempt(id=0))
        self._complete(Completion(-210, "StopFrameworkRequested", "stop requested", None), final=False)
        assert self.attempt is not None
        self.attempt.state = DELETING

    def fc_finish(self) -> None:
        """The attempt's pods are gone: Completed; tasks still running end with the attempt's code."""
        attempt = self.attempt
        assert attempt is not None and attempt.completion is not None
        for role, tasks in attempt.tasks.items():
            for task in tasks:
                self._complete_task(role, task, attempt.completion.code)
        attempt.state, attempt.completed = COMPLETED, now_ms()

    def _complete(self, completion: Completion, *, final: bool = True) -> None:
        attempt = self.attempt
        assert attempt is not None
        attempt.completion = completion
        if final:
            attempt.state, attempt.completed = COMPLETED, completion.at

    # -- the server's derivation ------------------------------------------------------------------------------

    @property
    def is_final(self) -> bool:
        return self.state()[0] in ("SUCCEEDED", "FAILED", "STOPPED")

    def state(self, attempt: Optional[Attempt] = None) -> tuple[str, str]:
        attempt = attempt or self.attempt
        if attempt is None:
            return "WAITING", PENDING
        if attempt.state in (PENDING, PREPARING):
            return "WAITING", attempt.state
        if attempt.state == RUNNING:
            return "RUNNING", attempt.state
        if attempt.state == DELETING:
            return "STOPPING", attempt.state
        code = attempt.completion.code if attempt.completion else None
        if code == 0:
            return "SUCCEEDED", attempt.state
        return ("STOPPED" if code in STOPPED_CODES else "FAILED"), attempt.state

    def _retry_details(self) -> dict[str, int]:
        return {"user": self.retries, "platform": 0, "resource": 0}

    def _launched(self) -> Optional[int]:
        attempt = self.attempt
        return attempt.launched if attempt is not None else None

    def _completed(self) -> Optional[int]:
        attempt = self.attempt
        return attempt.completed if attempt is not None and attempt.state == COMPLETED else None

    def _log_path(self, job_attempt: int, role: str, index: int, task_attempt: int) -> str:
        return (f"/api/v2/jobs/{self.full_name}/attempts/{job_attempt}/taskRoles/{role}/taskIndex/{index}/attempts/"
                f"{task_attempt}/logs")

    def _hived(self, index: int) -> dict[str, Any]:
        return {"affinityGroupName": f"default/pod-{index}", "lazyPreempted": None, "lazyPreemptionStatus": None}

    def _task_status(self, attempt: Attempt, role: str, task: Task, *, history: bool) -> dict[str, Any]:
        current = task.current
        code = current.exit_code
        status = {
            "taskIndex": task.index, "taskUid": task.uid, "taskState": task_state(current, history=history),
            "containerId": current.pod, "containerIp": current.ip, "containerNodeName": current.node,
            "containerPorts": current.ports, "containerGpus": None,
            "containerLog": self._log_path(attempt.id, role, task.index, current.id), "containerExitCode": code,
            "containerExitSpec": exit_spec(code), "containerExitDiagnostics": current.diagnostics,
            "retries": len(task.attempts) - 1, "accountableRetries": len(task.attempts) - 1,
            "createdTime": current.created, "launchedTime": current.launched, "completedTime": current.completed,
            "attemptId": current.id, "attemptState": task_state(current, history=history),
            "currentAttemptCreatedTime": current.created, "currentAttemptLaunchedTime": current.launched,
            "currentAttemptCompletedTime": current.completed,
        }
        if self.hived:
            status["hived"] = self._hived(task.index)
        return status

    def _app_fields(self, attempt: Optional[Attempt]) -> dict[str, Any]:
        completion = attempt.completion if attempt is not None else None
        code = completion.code if completion else None
        diagnostics = completion.diagnostics if completion else None
        trigger = completion.trigger if completion else None
        return {
            "appProgress": 1 if completion else 0, "appTrackingUrl": "",
            "appCreatedTime": attempt.created if attempt else None,
            "appLaunchedTime": attempt.created if attempt else None,
            "appCompletedTime": completion.at if completion else None,
            "appExitCode": code, "appExitSpec": exit_spec(code), "appExitDiagnostics": diagnostics,
            "appExitMessages": ({"container": None, "runtime": None, "launcher": diagnostics}
                                if diagnostics else None),
            "appExitTriggerMessage": trigger[2] if trigger else None,
            "appExitTriggerTaskRoleName": trigger[0] if trigger else None,
            "appExitTriggerTaskIndex": trigger[1] if trigger else None,
            "appExitType": None if code is None else ("Succeeded" if code == 0 else "Failed"),
        }

    def detail(self, attempt: Optional[Attempt] = None) -> dict[str, Any]:
        """`GET /api/v2/jobs/USER~JOB` (no `attempt`), or `.../attempts/N` for an earlier attempt N."""
        latest = self.attempt
        shown = attempt or latest
        history = attempt is not None and attempt is not latest
        state, sub_state = self.state()
        status: dict[str, Any] = {"username": self.user, "state": state, "subState": sub_state,
                                  "executionType": self.execution_type, "retries": self.retries,
                                  "retryDetails": self._retry_details()}
        if latest is None or latest.state == PENDING:
            status["retryDelayTime"] = self.retry_delay
        status.update({"createdTime": self.created, "launchedTime": self._launched(),
                       "completedTime": self._completed()})
        if shown is not None:
            status["attemptId"] = shown.id
        status["attemptState"] = ("FAILED" if shown.completion and shown.completion.code else "SUCCEEDED") \
            if history and shown is not None else self.state(shown)[0]
        if shown is not None:
            status["appId"] = f"{shown.id}_{self.attempt_uid}"
        status.update(self._app_fields(shown))
        status.update({"virtualCluster": self.virtual_cluster, "submissionTime": self.submitted})
        roles: dict[str, Any] = {}
        if shown is not None:
            for role, _, _ in self.roles():
                roles[role] = {"taskRoleStatus": {"name": role},
                               "taskStatuses": [self._task_status(shown, role, task, history=False)
                                                for task in shown.tasks.get(role, [])]}
        return {"debugId": self.framework, "name": self.name, "tags": [], "jobStatus": status, "taskRoles": roles}

    def summary(self) -> dict[str, Any]:
        """One row of `GET /api/v2/jobs`."""
        state, sub_state = self.state()
        attempt = self.attempt
        return {
            "debugId": self.framework, "name": self.name, "username": self.user, "state": state,
            "subState": sub_state, "executionType": self.execution_type, "tags": [], "retries": self.retries,
            "retryDetails": self._retry_details(), "retryDelayTime": self.retry_delay,
            "submissionTime": self.submitted, "createdTime": self.created, "launchedTime": self._launched(),
            "completedTime": self._completed(),
            "appExitCode": attempt.completion.code if attempt is not None and attempt.completion else None,
            "virtualCluster": self.virtual_cluster, **self.totals(),
            "jobPriority": None,
        }

    def totals(self) -> dict[str, int]:
        roles = self.roles()
        return {"totalGpuNumber": sum(instances * gpu for _, instances, gpu in roles),
                "totalTaskNumber": sum(instances for _, instances, _ in roles), "totalTaskRoleNumber": len(roles)}

    def job_attempt(self, attempt: Attempt, *, is_latest: bool) -> dict[str, Any]:
        """One entry of `/job-attempts` (JOB_HISTORY=true)."""
        latest = attempt is self.attempt
        completion = attempt.completion
        code = completion.code if completion else None
        diagnostics = completion.diagnostics if completion else None
        app = self._app_fields(attempt)
        tasks = {role: {"taskRoleStatus": {"name": role}, "taskStatuses": [
            {"taskIndex": task.index, "taskState": task_state(task.current), "containerId": task.current.pod,
             "containerIp": task.current.ip, "containerGpus": None,
             "containerLog": self._log_path(attempt.id, role, task.index, task.current.id),
             "containerExitCode": task.current.exit_code} for task in attempt.tasks.get(role, [])]}
            for role, _, _ in self.roles()}
        return {
            "jobName": self.name, "frameworkName": self.framework, "uid": self.uid, "userName": self.user,
            "state": self.state(attempt)[0] if latest else "RUNNING",
            "originState": attempt.state if latest else "AttemptCompleted", "attemptIndex": attempt.id,
            "jobStartedTime": self.created, "attemptStartedTime": attempt.launched or attempt.created,
            "attemptCompletedTime": completion.at if completion else None, "exitCode": code,
            "exitPhrase": completion.phrase if completion else None,
            "exitType": app["appExitType"],
            "exitDiagnostics": ({"diagnosticsSummary": diagnostics, "runtime": None, "launcher": diagnostics}
                                if diagnostics else None),
            "appExitTriggerMessage": app["appExitTriggerMessage"],
            "appExitTriggerTaskRoleName": app["appExitTriggerTaskRoleName"],
            "appExitTriggerTaskIndex": app["appExitTriggerTaskIndex"], "appExitSpec": app["appExitSpec"],
            "appExitDiagnostics": diagnostics, "appExitMessages": app["appExitMessages"], **self.totals(),
            "taskRoles": tasks, "isLatest": is_latest,
        }

    def task_attempts(self, attempt: Attempt, role: str, task: Task) -> dict[str, Any]:
        """`.../attempts/N/taskRoles/R/taskIndex/I/attempts`: the live task attempt, then the history, newest
        first."""
        current = task.current
        entries = []
        for number, each in enumerate(reversed(task.attempts)):
            entry = {"attemptId": each.id, "attemptState": task_state(each, history=number > 0),
                     "currentAttemptCreatedTime": each.created, "currentAttemptLaunchedTime": each.launched,
                     "currentAttemptCompletedTime": each.completed, "containerId": each.pod,
                     "containerIp": each.ip, "containerNodeName": each.node, "containerPorts": each.ports,
                     "containerGpus": None, "containerLog": self._log_path(attempt.id, role, task.index, each.id),
                     "containerExitCode": each.exit_code, "containerExitSpec": exit_spec(each.exit_code),
                     "containerExitDiagnostics": each.diagnostics}
            if self.hived:
                entry["hived"] = self._hived(task.index)
            entries.append(entry)
        return {"username": self.user, "jobName": self.name, "jobAttemptId": attempt.id, "taskRoleName": role,
                "taskIndex": task.index, "taskUid": task.uid, "taskState": task_state(current),
                "retries": len(task.attempts) - 1, "accountableRetries": len(task.attempts) - 1,
                "createdTime": current.created, "launchedTime": current.launched,
                "completedTime": current.completed, "attempts": entries}

    def find_task(self, job_attempt: int, role: str, index: int) -> Optional[tuple[Attempt, Task]]:
        if not 0 <= job_attempt < len(self.attempts):
            return None
        attempt = self.attempts[job_attempt]
        task = next((t for t in attempt.tasks.get(role, []) if t.index == index), None)
        return (attempt, task) if task is not None else None


# -- scenarios: scripted jobs for the tests of paictl's polling ------------------------------------------------

def _run_with(log: str = "") -> Callable[[Job], None]:
    return lambda job: job.fc_run(log=log)


SCENARIOS: dict[str, list[Step]] = {
    # pending (no attempt) for two reads, running for three, then succeeded
    "succeed": [Step(None, 2), Step(_run_with("starting\nepoch 1 done\n"), 3),
                Step(lambda job: (job.write_log(job.roles()[0][0], 0, "epoch 2 done\n"), job.fc_succeed()))],
    # preparing, running, then worker-0 fails with 231 (a syntax error), the others end with -220
    "fail": [Step(lambda job: job.fc_prepare(), 1), Step(_run_with("starting\n  File \"train.py\", line 3\n"), 2),
             Step(lambda job: (job.write_log(job.roles()[0][0], 0, "SyntaxError: invalid syntax\n"),
                               job.fc_fail(job.roles()[0][0], 0, 231)))],
    # running, worker-0 fails with 1 and the job is retried (attempt 1 waits two reads), runs, succeeds
    "retry": [Step(None, 1), Step(_run_with(), 1),
              Step(lambda job: job.fc_fail(job.roles()[0][0], 0, 1, phrase="PAIRuntimeUnknownFailed", retry=True),
                   2),
              Step(_run_with(), 1), Step(lambda job: job.fc_succeed())],
    "long": [Step(None, 1), Step(_run_with("running\n"), 10 ** 6), Step(lambda job: job.fc_succeed())],
    "stuck": [Step(lambda job: job.fc_prepare(), 10 ** 6), Step(lambda job: job.fc_succeed())],
}


def scenario(name: str) -> list[Step]:
    return [dataclasses.replace(step) for step in SCENARIOS[name]]
