"""`--target grass`: submit, status, stop, logs and list through the master's Redis, in MARO's own records.

- **submit** writes what MARO's master API writes for `maro grass job start` (`POST /v1/jobs`): the standardised
  job (`id`, component ids, `status: pending`, `containers: {}`) in `name_to_job_details`, and its name pushed on
  `pending_job_tickets`, in one transaction. Ids come from the job name and the submission time, so a name
  submitted again (after its last run ended) gets new container names. A job of that name still pending or
  running is refused.
- **describe / watch** read the job record and `name_to_container_details` (kept by the master): MARO's statuses
  pending / running / finish / failed / killed become pending / running / succeeded / failed / stopped, and each
  task is the newest container of its component index (its node, exit code, restarts). A container that ended
  non-zero is diagnosed with OpenPAI's exit rules on the end of its log.
- **stop** pushes a killed ticket (MARO's `POST /v1/jobs/<name>:stop`); the job's record stays, unlike MARO's
  `maro grass job stop`, which deletes it first (maro.md D.1). The master stops the containers.
- **logs** asks each container's node for its output (the node API's `/logs`, which paictl's node agent serves).
"""

from __future__ import annotations

import time
from typing import Any, Iterator, Optional

from paictl.errors import ClusterError, NotFoundError, UsageError

from paictl.targets.backend import BackendOptions, FailureExcerpt, LogLine, Logs, StopResult, Submission
from paictl.targets.states import JobState, JobView, TaskView

from . import node_api
from .cluster import Cluster, load_cluster
from .redis_records import FINAL_STATUSES, Records, standardise

STATES = {"pending": JobState.PENDING, "running": JobState.RUNNING, "finish": JobState.SUCCEEDED,
          "failed": JobState.FAILED, "killed": JobState.STOPPED}
#: How often watch() reads the records; the master itself only changes them every check interval.
POLL_SECONDS = 0.5
_TAIL_BYTES = 64 * 1024


class GrassBackend:
    targets = ("grass",)

    def __init__(self, options: BackendOptions, *, cluster: Optional[Cluster] = None, client: Any = None):
        if cluster is None:
            files = options.extra.get("cluster_files") or ([options.cluster] if options.cluster else [])
            if not files:
                raise UsageError("--target grass needs --cluster FILE (the cluster's master and nodes)")
            cluster = load_cluster(list(files))
        self.cluster = cluster
        self.options = options
        self.records = Records(cluster, client)
        self._diagnoses: dict[str, Optional[str]] = {}

    @property
    def namespace(self) -> Optional[str]:
        return None

    @property
    def where(self) -> str:
        return f"grass cluster {self.cluster.name} (redis {self.cluster.redis_address})"

    def submit(self, compiled: Any, *, dry_run: bool = False, attach: bool = False) -> Submission:
        job_file = next((obj for obj in compiled.objects if "kind" not in obj and "components" in obj), None)
        if job_file is None:
            raise UsageError("the compiled job has no Grass job file (compile it with --target grass)")
        name = job_file["name"]
        existing = self.records.job(name)
        if existing is not None and existing.get("status") not in FINAL_STATUSES:
            raise ClusterError(f"job {name} is already {existing.get('status')} on {self.where}; stop it first "
                               f"(paictl stop {name} --target grass)")
        job = standardise(job_file, seed=f"{name}\0{time.time_ns()}")
        if not dry_run:
            self.records.submit(job)
        containers = sum(int(c["num"]) for c in job["components"].values())
        return Submission(
            name=name, where=self.where, uid=job["id"], dry_run=dry_run,
            lines=(f"grass-job/{name} {'would be queued' if dry_run else 'queued'} on {self.where}: "
                   f"{containers} container(s), id {job['id']}",),
            data=({"name": name, "id": job["id"], "cluster": self.cluster.name, "status": "pending",
                   "dryRun": dry_run},),
            hints=(f"paictl: follow it with: paictl status {name} --target grass --cluster "
                   f"{' --cluster '.join(self.cluster.source.split(', '))} --follow",))

    def is_configured(self) -> bool:
        return True  # a cluster file was given (the constructor needs one)

    def not_found(self, name: str) -> str:
        return f"no job {name!r} on {self.where}"

    def has_job(self, name: str) -> bool:
        try:
            return self.records.job(name) is not None
        except ClusterError:
            return False

    def _job(self, name: str) -> dict[str, Any]:
        job = self.records.job(name)
        if job is None:
            raise NotFoundError(self.not_found(name))
        return job

    def describe(self, name: str) -> JobView:
        return self.view(self._job(name))

    def view(self, job: dict[str, Any], containers: Optional[dict[str, dict[str, Any]]] = None) -> JobView:
        from .master import latest_containers

        if containers is None:
            containers = self.records.containers()
        latest = latest_containers(job, containers)
        by_task = {(d.get("component_type"), str(d.get("component_index"))): (n, d) for n, d in latest.items()}
        tasks = []
        trigger = None
        code = None
        for component, details in job["components"].items():
            for index in range(int(details["num"])):
                found = by_task.get((component, str(index)))
                if found is None:
                    tasks.append(TaskView(role=component, index=index, state="pending"))
                    continue
                container, labels = found
                state = labels.get("state") or {}
                exit_code = None if state.get("Running") or state.get("ExitCode") is None else int(state["ExitCode"])
                diagnosis = self._diagnosis(container, labels, exit_code) if exit_code else None
                if exit_code and trigger is None:
                    trigger, code = (component, index), exit_code
                tasks.append(TaskView(role=component, index=index, state=str(state.get("Status", "unknown")),
                                      attempt=int(labels.get("restart_index", 0) or 0),
                                      node=labels.get("node_name"), exit_code=exit_code, diagnosis=diagnosis))
        status = str(job.get("status", "pending"))
        state = STATES.get(status, JobState.UNKNOWN)
        if state is JobState.STOPPED and any(t.state == "running" for t in tasks):
            state = JobState.STOPPING
        message = str(job.get("message") or "")
        if state is JobState.FAILED and trigger is not None:
            diagnosis = next(t.diagnosis for t in tasks if (t.role, t.index) == trigger)
            message = f"{message}: {diagnosis}" if diagnosis else message
        if state is JobState.SUCCEEDED:
            code, message = 0, message or "every container exited 0"
        return JobView(name=job["name"], state=state, tasks=tuple(tasks),
                       completion_code=code if state.is_final else None, message=message or status,
                       triggered_by=trigger if state is JobState.FAILED else None, where=self.where)

    def _diagnosis(self, container: str, labels: dict[str, Any], exit_code: int) -> Optional[str]:
        if container not in self._diagnoses:
            from paictl.compiler.exit_rules import analyse, load_rule_set

            tail = self._log_tail(container, labels)
            rules = load_rule_set(self.options.exit_spec) if self.options.exit_spec else None
            rule = analyse(exit_code, tail, rules=rules).rule
            self._diagnoses[container] = f"{rule.code} {rule.phrase}"
        return self._diagnoses[container]

    def _log_tail(self, container: str, labels: dict[str, Any]) -> str:
        try:
            return self._log(container, labels)[-_TAIL_BYTES:].decode("utf-8", "replace")
        except ClusterError:
            return ""

    def _log(self, container: str, labels: dict[str, Any]) -> bytes:
        record = self.records.node(str(labels.get("node_name")))
        if record is None:
            raise NotFoundError(f"node {labels.get('node_name')} of container {container} is not in the cluster")
        return node_api.logs(record, container, token=self.cluster.token, timeout=10)

    def watch(self, name: str, *, uid: Optional[str] = None) -> Iterator[JobView]:
        started = time.monotonic()
        last = None
        while True:
            job = self._job(name)
            if uid is not None and job.get("id") != uid:
                raise NotFoundError(f"job {name} on {self.where} is another run (id {job.get('id')}, not {uid})")
            view = self.view(job)
            if view != last:
                yield view
                last = view
            if view.state.is_final:
                return
            timeout = self.options.pending_timeout
            if timeout is not None and view.state is JobState.PENDING and time.monotonic() - started > timeout:
                return
            time.sleep(POLL_SECONDS)

    def stop(self, name: str) -> StopResult:
        job = self._job(name)
        if job.get("status") in FINAL_STATUSES:
            return StopResult(line=f"grass-job/{name} already {job['status']}",
                              data={"name": name, "status": job["status"], "stopped": False}, view=self.view(job))
        self.records.kill(name)
        return StopResult(line=f"grass-job/{name} stopping (killed ticket queued on {self.where})",
                          data={"name": name, "status": job.get("status"), "stopped": True})

    def logs(self, name: str, *, role: Optional[str] = None, index: Optional[int] = None,
             attempt: Optional[int] = None, follow: bool = False, previous: bool = False) -> Logs:
        job = self._job(name)
        if role is not None and role not in job["components"]:
            raise UsageError(f"job {name} has no task role {role!r} (roles: {', '.join(job['components'])})")
        tasks = tuple((component, number) for component, details in job["components"].items()
                      for number in range(int(details["num"]))
                      if (role is None or component == role) and (index is None or number == index))
        if not tasks:
            raise UsageError(f"job {name}: task role {role!r} has no index {index}")
        return Logs(tasks=tasks, lines=self._log_lines(name, job, set(tasks), attempt, follow))

    def _log_lines(self, name: str, job: dict[str, Any], tasks: set[tuple[str, int]], attempt: Optional[int],
                   follow: bool) -> Iterator[LogLine]:
        sent: dict[str, int] = {}
        while True:
            # Read whether the job has ended before reading logs, so the last read has every line.
            ended = not follow or STATES.get(str(self._job(name).get("status"))) in (
                JobState.SUCCEEDED, JobState.FAILED, JobState.STOPPED)
            for component, number, restart, container, labels in self._log_sources(job):
                if (component, number) not in tasks or (attempt is not None and restart != attempt):
                    continue
                try:
                    text = self._log(container, labels)
                except ClusterError as exc:
                    if container not in sent:
                        yield LogLine(role=component, index=number, text=f"no log: {exc}", stream="note")
                        sent[container] = 0
                    continue
                new = text[sent.get(container, 0):]
                if not ended:
                    new = new[:new.rfind(b"\n") + 1]  # a partial last line waits for its end
                for line in new.decode("utf-8", "replace").splitlines():
                    yield LogLine(role=component, index=number, text=line)
                sent[container] = sent.get(container, 0) + len(new)
            if ended:
                return
            time.sleep(POLL_SECONDS)

    def _log_sources(self, job: dict[str, Any]) -> list[tuple[str, int, int, str, dict[str, Any]]]:
        """(role, index, restart, container, labels) of every container of the job, in task order."""
        containers = self.records.containers()
        return sorted(((str(d.get("component_type")), int(d.get("component_index", 0)),
                        int(d.get("restart_index", 0) or 0), n, d) for n, d in containers.items()
                       if d.get("job_id") == job["id"]), key=lambda item: item[:3])

    def list(self) -> list[JobView]:
        containers = self.records.containers()
        return [self.view(job, containers) for _, job in sorted(self.records.jobs().items())]

    def failure_excerpt(self, view: JobView) -> Optional[FailureExcerpt]:
        if view.triggered_by is None:
            return None
        job = self._job(view.name)
        from .master import latest_containers

        for container, labels in latest_containers(job, self.records.containers()).items():
            if (labels.get("component_type"), int(labels.get("component_index", 0))) == view.triggered_by:
                lines = self._log_tail(container, labels).splitlines()[-20:]
                return FailureExcerpt(label=f"{view.triggered_by[0]}-{view.triggered_by[1]} ({container} on "
                                            f"{labels.get('node_name')})", lines=tuple(lines))
        return None

    def close(self) -> None:
        try:
            self.records.redis.close()
        except Exception:  # noqa: BLE001 - closing never fails the command
            pass


def open_backend(options: BackendOptions) -> GrassBackend:
    return GrassBackend(options)
