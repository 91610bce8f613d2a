"""Running a LocalPlan: task processes, their retries, the job's attempts and verdict, and a clean stop.

One runner owns a run: the `submit --follow` process itself, or the detached supervisor (local_supervisor.py). It
polls its task processes, applies FrameworkController's rules (local_policy.py) with the exit rules' failure
analysis, and publishes a JobView to the run folder's state.json at every change (local_store.py), so `paictl
status/stop/logs` work from any terminal.

Containers. With the docker runtime (containers.py) a task attempt's process is `docker run` of its container in the
foreground, watched, stopped and killed like a host task's shell; a container is removed as its task ends, and every
container of the run at the end of the run, by the runner or else by its watchdog.

Processes. Each task attempt is `bash -o errexit -o nounset -o pipefail -c <commands>` in a new session, so its
process group holds what it starts. A task can leave its group (`timeout`, `set -m`, `setsid`), so the runner is also
a child subreaper and every task carries the run's and its own marker variables (procs.py, run_processes.py): when
the shell exits, what is left of its group and every process marked as that task's is killed, as a container ends
with its main process; at the verdict every process of the run is. A watchdog process (watchdog.py) does the same
if the runner dies, even by SIGKILL. Stopping (a stop request, Ctrl-C, SIGTERM, the end of a job attempt) sends SIGTERM to every
task, waits the plan's grace period, then sends SIGKILL; a second interrupt skips the wait.

A run folder that cannot be written (disk full) or vanishes stops the job: every task is killed and `views()`
raises store.RunFolderError (one line, exit 3).
"""

from __future__ import annotations

import errno
import os
import signal
import time
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional

from paictl.compiler.exit_rules import LOG_TAIL, RuleSet, analyse

from paictl.targets.local import watchdog
from paictl.targets.local.policy import ATTEMPT_COMPLETION, PHRASES, STOP_REQUESTED, Completion, CompletionTally, \
    RetryPolicy, decide_retry
from paictl.targets.local.runtime import Ports, Spawner, allocate_ports, attempt_env, peer_env, task_argv, \
    task_own_env
from paictl.targets.local import procs
from paictl.targets.local.run_processes import RunProcesses
from paictl.targets.local.task import TaskInstance
from paictl.targets.local.store import PORTS, append_note, folder_error, log_tail, owner_record, stop_requested, \
    task_log, write_json, write_state
from paictl.targets.states import JobState, JobView

POLL_SECONDS = 0.05
#: The first pause after tasks start: it doubles up to POLL_SECONDS, so a short task's verdict is not held back by a
#: whole poll period, while a long run still costs one poll every POLL_SECONDS.
FIRST_POLL_SECONDS = 0.002
_REAP_EVERY = 20  # polls between two reapings of orphans that ended on their own (zombies of the subreaper)
_POLL_EVERY_STARTS = 20  # tasks started between two polls while an attempt starts


def wait_for_children() -> None:
    """Restore SIGCHLD's default disposition if this process ignores it (inherited across exec from a parent that
    did): then the kernel reaps every child at once and no exit status can be read, so a task that failed would
    read as exit 0. Only the main thread can change it; elsewhere the caller's choice stands."""
    if signal.getsignal(signal.SIGCHLD) == signal.SIG_IGN:
        try:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        except ValueError:
            pass


def _uid() -> str:
    """A UID in the form the API server gives every object (a version-4 UUID), without importing uuid."""
    digits = bytearray(os.urandom(16))
    digits[6], digits[8] = digits[6] & 0x0F | 0x40, digits[8] & 0x3F | 0x80
    text = digits.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


class LocalRunner:
    """Runs the plan in `folder` to a verdict; `views()` drives it, `interrupt()` stops it from outside."""

    def __init__(self, folder: Path, plan: dict[str, Any], *, secrets: Mapping[str, str], rules: RuleSet,
                 work_dir: str, grace_seconds: Optional[float] = None, lock: Optional[int] = None):
        self.folder = folder
        self.plan = plan
        self.secrets = dict(secrets)
        self.rules = rules
        self.work_dir = work_dir
        self.grace = plan["spec"]["gracePeriodSec"] if grace_seconds is None else grace_seconds
        self.run_id = os.urandom(16).hex()  # as uuid4().hex, without importing uuid (and platform)
        self._framework_uid = _uid()
        self._uids: dict[tuple[str, int], str] = {}  # FC_TASKROLE_UID by (role, -1), FC_TASK_UID by (role, index)
        self.attempt = 0
        self.job_accountable = 0
        self.tasks: list[TaskInstance] = []
        self._tally = CompletionTally({})
        self.last: Optional[JobView] = None
        self._ports: Ports = {}
        self._shared_env: dict[str, str] = {}
        self._shared_bytes: dict[bytes, bytes] = {}
        self._spawner: Optional[Spawner] = None
        self._owner = owner_record(os.getpid())
        self._lock = lock  # the run's lock (store.lock_run), released by close()
        self._failed = False
        self._closed = False
        #: The docker runtime's side of the run (containers.py), when the plan's tasks run in containers.
        self._docker = None
        if (plan["spec"].get("runtime") or {}).get("kind") == "docker":
            from paictl.targets.local.containers import DockerTasks

            self._docker = DockerTasks(plan, self.run_id, self.secrets, folder)
        self._processes = RunProcesses(self.run_id, lambda: self.tasks, self._docker)

    # -- the run ------------------------------------------------------------------------------------------------

    def views(self) -> Iterator[JobView]:
        """Start the job and yield a view at every poll until the verdict (the last view is final)."""
        try:
            yield from self._views()
        except OSError as error:  # the run folder is full or gone: nothing can be recorded, so nothing may run
            self._failed = True
            raise folder_error(self.folder, error) from None
        finally:
            if self._failed:
                self.close()

    def _views(self) -> Iterator[JobView]:
        wait_for_children()
        processes = self._processes
        table = procs.process_table()
        processes.foreign = {pid for pid, (ppid, _, _) in table.items() if ppid == os.getpid()}
        processes.subreaper = procs.become_subreaper()
        if self._docker is not None:
            self._docker.prepare()
        processes.watchdog = watchdog.Link(self.run_id, os.getpid(),
                                       self._docker.watchdog_args() if self._docker is not None else ())
        job_policy = RetryPolicy.from_plan(self.plan["spec"]["jobRetry"])
        yield self._publish(JobState.PENDING, message="starting")
        polls = 0
        while True:
            early = self._start_attempt()
            completion = None
            pause = FIRST_POLL_SECONDS
            while completion is None:
                if not self.folder.is_dir():
                    raise FileNotFoundError(errno.ENOENT, "vanished", str(self.folder))
                if stop_requested(self.folder):
                    yield self._publish(JobState.STOPPING, message="stop requested")
                    yield self._stop(STOP_REQUESTED, "stopped by `paictl stop`")
                    return
                completion, early = early if early is not None else self._poll(), None
                yield self._publish(JobState.RUNNING)
                if completion is None:
                    time.sleep(pause)
                    pause = min(pause * 2, POLL_SECONDS)
                    polls += 1
                    if polls % _REAP_EVERY == 0:
                        processes.reap_adopted()
            trigger = self._task(*completion.trigger) if completion.trigger else None
            code = trigger.rule.code if completion.outcome == "failed" and trigger else 0
            if any(t.state == "running" for t in self.tasks):  # the others are stopped with -220 first
                yield self._publish(JobState.RUNNING, message=f"completing: {completion.message}")
            self._terminate(ATTEMPT_COMPLETION)
            decision = decide_retry(job_policy, succeeded=completion.outcome == "succeeded",
                                    rule=trigger.rule if completion.outcome == "failed" and trigger else None,
                                    accountable_retries=self.job_accountable)
            message = completion.message + (f"; {decision.reason}" if decision.reason else "")
            if not decision.retry:
                state = JobState.SUCCEEDED if completion.outcome == "succeeded" else JobState.FAILED
                final = self._publish(state, code=code, message=message, trigger=completion.trigger)
                self.close()
                yield final
                return
            yield self._publish(JobState.RESTARTING, code=code, message=message, trigger=completion.trigger)
            self.job_accountable += decision.accountable
            self.attempt += 1

    def interrupt(self, message: str) -> JobView:
        """Stop every task now (SIGTERM, grace, SIGKILL) and publish the stopped verdict; safe to call twice."""
        if self._failed or (self.last is not None and self.last.state.is_final):
            assert self.last is not None
            return self.last
        self._publish(JobState.STOPPING, message=message)
        try:
            return self._stop(STOP_REQUESTED, message)
        except (SystemExit, KeyboardInterrupt):  # a second interrupt: _terminate already killed everything
            return self._publish(JobState.STOPPED, code=STOP_REQUESTED, message=message)

    def close(self) -> None:
        """Kill whatever may be left of the run (nothing, normally), let the watchdog go, release the lock.

        Once: a first call that ran to its end has killed every process of the run and checked that none is left,
        so a second (the caller's clean-up after the verdict) has nothing to do; its search of /proc cost 10 ms."""
        if self._closed:
            return
        processes = self._processes
        for task in self.tasks:
            processes.kill_group(task)
        procs.kill_until_gone(lambda: processes.adopted() | procs.marked(self.run_id), keep=processes.shells())
        if self._docker is not None:
            self._docker.close()
        if processes.watchdog is not None:
            processes.watchdog.release()
            processes.watchdog = None
        if processes.subreaper:
            procs.stop_subreaping()
            processes.subreaper = False
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None
        self._closed = True  # only once all of it is done: a close interrupted half-way is run again

    # -- attempts and tasks -------------------------------------------------------------------------------------

    def _start_attempt(self) -> Optional[Completion]:
        """Start every task of the attempt. Tasks that end while the others start are handled as they start (the
        first of them to decide the attempt, if one does, is returned; the rest still start, as before): at 200
        tasks, handling every ending only once all had started was a serial tail after the tasks' own work."""
        attempt_dir = self.folder / str(self.attempt)
        attempt_dir.mkdir(exist_ok=True)
        ports = allocate_ports(self.plan)
        write_json(attempt_dir / PORTS, ports)
        peers = peer_env(self.plan, ports)
        self.tasks = [TaskInstance(role=role, index=index) for role in self.plan["spec"]["taskRoles"]
                      for index in range(role["instances"])]
        self._tally = CompletionTally({role["name"]: [None] * role["instances"]
                                       for role in self.plan["spec"]["taskRoles"]})
        self._ports = ports
        self._shared_env = attempt_env(self.plan, peers, inherit=self._docker is None)
        configmap = _uid()
        self._shared_env.update(FC_FRAMEWORK_UID=self._framework_uid, FC_CONFIGMAP_UID=configmap,
                                FC_FRAMEWORK_ATTEMPT_INSTANCE_UID=f"{self.attempt}_{configmap}")
        self._uids = {}
        # Encoded once for the attempt's host tasks: posix_spawn would encode all of it for every task.
        self._shared_bytes = {os.fsencode(name): os.fsencode(value) for name, value in self._shared_env.items()} \
            if self._docker is None else {}
        # The tasks' PATH finds their shell; the docker CLI is found on this process's.
        self._spawner = Spawner(self.work_dir, (os.environ if self._docker is not None else self._shared_env)
                                .get("PATH", os.defpath))
        early: Optional[Completion] = None
        for number, task in enumerate(self.tasks, 1):  # gang allocation or not, every local task can start at once
            task.log = self.folder / task_log(self.attempt, task.role["name"], task.index)
            self._start_task(task)
            if early is None and number % _POLL_EVERY_STARTS == 0:
                early = self._poll()
        self._processes.flush_watchdog()
        return early

    def _start_task(self, task: TaskInstance) -> None:
        own = task_own_env(self.plan, task.role, task.index, own_ports=self._ports[task.role["name"]][task.index],
                           work_dir=self.work_dir, job_attempt=self.attempt, task_attempt=task.attempt,
                           run_id=self.run_id)
        own[procs.TASK_MARKER] = task.label
        pod = _uid()
        own.update(FC_TASKROLE_UID=self._uids.setdefault((task.role["name"], -1), _uid()),
                   FC_TASK_UID=self._uids.setdefault((task.role["name"], task.index), _uid()), FC_POD_UID=pod,
                   FC_TASK_ATTEMPT_INSTANCE_UID=f"{task.attempt}_{pod}")
        env: Any
        if self._docker is not None:
            argv, env = self._docker.launch(task.role, task.index, {**self._shared_env, **own}, attempt=self.attempt,
                                            task_attempt=task.attempt)
        else:
            argv, extra = task_argv(task.role, self.secrets)
            own.update(extra)
            env = {**self._shared_bytes, **{os.fsencode(name): os.fsencode(value) for name, value in own.items()}}
        assert task.log is not None
        # os-level: Python's buffered file asks whether a log is a terminal and where it ends (7 calls more a task)
        log = os.open(task.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o666)
        try:
            os.write(log, f"[paictl] {task.label}: task attempt {task.attempt} of job attempt {self.attempt} "
                          f"starts\n".encode())
            task.offset = os.lseek(log, 0, os.SEEK_END)
            task.process = self._spawner.spawn(argv, env, log)
        finally:
            os.close(log)
        task.group_gone = False
        self._processes.tell_watchdog(str(task.process.pid))
        task.state, task.exit_code, task.diagnosis = "running", None, None

    def _poll(self) -> Optional[Completion]:
        """Handle every task that exited since the last poll; the attempt's Completion once one is decided.

        Every shell that ended is reaped first, so whatever any of them left behind is already a child of this
        runner (the subreaper), and one read of the runner's children serves each of them
        (`RunProcesses.left_nothing`).
        A task handled after another's retry or kill may see a child that is gone by then: it then searches in
        full, never less."""
        ended = [task for task in self.tasks
                 if task.state == "running" and task.process is not None and task.process.poll() is not None]
        if not ended:
            return None
        children = procs.children(os.getpid())
        for task in ended:
            completion = self._exited(task, children)
            if completion is not None:
                return completion
        return None

    def _exited(self, task: TaskInstance, children: Optional[set[int]]) -> Optional[Completion]:
        """Handle a task whose shell `_poll` reaped; `children`: the runner's children read after that."""
        assert task.process is not None and task.log is not None
        code = task.process.returncode
        code = 128 - code if code < 0 else code  # killed by signal N: 128+N, as a container reports it
        self._processes.kill_group(task, children)
        rule = self._docker.rule(task.label) if self._docker is not None else None  # OOM-killed: as on a cluster
        if rule is None:
            rule = analyse(code, self._log_text(task) if code else "", "", self.rules).rule  # 0 needs no log
        task.exit_code, task.rule = code, rule
        succeeded = code == 0
        task.diagnosis = None if succeeded else f"{rule.code} {rule.phrase}"
        decision = decide_retry(RetryPolicy.from_plan(task.role["taskRetry"]), succeeded=succeeded,
                                rule=None if succeeded else rule, accountable_retries=task.accountable)
        self._note(task, f"exited {code}" + ("" if succeeded else f" ({rule.code} {rule.phrase})")
                   + (f"; retried: {decision.reason}" if decision.retry else
                      f"; not retried: {decision.reason}" if decision.reason else ""))
        if decision.retry:
            task.failed.append((task.attempt, code, task.diagnosis))
            task.attempt += 1
            task.accountable += decision.accountable
            self._start_task(task)
            return None
        task.outcome = "succeeded" if succeeded else "failed"
        task.state = task.outcome
        policy = (task.role["completion"]["minFailedTaskCount"], task.role["completion"]["minSucceededTaskCount"])
        return self._tally.complete(task.role["name"], task.index, task.outcome, policy)

    def _log_text(self, task: TaskInstance) -> str:
        assert task.log is not None
        return log_tail(task.log, task.offset, LOG_TAIL)

    def _note(self, task: TaskInstance, text: str) -> None:
        assert task.log is not None
        try:
            append_note(task.log, f"[paictl] {task.label}: {text}")
        except OSError:
            if not self._failed:
                raise

    def _task(self, role: str, index: int) -> TaskInstance:
        return next(t for t in self.tasks if t.role["name"] == role and t.index == index)

    # -- stopping -----------------------------------------------------------------------------------------------

    def _stop(self, code: int, message: str) -> JobView:
        self._terminate(code)
        view = self._publish(JobState.STOPPED, code=code, message=message)
        self.close()
        return view

    def _terminate(self, code: int) -> None:
        """SIGTERM to every running task's group, SIGKILL after the grace period; they complete with `code`."""
        running = [t for t in self.tasks if t.state == "running" and t.process is not None]
        for task in running:
            self._processes.signal(task, signal.SIGTERM)
        interrupted: Optional[BaseException] = None
        deadline = time.monotonic() + self.grace
        try:
            while time.monotonic() < deadline and any(t.process.poll() is None for t in running):  # type: ignore
                time.sleep(POLL_SECONDS)
        except (SystemExit, KeyboardInterrupt) as exc:
            interrupted = exc
        for task in running:
            self._processes.kill_group(task)
            returned = task.process.returncode  # type: ignore[union-attr]
            task.exit_code = 128 - returned if returned is not None and returned < 0 else returned
            task.state, task.diagnosis = "stopped", f"{code} {PHRASES[code]}"
            self._note(task, f"stopped ({code} {PHRASES[code]})")
        if interrupted is not None:
            raise interrupted

    # -- publishing ---------------------------------------------------------------------------------------------

    def _publish(self, state: JobState, *, code: Optional[int] = None, message: str = "",
                 trigger: Optional[tuple[str, int]] = None) -> JobView:
        self._processes.flush_watchdog()  # every poll and every change publishes: the watchdog is never behind
        view = JobView(name=self.plan["metadata"]["name"], state=state, attempt=self.attempt,
                       tasks=tuple(t.view() for t in self.tasks), completion_code=code, message=message,
                       triggered_by=trigger, where=str(self.folder))
        if view != self.last:
            write_state(self.folder, view, owner=self._owner, attempt=self.attempt, work_dir=self.work_dir,
                        run_id=self.run_id)
            self.last = view
        return view
