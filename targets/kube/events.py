"""Why a pod waits, when only its events say it: FailedScheduling, FailedMount, an image pull's real error.

Read by the follower (`pods.PodDiagnoser`) for pods pending `EVENTS_AFTER` seconds or more, at most every
`EVENTS_EVERY` seconds per pod, and at once by `status`: a pending pod costs a request now and then, a running job
none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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
    try:
        listed = cluster.json("GET", EVENT.collection(namespace), query=[("fieldSelector", selector)])
    except Exception:  # noqa: BLE001
        return ""
    warnings = [e for e in listed.get("items") or [] if e.get("type") == "Warning"]
    latest = max(warnings, key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""), default=None)
    return " ".join(f"{latest.get('reason', '')}: {latest.get('message', '')}".split()) if latest is not None else ""
