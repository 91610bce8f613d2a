"""Pod logs of a job on Kubernetes: one pod per task (its newest), one stream each, merged when followed."""

from __future__ import annotations

import queue
import threading
from typing import TYPE_CHECKING, Any, Iterator, Optional

from paictl.errors import ClusterError
from paictl.targets.backend import LogLine

if TYPE_CHECKING:
    from .client import Cluster
    from .kind import Workload


def pod_lines(connection: Cluster, task: tuple[str, int], pod: dict, *, follow: bool,
              previous: bool = False) -> Iterator[LogLine]:
    """The log of a task's pod (its first container), line by line; followed with `follow`."""
    from .client import POD, ApiFailure, close_stream, describe_failure, iter_lines

    name = pod["metadata"]["name"]
    query: list[tuple[str, Any]] = [("container", log_container(pod))]
    if follow:
        query.append(("follow", "true"))
    if previous:  # the container's previous instance (after a restart in the same pod), as kubectl logs -p
        query.append(("previous", "true"))
    try:
        response = connection.request("GET", POD.item(name, connection.namespace) + "/log", query=query,
                                      stream=True)
    except ApiFailure as failure:
        if failure.status == 400:  # e.g. the container is still waiting to start
            yield LogLine(role=task[0], index=task[1], stream="note",
                          text=f"paictl: {name}: no log yet: {failure.message}")
            return
        raise describe_failure(connection, failure, verb="get", resource=POD, name=f"{name}/log") from None
    except Exception as exc:  # noqa: BLE001
        raise describe_failure(connection, exc, verb="get", resource=POD, name=f"{name}/log") from None
    if getattr(response, "status", 200) == 204:  # no node yet: the API server has no kubelet to ask, and no log
        close_stream(response)
        phase = ((pod.get("status") or {}).get("phase") or "Pending").lower()
        yield LogLine(role=task[0], index=task[1], stream="note",
                      text=f"paictl: {name}: no log yet: the pod is {phase} and on no node")
        return
    try:
        for line in iter_lines(response):
            yield LogLine(role=task[0], index=task[1], text=line.decode("utf-8", errors="replace").rstrip("\r"))
    finally:
        close_stream(response)


def log_container(pod: dict) -> str:
    """The container whose log is the task's: the pod's first."""
    return (((pod.get("spec") or {}).get("containers") or [{}])[0]).get("name", "")


def earlier_pods_note(connection: Cluster, task: tuple[str, int], pod: dict, earlier: list[dict]) -> LogLine:
    """Which pod's log is shown, and the kubectl commands that show the task's earlier pods (as the user reached
    the cluster: `Cluster.kubectl`)."""
    import shlex

    commands = "; ".join(f"{connection.kubectl} logs -n {shlex.quote(connection.namespace)} "
                         f"-c {shlex.quote(log_container(old))} {shlex.quote(old['metadata']['name'])}"
                         for old in earlier)
    return LogLine(role=task[0], index=task[1], stream="note",
                   text=f"paictl: {task[0]}-{task[1]}: the log of its newest pod {pod['metadata']['name']}; "
                        f"{len(earlier)} earlier pod(s) of this task are not shown ({commands})")


def merged(connection: Cluster, pods: list[tuple[tuple[str, int], dict]]) -> Iterator[LogLine]:
    """Several pods followed at once: one thread per stream, lines yielded as they come."""
    lines: "queue.Queue[Optional[LogLine]]" = queue.Queue()

    def pump(task: tuple[str, int], pod: dict) -> None:
        try:
            for line in pod_lines(connection, task, pod, follow=True):
                lines.put(line)
        except ClusterError as error:
            lines.put(LogLine(role=task[0], index=task[1], stream="error", text=f"paictl: {error}"))
        finally:
            lines.put(None)

    for task, pod in pods:
        threading.Thread(target=pump, args=(task, pod), daemon=True).start()
    open_streams = len(pods)
    while open_streams:
        line = lines.get()
        if line is None:
            open_streams -= 1
        else:
            yield line


def newest_per_task(chosen: Workload, pods) -> tuple[list[tuple[tuple[str, int], dict]], dict[tuple[str, int],
                                                                                           list[dict]]]:
    """One pod per task, the newest, in task order; and each task's older pods, oldest first. A task can have several
    pods: the Job controller keeps an index's failed pods beside its retry (backoffLimitPerIndex), a restarted
    JobSet's old pods linger while they terminate, KubeDL and FrameworkController reuse a name once the old pod is
    gone. Printed together, an old attempt's traceback would read as the current run's."""
    by_task: dict[tuple[str, int], list[dict]] = {}
    for pod in pods:
        task = chosen.pod_task(pod)
        if task is not None:
            by_task.setdefault(task, []).append(pod)

    def age(pod: dict) -> tuple:
        meta, phase = pod.get("metadata") or {}, (pod.get("status") or {}).get("phase")
        return (not meta.get("deletionTimestamp"), str(meta.get("creationTimestamp") or ""),
                phase not in ("Failed", "Succeeded"), str(meta.get("name")))

    ordered = {task: sorted(group, key=age) for task, group in by_task.items()}
    return (sorted((task, group[-1]) for task, group in ordered.items()),
            {task: group[:-1] for task, group in ordered.items() if len(group) > 1})
