"""Objects, resourceVersions, the event history watches replay, and the garbage collector.

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
import random
import string
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable

from . import apply, errors, kinds
from .clock import Clock
from .resources import Registry, ResourceType

Key = tuple[str, str, str, str]  # group, plural, namespace ("" if cluster-scoped), name
HISTORY_LIMIT = 20000


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
        self._gc_wakeup = threading.Event()
        self._stopping = False
        self._gc = threading.Thread(target=self._gc_loop, name="emulator-gc", daemon=True)
        self._gc.start()
        for ns in ("default", "kube-system", "kube-public"):
            self.create(registry.by_kind("v1", "Namespace"), "", {"metadata": {"name": ns}}, "emulator")

    def close(self) -> None:
        self._stopping = True
        self._gc_wakeup.set()
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

    def events_after(self, rv: int) -> list[Event]:
        with self.lock:
            if rv < self.oldest:
                raise errors.gone(rv, self.oldest)
            start = bisect.bisect_right(self._history_rvs, rv)
            return self.history[start:]

    def expire(self) -> None:
        with self.lock:
            self.history.clear()
            self._history_rvs.clear()
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
        self._gc_wakeup.set()

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
            new["apiVersion"], new["kind"] = rt.api_version, rt.kind
            if rt.kind == "Service" and old.get("spec", {}).get("clusterIP"):  # immutable once allocated
                new.setdefault("spec", {}).setdefault("clusterIP", old["spec"]["clusterIP"])
            kinds.default(rt, new, "")
            kinds.validate(rt, new)
            if rt.custom and _spec_part(rt, new) != _spec_part(rt, old):
                meta["generation"] = old_meta.get("generation", 1) + 1
            meta["resourceVersion"] = old_meta.get("resourceVersion")
            if _strip_volatile(new) == _strip_volatile(old):
                return copy.deepcopy(old)
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
               dry_run: bool = False, preconditions: dict | None = None) -> tuple[dict, bool]:
        """Returns (object, gone now?)."""
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
            if dry_run or live["metadata"].get("deletionTimestamp"):
                return copy.deepcopy(live), False
            new = copy.deepcopy(live)
            meta = new["metadata"]
            if propagation == "Orphan":
                for dependent_key in self._dependents(meta["uid"]):
                    self._drop_owner(dependent_key, meta["uid"])
            finalizers = list(meta.get("finalizers") or [])
            if propagation == "Foreground" and "foregroundDeletion" not in finalizers:
                finalizers.append("foregroundDeletion")
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

    def remove_type(self, rt: ResourceType) -> None:
        with self.lock:
            for key in [k for k in self.objects if k[:2] == (rt.group, rt.plural)]:
                obj = self.objects.pop(key)
                self._bump(obj)
                self._record("DELETED", rt, key[2], obj, None)

    # -- garbage collection --------------------------------------------------------------------------------------

    def _dependents(self, uid: str) -> list[Key]:
        return [k for k, o in self.objects.items()
                if any(ref.get("uid") == uid for ref in o["metadata"].get("ownerReferences") or [])]

    def _drop_owner(self, key: Key, uid: str) -> None:
        rt = self.registry.by_path(key[0], self._version_of(key), key[1])
        old = self.objects[key]
        new = copy.deepcopy(old)
        refs = [r for r in new["metadata"].get("ownerReferences") or [] if r.get("uid") != uid]
        if refs:
            new["metadata"]["ownerReferences"] = refs
        else:
            new["metadata"].pop("ownerReferences", None)
        if rt is not None:
            self.commit(rt, old, new)

    def _version_of(self, key: Key) -> str:
        obj = self.objects[key]
        return obj["apiVersion"].split("/")[-1]

    def _rt_of(self, key: Key) -> ResourceType | None:
        return self.registry.by_path(key[0], self._version_of(key), key[1])

    def _gc_loop(self) -> None:
        while not self._stopping:
            self._gc_wakeup.wait()
            self._gc_wakeup.clear()
            if self._stopping:
                return
            try:
                self._gc_sweep()
            except errors.ApiError:  # raced with a client write; look again shortly
                time.sleep(0.01)
                self._gc_wakeup.set()

    def _gc_sweep(self) -> None:
        with self.lock:
            uids = {o["metadata"]["uid"] for o in self.objects.values()}
            for key, obj in list(self.objects.items()):
                if key not in self.objects:
                    continue
                meta = obj["metadata"]
                rt = self._rt_of(key)
                if rt is None:
                    continue
                refs = meta.get("ownerReferences") or []
                if refs and not any(r.get("uid") in uids for r in refs) and not meta.get("deletionTimestamp"):
                    self.delete(rt, key[2], key[3], propagation="Background")
                    continue
                if meta.get("deletionTimestamp") and "foregroundDeletion" in (meta.get("finalizers") or []):
                    dependents = self._dependents(meta["uid"])
                    if not dependents:
                        new = copy.deepcopy(obj)
                        new["metadata"]["finalizers"] = [f for f in meta["finalizers"] if f != "foregroundDeletion"]
                        self.commit(rt, obj, new)
                        continue
                    for dependent in dependents:
                        dependent_rt = self._rt_of(dependent)
                        if dependent_rt is None or self.objects[dependent]["metadata"].get("deletionTimestamp"):
                            continue
                        has_own = bool(self._dependents(self.objects[dependent]["metadata"]["uid"]))
                        self.delete(dependent_rt, dependent[2], dependent[3],
                                    propagation="Foreground" if has_own else "Background")
