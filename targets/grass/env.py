"""The environment of a Grass container: MARO's variables, the master's address, and OpenPAI's runtime contract.

MARO's master gives every container CLUSTER_ID, CLUSTER_NAME, NODE_ID, NODE_NAME, JOB_ID, JOB_NAME, COMPONENT_ID,
COMPONENT_TYPE, COMPONENT_INDEX, CONTAINER_NAME and PYTHONUNBUFFERED=0 (maro.md A.8). It never says where the
master's Redis is, although MARO's own `Proxy` needs it to find peers; paictl adds MASTER_HOSTNAME and
MASTER_REDIS_PORT (the Redis password, a secret, is never injected).

OpenPAI commands read PAI_* variables. The job's scalars and the task role's own (PAI_JOB_NAME, PAI_TASK_INDEX from
COMPONENT_INDEX...) are exported by each command (`role_exports`); the job-wide per-role table (PAI_TASK_ROLE_LIST,
PAI_RESOURCE_<role>...) is kept once, in the job's tags (`job_env`); the ones that depend on where containers land
(PAI_HOST_IP_<role>_<i>, PAI_TASK_ROLE_<role>_HOST_LIST, PAI_CURRENT_CONTAINER_IP) come from the placement. paictl's
master injects the table and the placement (`container_env`); under any other master the command's wrapper reads
both from the master's Redis (wrapper.py).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Mapping

from paictl.protocol.names import convert_name

_TABLE_ENTRY = re.compile(r"PAI_[A-Za-z0-9_]+=[A-Za-z0-9_.,~-]*\Z")

if TYPE_CHECKING:
    from paictl.compiler.profiles import Profile
    from paictl.protocol.model import Job, TaskRole

    from .cluster import Cluster


#: Job-wide variables with one entry per task role (or a list of all of them): in every container, so kept once per
#: job in the job record's tags (wrapper.ENV_TAG) instead of once per task role's command (which grew with the square
#: of the roles: 197 MB for 1,000 roles).
_PER_ROLE = ("PAI_TASK_ROLE_TASK_COUNT_", "PAI_RESOURCE_", "PAI_MIN_FAILED_TASK_COUNT_", "PAI_MIN_SUCCEEDED_TASK_COUNT_")
_ROLE_LISTS = ("PAI_TASK_ROLE_LIST", "PAI_JOB_TASK_ROLE_LIST")


def job_env(job: Job, profile: Profile) -> tuple[dict[str, str], dict[str, str]]:
    """OpenPAI's job-wide variables, split: (scalars, exported by every command; the per-role table)."""
    from paictl.targets.framework.env import framework_env

    virtual_cluster = job.defaults.virtual_cluster or profile.virtual_cluster
    scalars, table = {}, {}
    for item in framework_env(job, profile, virtual_cluster):
        name = item["name"]
        (table if name in _ROLE_LISTS or name.startswith(_PER_ROLE) else scalars)[name] = str(item["value"])
    return scalars, table


def role_exports(job: Job, role: TaskRole, scalars: dict[str, str]) -> dict[str, str]:
    """What a task role's command exports: the job's scalars and the role's own; $COMPONENT_INDEX expands."""
    converted = convert_name(role.name)
    return {
        **scalars,
        "PAI_CURRENT_TASK_ROLE_NAME": role.name,
        "PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX": "$COMPONENT_INDEX",
        "PAI_TASK_INDEX": "$COMPONENT_INDEX",
        "FC_TASKROLE_NAME": converted,
        "FC_TASK_INDEX": "$COMPONENT_INDEX",
        "FC_FRAMEWORK_NAME": convert_name(job.name),
    }


def table_text(table: dict[str, str]) -> str:
    return " ".join(f"{name}={value}" for name, value in table.items())


def parse_table(text: Any) -> dict[str, str]:
    """The table back from a job record's tag; entries that are not NAME=value with a PAI_ name are dropped (the
    record is shared state anybody on the cluster network can write)."""
    if not isinstance(text, str):
        return {}
    found = {}
    for item in text.split():
        name, _, value = item.partition("=")
        if _TABLE_ENTRY.match(item):
            found[name] = value
    return found


def maro_env(cluster: Cluster, node: Mapping[str, Any], job: Mapping[str, Any], component: str, index: int,
             container: str) -> dict[str, str]:
    """What MARO's PendingJobAgent injects (all strings, as docker passes them), plus the master's address."""
    return {
        "CLUSTER_ID": cluster.id,
        "CLUSTER_NAME": cluster.name,
        "NODE_ID": str(node.get("id", node["name"])),
        "NODE_NAME": str(node["name"]),
        "JOB_ID": job["id"],
        "JOB_NAME": job["name"],
        "COMPONENT_ID": job["components"][component]["id"],
        "COMPONENT_TYPE": component,
        "COMPONENT_INDEX": str(index),
        "CONTAINER_NAME": container,
        "PYTHONUNBUFFERED": "0",
        "MASTER_HOSTNAME": cluster.master.hostname,
        "MASTER_REDIS_PORT": str(cluster.master.redis_port),
    }


def peer_env(job: Mapping[str, Any], hosts: Mapping[tuple[str, int], str]) -> dict[str, str]:
    """Every container's host, by task role and index (the same in every container of the job)."""
    env: dict[str, str] = {}
    instances = []
    for component, details in job["components"].items():
        name = convert_name(component)
        addresses = []
        for index in range(details["num"]):
            host = hosts.get((component, index), "")
            instances.append(f"{name}:{index}")
            env[f"PAI_HOST_IP_{name}_{index}"] = host
            addresses.append(host)
        env[f"PAI_TASK_ROLE_{name}_HOST_LIST"] = ",".join(addresses)
    env["PAI_TASK_ROLE_INSTANCES"] = ",".join(instances)
    return env


def container_env(cluster: Cluster, node: Mapping[str, Any], job: Mapping[str, Any], component: str, index: int,
                  container: str, hosts: Mapping[tuple[str, int], str]) -> dict[str, str]:
    """The variables paictl's master starts a container with (create config `environments`): with these, and
    PAICTL_MASTER=paictl, the command's wrapper needs no Redis (wrapper.py)."""
    from .wrapper import ENV_TAG

    env = maro_env(cluster, node, job, component, index, container)
    tags = job.get("tags")
    env.update(parse_table(tags.get(ENV_TAG) if isinstance(tags, Mapping) else None))
    env.update(peer_env(job, hosts))
    env["PAICTL_MASTER"] = "paictl"
    env["PAI_CURRENT_CONTAINER_IP"] = env["PAI_CONTAINER_HOST_IP"] = str(node["hostname"])
    return env
