"""Why a pod waits, when only its events say it: FailedScheduling, FailedMount, an image pull's real error; and why
a job has no pod at all (a Job's FailedCreate: the namespace's quota, an admission webhook).

Read by the follower (`pods.PodDiagnoser`) for pods (or a job without pods) pending `EVENTS_AFTER` seconds or more,
at most every `EVENTS_EVERY` seconds each, and at once by `status`: a pending pod costs a request now and then, a
running job none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from paictl.targets.kube.client import Resource

if TYPE_CHECKING:
    from paictl.targets.kube.client import Cluster

EVENTS_AFTER, EVENTS_EVERY = 3.0, 10.0
EVENT = Resource(kind="Event", api_version="v1", plural="events")


def latest_warning(cluster: Cluster, namespace: str, pod: str, uid: str = "") -> str:
    """`reason: message` of the pod's latest Warning event, or "" (also when events cannot be read: they explain,
    they are never a reason to fail). `uid`: of this pod only. FrameworkController and KubeDL give a task's pod the
    same name in every attempt, and events outlive their pod (an hour by default), so a name alone can bring up
    why an earlier pod waited."""
    selector = f"involvedObject.kind=Pod,involvedObject.name={pod}" + (f",involvedObject.uid={uid}" if uid else "")
    return _newest(_warnings(cluster, namespace, selector))


def latest_warning_of(cluster: Cluster, namespace: str, objects: Sequence[tuple[str, str]], since: str = "") -> str:
    """`reason: message` of the newest Warning event of any of `objects` ((kind, name)) from `since` (an RFC 3339
    time, the job object's creation: an event from before is about an earlier object of that name), or "".

    Why a job has no pod at all is only there: the Job controller's FailedCreate on a Job (the namespace's quota,
    an admission webhook), JobSet's JobCreationFailed on the JobSet, KubeDL's FailedCreatePod on the MarsJob. One
    request per kind: by name when the kind has one object, else all the kind's Warning events, kept by name."""
    wanted: dict[str, set[str]] = {}
    for kind, name in objects:
        wanted.setdefault(kind, set()).add(name)
    found: list[dict] = []
    for kind, names in wanted.items():
        selector = f"involvedObject.kind={kind},type=Warning"
        if len(names) == 1:
            selector += f",involvedObject.name={next(iter(names))}"
        found += [e for e in _warnings(cluster, namespace, selector)
                  if (e.get("involvedObject") or {}).get("name") in names and _stamp(e)[:19] >= since[:19]]
    return _newest(found)


def _warnings(cluster: Cluster, namespace: str, selector: str) -> list[dict]:
    try:
        listed = cluster.json("GET", EVENT.collection(namespace), query=[("fieldSelector", selector)])
    except Exception:  # noqa: BLE001
        return []
    return [e for e in listed.get("items") or [] if isinstance(e, dict) and e.get("type") == "Warning"]


def _stamp(event: dict) -> str:
    return str(event.get("lastTimestamp") or event.get("eventTime") or "")


def _newest(warnings: list[dict]) -> str:
    latest = max(warnings, key=_stamp, default=None)
    return " ".join(f"{latest.get('reason', '')}: {latest.get('message', '')}".split()) if latest is not None else ""
