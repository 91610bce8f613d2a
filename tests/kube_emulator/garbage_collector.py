"""The emulator's garbage collector: what Kubernetes' garbagecollector.go does with ownerReferences.

An object whose owners are all gone is deleted (Background); an owner deleted with the `orphan` finalizer has its
dependents' references to it removed, then the finalizer; an owner being deleted in the foreground (its
`foregroundDeletion` finalizer) has every dependent deleted, and is released once no dependent whose reference
says `blockOwnerDeletion: true` is left. The others may outlive it by `Store.gc_lag_seconds` (the collector's
work queue and round trip). It runs on its own thread, woken by every write to the store.
"""

from __future__ import annotations

import copy
import threading
import time
from typing import TYPE_CHECKING, Callable

from . import errors
from .resources import ResourceType

if TYPE_CHECKING:
    from .store import Key, Store


class GarbageCollector:
    """Deletes what ownerReferences say must go; `wakeup` is set by each write of `store`."""

    def __init__(self, store: "Store") -> None:
        self.store = store
        self.wakeup = threading.Event()
        self.pending: set[str] = set()  # uids whose lagged DELETE is on its way
        self._thread = threading.Thread(target=self._loop, name="emulator-gc", daemon=True)
        self._thread.start()

    def dependents(self, uid: str) -> list[Key]:
        return [k for k, o in self.store.objects.items()
                if any(ref.get("uid") == uid for ref in o["metadata"].get("ownerReferences") or [])]

    def drop_owner(self, key: Key, uid: str) -> None:
        rt = self.store.registry.by_path(key[0], self._version_of(key), key[1])
        old = self.store.objects[key]
        new = copy.deepcopy(old)
        refs = [r for r in new["metadata"].get("ownerReferences") or [] if r.get("uid") != uid]
        if refs:
            new["metadata"]["ownerReferences"] = refs
        else:
            new["metadata"].pop("ownerReferences", None)
        if rt is not None:
            self.store.commit(rt, old, new)

    def _version_of(self, key: Key) -> str:
        obj = self.store.objects[key]
        return obj["apiVersion"].split("/")[-1]

    def _rt_of(self, key: Key) -> ResourceType | None:
        return self.store.registry.by_path(key[0], self._version_of(key), key[1])

    def _loop(self) -> None:
        while not self.store._stopping:
            self.wakeup.wait()
            self.wakeup.clear()
            if self.store._stopping:
                return
            try:
                self._sweep()
            except errors.ApiError:  # raced with a client write; look again shortly
                time.sleep(0.01)
                self.wakeup.set()

    def _sweep(self) -> None:
        with self.store.lock:
            uids = {o["metadata"]["uid"] for o in self.store.objects.values()}
            for key, obj in list(self.store.objects.items()):
                if key not in self.store.objects:
                    continue
                meta = obj["metadata"]
                rt = self._rt_of(key)
                if rt is None:
                    continue
                refs = meta.get("ownerReferences") or []
                if refs and not any(r.get("uid") in uids for r in refs) and not meta.get("deletionTimestamp"):
                    if self.store.gc_lag_seconds <= 0:
                        self.store.delete(rt, key[2], key[3], propagation="Background")
                    elif meta["uid"] not in self.pending:
                        self.pending.add(meta["uid"])
                        self.store._later(self.store.gc_lag_seconds, self._lagged_delete(rt, key, meta["uid"], "Background"))
                    continue
                if meta.get("deletionTimestamp") and "orphan" in (meta.get("finalizers") or []):
                    # garbagecollector.go orphanDependents: the references to it go, then its `orphan` finalizer
                    for dependent in self.dependents(meta["uid"]):
                        self.drop_owner(dependent, meta["uid"])
                    new = copy.deepcopy(obj)
                    new["metadata"]["finalizers"] = [f for f in meta["finalizers"] if f != "orphan"]
                    self.store.commit(rt, obj, new)
                    continue
                if meta.get("deletionTimestamp") and "foregroundDeletion" in (meta.get("finalizers") or []):
                    # garbagecollector.go: every dependent is queued for deletion; only those whose reference has
                    # blockOwnerDeletion: true hold the owner back (node.blockingDependents).
                    dependents = self.dependents(meta["uid"])
                    blocking = [d for d in dependents if any(
                        r.get("uid") == meta["uid"] and r.get("blockOwnerDeletion") is True
                        for r in self.store.objects[d]["metadata"].get("ownerReferences") or [])]
                    for dependent in dependents:
                        dependent_rt = self._rt_of(dependent)
                        dependent_meta = self.store.objects[dependent]["metadata"]
                        if dependent_rt is None or dependent_meta.get("deletionTimestamp"):
                            continue
                        has_own = bool(self.dependents(dependent_meta["uid"]))
                        policy = "Foreground" if has_own else "Background"
                        if dependent in blocking or self.store.gc_lag_seconds <= 0:
                            self.store.delete(dependent_rt, dependent[2], dependent[3], propagation=policy)
                        elif dependent_meta["uid"] not in self.pending:
                            self.pending.add(dependent_meta["uid"])
                            self.store._later(self.store.gc_lag_seconds, self._lagged_delete(
                                dependent_rt, dependent, dependent_meta["uid"], policy))
                    if not blocking:
                        new = copy.deepcopy(obj)
                        new["metadata"]["finalizers"] = [f for f in meta["finalizers"] if f != "foregroundDeletion"]
                        self.store.commit(rt, obj, new)
                        continue

    def _lagged_delete(self, rt: ResourceType, key: Key, uid: str, policy: str) -> Callable[[], None]:
        """The collector's DELETE, sent with a uid precondition only (as deleteObject does): it removes the object it
        decided about, even if its owner references changed meanwhile."""
        def run() -> None:
            self.pending.discard(uid)
            if self.store._stopping:
                return
            try:
                self.store.delete(rt, key[2], key[3], propagation=policy, preconditions={"uid": uid})
            except errors.ApiError:
                pass  # gone already, or another object of that name now
        return run
