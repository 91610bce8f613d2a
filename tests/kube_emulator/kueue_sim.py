"""Kueue, scripted, for JobSets that carry the `kueue.x-k8s.io/queue-name` label (`Emulator.install_kueue()`).

What it does, after kubernetes-sigs/kueue:
- the JobSet webhook's defaulting (pkg/controller/jobs/jobset/jobset_webhook.go Default ->
  jobframework.ApplyDefaultForSuspend): a queued JobSet is created suspended;
- the job reconciler (pkg/controller/jobframework/reconciler.go ReconcileGenericJob) creates a Workload named
  `jobset-<name>-<5 hex>` (workload_names.go GetWorkloadNameForOwnerWithGVK), owned by the JobSet (controller,
  blockOwnerDeletion), `spec.active: true`, `spec.queueName`; the scheduler reserves quota and admits it
  (conditions QuotaReserved and Admitted True, `status.admission`) after `admit_seconds` (1 simulated second);
- step 7 of the reconciler: a suspended job whose Workload is admitted is started (`spec.suspend: false`), whoever
  suspended it; step 8: a running job whose Workload is not admitted is suspended;
- `spec.active: false` (the Workload controller): the Workload is evicted (condition Evicted, reason
  Deactivated), step 6 stops the job (`spec.suspend: true`) and clears the admission (QuotaReserved and Admitted
  False). It stays suspended while the Workload is inactive.
"""

from __future__ import annotations

import copy
import hashlib
import threading

from .resources import ResourceType

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
WORKLOAD = ResourceType(group="kueue.x-k8s.io", version="v1beta1", kind="Workload", plural="workloads",
                        custom=True, status_subresource=True, short_names=("wl",), categories=("kueue",))
MANAGER = "kueue-controller-manager"


def workload_name(jobset: str, uid: str) -> str:
    digest = hashlib.sha256(f"{jobset}/{uid}/jobset.x-k8s.io/v1alpha2, Kind=JobSet".encode()).hexdigest()
    return f"jobset-{jobset}-{digest[:5]}"


class Kueue:
    def __init__(self, emu, admit_seconds: float = 1.0) -> None:
        self.emu = emu
        self.admit_seconds = admit_seconds
        self.lock = threading.Lock()
        self.wake = threading.Event()
        self.stopped = False
        emu.registry.install(WORKLOAD)
        emu.store.mutators.append(self.default)
        emu.store.listeners.append(self.on_event)
        threading.Thread(target=self.loop, name="emulator-kueue", daemon=True).start()

    # -- webhook ----------------------------------------------------------------------------------------------------

    @staticmethod
    def default(rt, obj: dict) -> None:
        if rt.kind == "JobSet" and ((obj.get("metadata") or {}).get("labels") or {}).get(QUEUE_LABEL):
            obj.setdefault("spec", {})["suspend"] = True

    # -- reconciler ---------------------------------------------------------------------------------------------------

    def on_event(self, event) -> None:
        if event.obj.get("kind") in ("JobSet", "Workload"):
            self.wake.set()

    def stop(self) -> None:
        self.stopped = True
        self.wake.set()

    def loop(self) -> None:
        while not self.stopped:
            self.wake.wait(0.05)
            self.wake.clear()
            if self.stopped:
                return
            try:
                self.reconcile()
            except Exception:  # noqa: BLE001 - raced with a client write; look again at the next wake-up
                self.wake.set()

    def reconcile(self) -> None:
        store = self.emu.store
        jobsets_rt = self.emu.registry.by_kind("jobset.x-k8s.io/v1alpha2", "JobSet")
        if jobsets_rt is None:
            return
        for js in store.list(jobsets_rt, None)[0]:
            meta = js["metadata"]
            if not (meta.get("labels") or {}).get(QUEUE_LABEL) or meta.get("deletionTimestamp"):
                continue
            name = workload_name(meta["name"], meta["uid"])
            wl = store.find(WORKLOAD, meta["namespace"], name)
            if wl is None:
                self._create_workload(js, name)
                continue
            spec, conditions = wl.get("spec") or {}, _conditions(wl)
            suspended = bool(js["spec"].get("suspend"))
            if spec.get("active") is False:
                if conditions.get("Evicted") != "True":
                    self._status(wl, evicted=True)
                if not suspended:
                    self._suspend(jobsets_rt, js, True)
                continue
            admitted = conditions.get("Admitted") == "True"
            if not admitted and "QuotaReserved" not in conditions:
                self._status(wl, admitted=True, after=self.admit_seconds)
            elif not admitted and conditions.get("Evicted") == "True":
                self._status(wl, admitted=True, after=self.admit_seconds)  # active again: queued, admitted anew
            elif suspended and admitted:
                self._suspend(jobsets_rt, js, False)  # reconciler.go step 7: "Job admitted, unsuspending"

    def _create_workload(self, js: dict, name: str) -> None:
        meta = js["metadata"]
        pod_sets = [{"name": r["name"], "count": int(r.get("replicas", 1)) * int(
            (r.get("template") or {}).get("spec", {}).get("parallelism") or 1),
            "template": copy.deepcopy(((r.get("template") or {}).get("spec") or {}).get("template") or {})}
            for r in js["spec"].get("replicatedJobs") or []]
        self.emu.store.create(WORKLOAD, meta["namespace"], {
            "apiVersion": WORKLOAD.api_version, "kind": "Workload",
            "metadata": {"name": name, "namespace": meta["namespace"],
                         "labels": {"kueue.x-k8s.io/job-uid": meta["uid"]},
                         "ownerReferences": [{"apiVersion": js["apiVersion"], "kind": "JobSet", "name": meta["name"],
                                              "uid": meta["uid"], "controller": True, "blockOwnerDeletion": True}]},
            "spec": {"active": True, "queueName": meta["labels"][QUEUE_LABEL], "podSets": pod_sets}}, MANAGER)

    def _status(self, wl: dict, *, admitted: bool = False, evicted: bool = False, after: float = 0.0) -> None:
        if after > 0:
            self.emu.clock.sleep(after)
        now = self.emu.clock.stamp()

        def change(obj: dict) -> None:
            status = obj.setdefault("status", {})
            conditions = [c for c in status.get("conditions") or []
                          if c["type"] not in ("QuotaReserved", "Admitted", "Evicted")]
            if admitted:
                status["admission"] = {"clusterQueue": "cluster-queue", "podSetAssignments": [
                    {"name": p["name"], "count": p["count"], "flavors": {"cpu": "default-flavor"}}
                    for p in (obj.get("spec") or {}).get("podSets") or []]}
                conditions += [_condition("QuotaReserved", "True", "QuotaReserved",
                                          "Quota reserved in ClusterQueue cluster-queue", now),
                               _condition("Admitted", "True", "Admitted", "The workload is admitted", now)]
            if evicted:
                status.pop("admission", None)
                conditions += [_condition("Evicted", "True", "Deactivated", "The workload is deactivated", now),
                               _condition("QuotaReserved", "False", "Pending", "The workload is deactivated", now),
                               _condition("Admitted", "False", "NoReservation", "The workload has no reservation",
                                          now)]
            status["conditions"] = conditions

        meta = wl["metadata"]
        self.emu.store.mutate(WORKLOAD, meta["namespace"], meta["name"], change, MANAGER, "status")

    def _suspend(self, rt, js: dict, value: bool) -> None:
        def change(obj: dict) -> None:
            obj["spec"]["suspend"] = value

        self.emu.store.mutate(rt, js["metadata"]["namespace"], js["metadata"]["name"], change, MANAGER)


def _conditions(obj: dict) -> dict[str, str]:
    return {c.get("type"): c.get("status") for c in (obj.get("status") or {}).get("conditions") or []}


def _condition(kind: str, status: str, reason: str, message: str, now: str) -> dict:
    return {"type": kind, "status": status, "reason": reason, "message": message, "lastTransitionTime": now}
