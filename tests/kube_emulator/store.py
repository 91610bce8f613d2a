"""Objects, resourceVersions, the event history watches replay, and deletion (the garbage collector that follows
ownerReferences is garbage_collector.py).

One global resourceVersion counter (as etcd's revision), stored as a string on every object. Every write appends an
event to a bounded history; a watch from resourceVersion N replays the events after N, or fails with 410 Gone when N
is older than the oldest event kept (`expire()` forgets all of it, as an etcd compaction does). Writes that change
nothing do not bump the resourceVersion. Deletion follows ownerReferences: Background deletes dependents after
the owner, Foreground keeps the owner (deletionTimestamp + `foregroundDeletion` finalizer) until its dependents are
gone, Orphan strips the references.
"""

from __future__ import annotations

import bisect
import copy
import json
import random
import string
import threading
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Callable

from . import apply, errors, kinds
from .clock import Clock
from .garbage_collector import GarbageCollector
from .resources import Registry, ResourceType

Key = tuple[str, str, str, str]  # group, plural, namespace ("" if cluster-scoped), name
HISTORY_LIMIT = 20000
ETCD_MAX_BYTES = 1536 * 1024


@dataclass
class Event:
    rv: int
    type: str
    group: str
    plural: str
    namespace: str
    obj: dict
    previous: dict | None


def _strip_volatile(obj: dict | None) -> Any:
    if obj is None:
        return None
    out = copy.deepcopy(obj)
    meta = out.get("metadata", {})
    meta.pop("resourceVersion", None)
    for entry in meta.get("managedFields") or []:
        entry.pop("time", None)
    return out


def _spec_part(rt: ResourceType, obj: dict) -> dict:
    """What `metadata.generation` counts changes of: all but metadata (and status with a status subresource)."""
    skip = {"metadata", "status"} if rt.status_subresource else {"metadata"}
    return {k: v for k, v in obj.items() if k not in skip}


class Store:
    def __init__(self, registry: Registry, clock: Clock) -> None:
        self.registry = registry
        self.clock = clock
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.objects: dict[Key, dict] = {}
        self.rv = 1000
        self.history: list[Event] = []
        self._history_rvs: list[int] = []
        self.oldest = 0  # a watch from a resourceVersion below this gets 410 Gone
        self.listeners: list[Callable[[Event], None]] = []
        self._next_ip = 10
        self._stopping = False
        #: Simulated seconds a pod's containers take to exit after SIGTERM (None: they ignore it and are killed when
        #: the grace period ends).
        self.termination_seconds: float | None = None
        #: Simulated seconds between the garbage collector's decision to delete a dependent that does not block its
        #: owner's foreground deletion and the DELETE itself (its work queue and the API round trip): such a
        #: dependent may outlive its owner (garbagecollector.go attemptToDeleteItem, processDeletingDependentsItem).
        self.gc_lag_seconds: float = 0.0
        self.collector = GarbageCollector(self)
        for ns in ("default", "kube-system", "kube-public"):
            self.create(registry.by_kind("v1", "Namespace"), "", {"metadata": {"name": ns}}, "emulator")

    def close(self) -> None:
        self._stopping = True
        self.collector.wakeup.set()
        with self.changed:
            self.changed.notify_all()

    # -- reading -------------------------------------------------------------------------------------------------

    @staticmethod
    def key(rt: ResourceType, namespace: str | None, name: str) -> Key:
        return rt.group, rt.plural, (namespace or "") if rt.namespaced else "", name

    def get(self, rt: ResourceType, namespace: str | None, name: str) -> dict:
        with self.lock:
            obj = self.objects.get(self.key(rt, namespace, name))
            if obj is None:
                raise errors.not_found(rt, name)
            return copy.deepcopy(obj)

    def find(self, rt: ResourceType, namespace: str | None, name: str) -> dict | None:
        with self.lock:
            obj = self.objects.get(self.key(rt, namespace, name))
            return copy.deepcopy(obj) if obj is not None else None

    def list(self, rt: ResourceType, namespace: str | None, predicate=lambda o: True) -> tuple[list[dict], int]:
        with self.lock:
            items = [copy.deepcopy(obj) for (group, plural, ns, _), obj in sorted(self.objects.items())
                     if group == rt.group and plural == rt.plural and (not namespace or ns == namespace)
                     and predicate(obj)]
            return items, self.rv

    def snapshot(self, rt: ResourceType, namespace: str | None, rv: int, predicate=lambda o: True) -> list[dict]:
        """The objects as they were at resourceVersion `rv` (what a continue token pages through): the current
        ones with every later event of their type undone; 410 Gone when the history no longer reaches back."""
        with self.lock:
            if rv < self.oldest:
                raise errors.gone(rv, self.oldest)
            state = {key: obj for key, obj in self.objects.items() if key[:2] == (rt.group, rt.plural)}
            for event in reversed(self.events_after(rv)):
                if (event.group, event.plural) != (rt.group, rt.plural):
                    continue
                key = (rt.group, rt.plural, event.namespace, event.obj["metadata"]["name"])
                before = event.previous if event.type != "DELETED" else (event.previous or event.obj)
                if event.type == "ADDED" or before is None:
                    state.pop(key, None)
                else:
                    state[key] = before
            return [copy.deepcopy(obj) for key, obj in sorted(state.items())
                    if (not namespace or key[2] == namespace) and predicate(obj)]

    def events_after(self, rv: int) -> list[Event]:
        with self.lock:
            if rv < self.oldest:
                raise errors.gone(rv, self.oldest)
            start = bisect.bisect_right(self._history_rvs, rv)
            return self.history[start:]

    def expire(self) -> None:
        """Forget every event so far, as a kube-apiserver restart (its watch cache starts empty) with an etcd
        compaction does: the restarted server has moved the revision on, so even the newest resourceVersion a
        client holds is too old."""
        with self.lock:
            self.history.clear()
            self._history_rvs.clear()
            self.rv += 1
            self.oldest = self.rv

    # -- writing -------------------------------------------------------------------------------------------------

    def _record(self, kind: str, rt: ResourceType, namespace: str, obj: dict, previous: dict | None) -> None:
        event = Event(self.rv, kind, rt.group, rt.plural, namespace, copy.deepcopy(obj), previous)
        self.history.append(event)
        self._history_rvs.append(self.rv)
        if len(self.history) > HISTORY_LIMIT:
            drop = len(self.history) - HISTORY_LIMIT
            self.oldest = self.history[drop].rv - 1
            del self.history[:drop], self._history_rvs[:drop]
        for listener in list(self.listeners):
            listener(event)
        self.changed.notify_all()
        self.collector.wakeup.set()

    @staticmethod
    def _check_size(obj: dict) -> None:
        """etcd's --max-request-bytes (1.5 MiB by default): a bigger value is refused, the API server passes the
        error on (kubectl prints "Error from server: etcdserver: request is too large")."""
        if len(json.dumps(obj, separators=(",", ":"))) > ETCD_MAX_BYTES:
            raise errors.ApiError(500, "InternalError", "etcdserver: request is too large")

    def _bump(self, obj: dict) -> None:
        self.rv += 1
        obj.setdefault("metadata", {})["resourceVersion"] = str(self.rv)

    def create(self, rt: ResourceType, namespace: str | None, obj: dict, manager: str, *, dry_run: bool = False,
               managed: bool = False) -> dict:
        """`managed`: the object already carries its managedFields (a server-side apply that creates)."""
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        with self.lock:
            if rt.namespaced:
                if meta.get("namespace") and namespace and meta["namespace"] != namespace:
                    raise errors.bad_request("the namespace of the provided object does not match the namespace "
                                             "sent on the request")
                namespace = namespace or meta.get("namespace") or "default"
                meta["namespace"] = namespace
                if ("", "namespaces", "", namespace) not in self.objects:
                    raise errors.namespace_not_found(namespace)
            else:
                meta.pop("namespace", None)
                namespace = ""
            if meta.get("resourceVersion"):
                raise errors.ApiError(500, "InternalError", "resourceVersion should not be set on objects to be "
                                      "created")
            if not meta.get("name"):
                if not meta.get("generateName"):
                    raise errors.invalid(rt, "", [("metadata.name", "FieldValueRequired",
                                                   "Required value: name or generateName is required")])
                suffix = "".join(random.choices(string.ascii_lowercase + string.digits, k=5))
                meta["name"] = meta["generateName"] + suffix
            obj = {"apiVersion": rt.api_version, "kind": rt.kind,
                   **{k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}}
            key = self.key(rt, namespace, meta["name"])
            if key in self.objects:
                raise errors.already_exists(rt, meta["name"])
            if rt.status_subresource:
                obj.pop("status", None)  # a create never sets the status of a kind with a status subresource
            kinds.default(rt, obj, self._cluster_ip())
            kinds.validate(rt, obj)
            for server_owned in ("uid", "creationTimestamp", "deletionTimestamp", "generation"):
                meta.pop(server_owned, None)
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = self.clock.stamp()
            if rt.custom:
                meta["generation"] = 1
            if not managed:
                meta.pop("managedFields", None)
                apply.record_update(None, obj, manager, rt.api_version, self.clock.stamp())
            self._check_size(obj)
            if dry_run:
                return obj
            self._bump(obj)
            self.objects[key] = obj
            self._record("ADDED", rt, namespace, obj, None)
            return copy.deepcopy(obj)

    def _cluster_ip(self) -> str:
        self._next_ip += 1
        return f"10.96.{self._next_ip // 250}.{self._next_ip % 250 + 1}"

    def commit(self, rt: ResourceType, old: dict, new: dict, *, dry_run: bool = False) -> dict:
        """Store `new` in place of `old` (both whole objects); a no-op write keeps the resourceVersion."""
        with self.lock:
            meta, old_meta = new.setdefault("metadata", {}), old["metadata"]
            for server_owned in ("uid", "creationTimestamp", "namespace", "name", "generateName", "generation"):
                if server_owned in old_meta:
                    meta[server_owned] = old_meta[server_owned]
                else:
                    meta.pop(server_owned, None)
            if "deletionTimestamp" in old_meta:
                meta["deletionTimestamp"] = old_meta["deletionTimestamp"]
                added = [f for f in meta.get("finalizers") or [] if f not in (old_meta.get("finalizers") or [])]
                if added:  # apimachinery ValidateObjectMetaUpdate
                    shown = ", ".join(f'"{f}"' for f in added)
                    raise errors.invalid(rt, old_meta["name"], [(
                        "metadata.finalizers", "FieldValueForbidden", "Forbidden: no new finalizers can be added if "
                        f"the object is being deleted, found new finalizers []string{{{shown}}}")])
            new["apiVersion"], new["kind"] = rt.api_version, rt.kind
            if rt.kind == "Service" and old.get("spec", {}).get("clusterIP"):  # immutable once allocated
                new.setdefault("spec", {}).setdefault("clusterIP", old["spec"]["clusterIP"])
            kinds.default(rt, new, "")
            kinds.validate(rt, new)
            if _spec_part(rt, new).get("spec") != _spec_part(rt, old).get("spec"):
                kinds.validate_update(rt, old, new)
            if rt.custom and _spec_part(rt, new) != _spec_part(rt, old):
                meta["generation"] = old_meta.get("generation", 1) + 1
            meta["resourceVersion"] = old_meta.get("resourceVersion")
            if _strip_volatile(new) == _strip_volatile(old):
                return copy.deepcopy(old)
            self._check_size(new)
            if dry_run:
                return new
            key = self.key(rt, old_meta.get("namespace"), old_meta["name"])
            if self.objects.get(key, {}).get("metadata", {}).get("uid") != old_meta["uid"]:
                raise errors.not_found(rt, old_meta["name"])
            self._bump(new)
            if meta.get("deletionTimestamp") and not meta.get("finalizers"):
                del self.objects[key]
                self._record("DELETED", rt, key[2], new, old)
            else:
                self.objects[key] = new
                self._record("MODIFIED", rt, key[2], new, old)
            return copy.deepcopy(new)

    def mutate(self, rt: ResourceType, namespace: str | None, name: str, change: Callable[[dict], None],
               manager: str, subresource: str = "") -> dict | None:
        """Read-modify-write as a controller does (an Update by `manager`); None if the object is gone."""
        with self.lock:
            old = self.find(rt, namespace, name)
            if old is None:
                return None
            new = copy.deepcopy(old)
            change(new)
            apply.record_update(old, new, manager, rt.api_version, self.clock.stamp(), subresource)
            return self.commit(rt, old, new)

    def delete(self, rt: ResourceType, namespace: str | None, name: str, *, propagation: str | None = None,
               dry_run: bool = False, preconditions: dict | None = None,
               grace_seconds: int | None = None, orphan_finalizer: bool = False) -> tuple[dict, bool]:
        """Returns (object, gone now?). A running pod is deleted gracefully (see `_pod_grace`). `orphan_finalizer`:
        an Orphan deletion as the API server makes it (the object stays, with the `orphan` finalizer, until the
        garbage collector has released its dependents); without it the references are dropped at once."""
        with self.lock:
            key = self.key(rt, namespace, name)
            live = self.objects.get(key)
            if live is None:
                raise errors.not_found(rt, name)
            uid = (preconditions or {}).get("uid")
            if uid and uid != live["metadata"]["uid"]:
                raise errors.precondition_uid(rt, name, uid, live["metadata"]["uid"])
            want_rv = (preconditions or {}).get("resourceVersion")
            if want_rv and want_rv != live["metadata"]["resourceVersion"]:
                raise errors.modified(rt, name)
            terminating = bool(live["metadata"].get("deletionTimestamp"))
            forced = rt.kind == "Pod" and grace_seconds == 0 and not live["metadata"].get("finalizers")
            if dry_run or (terminating and not forced):
                return copy.deepcopy(live), False
            new = copy.deepcopy(live)
            meta = new["metadata"]
            grace = self._pod_grace(live, grace_seconds) if rt.kind == "Pod" and not terminating else 0
            if grace > 0:
                # registry/core/pod/strategy.go CheckGracefulDelete + the generic registry's BeforeDelete: the pod
                # stays, with deletionTimestamp = now + grace; the kubelet stops its containers and removes it.
                meta["deletionTimestamp"] = (self.clock.now() + timedelta(seconds=grace)).strftime(
                    "%Y-%m-%dT%H:%M:%SZ")
                meta["deletionGracePeriodSeconds"] = grace
                self._bump(new)
                self.objects[key] = new
                self._record("MODIFIED", rt, key[2], new, live)
                exits_after = min(grace, self.termination_seconds if self.termination_seconds is not None else grace)
                self._later(exits_after, lambda: self._reap(rt, key, meta["uid"]))
                return copy.deepcopy(new), False
            if propagation == "Orphan" and not orphan_finalizer:
                for dependent_key in self.collector.dependents(meta["uid"]):
                    self.collector.drop_owner(dependent_key, meta["uid"])
            finalizers = list(meta.get("finalizers") or [])
            if propagation == "Foreground" and "foregroundDeletion" not in finalizers:
                finalizers.append("foregroundDeletion")
            if propagation == "Orphan" and orphan_finalizer and "orphan" not in finalizers:
                finalizers.append("orphan")
            if finalizers:
                meta["finalizers"] = finalizers
                meta["deletionTimestamp"] = self.clock.stamp()
                meta["deletionGracePeriodSeconds"] = 0
                if rt.custom:
                    meta["generation"] = meta.get("generation", 1) + 1
                self._bump(new)
                self.objects[key] = new
                self._record("MODIFIED", rt, key[2], new, live)
                return copy.deepcopy(new), False
            self._bump(new)
            del self.objects[key]
            self._record("DELETED", rt, key[2], new, live)
            return copy.deepcopy(new), True

    def _pod_grace(self, pod: dict, requested: int | None) -> int:
        """registry/core/pod/strategy.go CheckGracefulDelete: the request's gracePeriodSeconds, else the pod's
        terminationGracePeriodSeconds (30 by default); 0 for a pod never bound to a node or already terminated."""
        if not (pod.get("spec") or {}).get("nodeName"):
            return 0
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return 0
        if requested is not None:
            return max(int(requested), 0)
        return int((pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30))

    def _later(self, sim_seconds: float, action: Callable[[], None]) -> None:
        timer = threading.Timer(max(sim_seconds, 0) / self.clock.speed, action)
        timer.daemon = True
        timer.start()

    def _reap(self, rt: ResourceType, key: Key, uid: str) -> None:
        """The kubelet, once the pod's containers have exited: a delete with grace 0 removes the pod."""
        if self._stopping:
            return
        with self.lock:
            live = self.objects.get(key)
            if live is None or live["metadata"]["uid"] != uid or live["metadata"].get("finalizers"):
                return
            gone = copy.deepcopy(live)
            self._bump(gone)
            del self.objects[key]
            self._record("DELETED", rt, key[2], gone, live)

    def remove_type(self, rt: ResourceType) -> None:
        with self.lock:
            for key in [k for k in self.objects if k[:2] == (rt.group, rt.plural)]:
                obj = self.objects.pop(key)
                self._bump(obj)
                self._record("DELETED", rt, key[2], obj, None)
