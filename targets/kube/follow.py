"""Following a job on Kubernetes: list, then watch, for as long as it takes, without polling.

Each watched collection (the Framework or MarsJob, and its pods) gets a thread that lists once and then keeps one
watch open, resuming from the last resourceVersion it saw (an event or a bookmark) when the connection drops, listing
again only when the server says that version is gone (410), and backing off exponentially on 5xx answers and
connection errors. The threads feed one queue; the caller's thread turns what arrived into `JobView`s. Watching, not
polling, is what makes following a ten-hour job cost a handful of requests (the emulator tests count them).
"""

from __future__ import annotations

import dataclasses
import json
import queue
import threading
import time
from typing import Any, Callable, Iterator, Mapping, Optional

from paictl.errors import ClusterError
from paictl.targets.kube.client import (
    POD,
    ApiFailure,
    Cluster,
    Resource,
    close_stream,
    describe_failure,
    is_connection_error,
    iter_lines,
)
from paictl.targets.states import JobState, JobView

from .pods import PodDiagnoser
from .kind import Workload


@dataclasses.dataclass(frozen=True, kw_only=True)
class Backoff:
    """Delays between failed attempts: initial, doubling, capped; give up after `attempts` failures in a row (None:
    never; a follower rides out an API server's outage, shown as it lasts, until the user stops it)."""

    initial: float = 0.25
    cap: float = 16.0
    attempts: Optional[int] = None

    def delay(self, failures: int) -> float:
        return min(self.cap, self.initial * 2 ** max(0, failures - 1))


@dataclasses.dataclass(frozen=True, kw_only=True)
class Event:
    """One thing a watch saw while following a workload: a full list, a change to one object, or a failure."""
    source: str                 # which watch: "job" or "pods"
    #: LIST (items = the whole collection), ADDED, MODIFIED, DELETED, FAILED; OUTAGE (error: why, as it goes on),
    #: RECOVERED (the server answers again)
    type: str
    items: tuple = ()           # LIST: the objects; ADDED/MODIFIED/DELETED: the one object
    error: Optional[ClusterError] = None


class Watch(threading.Thread):
    """List-then-watch one collection (optionally narrowed by selectors) into `sink` until `stop()`."""

    def __init__(self, cluster: Cluster, resource: Resource, namespace: str, *, source: str,
                 sink: "queue.Queue[Event]", field_selector: str = "", label_selector: str = "",
                 backoff: Backoff = Backoff()):
        super().__init__(daemon=True, name=f"paictl-watch-{source}")
        self.cluster, self.resource, self.namespace = cluster, resource, namespace
        self.source, self.sink, self.backoff = source, sink, backoff
        self.selectors = [(key, value) for key, value in (("fieldSelector", field_selector),
                                                          ("labelSelector", label_selector)) if value]
        self._stopped = threading.Event()
        self._sleep = self._stopped.wait  # a stop() ends a backoff at once
        self._response: Any = None

    def stop(self) -> None:
        self._stopped.set()
        response = self._response
        if response is not None:
            try:
                response.shutdown()  # unblocks the read this thread is waiting in
            except Exception:  # noqa: BLE001 - it may be closing by itself at the same moment
                pass

    def run(self) -> None:
        version: Optional[str] = None
        failures = 0
        empty_streams = 0
        last_error: BaseException = ConnectionError("no answer")
        path = self.resource.collection(self.namespace)
        while not self._stopped.is_set():
            try:
                if version is None:
                    listed = self.cluster.json("GET", path, query=self.selectors, retry=False)  # own backoff
                    version = str((listed.get("metadata") or {}).get("resourceVersion") or "0")
                    self.sink.put(Event(source=self.source, type="LIST", items=tuple(listed.get("items") or ())))
                version, got_events = self._watch(path, version)
                if failures > 1:
                    self.sink.put(Event(source=self.source, type="RECOVERED"))
                failures = 0
                # A stream the server ended (or a dropped connection) resumes at once; one that keeps ending
                # without delivering anything is treated as a failing server and backed off.
                empty_streams = 0 if got_events else empty_streams + 1
                if empty_streams > 1:
                    self._sleep(self.backoff.delay(empty_streams - 1))
                continue
            except ApiFailure as failure:
                if failure.status == 410:
                    version = None  # too old: list again
                    continue
                if failure.status < 500 and failure.status != 429:
                    self._fail(failure)
                    return
                last_error = failure
            except Exception as exc:  # noqa: BLE001 - connection errors are retried, anything else reported
                if self._stopped.is_set():
                    return
                if not is_connection_error(exc):
                    self._fail(exc)
                    return
                last_error = exc
            failures += 1
            if self.backoff.attempts is not None and failures >= self.backoff.attempts:
                self._fail(last_error)
                return
            if failures > 1:  # a single dropped request is not an outage
                error = describe_failure(self.cluster, last_error, verb="watch", resource=self.resource,
                                         namespace=self.namespace)
                self.sink.put(Event(source=self.source, type="OUTAGE", error=error))
            self._sleep(self.backoff.delay(failures))

    def _watch(self, path: str, version: str) -> tuple[str, bool]:
        """One watch request; returns the version to resume from. A dropped connection is a normal end."""
        query = self.selectors + [("watch", "true"), ("resourceVersion", version), ("allowWatchBookmarks", "true")]
        response = self.cluster.request("GET", path, query=query, stream=True)
        self._response = response
        got_events = False
        try:
            for line in iter_lines(response):
                if not line.strip():
                    continue
                try:
                    event = json.loads(line)
                except ValueError:
                    break  # a line cut by a dropped connection
                kind, obj = event.get("type"), event.get("object") or {}
                if kind == "ERROR":
                    raise ApiFailure(int(obj.get("code") or 500), json.dumps(obj))
                version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
                got_events = True
                if kind != "BOOKMARK":
                    self.sink.put(Event(source=self.source, type=str(kind), items=(obj,)))
        except ApiFailure:
            raise
        except Exception as exc:  # noqa: BLE001
            if not is_connection_error(exc) or self._stopped.is_set():
                raise
        finally:
            self._response = None
            close_stream(response)
        return version, got_events

    def _fail(self, exc: BaseException) -> None:
        error = describe_failure(self.cluster, exc, verb="watch", resource=self.resource, namespace=self.namespace)
        self.sink.put(Event(source=self.source, type="FAILED", error=error))


@dataclasses.dataclass(kw_only=True)
class JobWatchState:
    """What the watches have shown so far: the job object and its pods by name."""

    job: Optional[dict] = None
    deleted: bool = False
    pods: dict[str, dict] = dataclasses.field(default_factory=dict)

    def apply(self, event: Event) -> None:
        if event.source == "job":
            if event.type == "LIST":
                # listed again after a 410: an object that vanished meanwhile was deleted
                self.deleted = self.deleted or (self.job is not None and not event.items)
                self.job = dict(event.items[0]) if event.items else self.job
            elif event.type == "DELETED":
                self.deleted = True
            elif event.items:
                self.job = dict(event.items[0])
            return
        if event.type == "LIST":
            self.pods = {p["metadata"]["name"]: p for p in event.items}
        elif event.type == "DELETED":
            for pod in event.items:
                self.pods.pop(pod["metadata"]["name"], None)
        else:
            for pod in event.items:
                self.pods[pod["metadata"]["name"]] = pod


def follow_job(cluster: Cluster, workload: Workload, name: str, namespace: str, *, uid: Optional[str] = None,
               pending_timeout: Optional[float] = None, diagnose: Optional[Callable[[int, str], str]] = None,
               backoff: Backoff = Backoff(), clock: Callable[[], float] = time.monotonic) -> Iterator[JobView]:
    """Yield a view whenever the job or its pods change, until the job is final (or gone, or pending too long).

    The last view is final unless the pending timeout expired: then it is still PENDING and says why it waits.
    With `uid` (the object a submit created), events about any other object of that name (an older run) are
    ignored, so the follower reports this run only.
    """
    events: "queue.Queue[Event]" = queue.Queue()
    watches = [
        Watch(cluster, workload.resource, namespace, source="job", sink=events,
              field_selector=f"metadata.name={name}", backoff=backoff),
        Watch(cluster, POD, namespace, source="pods", sink=events, label_selector=workload.pod_selector(name),
              backoff=backoff),
    ]
    for watch in watches:
        watch.start()
    state = JobWatchState()
    diagnoser = PodDiagnoser(cluster, namespace, workload, diagnose)
    listed = set()
    outage_since: Optional[float] = None  # wall-clock time the API server stopped answering (shown to the user)
    pending_since: Optional[float] = clock()
    try:
        while True:
            timeout = None
            if pending_timeout is not None and pending_since is not None:
                timeout = max(0.0, pending_since + pending_timeout - clock())
            try:
                event = events.get(timeout=timeout)
            except queue.Empty:
                view = _current(state, workload, diagnoser, name)
                yield dataclasses.replace(view, message=f"still pending after {pending_timeout:g}s"
                                          + (f": {view.message}" if view.message else ""))
                return
            if event.type == "FAILED":
                raise event.error  # type: ignore[misc]
            if event.type in ("OUTAGE", "RECOVERED"):
                if event.type == "OUTAGE":
                    outage_since = outage_since if outage_since is not None else time.time()
                    since = time.strftime("%H:%M:%S", time.localtime(outage_since))
                    outage = f"{event.error}; following on since {since} (Ctrl-C stops)"
                else:
                    outage_since, outage = None, ""
                if state.job is not None and len(listed) == 2:
                    view = _current(state, workload, diagnoser, name)
                    yield dataclasses.replace(view, message=outage or view.message)
                continue
            if uid is not None and event.source == "job":
                mine = [item for item in event.items if (item.get("metadata") or {}).get("uid") == uid]
                if event.items and not mine and event.type != "LIST":
                    continue  # an older object of that name
                event = dataclasses.replace(event, items=tuple(mine))
            state.apply(event)
            if event.type == "LIST":
                listed.add(event.source)
            if len(listed) < 2:
                continue  # draw once both collections are known
            if state.job is None:
                if state.deleted:
                    yield _deleted_view(name, namespace, workload)
                    return
                raise ClusterError(f"{workload.resource.full_name} {name!r} not found in namespace {namespace}")
            view = _current(state, workload, diagnoser, name)
            if state.deleted:
                yield _deleted_view(name, namespace, workload, view)
                return
            if view.state.is_final:
                # The two watches are separate streams: the pods' last changes (a failed container) may still be
                # on their way. One list brings them in before the verdict is drawn.
                state.pods.update(list_pods(cluster, workload, name, namespace))
                yield _current(state, workload, diagnoser, name)
                return
            yield view
            if view.state is JobState.PENDING:
                pending_since = pending_since if pending_since is not None else clock()
            else:
                pending_since = None
    finally:
        for watch in watches:
            watch.stop()


def snapshot(cluster: Cluster, workload: Workload, name: str, namespace: str, *,
             diagnose: Optional[Callable[[int, str], str]] = None) -> JobView:
    """One view from one GET and one pod list, for `status` without --follow."""
    try:
        job = cluster.json("GET", workload.resource.item(name, namespace))
    except Exception as exc:  # noqa: BLE001
        raise describe_failure(cluster, exc, verb="get", resource=workload.resource, name=name,
                               namespace=namespace) from None
    state = JobWatchState(job=job, pods=list_pods(cluster, workload, name, namespace))
    return _current(state, workload, PodDiagnoser(cluster, namespace, workload, diagnose, events_after=0), name)


def list_pods(cluster: Cluster, workload: Workload, name: str, namespace: str) -> dict[str, dict]:
    try:
        listed = cluster.list_all(POD.collection(namespace), query=[("labelSelector", workload.pod_selector(name))])
    except Exception as exc:  # noqa: BLE001
        raise describe_failure(cluster, exc, verb="list", resource=POD, namespace=namespace) from None
    return {p["metadata"]["name"]: p for p in listed.get("items") or []}


def _deleted_view(name: str, namespace: str, workload: Workload, last: Optional[JobView] = None) -> JobView:
    """Deleted before it finished: someone stopped it (a MarsJob is stopped by deleting it)."""
    return JobView(name=name, state=JobState.STOPPED, attempt=last.attempt if last else 0,
                   tasks=last.tasks if last else (), message=f"the {workload.resource.kind} was deleted",
                   where=f"{workload.resource.kind} {namespace}/{name}")


def _current(state: JobWatchState, workload: Workload, diagnoser: PodDiagnoser, name: str) -> JobView:
    pods = sorted(state.pods.values(), key=lambda p: p["metadata"]["name"])
    job = state.job or {"metadata": {"name": name}}
    return diagnoser.enrich(workload.view_on(diagnoser.cluster, job, pods), pods, job)
