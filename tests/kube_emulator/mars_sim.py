"""KubeDL's MarsJob controller, scripted (reference marsjob.md 3, 4).

Pods and headless Services `<job>-<scheduler|webservice|worker>-<i>` labelled group-name/job-name/replica-type/
replica-index and owned by the MarsJob; status written through the status subresource by `kubedl`: conditions
Created → Running (a Worker active) → Succeeded (the Scheduler exits 0) or Failed (reason MarsJobFailed: the
Scheduler fails); a Worker that exits with a retryable code (137) is recreated under a Restarting condition
(reason MarsJobRestarting). When the job finishes cleanPodPolicy (default None) decides which pods go.
Stopping a MarsJob is deleting it; the garbage collector then removes its pods and services.

Params (simulated seconds): preparing_seconds (5), run_seconds (30; "running": `seconds`), exit_code (1),
worker_restarts (0), log / logs ({pod name: text}).
"""

from __future__ import annotations

import copy

from .controller import Run
from .kubelet import Kubelet

ORDER = ("Scheduler", "WebService", "Worker")
GROUP_LABEL = "training.kubedl.io"


class MarsRun(Kubelet, Run):
    manager = "kubedl"
    subresource = "status"
    pod_ip, host_ip = "10.244.1.10", "10.0.0.11"

    def run(self) -> None:
        p = self.params
        self.pods_rt = self.emu.registry.by_kind("v1", "Pod")
        self.svc_rt = self.emu.registry.by_kind("v1", "Service")
        job = self.current()
        specs = job["spec"].get("marsReplicaSpecs") or {}
        self.replicas = [(rtype, int((specs.get(rtype) or {}).get("replicas", 1))) for rtype in ORDER
                         if rtype in specs]
        now = self.emu.clock.stamp()
        self.status = {"conditions": [], "replicaStatuses": {rtype: {} for rtype, _ in self.replicas},
                       "startTime": now, "lastReconcileTime": now}
        self._condition("Created", "JobCreated", f"MarsJob {self.name} is created.")
        for rtype, count in self.replicas:
            for index in range(count):
                self._create(job, rtype, index)
        if p["scenario"] == "stuck-pending":
            self._pull_backoff(self._pods())
            self.wait(None)
            return
        self.wait(float(p.get("preparing_seconds", 5)))
        for pod in self._pods():
            self._kubelet(pod["metadata"]["name"], self._running())
        self._count()
        self._condition("Running", "JobRunning", f"MarsJob {self.name} is running.")
        run_seconds = float(p.get("seconds", p.get("run_seconds", 30)))
        for _ in range(int(p.get("worker_restarts", 0))):
            self.wait(run_seconds / 2)
            self._worker_failover(job)
        self.wait(run_seconds)
        scheduler = f"{self.name}-scheduler-0"
        code = int(p.get("exit_code", 1)) if p["scenario"] == "failed" else 0
        self._kubelet(scheduler, self._terminated(code, self._log(scheduler, True)))
        self._count()
        if code:
            self._finish("Failed", "MarsJobFailed",
                         f"MarsJob {self.name} is failed because 1 Scheduler replica(s) failed.")
        else:
            for counts in self.status["replicaStatuses"].values():
                counts["succeeded"] = counts.get("succeeded", 0) + counts.pop("active", 0)
            self._finish("Succeeded", "JobSucceeded", f"MarsJob {self.name} has successfully completed.")
        self._clean_pods(job)

    # -- status ------------------------------------------------------------------------------------------------

    def _condition(self, kind: str, reason: str, message: str) -> None:
        now = self.emu.clock.stamp()
        conditions = self.status["conditions"]
        if kind in ("Running", "Restarting"):
            conditions[:] = [c for c in conditions if c["type"] not in ("Running", "Restarting")]
        conditions.append({"type": kind, "status": "True", "reason": reason, "message": message,
                           "lastUpdateTime": now, "lastTransitionTime": now})
        self.status["lastReconcileTime"] = now
        self.write_status(copy.deepcopy(self.status))

    def _finish(self, kind: str, reason: str, message: str) -> None:
        now = self.emu.clock.stamp()
        for condition in self.status["conditions"]:
            if condition["type"] == "Running":
                condition.update(status="False", lastTransitionTime=now, lastUpdateTime=now)
        self.status["completionTime"] = now
        self._condition(kind, reason, message)

    def _count(self) -> None:
        counts = {rtype: {} for rtype, _ in self.replicas}
        for pod in self._pods():
            rtype = next(r for r, _ in self.replicas if r.lower() == pod["metadata"]["labels"]["replica-type"])
            bucket = {"Running": "active", "Succeeded": "succeeded", "Failed": "failed"}.get(pod["status"]["phase"])
            if bucket:
                counts[rtype][bucket] = counts[rtype].get(bucket, 0) + 1
        self.status["replicaStatuses"] = counts

    # -- pods --------------------------------------------------------------------------------------------------

    def _labels(self, rtype: str, index: int) -> dict:
        return {"group-name": GROUP_LABEL, "job-name": self.name, "replica-type": rtype.lower(),
                "replica-index": str(index)}

    def _owner(self) -> list[dict]:
        return [{"apiVersion": "training.kubedl.io/v1alpha1", "kind": "MarsJob", "name": self.name, "uid": self.uid,
                 "controller": True, "blockOwnerDeletion": True}]

    def _pods(self) -> list[dict]:
        return self.emu.store.list(self.pods_rt, self.namespace,
                                   lambda o: (o["metadata"].get("labels") or {}).get("job-name") == self.name
                                   and (o["metadata"].get("labels") or {}).get("group-name") == GROUP_LABEL)[0]

    def _create(self, job: dict, rtype: str, index: int) -> None:
        name = f"{self.name}-{rtype.lower()}-{index}"
        template = copy.deepcopy((job["spec"]["marsReplicaSpecs"][rtype] or {}).get("template") or {})
        meta = template.setdefault("metadata", {})
        meta.update(name=name, namespace=self.namespace, ownerReferences=self._owner())
        meta.setdefault("labels", {}).update(self._labels(rtype, index))
        spec = template.setdefault("spec", {})
        policy = (job["spec"]["marsReplicaSpecs"][rtype] or {}).get("restartPolicy") or \
            {"Scheduler": "Never", "WebService": "Always", "Worker": "ExitCode"}[rtype]
        spec["restartPolicy"] = "Never" if policy == "ExitCode" else policy
        containers = spec.get("containers") or []
        main = next((c for c in containers if c.get("name") == "mars"), containers[0] if containers else None)
        if main is not None and not any(p.get("name") == "mars-port" for p in main.get("ports") or []):
            main.setdefault("ports", []).append({"name": "mars-port", "containerPort": 11111})
        pod = {"apiVersion": "v1", "kind": "Pod", **template}
        self.current()
        self.emu.store.create(self.pods_rt, self.namespace, pod, "kubedl")
        service = {"apiVersion": "v1", "kind": "Service",
                   "metadata": {"name": name, "namespace": self.namespace, "labels": self._labels(rtype, index),
                                "ownerReferences": self._owner()},
                   "spec": {"clusterIP": "None", "selector": self._labels(rtype, index),
                            "ports": [{"name": "mars-port", "port": 11111, "targetPort": 11111}]}}
        if self.emu.store.find(self.svc_rt, self.namespace, name) is None:
            self.emu.store.create(self.svc_rt, self.namespace, service, "kubedl")
        self.set_log(name, "")

    def _log(self, pod: str, finished: bool) -> str:
        logs = self.params.get("logs") or {}
        if pod in logs:
            return logs[pod]
        if pod.endswith("-scheduler-0") and "log" in self.params:
            return self.params["log"]
        text = f"[{pod}] mars service started\n"
        return text + (f"[{pod}] exiting\n" if finished else "")

    def _worker_failover(self, job: dict) -> None:
        worker = f"{self.name}-worker-0"
        if self.emu.store.find(self.pods_rt, self.namespace, worker) is None:
            return
        self._kubelet(worker, self._terminated(137, self._log(worker, True)))
        self._count()
        self._condition("Restarting", "MarsJobRestarting",
                        f"MarsJob {self.name} is restarting because 1 Worker replica(s) failed.")
        self.emu.store.delete(self.pods_rt, self.namespace, worker)
        self._create(job, "Worker", 0)
        self.wait(float(self.params.get("preparing_seconds", 5)))
        self._kubelet(worker, self._running())
        self._count()
        self._condition("Running", "JobRunning", f"MarsJob {self.name} is running.")

    def _clean_pods(self, job: dict) -> None:
        policy = job["spec"].get("cleanPodPolicy") or "None"
        for pod in self._pods():
            name = pod["metadata"]["name"]
            if policy == "All" or (policy == "Running" and pod["status"]["phase"] == "Running"):
                self.emu.store.delete(self.pods_rt, self.namespace, name)
                if self.emu.store.find(self.svc_rt, self.namespace, name) is not None:
                    self.emu.store.delete(self.svc_rt, self.namespace, name)
