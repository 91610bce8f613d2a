"""JobSet's controller (with the Job controller and the kubelet under it), scripted (reference jobset.md 1.2-1.4).

On create: the headless Service `<subdomain>`; per replicatedJob one batch/v1 Job `<js>-<rjob>-0` per replica, owned
by the JobSet; per Job index a pod `<js>-<rjob>-0-<index>-<5 chars>` owned by the Job, with hostname
`<js>-<rjob>-0-<index>`, the JobSet's subdomain, JOB_COMPLETION_INDEX, and the labels and annotations JobSet and
the Job controller put on it (jobset-name, replicatedjob-name, job-index, restart-attempt, job-key...,
batch.kubernetes.io/job-completion-index, job-name). Status is written through the status subresource by
`jobset-controller`: `replicatedJobsStatus` counts of child Jobs (active, ready, succeeded, failed), `restarts`.

Scenarios:
- succeeded: pods Pending, Running (ready), exit 0; every Job Complete; condition Completed (AllJobsCompleted,
  "jobset completed successfully"), terminalState Completed.
- failed: one pod (`task_role`/`task_index` params, default the first replicatedJob, index 0) exits `exit_code`
  (1); its Job fails (BackoffLimitExceeded); then as the failurePolicy says: without one, Failed (FailedJobs); with
  restarts left, a restart (RestartingJobSet True, restarts + 1, all Jobs deleted and recreated with restart-attempt
  + 1); once maxRestarts are used up, Failed (ReachedMaxRestarts). So "failed" fails every attempt.
- restarted: the first `failures` attempts (default 1) fail as above, the next one succeeds.
- stuck-pending: pods stay Pending with ImagePullBackOff.
- forbidden: the Job controller cannot create any pod (a namespace ResourceQuota, as `quota` says): the Jobs stay
  active with no pod, each with the Warning event FailedCreate the Job controller records on it
  (kubernetes pkg/controller/controller_utils.go: "Error creating: <the API server's refusal>").
- running: runs for `seconds` (default forever), then succeeds; without `seconds`, `spec.suspend: true` suspends it
  (pods deleted, condition Suspended, reason SuspendedJobs).
When the JobSet finishes, its still-active Jobs are deleted (their pods with them); finished ones stay.

Params (simulated seconds): version ("v0.12"; "v0.11": no RestartingJobSet condition),
preparing_seconds (5), run_seconds (30), restart_delay_seconds (0: the failed pod stays
before a restart), exit_code (1), task_role, task_index,
failures (1), log / logs ({pod name prefix `<js>-<rjob>-0-<index>`: text}), node ("node-0"), index_retries (0: how
often the failing task's pod fails and its Job retries the index, backoffLimitPerIndex, before the run goes on).
"""

from __future__ import annotations

import copy
import hashlib
import random
import string

from .controller import Run
from .kubelet import Kubelet

API = "jobset.x-k8s.io/v1alpha2"
PREFIX = "jobset.sigs.k8s.io/"
INDEX = "batch.kubernetes.io/job-completion-index"
FAILURE_COUNT = "batch.kubernetes.io/job-index-failure-count"


class JobSetRun(Kubelet, Run):
    manager = "jobset-controller"
    subresource = "status"
    pod_ip, host_ip = "10.244.2.10", "10.0.0.12"
    termination_message = True  # the pod template asks for FallbackToLogsOnError

    def run(self) -> None:
        p = self.params
        self.pods_rt = self.emu.registry.by_kind("v1", "Pod")
        self.jobs_rt = self.emu.registry.by_kind("batch/v1", "Job")
        svc_rt = self.emu.registry.by_kind("v1", "Service")
        js = self.current()
        spec = js["spec"]
        self.rjobs = spec["replicatedJobs"]
        self.subdomain = (spec.get("network") or {}).get("subdomain") or self.name
        failure_policy = spec.get("failurePolicy")
        max_restarts = int((failure_policy or {}).get("maxRestarts", 0))
        self.status = {"restarts": 0, "restartsCountTowardsMax": 0, "conditions": [],
                       "replicatedJobsStatus": [self._counts(r["name"]) for r in self.rjobs]}
        self.write_status(copy.deepcopy(self.status))
        if self.emu.store.find(svc_rt, self.namespace, self.subdomain) is None:
            self.emu.store.create(svc_rt, self.namespace, {
                "apiVersion": "v1", "kind": "Service",
                "metadata": {"name": self.subdomain, "namespace": self.namespace, "ownerReferences": self._owner()},
                "spec": {"clusterIP": "None", "selector": {PREFIX + "jobset-name": self.name},
                         "publishNotReadyAddresses": True}}, self.manager)
        scenario = p["scenario"]
        failures = {"failed": None, "restarted": int(p.get("failures", 1))}.get(scenario, 0)
        attempt = 0
        if js["spec"].get("suspend"):
            # Created suspended (Kueue's webhook does this to every queued JobSet): the Jobs are created suspended,
            # so no pods, until something sets suspend false (Kueue, once the Workload is admitted).
            self._condition("Suspended", "True", "SuspendedJobs", "jobset is suspended")
            self.wait(None, until=lambda obj: not obj["spec"].get("suspend"))
            self._condition("Suspended", "False", "ResumeJobs", "jobset is resumed")
            js = self.current()
        while True:
            self._create_jobs(js, attempt, pods=scenario != "forbidden")
            if scenario == "forbidden":
                for rjob in self.rjobs:
                    self._job_event(f"{self.name}-{rjob['name']}-0", "FailedCreate", (
                        f'Error creating: pods "{self.name}-{rjob["name"]}-0-0-x7k2p" is forbidden: exceeded quota: '
                        + p.get("quota", "compute, requested: limits.cpu=1, used: limits.cpu=4, limited: "
                                         "limits.cpu=4")))
                self.wait(None)
                return
            if scenario == "stuck-pending":
                self._pull_backoff(self._pods())
                self.wait(None)
                return
            self.wait(float(p.get("preparing_seconds", 5)))
            for pod in self._pods():
                self._kubelet(pod["metadata"]["name"], self._running())
            for counts in self.status["replicatedJobsStatus"]:
                counts.update(ready=counts["active"])
            if attempt > 0:
                self._condition("RestartingJobSet", "False", "JobsReady", "all jobs are ready")
            else:
                self.write_status(copy.deepcopy(self.status))
            for _ in range(int(p.get("index_retries", 0)) if attempt == 0 else 0):
                self._retry_index()
            seconds = p.get("seconds") if scenario == "running" else p.get("run_seconds", 30)
            if seconds is None:
                while True:  # suspended and resumed for as long as it lives
                    self.wait(None, until=lambda obj: obj["spec"].get("suspend") is True)
                    self._suspend()
                    self.wait(None, until=lambda obj: not obj["spec"].get("suspend"))
                    self._resume(attempt)
            self.wait(float(seconds))
            if failures is None or attempt < failures:
                failed_job = self._fail_one()
                if attempt < max_restarts:
                    # A real controller reconciles a moment later; a follower gets to see the failed pod meanwhile.
                    self.wait(float(p.get("restart_delay_seconds", 0)))
                    self._restart(attempt, failed_job)
                    attempt += 1
                    continue
                reason, message = ("ReachedMaxRestarts", "jobset failed due to reaching max number of restarts") \
                    if failure_policy else ("FailedJobs", "jobset failed due to one or more job failures")
                if attempt > 0:
                    self._condition("RestartingJobSet", "False", "JobSetFailed", "jobset failed")
                self._finish("Failed", reason, f"{message} (first failed job: {failed_job})")
                return
            self._succeed_all()
            self._finish("Completed", "AllJobsCompleted", "jobset completed successfully")
            return

    # -- status ------------------------------------------------------------------------------------------------

    @staticmethod
    def _counts(name: str) -> dict:
        return {"name": name, "ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0}

    def _condition(self, kind: str, status: str, reason: str, message: str) -> None:
        if kind == "RestartingJobSet" and self.params.get("version", "v0.12") < "v0.12":
            # v0.11 has no RestartingJobSet condition (jobset api/jobset/v1alpha2/jobset_types.go, added in v0.12):
            # a restart shows only as status.restarts + 1 (and a Warning Event)
            self.write_status(copy.deepcopy(self.status))
            return
        now = self.emu.clock.stamp()
        conditions = [c for c in self.status["conditions"] if c["type"] != kind]
        conditions.append({"type": kind, "status": status, "reason": reason, "message": message,
                           "lastTransitionTime": now})
        self.status["conditions"] = conditions
        self.write_status(copy.deepcopy(self.status))

    def _finish(self, kind: str, reason: str, message: str) -> None:
        """Terminal: delete the still-active Jobs (and their pods), then the condition and terminalState."""
        for job in self._jobs():
            if not (job.get("status") or {}).get("conditions"):
                self._delete_job(job["metadata"]["name"])
        for counts in self.status["replicatedJobsStatus"]:
            counts.update(active=0, ready=0)
        self.status["terminalState"] = kind
        self._condition(kind, "True", reason, message)

    # -- Jobs and pods ---------------------------------------------------------------------------------------------

    def _owner(self, kind: str = "JobSet", api: str = API, name: str | None = None, uid: str | None = None) -> list:
        return [{"apiVersion": api, "kind": kind, "name": name or self.name, "uid": uid or self.uid,
                 "controller": True, "blockOwnerDeletion": True}]

    def _labels(self, rjob: dict, attempt: int, index: int) -> dict:
        job_name = f"{self.name}-{rjob['name']}-0"
        return {PREFIX + "jobset-name": self.name, PREFIX + "replicatedjob-name": rjob["name"],
                PREFIX + "replicatedjob-replicas": str(rjob.get("replicas", 1)),
                PREFIX + "job-index": "0", PREFIX + "restart-attempt": str(attempt),
                PREFIX + "job-key": hashlib.sha1(f"{self.namespace}/{job_name}".encode()).hexdigest(),
                INDEX: str(index), "batch.kubernetes.io/job-name": job_name, "job-name": job_name}

    def _job_event(self, job: str, reason: str, message: str) -> None:
        """A Warning event about the Job `job`, as the Job controller records one."""
        now = self.emu.clock.stamp()
        self.emu.store.create(self.emu.registry.by_kind("v1", "Event"), self.namespace, {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{job}.{random.getrandbits(64):016x}", "namespace": self.namespace},
            "involvedObject": {"apiVersion": "batch/v1", "kind": "Job", "name": job, "namespace": self.namespace},
            "reason": reason, "message": message, "type": "Warning", "count": 1, "firstTimestamp": now,
            "lastTimestamp": now, "source": {"component": "job-controller"}}, "kube-controller-manager")

    def _create_jobs(self, js: dict, attempt: int, pods: bool = True) -> None:
        for rjob, counts in zip(self.rjobs, self.status["replicatedJobsStatus"]):
            template = copy.deepcopy(rjob["template"])
            job_name = f"{self.name}-{rjob['name']}-0"
            labels = {k: v for k, v in self._labels(rjob, attempt, 0).items() if k != INDEX}
            self.current()
            job = self.emu.store.create(self.jobs_rt, self.namespace, {
                "apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": job_name, "namespace": self.namespace, "labels": labels,
                             "annotations": dict(labels), "ownerReferences": self._owner()},
                "spec": {**template["spec"], "template": template["spec"]["template"]}}, self.manager)
            completions = int(template["spec"].get("completions") or 1)
            for index in range(completions if pods else 0):
                self._create_pod(rjob, template["spec"]["template"], job, attempt, index)
            counts.update(active=1, ready=0, succeeded=0, failed=0)
        self.write_status(copy.deepcopy(self.status))

    def _create_pod(self, rjob: dict, template: dict, job: dict, attempt: int, index: int,
                    annotations: dict | None = None) -> str:
        pod = copy.deepcopy(template)
        meta = pod.setdefault("metadata", {})
        host = f"{self.name}-{rjob['name']}-0-{index}"
        suffix = "".join(random.choices(string.ascii_lowercase + string.digits, k=5))
        labels = self._labels(rjob, attempt, index)
        meta.update(name=f"{host}-{suffix}", namespace=self.namespace,
                    ownerReferences=self._owner("Job", "batch/v1", job["metadata"]["name"], job["metadata"]["uid"]))
        meta.setdefault("labels", {}).update(labels)
        meta.setdefault("annotations", {}).update(labels, **(annotations or {}))
        spec = pod.setdefault("spec", {})
        spec.update(hostname=host, subdomain=self.subdomain)
        for container in spec.get("containers") or []:
            container.setdefault("env", []).append({"name": "JOB_COMPLETION_INDEX", "valueFrom": {
                "fieldRef": {"fieldPath": f"metadata.annotations['{INDEX}']"}}})
        self.current()
        created = self.emu.store.create(self.pods_rt, self.namespace, {"apiVersion": "v1", "kind": "Pod", **pod},
                                        "kube-controller-manager")
        self.set_log(created["metadata"]["name"], "")
        return created["metadata"]["name"]

    def _pods(self, attempt_only: bool = True) -> list[dict]:
        attempt = str(self.status["restarts"])
        return self.emu.store.list(self.pods_rt, self.namespace, lambda o: (
            (o["metadata"].get("labels") or {}).get(PREFIX + "jobset-name") == self.name
            and (not attempt_only or (o["metadata"].get("labels") or {}).get(PREFIX + "restart-attempt") == attempt)
        ))[0]

    def _jobs(self) -> list[dict]:
        return self.emu.store.list(self.jobs_rt, self.namespace, lambda o: (
            (o["metadata"].get("labels") or {}).get(PREFIX + "jobset-name") == self.name))[0]

    def _delete_job(self, name: str) -> None:
        if self.emu.store.find(self.jobs_rt, self.namespace, name) is not None:
            self.emu.store.delete(self.jobs_rt, self.namespace, name, propagation="Foreground")

    def _job_condition(self, name: str, kind: str, reason: str) -> None:
        now = self.emu.clock.stamp()

        def change(job: dict) -> None:
            job.setdefault("status", {})["conditions"] = [{"type": kind, "status": "True", "reason": reason,
                                                            "lastTransitionTime": now}]
        self.current()
        self.emu.store.mutate(self.jobs_rt, self.namespace, name, change, "kube-controller-manager", "status")

    def _task_pod(self) -> dict:
        role = self.params.get("task_role")
        rjob = next((r for r in self.rjobs if role in (None, r["name"])), self.rjobs[0])
        index = str(self.params.get("task_index", 0))
        pods = [pod for pod in self._pods() if pod["metadata"]["labels"][PREFIX + "replicatedjob-name"] == rjob["name"]
                and pod["metadata"]["labels"][INDEX] == index]
        live = [pod for pod in pods if (pod.get("status") or {}).get("phase") not in ("Failed", "Succeeded")]
        return (live or pods)[-1]

    def _fail_one(self) -> str:
        """One task fails: its pod exits, its Job fails, the counts say so. Returns the failed Job's name."""
        pod = self._task_pod()
        name = pod["metadata"]["name"]
        self._kubelet(name, self._terminated(int(self.params.get("exit_code", 1)), self._log(name, True)))
        job_name = pod["metadata"]["labels"]["batch.kubernetes.io/job-name"]
        self._job_condition(job_name, "Failed", "BackoffLimitExceeded")
        rjob = pod["metadata"]["labels"][PREFIX + "replicatedjob-name"]
        for counts in self.status["replicatedJobsStatus"]:
            if counts["name"] == rjob:
                counts.update(active=0, ready=0, failed=1)
        self.write_status(copy.deepcopy(self.status))
        return job_name

    def _suspend(self) -> None:
        """spec.suspend: the Jobs are suspended, so the Job controller deletes their active pods; condition
        Suspended (SuspendedJobs)."""
        for pod in self._pods():
            self.emu.store.delete(self.pods_rt, self.namespace, pod["metadata"]["name"])
        for counts in self.status["replicatedJobsStatus"]:
            counts.update(active=0, ready=0, suspended=1)
        self._condition("Suspended", "True", "SuspendedJobs", "jobset is suspended")

    def _retry_index(self) -> None:
        """The Job controller's per-index retry (backoffLimitPerIndex, pkg/controller/job/indexed_job_utils.go): the
        task's pod fails, stays (failed pods are kept until the Job goes), and a new pod for the same index is made,
        same hostname, a new random suffix, `batch.kubernetes.io/job-index-failure-count` one higher."""
        pod = self._task_pod()
        name = pod["metadata"]["name"]
        host = name.rsplit("-", 1)[0]
        failures = int((pod["metadata"].get("annotations") or {}).get(FAILURE_COUNT, 0)) + 1
        self._kubelet(name, self._terminated(int(self.params.get("exit_code", 1)),
                                             f"[{host}] Traceback (most recent call last): failure {failures}\n"))
        self.wait(float(self.params.get("preparing_seconds", 5)))
        labels = pod["metadata"]["labels"]
        rjob = next(r for r in self.rjobs if r["name"] == labels[PREFIX + "replicatedjob-name"])
        job = self.emu.store.find(self.jobs_rt, self.namespace, labels["batch.kubernetes.io/job-name"])
        created = self._create_pod(rjob, rjob["template"]["spec"]["template"], job,
                                   int(labels[PREFIX + "restart-attempt"]), int(labels[INDEX]),
                                   annotations={FAILURE_COUNT: str(failures)})
        self._kubelet(created, self._running())

    def _resume(self, attempt: int) -> None:
        """spec.suspend false again: the Jobs are resumed, the Job controller creates their pods anew."""
        for rjob, counts in zip(self.rjobs, self.status["replicatedJobsStatus"]):
            job = self.emu.store.find(self.jobs_rt, self.namespace, f"{self.name}-{rjob['name']}-0")
            if job is None:
                continue
            template = rjob["template"]["spec"]["template"]
            for index in range(int(rjob["template"]["spec"].get("completions") or 1)):
                self._create_pod(rjob, template, job, attempt, index)
            counts.update(active=1, ready=0, suspended=0)
        self._condition("Suspended", "False", "ResumeJobs", "jobset is resumed")
        self.wait(float(self.params.get("preparing_seconds", 5)))
        for pod in self._pods():
            if not pod["metadata"].get("deletionTimestamp"):
                self._kubelet(pod["metadata"]["name"], self._running())
        for counts in self.status["replicatedJobsStatus"]:
            counts.update(ready=counts["active"])
        self.write_status(copy.deepcopy(self.status))

    def _restart(self, attempt: int, failed_job: str) -> None:
        """RestartJobSet: count the restart, delete every Job of this attempt (BlockingRecreate: wait until they and
        their pods are gone), then the caller creates the next attempt's."""
        self.status["restarts"] = attempt + 1
        self.status["restartsCountTowardsMax"] = attempt + 1
        # jobset v0.12 pkg/controllers/failure_policy.go restartJobSetActionApplier: the rule's reason
        # (DefaultFailurePolicy without rules), the event's message with the first failed job
        self._condition("RestartingJobSet", "True", "DefaultFailurePolicy",
                        f"applying RestartJobSet failure policy action (first failed job: {failed_job})")
        for job in self._jobs():
            self._delete_job(job["metadata"]["name"])
        self.wait(300, until=lambda _: not self._jobs())

    def _succeed_all(self) -> None:
        for rjob, counts in zip(self.rjobs, self.status["replicatedJobsStatus"]):
            for pod in self._pods():
                if pod["metadata"]["labels"][PREFIX + "replicatedjob-name"] == rjob["name"]:
                    name = pod["metadata"]["name"]
                    self._kubelet(name, self._terminated(0, self._log(name, True)))
            self._job_condition(f"{self.name}-{rjob['name']}-0", "Complete", "CompletionsReached")
            counts.update(active=0, ready=0, succeeded=1)
            self.write_status(copy.deepcopy(self.status))

    def _log(self, pod: str, finished: bool) -> str:
        host = pod.rsplit("-", 1)[0]
        logs = self.params.get("logs") or {}
        if host in logs:
            return logs[host]
        if finished and "log" in self.params:
            return self.params["log"]
        return f"[{host}] started\n" + (f"[{host}] exiting\n" if finished else "")
