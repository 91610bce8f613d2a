"""What a job's pods add to the view its workload object gives: nodes, exit codes, why a pod waits, and the
exit-rule verdict of a failed container (`PodDiagnoser`), for the follower and for one-off `status` (follow.py).
"""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional

from paictl.targets.kube.client import POD, Cluster
from paictl.targets.states import JobState, JobView

from .events import EVENTS_AFTER, EVENTS_EVERY, latest_warning, latest_warning_of

if TYPE_CHECKING:
    from .kind import Workload


class PodDiagnoser:
    """Adds what the pods know: nodes, exit codes, why a pod waits, and the exit-rule verdict of a failed container.

    The verdict reads the container's log tail, fetched once per terminated container. FrameworkController deletes a
    finished pod at once, so the log may be gone already: then the termination message stands in for it (the
    controller sets FallbackToLogsOnError, so it is the log's last lines), from the pod or from the Framework's
    task status. A verdict made from the exit code alone is made again when a log turns up.
    """

    def __init__(self, cluster: Cluster, namespace: str, workload: "Workload",
                 diagnose: Optional[Callable[[int, str], str]], *, events_after: float = EVENTS_AFTER):
        self.cluster, self.namespace, self.workload, self.diagnose = cluster, namespace, workload, diagnose
        self.verdicts: dict[tuple[int, str, int, int], tuple[str, bool]] = {}  # → (verdict, made from a log)
        self.exit_codes: dict[tuple[int, str, int, int], int] = {}
        #: A pod pending this long (seconds) gets its latest Warning event read (then at most every EVENTS_EVERY):
        #: why a pod waits is often only there (FailedScheduling, FailedMount, the image pull's real error).
        self.events_after = events_after
        self._pending_since: dict[str, float] = {}
        self._events: dict[str, tuple[float, str]] = {}

    def _pod_event(self, pod: Mapping[str, Any]) -> str:
        """`reason: message` of the pod's latest Warning event, or "" (also when events cannot be read: they are
        an explanation, never a reason to fail)."""
        name, uid = pod["metadata"]["name"], str(pod["metadata"].get("uid") or "")
        # a later attempt's pod of the same name starts afresh
        return self._event(f"{name}/{uid}", lambda: latest_warning(self.cluster, self.namespace, name, uid))

    def _job_event(self, job: Mapping[str, Any], objects: list[tuple[str, str]]) -> str:
        """Why a job has no pod yet, from its controllers' Warning events on `objects` (kind, name), or ""."""
        meta = job.get("metadata") or {}
        return self._event(f"job/{meta.get('name')}/{meta.get('uid') or ''}", lambda: latest_warning_of(
            self.cluster, self.namespace, objects, str(meta.get("creationTimestamp") or "")))

    def _event(self, key: str, read: Callable[[], str]) -> str:
        """`read()` once its subject has waited `events_after` seconds, then at most every EVENTS_EVERY."""
        now = time.monotonic()
        if now - self._pending_since.setdefault(key, now) < self.events_after:
            return ""
        cached = self._events.get(key)
        if cached is not None and now - cached[0] < EVENTS_EVERY:
            return cached[1]
        text = read()
        self._events[key] = (now, text)
        return text

    def enrich(self, view: JobView, pods: list, job: Optional[Mapping[str, Any]] = None) -> JobView:
        by_task = {}
        # Oldest first, so a task's newest pod wins (a JobSet keeps a retried index's failed pods).
        for pod in sorted(pods, key=lambda p: str((p.get("metadata") or {}).get("creationTimestamp") or "")):
            task = self.workload.pod_task(pod)
            if task is not None:
                by_task[task] = pod
        waiting = []
        tasks = []
        for task in view.tasks:
            key = (view.attempt, task.role, task.index, task.attempt)  # task retries restart in a new job attempt
            pod = by_task.get((task.role, task.index))
            node, exit_code, log = task.node, task.exit_code, None
            if pod is not None:
                node = node or (pod.get("spec") or {}).get("nodeName") or None
                terminated = _terminated(pod)
                if terminated is not None:
                    container, exit_code, message = terminated
                    if exit_code != 0 and not self.verdicts.get(key, ("", False))[1]:
                        log = self._log_tail(pod, container) or message
                else:
                    # Alive again (KubeDL recreates a pod that failed with a retryable code under the same
                    # name and restartCount 0): what was remembered of its predecessor no longer describes it.
                    self.exit_codes.pop(key, None)
                    self.verdicts.pop(key, None)
                reason = _waiting_reason(pod)
                if (pod.get("status") or {}).get("phase", "Pending") == "Pending" and not view.state.is_final:
                    event = self._pod_event(pod)
                    if event and event not in reason:
                        reason = f"{reason} (event {event})" if reason else f"event {event}"
                if reason:
                    waiting.append(f"{task.role}-{task.index}: {reason}")
            if exit_code is not None:
                self.exit_codes.setdefault(key, exit_code)
            exit_code = exit_code if exit_code is not None else self.exit_codes.get(key)
            if exit_code not in (None, 0) and self.diagnose is not None and not self.verdicts.get(key, ("", False))[1]:
                if not log and self.workload.termination_message is not None and job:
                    log = self.workload.termination_message(job, task.role, task.index)
                if log or key not in self.verdicts:
                    self.verdicts[key] = (self.diagnose(exit_code, log or ""), bool(log))
            diagnosis = self.verdicts[key][0] if key in self.verdicts else None
            if _stopped(task.diagnosis):
                diagnosis = task.diagnosis  # killed because of a stop: the exit code says nothing about the job
            tasks.append(dataclasses.replace(task, node=node, exit_code=exit_code,
                                             diagnosis=diagnosis or task.diagnosis))
        message = view.message
        if waiting and not view.state.is_final and view.state is not JobState.RUNNING:
            message = "; ".join(waiting)
        elif not pods and job and view.state is JobState.PENDING and self.workload.event_objects is not None:
            # No pod at all: a controller that cannot create them (quota, an admission webhook) says so only in
            # events on the job object or its children, and the job would read as waiting for nothing in particular.
            event = self._job_event(job, self.workload.event_objects(job))
            if event and event not in message:
                message = f"{message} (event {event})" if message else f"event {event}"
        return dataclasses.replace(view, tasks=tuple(tasks), message=message)

    def _log_tail(self, pod: Mapping[str, Any], container: str) -> str:
        path = POD.item(pod["metadata"]["name"], self.namespace)
        try:
            response = self.cluster.request("GET", path + "/log",
                                            query=[("container", container), ("tailLines", "2000")])
        except Exception:  # noqa: BLE001 - no log (the pod is deleted already): the caller falls back
            return ""
        try:
            return response.data.decode("utf-8", errors="replace")
        finally:
            response.release_conn()


def _stopped(diagnosis: Optional[str]) -> bool:
    """FrameworkController's own verdict for a task it stopped (-210 stop, -220 attempt completed, -230 removed)."""
    code = (diagnosis or "").split(" ", 1)[0]
    return code in ("-210", "-220", "-230")


def _terminated(pod: Mapping[str, Any]) -> Optional[tuple[str, int, str]]:
    """(container, exit code, termination message) of the failed container, else of a finished one; None while
    any container still runs."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    finished = []
    for status in statuses:
        terminated = (status.get("state") or {}).get("terminated")
        if terminated is None:
            return None
        finished.append((str(status.get("name")), int(terminated.get("exitCode", 0)),
                         str(terminated.get("message") or "")))
    failed = [item for item in finished if item[1] != 0]
    return (failed or finished or [None])[0]  # type: ignore[return-value]


def _waiting_reason(pod: Mapping[str, Any]) -> str:
    status = pod.get("status") or {}
    for container in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
        waiting = (container.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") and waiting.get("reason") not in ("ContainerCreating", "PodInitializing"):
            return " ".join(f"{waiting['reason']}: {waiting.get('message', '')}".split()).rstrip(":")
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return " ".join(f"{condition.get('reason', 'Unschedulable')}: {condition.get('message', '')}".split())
    return ""
