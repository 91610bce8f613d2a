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


class Records:
    """Typed access to MARO's keys; every Redis failure becomes ClusterError (exit 3) naming the master."""

    def __init__(self, cluster: Cluster, client: Any = None):
        self.cluster = cluster
        self.redis = client if client is not None else connect(cluster)

    def _call(self, method: str, *args: Any) -> Any:
        import redis

        try:
            return getattr(self.redis, method)(*args)
        except redis.RedisError as exc:
            raise ClusterError(f"grass master {self.cluster.redis_address}: redis: {exc}") from None

    # jobs
    def job(self, name: str) -> Optional[dict[str, Any]]:
        text = self._call("hget", JOBS, name)
        return json.loads(text) if text else None

    def jobs(self) -> dict[str, dict[str, Any]]:
        return {name: json.loads(text) for name, text in self._call("hgetall", JOBS).items()}

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
                        if not text or json.loads(text).get("id") != job["id"]:
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
            pipe = self.redis.pipeline(transaction=True)
            pipe.hset(JOBS, job["name"], json.dumps(job))
            pipe.rpush(PENDING, job["name"])
            pipe.execute()
        except redis.RedisError as exc:
            raise ClusterError(f"grass master {self.cluster.redis_address}: redis: {exc}") from None

    def pending(self) -> list[str]:
        return self._call("lrange", PENDING, 0, -1)

    def killed(self) -> list[str]:
        return self._call("lrange", KILLED, 0, -1)

    def kill(self, name: str) -> None:
        """MARO's `POST /v1/jobs/<name>:stop`: queue a killed ticket and keep the job's details."""
        self._call("rpush", KILLED, name)

    def drop_ticket(self, queue: str, name: str) -> None:
        self._call("lrem", queue, 0, name)

    # nodes and containers
    def nodes(self) -> dict[str, dict[str, Any]]:
        return {name: json.loads(text) for name, text in self._call("hgetall", NODES).items()}

    def node(self, name: str) -> Optional[dict[str, Any]]:
        text = self._call("hget", NODES, name)
        return json.loads(text) if text else None

    def containers(self) -> dict[str, dict[str, Any]]:
        return {name: json.loads(text) for name, text in self._call("hgetall", CONTAINERS).items()}

    def job_containers(self, job: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
        for name, details in sorted(self.containers().items()):
            if details.get("job_id") == job["id"]:
                yield name, details

    def time(self) -> float:
        seconds, micros = self._call("time")
        return seconds + micros / 1e6
