"""Running a sweep: at most K trials at once through any `Backend`, the window kept full while they are followed,
each finished trial's metric read from its output, and the whole sweep resumable.

The runner polls (`describe`) the trials it has submitted rather than holding K watches open: one request per live
trial per round is what a window of a few trials costs on every backend, and a poll survives a lost connection the
next round. It never prints: it yields `SweepView`s (one per round in which something changed), which the CLI
draws and the Python API returns. Ctrl-C leaves submitted trials running on their backend (detached, as `submit`
without --follow leaves a job); `resume` picks the sweep up from its record.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Optional

from paictl.errors import NotFoundError, PaictlError
from paictl.targets.states import JobState

from .metrics import StopCondition, metric_of, parse_stop_when
from .store import PHASES, SweepStore

if TYPE_CHECKING:
    from paictl.targets.backend import Backend
    from paictl.targets.compiled import CompiledJob

    from .prepare import PreparedSweep

SUBMITTING, SUBMITTED, DONE = PHASES
WAITING, CANCELLED = "waiting", "cancelled"


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrialRow:
    """One trial as the table shows it. `state` is a job state, or waiting/submitting/cancelled before it has one."""

    index: int
    name: str
    parameters: dict[str, Any]
    state: str
    job: Optional[str] = None            # the backend's name for it (a Framework's hashed name...)
    duration: Optional[float] = None     # seconds from submission to the end (or to now)
    exit_code: Optional[int] = None
    metric: Optional[float] = None
    best: bool = False
    message: str = ""

    @property
    def final(self) -> bool:
        return self.state in _FINAL_WORDS

    def data(self) -> dict[str, Any]:
        return {"trial": self.index, "name": self.name, "job": self.job, "parameters": self.parameters,
                "state": self.state, "duration": None if self.duration is None else round(self.duration, 3),
                "exit_code": self.exit_code, "metric": self.metric, "best": self.best, "message": self.message}


_FINAL_WORDS = frozenset({state.value for state in JobState if state.is_final} | {CANCELLED, JobState.UNKNOWN.value})


@dataclasses.dataclass(frozen=True, kw_only=True)
class SweepView:
    sweep_id: str
    job: str
    target: str
    rows: tuple[TrialRow, ...]           # in trial order, or by metric with a goal
    metric: Optional[str] = None
    goal: Optional[str] = None
    stopped: Optional[str] = None        # why the sweep was stopped, if it was
    done: bool = False

    @property
    def best(self) -> Optional[TrialRow]:
        return next((row for row in self.rows if row.best), None)

    def data(self) -> dict[str, Any]:
        best = self.best
        return {"sweep": self.sweep_id, "job": self.job, "target": self.target, "metric": self.metric,
                "goal": self.goal, "done": self.done, "stopped": self.stopped,
                "best": None if best is None else best.index, "trials": [row.data() for row in self.rows]}


def sweep_view(definition: Mapping[str, Any], records: Mapping[int, Mapping[str, Any]], *,
               stopped: Optional[str], now: float, done: bool = False) -> SweepView:
    """The table of a sweep from its record: trials in order, or sorted by metric (best first) with a goal."""
    rows = []
    for trial in definition["trials"]:
        record = records.get(trial["index"])
        if record is None:
            rows.append(TrialRow(index=trial["index"], name=trial["name"], parameters=trial["parameters"],
                                 state=CANCELLED if stopped else WAITING))
            continue
        started, ended = record.get("submitted_at"), record.get("ended_at")
        state = record.get("state") or (SUBMITTING if record["phase"] == SUBMITTING else JobState.PENDING.value)
        rows.append(TrialRow(index=trial["index"], name=trial["name"], parameters=trial["parameters"], state=state,
                             job=record.get("job"), exit_code=record.get("exit_code"), metric=record.get("metric"),
                             message=record.get("message") or "",
                             duration=None if started is None else (ended or now) - started))
    goal = definition.get("goal")
    if goal in ("min", "max"):
        scored = [row for row in rows if row.metric is not None and row.metric == row.metric]  # not NaN
        if scored:
            best = (min if goal == "min" else max)(scored, key=lambda row: row.metric)
            rows = [dataclasses.replace(row, best=row is best) for row in rows]
        sign = 1 if goal == "min" else -1
        rows.sort(key=lambda row: (row.metric is None or row.metric != row.metric,
                                   sign * row.metric if row.metric is not None and row.metric == row.metric else 0,
                                   row.index))
    return SweepView(sweep_id=definition["id"], job=definition["job"]["name"], target=definition["target"],
                     rows=tuple(rows), metric=definition.get("metric"), goal=goal, stopped=stopped, done=done)


def definition_of(prepared: PreparedSweep, *, backend: Mapping[str, Any], compile_options: Mapping[str, Any],
                  parallel: int, metric: Optional[str], goal: Optional[str], stop_when: Optional[str],
                  max_trials: Optional[int]) -> dict[str, Any]:
    """What sweep.json keeps (no secret: the job is named by path and digest; parameters are not secrets)."""
    import os

    path = prepared.job_path
    return {"id": prepared.sweep_id, "version": 1, "created": time.time(),
            "job": {"path": os.path.abspath(path) if os.path.exists(path) else path, "name": prepared.job_name,
                    "digest": prepared.job_digest},
            "target": prepared.target, "backend": dict(backend), "compile": dict(compile_options),
            "strategy": prepared.strategy, "seed": prepared.seed, "max_trials": max_trials, "parallel": parallel,
            "metric": metric, "goal": goal, "stop_when": stop_when,
            "trials": [{"index": t.index, "name": t.name, "parameters": t.parameters} for t in prepared.trials]}


class SweepRunner:
    """Drives one sweep to its end (see the module docstring). `compiled` holds the trials still to submit."""

    def __init__(self, store: SweepStore, backend: Backend, definition: Mapping[str, Any],
                 compiled: Mapping[int, CompiledJob], *, poll: float = 1.0,
                 on_notes: Optional[Callable[[list[str]], None]] = None, clock: Callable[[], float] = time.time):
        self.store, self.backend, self.definition = store, backend, definition
        self.compiled = dict(compiled)
        self.poll, self.clock, self.on_notes = poll, clock, on_notes
        self.parallel = max(1, int(definition.get("parallel") or 1))
        self.metric = definition.get("metric")
        self.condition: Optional[StopCondition] = (parse_stop_when(definition["stop_when"], self.metric)
                                                    if definition.get("stop_when") else None)
        self.records = store.records()
        self._noted: set[str] = set()
        self._stopping: set[int] = set()

    # -- the loop ---------------------------------------------------------------------------------------------------

    def views(self) -> Iterator[SweepView]:
        """A view after every round that changed something (and at least once a second while trials run); the last
        one has `done`."""
        self.reconcile()
        last: Optional[SweepView] = None
        shown = 0.0
        while True:
            self._round()
            done = self._finished()
            now = self.clock()
            view = sweep_view(self.definition, self.records, stopped=self.store.stop_reason(), now=now, done=done)
            # a change, or once a second while trials run: a live table's durations go on counting
            if last is None or _changed(last, view) or (self._active() and now - shown >= 1.0):
                yield view
                shown = now
            last = view
            if done:
                return
            time.sleep(self.poll)

    def reconcile(self) -> None:
        """Intents left by an interrupted run: a trial the backend has (by its job name) was submitted; one it does
        not have never was, and is submitted again in its turn."""
        for index, record in list(self.records.items()):
            if record["phase"] != SUBMITTING:
                continue
            if self.backend.has_job(record["name"]):
                self._write(index, {**record, "phase": SUBMITTED, "job": record.get("job") or record["name"]})
            else:
                self.store.forget(index)
                del self.records[index]

    def _round(self) -> None:
        for index in self._active():
            self._refresh(index)
        stopped = self.store.stop_reason()
        if stopped is not None:
            for index in self._active():
                if index not in self._stopping:
                    self._stopping.add(index)
                    self._stop(index)
            return
        free = self.parallel - len(self._active())
        for trial in self.definition["trials"]:
            if free <= 0:
                break
            if trial["index"] in self.records:
                continue
            if not self._submit(trial):
                return
            free -= 1

    def _finished(self) -> bool:
        if self._active():
            return False
        return self.store.stop_reason() is not None or len(self.records) == len(self.definition["trials"])

    def _active(self) -> list[int]:
        return [index for index, record in self.records.items() if record["phase"] != DONE]

    # -- one trial ----------------------------------------------------------------------------------------------

    def _submit(self, trial: Mapping[str, Any]) -> bool:
        """Record the intent, check no stop came meanwhile, submit, record the result. False: stop requested."""
        index = trial["index"]
        record = {"index": index, "name": trial["name"], "phase": SUBMITTING, "submitted_at": self.clock()}
        self._write(index, record)
        if self.store.stop_reason() is not None:
            self.store.forget(index)
            del self.records[index]
            return False
        compiled = self.compiled.get(index)
        if compiled is None:
            raise PaictlError(f"trial {index} of sweep {self.store.sweep_id} was not compiled")  # pragma: no cover
        with _interrupts_deferred():
            submission = self.backend.submit(compiled)
            self._write(index, {**record, "phase": SUBMITTED, "job": submission.name, "uid": submission.uid,
                                "state": JobState.PENDING.value})
        notes = [note for note in submission.notes if trial["name"] not in note and note not in self._noted]
        self._noted.update(notes)
        if notes and self.on_notes is not None:
            self.on_notes(notes)
        return True

    def _refresh(self, index: int) -> None:
        record = self.records[index]
        job = record.get("job") or record["name"]
        try:
            view = self.backend.describe(job)
        except NotFoundError as error:
            self._write(index, {**record, "phase": DONE, "state": JobState.UNKNOWN.value, "ended_at": self.clock(),
                                "message": f"vanished from the backend: {error}"})
            return
        if not view.state.is_final:
            if record.get("state") != view.state.value or record.get("message") != view.message:
                self._write(index, {**record, "state": view.state.value, "message": view.message})
            return
        final = {**record, "phase": DONE, "state": view.state.value, "exit_code": view.completion_code,
                 "message": view.message, "ended_at": self.clock()}
        if self.metric:
            final["metric"] = self.read_metric(job)
        self._write(index, final)
        if self.condition is not None and self.condition.met(final.get("metric")):
            self.store.request_stop(f"--stop-when {self.condition} met by trial {index} "
                                    f"({self.metric}={final['metric']:g})")

    def read_metric(self, job: str) -> Optional[float]:
        return trial_metric(self.backend, job, self.metric)

    def _stop(self, index: int) -> None:
        record = self.records[index]
        try:
            self.backend.stop(record.get("job") or record["name"])
        except NotFoundError:
            pass

    def _write(self, index: int, record: dict[str, Any]) -> None:
        self.store.write_record(index, record)
        self.records[index] = record


@contextlib.contextmanager
def _interrupts_deferred() -> Iterator[None]:
    """Ctrl-C or SIGTERM during a submission takes effect once it is done: a submission cut halfway (a local run's
    folder made, its supervisor not yet started) leaves a job that exists but never runs, which a resumed sweep
    would take for submitted. Handlers, not a signal mask: a mask would be inherited by the processes a backend
    starts. Only the main thread can set handlers; elsewhere nothing is deferred."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    previous = {number: signal.signal(number, lambda received, frame: pending.append(received))
                for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, signal.SIG_DFL if handler is None else handler)
        if pending:
            signal.raise_signal(pending[0])


def _changed(before: SweepView, after: SweepView) -> bool:
    """Whether anything but the running durations changed."""
    def key(view: SweepView) -> tuple:
        return (view.stopped, view.done, tuple(dataclasses.replace(row, duration=None) for row in view.rows))
    return key(before) != key(after)


def stop_sweep(store: SweepStore, backend: Backend, reason: str) -> list[tuple[TrialRow, str]]:
    """Stop every trial: the request first (so no trial starts after it, even one a running sweep is about to
    submit), then each submitted trial that has not ended. Returns each stopped trial and what its backend said."""
    definition = store.definition()
    if store.stop_reason() is None:
        store.request_stop(reason)
    results: list[tuple[TrialRow, str]] = []
    view = sweep_view(definition, store.records(), stopped=reason, now=time.time())
    for row in sorted(view.rows, key=lambda row: row.index):
        if row.final or row.state == WAITING:
            continue
        try:
            result = backend.stop(row.job or row.name)
            results.append((row, result.line))
        except NotFoundError:
            results.append((row, f"{row.name}: not found (never started)"))
    return results


def observed(store: SweepStore, backend: Optional[Backend]) -> SweepView:
    """A sweep as it is now, for `status --sweep`: its record, with the live state of trials not yet ended asked of
    the backend (nothing is written: the process driving the sweep owns the record)."""
    definition = store.definition()
    records = dict(store.records())
    metric = definition.get("metric")
    if backend is not None:
        for index, record in records.items():
            if record["phase"] == DONE or record["phase"] == SUBMITTING:
                continue
            job = record.get("job") or record["name"]
            try:
                view = backend.describe(job)
            except NotFoundError:
                continue
            updated = {**record, "state": view.state.value, "message": view.message}
            if view.state.is_final:
                updated.update(exit_code=view.completion_code, ended_at=record.get("ended_at") or time.time())
                if metric:
                    updated["metric"] = trial_metric(backend, job, metric)
            records[index] = updated
    view = sweep_view(definition, records, stopped=store.stop_reason(), now=time.time())
    return dataclasses.replace(view, done=not store.driven() and all(row.final for row in view.rows))


def trial_metric(backend: Backend, job: str, metric: str) -> Optional[float]:
    """The metric a finished trial printed (None when it printed none, or its output cannot be read)."""
    try:
        logs = backend.logs(job)
        return metric_of((line.text for line in logs.lines if line.stream == "out"), metric)
    except PaictlError:
        return None
