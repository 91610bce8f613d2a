"""MARO's records in the master's Redis, read and written the way MARO's own master and agents do (maro.md A.10).

Keys: hashes `name_to_job_details`, `name_to_node_details`, `name_to_container_details` (JSON values); lists
`pending_job_tickets` and `killed_job_tickets` (job names); a node record is only written under the Redis lock
`lock:name_to_node_details:<node>`. Job statuses: pending, running, killed, finish, failed. A job record is MARO's
standardised job (`standardise`): the deployment file plus `id`, each component's `id`, `status`, `containers`.

The pure helpers (ids, names, parsing) need no Redis; `Records` wraps a `redis.Redis` client, imported lazily.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import TYPE_CHECKING, Any, Iterator, Optional

from paictl.errors import ClusterError

from .cluster import derived_id

if TYPE_CHECKING:
    from .cluster import Cluster

JOBS = "name_to_job_details"
NODES = "name_to_node_details"
CONTAINERS = "name_to_container_details"
PENDING = "pending_job_tickets"
KILLED = "killed_job_tickets"
FINAL_STATUSES = ("finish", "failed", "killed")
#: paictl's own keys beside MARO's: the wrapper's records (wrapper.py), a stop's time, and verdicts once reached
#: (so a master that rewrites a job's status from stale records cannot change them).
EXITS = "paictl:job:{job_id}:exits"
#: A node's refusal to create one of the job's containers (container name -> node, task and the engine's reason):
#: written by the node, since MARO's master drops the node's answer, and read by every verdict.
REFUSALS = "paictl:job:{job_id}:refusals"
HOSTS = "paictl:job:{job_id}:hosts"
STOPS = "paictl:stops"
#: job id -> when it was submitted through paictl (RFC 3339, UTC, the master's clock): MARO's records keep no time.
SUBMITTED = "paictl:submitted"
VERDICTS = "paictl:verdicts"
#: Bounds on what a record may claim (a record is shared state anybody on the cluster network can write).
MAX_INSTANCES = 100_000
#: MARO's fault tolerance keys, written by the job's Proxy (runtime, registered names) and the master (counts).
RUNTIME = "job:{job_id}:runtime_details"
REJOIN_NAMES = "job:{job_id}:rejoin_component_name_to_container_name"
RESTART_TIMES = "job:{job_id}:component_id_to_restart_times"
#: maro/utils/exit_code.py: a container exiting 64 is never restarted; 65 stops every container of its job.
NON_RESTART_EXIT_CODE = 64
KILL_ALL_EXIT_CODE = 65


def node_lock(node: str) -> str:
    return f"lock:{NODES}:{node}"


def standardise(job_file: dict[str, Any], *, seed: str) -> dict[str, Any]:
    """MARO's `_standardize_job_details`, with ids derived from `seed` instead of drawn at random."""
    job = copy.deepcopy(job_file)
    job.setdefault("tags", {})
    job["id"] = derived_id("job", seed, job["name"])
    for component, details in job["components"].items():
        details["id"] = derived_id("component", seed, job["name"], component)
    job["status"] = "pending"
    job["containers"] = {}
    return job


def container_name(job: dict[str, Any], component: str, index: int, restart: int = 0) -> str:
    """MARO's `{job_id}-{component_id}-{index}-{6 hex}`; the 6 hex are derived (MARO: uuid4) so plans repeat."""
    component_id = job["components"][component]["id"]
    suffix = hashlib.sha256(f"{job['id']}\0{component}\0{index}\0{restart}".encode()).hexdigest()[:6]
    return f"{job['id']}-{component_id}-{index}-{suffix}"


def memory_mb(text: Any) -> float:
    """"4096m" -> 4096 (MARO strips the m)."""
    return float(str(text).replace("m", "") or 0)


def demands(job: dict[str, Any]):
    """One placement demand per container, in component order then index (MARO's get_required_resources)."""
    from .placement import Demand

    out = []
    for component, details in job["components"].items():
        resources = details["resources"]
        for index in range(details["num"]):
            out.append(Demand(name=container_name(job, component, index), component=component, index=index,
                              cpu=float(resources["cpu"]), memory=memory_mb(resources["memory"]),
                              gpu=float(resources["gpu"])))
    return out


def connect(cluster: Cluster, *, timeout: float = 5.0):
    """A redis-py client for the cluster's master (password and TLS from the cluster file)."""
    try:
        import redis
    except ImportError:  # pragma: no cover - a dependency
        raise ClusterError("the grass target needs the redis package: pip install redis") from None
    return redis.Redis(host=cluster.master.hostname, port=cluster.master.redis_port,
                       password=cluster.master.redis_password, ssl=cluster.master.redis_tls,
                       decode_responses=True, socket_timeout=timeout, socket_connect_timeout=timeout)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def job_problem(job: Any) -> Optional[str]:
    """What makes a job record unusable, or None. Only what paictl reads is checked."""
    if not isinstance(job, dict):
        return "not a JSON object"
    for key in ("name", "id"):
        if not isinstance(job.get(key), str) or not job[key]:
            return f"'{key}' is not a non-empty string"
    if not isinstance(job.get("status", ""), str):
        return "'status' is not a string"
    components = job.get("components")
    if not isinstance(components, dict) or not components:
        return "'components' is not a non-empty object"
    for name, details in components.items():
        where = f"components.{name}"
        if not isinstance(details, dict):
            return f"'{where}' is not an object"
        if not isinstance(details.get("id"), str):
            return f"'{where}.id' is not a string"
        num = details.get("num")
        if not isinstance(num, int) or isinstance(num, bool) or not 0 <= num <= MAX_INSTANCES:
            return f"'{where}.num' is not a count from 0 to {MAX_INSTANCES}"
        resources = details.get("resources")
        if not isinstance(resources, dict) or not _number(resources.get("cpu")) or not _number(resources.get("gpu")) \
                or not isinstance(resources.get("memory"), str) or not str(resources["memory"]).rstrip("m").isdigit():
            return f"'{where}.resources' is not {{cpu: number, memory: \"<MB>m\", gpu: number}}"
        for key in ("command", "image"):
            if not isinstance(details.get(key), str):
                return f"'{where}.{key}' is not a string"
        if not isinstance(details.get("mount"), dict) or not isinstance(details["mount"].get("target"), str):
            return f"'{where}.mount.target' is not a string"
    for key in ("containers", "tags", "allocation"):
        if key in job and not isinstance(job[key], dict):
            return f"'{key}' is not an object"
    return None


def container_problem(details: Any) -> Optional[str]:
    """A container record paictl can use: MARO's labels (as strings) and docker's `State`."""
    if not isinstance(details, dict):
        return "not a JSON object"
    if not isinstance(details.get("state"), dict):
        return "'state' is not an object"
    for key in ("job_id", "component_id", "component_type"):
        if not isinstance(details.get(key), str):
            return f"'{key}' is not a string"
    if not str(details.get("component_index")).isdigit():
        return "'component_index' is not a number"
    if "node_name" in details and not isinstance(details["node_name"], str):
        return "'node_name' is not a string"
    if not str(details.get("restart_index", 0)).isdigit():
        return "'restart_index' is not a number"
    return None


def node_problem(node: Any) -> Optional[str]:
    if not isinstance(node, dict):
        return "not a JSON object"
    if not isinstance(node.get("hostname"), str) or not node["hostname"]:
        return "'hostname' is not a non-empty string"
    port = (node.get("api_server") or {}).get("port") if isinstance(node.get("api_server"), dict) else None
    if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
        return "'api_server.port' is not a port number"
    for key in ("state", "resources", "containers"):
        if key in node and not isinstance(node[key], dict):
            return f"'{key}' is not an object"
    return None


def _rfc3339(seconds: Any) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(int(seconds), datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def refusal_problem(record: Any) -> Optional[str]:
    if not isinstance(record, dict):
        return "not a JSON object"
    if not isinstance(record.get("reason"), str) or not isinstance(record.get("node"), str):
        return "'reason' and 'node' are not strings"
    if not isinstance(record.get("role"), str) or not isinstance(record.get("index"), int):
        return "'role' is not a string or 'index' not a number"
    return None


def _int_label(value: Any) -> int:
    try:
        return int(str(value))
    except ValueError:
        return -1


class Records:
    """Typed access to MARO's keys; every Redis failure becomes ClusterError (exit 3) naming the master.

    Every record is untrusted: one that is not JSON or lacks what paictl reads is left out, and `problems` says
    which key and what is wrong (the master logs them, `status` prints them as notes), so one bad record never stops
    a pass or a command."""

    def __init__(self, cluster: Cluster, client: Any = None):
        self.cluster = cluster
        self.redis = client if client is not None else connect(cluster)
        self.problems: dict[str, str] = {}

    def _decode(self, key: str, field: str, text: Any, check) -> Optional[dict[str, Any]]:
        where = f"{key}[{field[:80]!r}]"
        try:
            value = json.loads(text)
        except (TypeError, ValueError, RecursionError):
            self.problems[where] = "not JSON"
            return None
        problem = check(value)
        if problem:
            self.problems[where] = problem
            return None
        self.problems.pop(where, None)
        return value

    def _hash(self, key: str, check) -> dict[str, dict[str, Any]]:
        out = {}
        for field, text in self._call("hgetall", key).items():
            value = self._decode(key, field, text, check)
            if value is not None:
                out[field] = value
        return out

    def _call(self, method: str, *args: Any) -> Any:
        import redis

        try:
            return getattr(self.redis, method)(*args)
        except redis.RedisError as exc:
            raise ClusterError(f"grass master {self.cluster.redis_address}: redis: {exc}") from None

    # jobs
    def job(self, name: str) -> Optional[dict[str, Any]]:
        """The job's record; None when there is none; ClusterError (naming the key) when it is malformed."""
        text = self._call("hget", JOBS, name)
        if text is None:
            return None
        job = self._decode(JOBS, name, text, job_problem)
        if job is None:
            raise ClusterError(f"the record of job {name!r} ({JOBS}[{name!r}]) on {self.cluster.redis_address} is "
                               f"malformed: {self.problems[f'{JOBS}[{name[:80]!r}]']}")
        return job

    def jobs(self) -> dict[str, dict[str, Any]]:
        return self._hash(JOBS, job_problem)

    def jobs_named(self, names: list[str]) -> dict[str, dict[str, Any]]:
        """The current records of these jobs, in one round trip; a missing or malformed one is left out (a malformed
        one is noted in `problems`). The master reads a ticket's job when it takes the ticket, as MARO's agents do:
        a job submitted (or submitted again) after the pass read every job would otherwise lose its ticket."""
        if not names:
            return {}
        found = {}
        for name, text in zip(names, self._call("hmget", JOBS, *names)):
            if text is not None:
                job = self._decode(JOBS, name, text, job_problem)
                if job is not None:
                    found[name] = job
        return found

    def update_job(self, job: dict[str, Any]) -> bool:
        """Write `job` back only if the record is still this run of the job (same id), atomically: the master never
        overwrites a job submitted again under the same name while it was working on the previous one."""
        import redis

        try:
            with self.redis.pipeline(transaction=True) as pipe:
                while True:
                    try:
                        pipe.watch(JOBS)
                        text = pipe.hget(JOBS, job["name"])
                        try:
                            current = json.loads(text) if text else None
                        except ValueError:
                            current = None
                        if not isinstance(current, dict) or current.get("id") != job["id"]:
                            pipe.unwatch()
                            return False
                        pipe.multi()
                        pipe.hset(JOBS, job["name"], json.dumps(job))
                        pipe.execute()
                        return True
                    except redis.WatchError:
                        continue
        except redis.RedisError as exc:
            raise ClusterError(f"grass master {self.cluster.redis_address}: redis: {exc}") from None

    def submit(self, job: dict[str, Any]) -> None:
        """What MARO's `POST /v1/jobs` does: store the job, then queue its name (one transaction)."""
        import redis

        try:
            seconds, _ = self.redis.time()
            pipe = self.redis.pipeline(transaction=True)
            pipe.hset(JOBS, job["name"], json.dumps(job))
            pipe.rpush(PENDING, job["name"])
            pipe.hset(SUBMITTED, job["id"], _rfc3339(seconds))
            pipe.execute()
        except redis.RedisError as exc:
            raise ClusterError(f"grass master {self.cluster.redis_address}: redis: {exc}") from None

    def pending(self) -> list[str]:
        return self._call("lrange", PENDING, 0, -1)

    def killed(self) -> list[str]:
        return self._call("lrange", KILLED, 0, -1)

    def kill(self, job: dict[str, Any]) -> None:
        """MARO's `POST /v1/jobs/<name>:stop` (drop the pending ticket, queue a killed ticket, keep the job's
        details), and the time of the stop, in one transaction."""
        import redis

        try:
            seconds, micros = self.redis.time()
            pipe = self.redis.pipeline(transaction=True)
            pipe.lrem(PENDING, 0, job["name"])
            pipe.rpush(KILLED, job["name"])
            pipe.hsetnx(STOPS, job["id"], f"{seconds + micros / 1e6:.6f}")
            pipe.execute()
        except redis.RedisError as exc:
            raise ClusterError(f"grass master {self.cluster.redis_address}: redis: {exc}") from None

    def drop_ticket(self, queue: str, name: str) -> None:
        self._call("lrem", queue, 0, name)

    # nodes and containers
    def nodes(self) -> dict[str, dict[str, Any]]:
        return {name: self._usable_containers(name, node) for name, node in self._hash(NODES, node_problem).items()}

    def node(self, name: str) -> Optional[dict[str, Any]]:
        text = self._call("hget", NODES, name)
        node = self._decode(NODES, name, text, node_problem) if text else None
        return self._usable_containers(name, node) if node is not None else None

    def _usable_containers(self, name: str, node: dict[str, Any]) -> dict[str, Any]:
        """The node with only the container records paictl can use (a bad one is noted, the node kept)."""
        containers = node.get("containers") or {}
        for container, details in list(containers.items()):
            problem = container_problem(details)
            where = f"{NODES}[{name[:80]!r}].containers[{container[:80]!r}]"
            if problem:
                self.problems[where] = problem
                del containers[container]
            else:
                self.problems.pop(where, None)
        return node

    def containers(self) -> dict[str, dict[str, Any]]:
        return self._hash(CONTAINERS, container_problem)

    # paictl's own keys
    def exits(self, job_id: str) -> dict[str, str]:
        return self._call("hgetall", EXITS.format(job_id=job_id))

    def refusals(self, job_id: str) -> dict[str, dict[str, Any]]:
        """The job's containers a node refused to create: name -> {node, role, index, reason, time}."""
        return self._hash(REFUSALS.format(job_id=job_id), refusal_problem)

    def record_refusal(self, labels: dict[str, Any], container: str, node: str, reason: str) -> None:
        """A node could not create `container`: keep why (first refusal of a container wins), and queue a killed
        ticket for its job, so that either master stops the containers already started (a job with a task that
        cannot start fails, as OpenPAI's do)."""
        import redis

        job_id, job_name = labels.get("job_id"), labels.get("job_name")
        try:
            seconds, micros = self.redis.time()
            record = {"node": node, "role": str(labels.get("component_type", "")),
                      "index": _int_label(labels.get("component_index")), "reason": reason[:2000],
                      "time": seconds + micros / 1e6}
            pipe = self.redis.pipeline(transaction=True)
            pipe.hsetnx(REFUSALS.format(job_id=job_id), container, json.dumps(record))
            if isinstance(job_name, str) and job_name:
                pipe.lrem(PENDING, 0, job_name)
                pipe.rpush(KILLED, job_name)
            pipe.execute()
        except redis.RedisError as exc:
            raise ClusterError(f"grass master {self.cluster.redis_address}: redis: {exc}") from None

    def rejoin(self, job: dict[str, Any]):
        """Whether the master will restart a failed container of `job` (verdict.rejoin)."""
        from .verdict import rejoin

        runtime = self._call("hgetall", RUNTIME.format(job_id=job["id"]))
        counts = self._call("hgetall", RESTART_TIMES.format(job_id=job["id"])) if runtime else {}
        registered = self._call("hgetall", REJOIN_NAMES.format(job_id=job["id"])) if runtime else {}
        return rejoin(job, runtime, counts, registered=registered)

    def submitted(self, job_ids: Optional[list[str]] = None) -> dict[str, str]:
        """job id -> when paictl submitted it (RFC 3339); all of them without `job_ids`."""
        if job_ids is None:
            return self._call("hgetall", SUBMITTED)
        values = self._call("hmget", SUBMITTED, job_ids) if job_ids else []
        return {job_id: value for job_id, value in zip(job_ids, values) if isinstance(value, str)}

    def stopped_at(self, job_id: str) -> Optional[float]:
        text = self._call("hget", STOPS, job_id)
        try:
            return float(text) if text is not None else None
        except ValueError:
            return 0.0  # a stop was asked for, at an unreadable time

    def verdict(self, job_id: str) -> Optional[dict[str, Any]]:
        text = self._call("hget", VERDICTS, job_id)
        if text is None:
            return None
        return self._decode(VERDICTS, job_id, text, lambda v: None if isinstance(v, dict) and isinstance(
            v.get("state"), str) and isinstance(v.get("message", ""), str) else "not a verdict")

    def keep_verdict(self, job_id: str, verdict: dict[str, Any]) -> None:
        """Record a verdict once: the first one reached stays (HSETNX)."""
        self._call("hsetnx", VERDICTS, job_id, json.dumps(verdict))

    def job_containers(self, job: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
        for name, details in sorted(self.containers().items()):
            if details.get("job_id") == job["id"]:
                yield name, details

    def time(self) -> float:
        seconds, micros = self._call("time")
        return seconds + micros / 1e6
