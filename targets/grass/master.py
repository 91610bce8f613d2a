"""The master agent: MARO's master loops (maro.md A.7, A.10) in one pass, repeated every check interval (MARO: 5 s).

Each pass, in this order:
1. **Nodes.** A node whose heartbeat (`state.check_time`, Redis TIME) is older than `lost_after` is marked `Lost`
   (MARO has no such check: a dead node keeps its last record forever); its running containers are reported
   with state `Status: lost`. Silence counts only while Redis itself answers: after the master starts, or after
   a pass that could not reach Redis, every node gets a whole `lost_after` again (an outage of Redis is not the
   nodes' silence).
2. **Containers.** Every node's containers, flattened into `name_to_container_details` (MARO deletes a misspelt
   key first, so containers that are gone never leave that hash; here the hash is replaced).
3. **Killed tickets** (MARO's `:stop` semantics): every container of the job is stopped (kept, with its log and
   exit code), a pending or running job becomes `killed`, and both tickets are dropped. A ticket for a job that no
   longer exists is dropped (MARO would crash on it, maro.md D.1).
4. **Exit codes.** A container that exits 65 stops every container of its job, which then fails. A container
   exiting with any other non-zero code is restarted only when the job asked for it as MARO's Proxy does
   (`job:<id>:runtime_details` has `rejoin:enable` 1) and its Proxy registered the container (it is a value of
   `job:<id>:rejoin_component_name_to_container_name`; the restart gets that key as COMPONENT_NAME), within
   `rejoin:max_restart_times` (counted per component in
   `job:<id>:component_id_to_restart_times`), placed single-metric-balanced on cpu as MARO re-places; 64 never is.
5. **Job status** from facts (verdict.py: the containers as their nodes report them, their true exit statuses,
   OpenPAI's completion rules; MARO's rules had bugs, maro.md D.3): `running` while undecided; `failed` or
   `finish` once the completion policy decides, `message` naming the task that decided it; the verdict is also
   kept in `paictl:verdicts`. `killed`, `finish` and `failed` are final: a pass never changes them again. A job
   decided while some of its containers still run has them stopped (OpenPAI ends a completed job's other tasks).
   **Reconciling**: a running container of a final job, or of no job at all (a node that comes back with
   containers the master already gave up on), is stopped.
6. **Pending tickets**, in queue order, each job read as its ticket is taken (a job submitted during the pass
   keeps its ticket), against the free resources of `Running` nodes computed once per pass:
   every container of a job is placed at once or none (placement.py; a misfit stays pending, its reason in
   `message`), then created through each node's API with MARO's create config and the environment of env.py. A
   job whose container cannot be created fails (MARO drops its ticket and leaves it pending forever).

`message` is the only key paictl adds to MARO's job record; MARO's tools ignore it.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from typing import Any, Optional

from . import node_api
from .cluster import Cluster
from .placement import Free, PlacementError, commit, place
from .redis_records import (CONTAINERS, FINAL_STATUSES, KILL_ALL_EXIT_CODE, KILLED, NODES, NON_RESTART_EXIT_CODE,
                            PENDING, REJOIN_NAMES, RESTART_TIMES, RUNTIME, Records, container_name, container_problem,
                            demands, node_lock)
from .verdict import LIVE, decide, engine_status, facts

log = logging.getLogger("paictl.grass.master")
NO_RESTART = {0, NON_RESTART_EXIT_CODE, KILL_ALL_EXIT_CODE}
MARO_SHARED_DATA = "~/.maro-shared/clusters/{cluster}/data/"


class MasterAgent:
    def __init__(self, cluster: Cluster, *, interval: Optional[float] = None, client: Any = None):
        self.cluster = cluster
        self.interval = interval if interval is not None else cluster.check_interval
        self.records = Records(cluster, client)
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        #: Redis TIME since when Redis has answered every pass (None: not since the last failure or the start).
        self._answering_since: Optional[float] = None
        self._reported: set[str] = set()

    # the loop
    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, daemon=True, name="grass-master")
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.run_pass()
            except Exception as exc:  # noqa: BLE001 - a daemon: log, wait, try again (Redis may be restarting)
                self._answering_since = None
                log.warning("master pass failed: %s", exc)
            self._stop.wait(self.interval)

    def wait(self) -> None:
        while not self._stop.wait(1.0):
            pass

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)

    # one pass
    def run_pass(self) -> None:
        now = self.records.time()
        if self._answering_since is None:
            self._answering_since = now
        nodes = self.records.nodes()
        lost = self._mark_lost(nodes, now)
        containers = self._track_containers(nodes, lost)
        jobs = self.records.jobs()
        stopped = self._killed(jobs, nodes)
        for job in jobs.values():
            if job.get("status") == "running":
                stopped = self._exit_codes(job, nodes, containers) or stopped
        if stopped:  # the nodes have published the containers' ends and starts: report them in this same pass
            nodes = self.records.nodes()
            containers = {**containers, **self._track_containers(nodes, lost)}
        for job in jobs.values():
            self._track_job(job, containers, nodes, now)
        self._reconcile(jobs, nodes)
        self._pending(nodes, containers)
        for key, problem in self.records.problems.items():
            if key not in self._reported:
                log.warning("skipped the malformed record %s: %s", key, problem)
        self._reported = set(self.records.problems)

    def _mark_lost(self, nodes: dict[str, dict[str, Any]], now: float) -> set[str]:
        lost = set()
        for name, record in nodes.items():
            state = record.get("state") or {}
            if state.get("status") == "Lost":
                lost.add(name)
            elif state.get("status") == "Running" and now - max(_float(state.get("check_time")),
                                                                 self._answering_since or now) \
                    > self.cluster.lost_after_seconds:
                with self.records.redis.lock(node_lock(name), timeout=30, blocking_timeout=10):
                    current = self.records.node(name) or record
                    if _float((current.get("state") or {}).get("check_time")) == _float(state.get("check_time")):
                        current["state"] = {"status": "Lost", "check_time": state.get("check_time")}
                        self.records.redis.hset(NODES, name, json.dumps(current))
                        record.update(current)
                        lost.add(name)
                        log.warning("node %s lost: no heartbeat for %.0f s", name, now - _float(state["check_time"]))
        return lost

    def _track_containers(self, nodes: dict[str, dict[str, Any]], lost: set[str]) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        for name, record in nodes.items():
            for container, details in (record.get("containers") or {}).items():
                details = {**details, "node_name": details.get("node_name", name)}
                if name in lost and engine_status(details.get("state") or {}) in LIVE:
                    details["state"] = {**details["state"], "Status": "lost", "Running": False, "ExitCode": None}
                found[container] = details
        pipe = self.records.redis.pipeline(transaction=True)
        pipe.delete(CONTAINERS)
        if found:
            pipe.hset(CONTAINERS, mapping={k: json.dumps(v) for k, v in found.items()})
        pipe.execute()
        return found

    def _job_containers(self, job: dict[str, Any], nodes: dict[str, dict[str, Any]]) -> list[tuple[str, dict]]:
        return [(container, record) for record in nodes.values() for container in (record.get("containers") or {})
                if container.startswith(job["id"] + "-")]

    def _stop_containers(self, job: dict[str, Any], nodes: dict[str, dict[str, Any]]) -> None:
        for container, record in self._job_containers(job, nodes):
            if (record.get("containers", {}).get(container, {}).get("state") or {}).get("Running"):
                try:
                    node_api.stop(record, container, token=self.cluster.token)
                except node_api.NodeApiError as exc:
                    log.warning("cannot stop %s: %s", container, exc)

    def _killed(self, jobs: dict[str, dict[str, Any]], nodes: dict[str, dict[str, Any]]) -> bool:
        stopped = False
        names = list(dict.fromkeys(self.records.killed()))
        jobs.update(self.records.jobs_named(names))  # a job submitted and stopped since `jobs` was read
        for name in names:
            job = jobs.get(name)
            if job is not None:
                self._stop_containers(job, nodes)
                self.records.redis.delete(REJOIN_NAMES.format(job_id=job["id"]))  # as MARO's _kill_job
                stopped = True
                if job.get("status") in ("pending", "running"):
                    job["status"] = "killed"
                    job["message"] = "stopped: a killed ticket was queued"
                    self.records.update_job(job)
            self.records.drop_ticket(PENDING, name)
            self.records.drop_ticket(KILLED, name)
        return stopped

    def _exit_codes(self, job: dict[str, Any], nodes: dict[str, dict[str, Any]],
                    containers: dict[str, dict[str, Any]]) -> bool:
        """Exit 65 stops the job; other codes restart when the job asked. True when containers were stopped or
        created (the nodes' records have changed)."""
        mine = latest_containers(job, containers)
        for container, details in mine.items():
            state = details.get("state") or {}
            if state.get("Status") == "exited" and state.get("ExitCode") == KILL_ALL_EXIT_CODE:
                self._stop_containers(job, nodes)
                self.records.redis.delete(REJOIN_NAMES.format(job_id=job["id"]))  # as MARO's _stop_job
                job["status"] = "failed"
                job["message"] = (f"container {container} ({details.get('component_type')} "
                                  f"{details.get('component_index')}) exited 65: every container of the job was "
                                  f"stopped")
                self.records.update_job(job)
                return True
        runtime = self.records.redis.hgetall(RUNTIME.format(job_id=job["id"])) or {}
        if runtime.get("rejoin:enable") != "1":
            return False
        limit = _int(runtime.get("rejoin:max_restart_times"), sys.maxsize)
        # MARO restarts only a container its Proxy registered (component name -> container name): one that failed
        # before joining, or whose job never used the Proxy, is not restarted.
        registered = {container: component for component, container in
                      (self.records.redis.hgetall(REJOIN_NAMES.format(job_id=job["id"])) or {}).items()}
        restarted = False
        for container, details in mine.items():
            state = details.get("state") or {}
            if state.get("Status") != "exited" or state.get("ExitCode") in NO_RESTART or container not in registered:
                continue
            counts_key = RESTART_TIMES.format(job_id=job["id"])
            count = int(self.records.redis.hget(counts_key, details["component_id"]) or 0)
            if count >= limit:
                continue
            restart = int(details.get("restart_index", 0) or 0) + 1
            try:
                created = self._restart(job, details, restart, nodes, registered[container])
            except (PlacementError, node_api.NodeApiError) as exc:
                log.warning("cannot restart %s: %s", container, exc)
                continue
            self.records.redis.hincrby(counts_key, details["component_id"], 1)
            containers.update(created)
            restarted = True
        return restarted

    def _restart(self, job: dict[str, Any], details: dict[str, Any], restart: int,
                 nodes: dict[str, dict[str, Any]], component_name: str) -> dict[str, dict[str, Any]]:
        component, index = details["component_type"], int(details["component_index"])
        wanted = [d for d in demands(job) if d.component == component and d.index == index]
        plan = place(wanted, free_resources(nodes), mode="single-metric-balanced", metric="cpu")
        record = nodes[plan[wanted[0].name]]
        hosts = self._hosts(job, nodes)
        hosts[(component, index)] = record["hostname"]
        return self._create(job, component, index, record, hosts, restart, component_name)

    def _hosts(self, job: dict[str, Any], nodes: dict[str, dict[str, Any]]) -> dict[tuple[str, int], str]:
        hosts = {}
        for container, record in self._job_containers(job, nodes):
            labels = record["containers"][container]
            hosts[(labels.get("component_type"), int(labels.get("component_index", 0)))] = record["hostname"]
        return hosts

    def _track_job(self, job: dict[str, Any], containers: dict[str, dict[str, Any]],
                   nodes: dict[str, dict[str, Any]], now: float) -> None:
        before = json.dumps(job, sort_keys=True)
        # A container no node reports any more stays in the record as it was last seen (the facts call it removed),
        # so a node agent restarted without its containers cannot turn a task back into a pending one.
        previous = {name: details for name, details in (job.get("containers") or {}).items()
                    if container_problem(details) is None}
        job["containers"] = {name: details for name, details in sorted({**previous, **containers}.items())
                             if details.get("job_id") == job["id"]}
        if job.get("status") in FINAL_STATUSES:
            if json.dumps(job, sort_keys=True) != before:  # the containers of a stopped job come to an end
                self.records.update_job(job)
            return
        job["check_time"] = int(now)  # MARO: Redis TIME, whole seconds
        if job["containers"]:
            decision = decide(job, facts(job, nodes, job["containers"].items(), self.records.exits(job["id"])),
                              stopped_at=self.records.stopped_at(job["id"]), master_status=str(job.get("status")),
                              restartable=self.records.rejoin(job))
            status = _STATUS.get(decision.state.value)
            if status is not None:
                job["status"] = status
                job["message"] = "" if status == "running" else decision.message
            if decision.state.is_final:
                self.records.keep_verdict(job["id"], {"state": decision.state.value, "code": decision.code,
                                                      "trigger": list(decision.trigger) if decision.trigger else None,
                                                      "message": decision.message})
                if decision.live:
                    self._stop_containers(job, nodes)
        if json.dumps(job, sort_keys=True) != before:
            self.records.update_job(job)

    def _reconcile(self, jobs: dict[str, dict[str, Any]], nodes: dict[str, dict[str, Any]]) -> None:
        """Stop running containers of final jobs, and of jobs the cluster does not know (a node came back)."""
        final = {job["id"] for job in jobs.values() if job.get("status") in FINAL_STATUSES}
        known = {job["id"] for job in jobs.values()}
        for name, record in nodes.items():
            if (record.get("state") or {}).get("status") != "Running":
                continue
            for container, details in (record.get("containers") or {}).items():
                job_id = details.get("job_id")
                if not (details.get("state") or {}).get("Running") or (job_id in known and job_id not in final):
                    continue
                if not isinstance(job_id, str) or not job_id.startswith("job"):
                    continue  # not a Grass job's container
                try:
                    node_api.stop(record, container, token=self.cluster.token)
                    log.warning("stopped %s on node %s: its job is %s", container, name,
                                "over" if job_id in known else "unknown")
                except node_api.NodeApiError as exc:
                    log.warning("cannot stop %s: %s", container, exc)

    def _pending(self, nodes: dict[str, dict[str, Any]], containers: dict[str, dict[str, Any]]) -> None:
        free = free_resources(nodes)
        names = list(dict.fromkeys(self.records.pending()))
        current = self.records.jobs_named(names)  # read now: a job submitted since the pass began has a ticket too
        for name in names:
            job = current.get(name)
            if job is None or job.get("status") != "pending":
                self.records.drop_ticket(PENDING, name)
                continue
            allocation = job.get("allocation") or {"mode": "single-metric-balanced", "metric": "cpu"}
            wanted = demands(job)
            try:
                plan = place(wanted, free, mode=allocation.get("mode", ""), metric=allocation.get("metric", ""))
            except PlacementError as exc:
                if job.get("message") != f"pending: {exc}":
                    job["message"] = f"pending: {exc}"
                    self.records.update_job(job)
                continue
            hosts = {(d.component, d.index): nodes[plan[d.name]]["hostname"] for d in wanted}
            created: dict[str, dict[str, Any]] = {}
            try:
                for demand in wanted:
                    created.update(self._create(job, demand.component, demand.index, nodes[plan[demand.name]],
                                                hosts, 0))
            except node_api.NodeApiError as exc:
                for container, details in created.items():
                    try:
                        node_api.stop(nodes[details["node_name"]], container, token=self.cluster.token)
                    except node_api.NodeApiError:
                        pass
                job["status"], job["message"] = "failed", f"a container could not be created: {exc}"
            else:
                job["status"], job["message"] = "running", ""
                free = commit(plan, wanted, free)
            containers.update(created)
            self.records.update_job(job)
            self.records.drop_ticket(PENDING, name)

    def _create(self, job: dict[str, Any], component: str, index: int, record: dict[str, Any],
                hosts: dict[tuple[str, int], str], restart: int,
                component_name: Optional[str] = None) -> dict[str, dict[str, Any]]:
        """Start one container through its node's API; {name: labels + state} as the node will report it."""
        config = create_config(self.cluster, job, component, index, record, hosts, restart, component_name)
        details = node_api.create(record, config, token=self.cluster.token)
        return {config["container_name"]: {**config["labels"], "state": details.get("State", {})}}


def create_config(cluster: Cluster, job: dict[str, Any], component: str, index: int, record: dict[str, Any],
                  hosts: dict[tuple[str, int], str], restart: int = 0,
                  component_name: Optional[str] = None) -> dict[str, Any]:
    """MARO's create config (PendingJobAgent._start_container) for one container, with paictl's environment; a
    restart's (ContainerRuntimeAgent._start_container) also carries the Proxy's `component_name` it replaces, as
    COMPONENT_NAME and a label, so the new container can rejoin under the same name."""
    from .env import container_env

    details = job["components"][component]
    resources = details["resources"]
    name = container_name(job, component, index, restart)
    data = cluster.master.data or MARO_SHARED_DATA.format(cluster=cluster.name)
    labels = {
        "cluster_id": cluster.id, "cluster_name": cluster.name, "node_id": record.get("id", record["name"]),
        "node_name": record["name"], "job_id": job["id"], "job_name": job["name"], "component_id": details["id"],
        "component_type": component, "component_index": str(index), "container_name": name,
        "cpu": resources["cpu"], "memory": resources["memory"], "restart_index": str(restart),
    }
    config = {
        "cpu": resources["cpu"], "memory": resources["memory"], "command": details["command"],
        "image_name": details["image"], "volumes": [f"{data}:{details['mount']['target']}"],
        "container_name": name,
        "fluentd_address": f"{cluster.master.hostname}:{cluster.master.fluentd_port}",
        "fluentd_tag": f"maro.job_id.{job['id']}.container_name.{name}",
        "environments": container_env(cluster, record, job, component, index, name, hosts),
        "labels": labels,
    }
    if component_name is not None:
        config["environments"]["COMPONENT_NAME"] = labels["component_name"] = component_name
    if resources.get("gpu"):
        config["gpu"] = labels["gpu"] = resources["gpu"]
    return config


#: Verdict states as MARO's job statuses (pending stays pending).
_STATUS = {"running": "running", "stopping": "killed", "stopped": "killed", "succeeded": "finish",
           "failed": "failed"}


def _int(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def free_resources(nodes: dict[str, dict[str, Any]]) -> list[Free]:
    """MARO's get_free_resources: `target_free_*` of every Running node, in the hash's order."""
    free = []
    for name, record in nodes.items():
        resources = record.get("resources") or {}
        if (record.get("state") or {}).get("status") != "Running":
            continue
        try:
            free.append(Free(node=name, cpu=float(resources["target_free_cpu"]),
                             memory=float(resources["target_free_memory"]), gpu=float(resources["target_free_gpu"])))
        except (KeyError, TypeError, ValueError):
            continue  # not in a stable state yet (MARO skips these too)
    return free


def latest_containers(job: dict[str, Any], containers: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The job's containers, only the newest restart of each component index."""
    newest: dict[tuple[str, str], tuple[int, str]] = {}
    for name, details in containers.items():
        if details.get("job_id") != job["id"]:
            continue
        key = (str(details.get("component_id")), str(details.get("component_index")))
        restart = int(details.get("restart_index", 0) or 0)
        if key not in newest or restart > newest[key][0]:
            newest[key] = (restart, name)
    return {name: containers[name] for _, name in sorted(newest.values(), key=lambda item: item[1])}
