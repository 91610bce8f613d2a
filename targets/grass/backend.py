"""`--target grass`: submit, status, stop, logs and list through the master's Redis, in MARO's own records.

- **submit** writes what MARO's master API writes for `maro grass job start` (`POST /v1/jobs`): the standardised
  job (`id`, component ids, `status: pending`, `containers: {}`) in `name_to_job_details`, and its name pushed on
  `pending_job_tickets`, in one transaction. The commands are compiled with the cluster's Redis address, so they find
  their peers and record their exit status under any master (wrapper.py). Ids come from the job name and the
  submission time, so a name submitted again (after its last run ended) gets new container names. A job of that
  name still pending or running is refused.
- **describe / watch** decide the job's state from facts (verdict.py): containers as their nodes report them, exit
  statuses as the wrapper recorded them, OpenPAI's completion rules, and paictl's stop marker; never from MARO's
  `status` alone. A verdict, once reached, is kept in `paictl:verdicts` (a master that later rewrites the job's
  status from stale records cannot change it). A task that failed is diagnosed with OpenPAI's exit rules on the end
  of its log when its node serves logs.
- **stop** does what MARO's `POST /v1/jobs/<name>:stop` does (drop the pending ticket, queue a killed ticket) and
  records the stop's time; the job's record stays (MARO's `maro grass job stop` deletes it first, maro.md D.1). A
  job is stoppable while any of its containers runs, whatever its verdict.
- **logs** asks each container's node for its output (`/v1/containers/<name>/logs`, which paictl's node agent
  serves). MARO's node API has no such route (its containers log to the master's fluentd): then one line says where
  MARO keeps the log, and the command fails.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Iterator, Optional

from paictl.errors import ClusterError, NotFoundError, UsageError

from paictl.targets.backend import BackendOptions, FailureExcerpt, LogLine, Logs, StopResult, Submission
from paictl.targets.states import JobState, JobView, TaskView

from . import node_api
from .cluster import Cluster, load_cluster
from .redis_records import Records, container_problem, standardise
from .verdict import Decision, decide, facts

#: How often watch() reads the records; the master itself only changes them every check interval.
POLL_SECONDS = 0.5
_TAIL_BYTES = 64 * 1024


class MaroNodeLogs(NotFoundError):
    """The container's node runs MARO's node API, which serves no logs."""


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
        if existing is not None:
            decision = self.decision(existing)
            if not decision.state.is_final or decision.live:
                raise ClusterError(f"job {name} is already {decision.state.value} on {self.where}; stop it first "
                                   f"(paictl stop {name} --target grass --cluster ...)")
        if getattr(compiled, "job", None) is not None:  # the commands learn where the master's Redis is
            from .target import compile_grass

            job_file = compile_grass(compiled.job, compiled.profile, parameters=compiled.parameters or None,
                                     redis=self.cluster.redis_address)[0]
        job = standardise(job_file, seed=f"{name}\0{time.time_ns()}")
        self._admit(job)
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

    def _admit(self, job: dict[str, Any]) -> None:
        """Refuse, before anything is written, a job that could not be placed even on the empty cluster: it would
        be queued and wait forever (MARO's own API accepts it). Capacity, not free resources: a job that only waits
        for others to finish is admitted, and its pending message says what it waits for."""
        from .placement import never_fits
        from .redis_records import demands

        capacity = self._capacity()
        if capacity is None:
            return  # a node's resources are known only to its agent, which has not reported yet: cannot decide
        allocation = job.get("allocation") or {}
        misfit = never_fits(demands(job), capacity, mode=allocation.get("mode", "single-metric-balanced"),
                            metric=allocation.get("metric", "cpu"))
        if misfit is not None:
            raise ClusterError(f"job {job['name']} can never run on {self.where}, even with every node idle: "
                               f"{misfit}; nothing was queued (use smaller resourcePerInstance, or add a node "
                               "that can hold it)")

    def _capacity(self) -> Optional[list[Any]]:
        """Every node's whole resources: as its record in the master's Redis shows them (its agent resolved `all`),
        else as the cluster file states them; None when some node's are not known yet."""
        from .placement import Free
        from .redis_records import memory_mb

        records = self.records.nodes()
        capacity = []
        names = list(dict.fromkeys([*records, *(node.name for node in self.cluster.nodes)]))
        for name in names:
            record = records.get(name)
            if record is not None:
                resources = record.get("resources") or {}
                amounts = (resources.get("cpu"), resources.get("memory"), resources.get("gpu"))
            else:
                node = self.cluster.node(name)
                amounts = (node.cpu, node.memory, node.gpu)
            try:
                cpu, memory, gpu = float(amounts[0]), memory_mb(amounts[1]), float(amounts[2])
            except (TypeError, ValueError):
                return None
            capacity.append(Free(node=name, cpu=cpu, memory=memory, gpu=gpu))
        return capacity or None  # no node yet: nodes join later

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

    def decision(self, job: dict[str, Any], *, nodes: Optional[dict[str, dict[str, Any]]] = None,
                 containers: Optional[dict[str, dict[str, Any]]] = None) -> Decision:
        """The job's state from facts (verdict.py), a verdict once kept taking precedence."""
        # The restart counts before the containers: a count read after a restart was made would fail the task the
        # restart replaces.
        restartable = self.records.rejoin(job)
        if nodes is None:
            nodes = self.records.nodes()
        if containers is None:
            containers = self.records.containers()
        known = [*containers.items(), *((n, d) for n, d in (job.get("containers") or {}).items()
                                        if container_problem(d) is None)]
        decision = decide(job, facts(job, nodes, known, self.records.exits(job["id"])),
                          stopped_at=self.records.stopped_at(job["id"]), master_status=str(job.get("status", "")),
                          master_message=str(job.get("message") or ""), restartable=restartable,
                          refusals=self.records.refusals(job["id"]))
        kept = self.records.verdict(job["id"])
        if kept is not None and kept.get("state") in ("succeeded", "failed", "stopped"):
            trigger = kept.get("trigger")
            return dataclasses.replace(
                decision, state=JobState(kept["state"]), code=kept.get("code") if isinstance(kept.get("code"), int)
                else None, message=str(kept.get("message") or kept["state"]),
                trigger=(str(trigger[0]), int(trigger[1])) if isinstance(trigger, list) and len(trigger) == 2
                and isinstance(trigger[1], int) else None)
        if decision.state.is_final:
            self.records.keep_verdict(job["id"], {"state": decision.state.value, "code": decision.code,
                                                  "trigger": list(decision.trigger) if decision.trigger else None,
                                                  "message": decision.message})
        return decision

    def view(self, job: dict[str, Any], containers: Optional[dict[str, dict[str, Any]]] = None,
             nodes: Optional[dict[str, dict[str, Any]]] = None, *, listed: bool = False,
             submitted: Optional[str] = None) -> JobView:
        """`listed`: the view is a listing's row, which carries the job's AGE (`created`): when paictl submitted it
        (`submitted`), else, for a job MARO's own client submitted, when its first container started."""
        decision = self.decision(job, nodes=nodes, containers=containers)
        created = None
        if listed:
            starts = sorted(fact.started[:19] for fact in decision.latest.values()
                            if fact.started[:4].isdigit() and not fact.started.startswith("0001"))
            created = submitted or (starts[0] + "Z" if starts else None)
        tasks = []
        for task in decision.tasks:
            fact = decision.latest.get((task.role, task.index))
            if fact is not None and task.exit_code and task.diagnosis is None:
                task = dataclasses.replace(task, diagnosis=self._diagnosis(fact.name, fact.node, task.exit_code))
            tasks.append(task)
        message = decision.message
        if decision.state is JobState.FAILED and decision.trigger is not None and not decision.refused:
            diagnosis = next((t.diagnosis for t in tasks if (t.role, t.index) == decision.trigger), None)
            message = f"{message} ({diagnosis})" if diagnosis else message
        return JobView(name=job["name"], state=decision.state, tasks=tuple(tasks),
                       completion_code=decision.code if decision.state.is_final else None,
                       message=message or decision.state.value, triggered_by=decision.trigger, where=self.where,
                       created=created)

    def _diagnosis(self, container: str, node: str, exit_code: int) -> Optional[str]:
        if container not in self._diagnoses:
            from paictl.compiler.exit_rules import analyse, load_rule_set

            tail = self._log_tail(container, {"node_name": node})
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
        try:
            return node_api.logs(record, container, token=self.cluster.token, timeout=10)
        except node_api.NoLogRoute:
            raise MaroNodeLogs(
                f"node {labels.get('node_name')} runs MARO's node API, which serves no logs: MARO's fluentd keeps "
                f"them on the master, in ~/.maro-shared/clusters/{self.cluster.name}/logs/{labels.get('job_id')}/"
                f"{container}/ (`maro grass job logs` copies them)") from None

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
        """Stop a job that is pending, or has a container still running (a failed job's leftovers included)."""
        job = self._job(name)
        decision = self.decision(job)
        if decision.state.is_final and not decision.live:
            view = self.view(job)
            return StopResult(line=f"grass-job/{name} already {view.state.value}",
                              data={"name": name, "status": view.state.value, "stopped": False}, view=view)
        self.records.kill(job)
        return StopResult(line=f"grass-job/{name} stopping (killed ticket queued on {self.where})",
                          data={"name": name, "status": decision.state.value, "stopped": True})

    def logs(self, name: str, *, role: Optional[str] = None, index: Optional[int] = None,
             attempt: Optional[int] = None, follow: bool = False, previous: bool = False,
             task_attempt: Optional[int] = None) -> Logs:
        """A Grass job has one attempt; a task's attempts are its container's restarts (MARO restarts a failed
        container under a new name), so `task_attempt` (or, as before, `attempt`) chooses a restart and `previous`
        the restart before each task's latest."""
        job = self._job(name)
        if role is not None and role not in job["components"]:
            raise UsageError(f"job {name} has no task role {role!r} (roles: {', '.join(job['components'])})")
        tasks = tuple((component, number) for component, details in job["components"].items()
                      for number in range(int(details["num"]))
                      if (role is None or component == role) and (index is None or number == index))
        if not tasks:
            raise UsageError(f"job {name}: task role {role!r} has no index {index}")
        chosen = task_attempt if task_attempt is not None else attempt
        if previous or chosen is not None:
            restarts: dict[tuple[str, int], list[int]] = {}
            for component, number, restart, _, _ in self._log_sources(job):
                restarts.setdefault((component, number), []).append(restart)
            wanted: dict[tuple[str, int], int] = {}
            for task in tasks:
                have = sorted(restarts.get(task, []))
                pick = (have[-2] if len(have) > 1 else None) if previous else chosen
                if pick is None or pick not in have:
                    what = "no previous attempt" if previous else f"no task attempt {chosen}"
                    raise NotFoundError(f"job {name}: {task[0]}-{task[1]} has {what}; its container restarts: "
                                        f"{', '.join(map(str, have)) or 'none yet'}")
                wanted[task] = pick
            return Logs(tasks=tasks, lines=self._log_lines(name, job, set(tasks), wanted, False))
        return Logs(tasks=tasks, lines=self._log_lines(name, job, set(tasks), None, follow))

    def _log_lines(self, name: str, job: dict[str, Any], tasks: set[tuple[str, int]],
                   wanted: Optional[dict[tuple[str, int], int]], follow: bool) -> Iterator[LogLine]:
        sent: dict[str, int] = {}
        while True:
            # Read whether the job has ended before reading logs, so the last read has every line.
            ended = not follow or self.decision(self._job(name)).state.is_final
            for component, number, restart, container, labels in self._log_sources(job):
                if (component, number) not in tasks or (wanted is not None
                                                         and restart != wanted[(component, number)]):
                    continue
                try:
                    text = self._log(container, labels)
                except MaroNodeLogs:
                    raise
                except ClusterError as exc:
                    if container not in sent:
                        yield LogLine(role=component, index=number, text=f"no log: {exc}", stream="note")
                        sent[container] = 0
                    continue
                new = text[sent.get(container, 0):]
                if not ended:
                    new = new[:new.rfind(b"\n") + 1]  # a partial last line waits for its end
                for line in new.decode("utf-8", "surrogateescape").splitlines():
                    yield LogLine(role=component, index=number, text=line)
                sent[container] = sent.get(container, 0) + len(new)
            if ended:
                return
            time.sleep(POLL_SECONDS)

    def _log_sources(self, job: dict[str, Any]) -> list[tuple[str, int, int, str, dict[str, Any]]]:
        """(role, index, restart, container, labels) of every container of the job, in task order."""
        found = facts(job, self.records.nodes(), self.records.containers().items(), {})
        return sorted(((f.role, f.index, f.restart, f.name, {"node_name": f.node, "job_id": job["id"]})
                       for f in found), key=lambda item: item[:3])

    def list(self) -> list[JobView]:
        containers, nodes = self.records.containers(), self.records.nodes()
        submitted = self.records.submitted()
        return [self.view(job, containers, nodes, listed=True, submitted=submitted.get(job["id"]))
                for _, job in sorted(self.records.jobs().items())]

    @property
    def skipped_records(self) -> list[str]:
        """The malformed records met so far, `key: problem` (a list counts them in its summary)."""
        return [f"{key}: {problem}" for key, problem in sorted(self.records.problems.items())]


    def failure_excerpt(self, view: JobView) -> Optional[FailureExcerpt]:
        if view.triggered_by is None:
            return None
        fact = self.decision(self._job(view.name)).latest.get(view.triggered_by)
        if fact is None:
            return None
        lines = self._log_tail(fact.name, {"node_name": fact.node}).splitlines()[-20:]
        if not lines:
            return None  # nothing to show (MARO's node serves no logs): no heading over an empty section
        return FailureExcerpt(label=f"{view.triggered_by[0]}-{view.triggered_by[1]} ({fact.name} on {fact.node})",
                              lines=tuple(lines))

    def close(self) -> None:
        try:
            self.records.redis.close()
        except Exception:  # noqa: BLE001 - closing never fails the command
            pass


def open_backend(options: BackendOptions) -> GrassBackend:
    return GrassBackend(options)
