"""The environment of a Grass container: MARO's variables, the master's address, and OpenPAI's runtime contract.

MARO's master gives every container CLUSTER_ID, CLUSTER_NAME, NODE_ID, NODE_NAME, JOB_ID, JOB_NAME, COMPONENT_ID,
COMPONENT_TYPE, COMPONENT_INDEX, CONTAINER_NAME and PYTHONUNBUFFERED=0 (maro.md A.8). It never says where the
master's Redis is, although MARO's own `Proxy` needs it to find peers; paictl adds MASTER_HOSTNAME and
MASTER_REDIS_PORT (the Redis password, a secret, is never injected).

OpenPAI commands read PAI_* variables. The ones that follow from the job alone (PAI_JOB_NAME, PAI_TASK_ROLE_LIST,
PAI_TASK_INDEX from COMPONENT_INDEX...) are exported by the command itself (`static_exports`), so even a stock MARO
master that starts the job file runs them with those; the ones that depend on where containers land
(PAI_HOST_IP_<role>_<i>, PAI_TASK_ROLE_<role>_HOST_LIST, PAI_CURRENT_CONTAINER_IP) are computed from the placement
by `container_env`, which the plan shows and paictl's master injects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from paictl.protocol.names import convert_name

if TYPE_CHECKING:
    from paictl.compiler.profiles import Profile
    from paictl.protocol.model import Job, TaskRole

    from .cluster import Cluster


def static_exports(job: Job, profile: Profile, role: TaskRole) -> dict[str, str]:
    """PAI_* variables that follow from the job; values starting with $ are expanded by the container's shell."""
    from paictl.targets.framework.env import framework_env

    virtual_cluster = job.defaults.virtual_cluster or profile.virtual_cluster
    env = {item["name"]: str(item["value"]) for item in framework_env(job, profile, virtual_cluster)}
    converted = convert_name(role.name)
    env.update({
        "PAI_CURRENT_TASK_ROLE_NAME": role.name,
        "PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX": "$COMPONENT_INDEX",
        "PAI_TASK_INDEX": "$COMPONENT_INDEX",
        "FC_TASKROLE_NAME": converted,
        "FC_TASK_INDEX": "$COMPONENT_INDEX",
        "FC_FRAMEWORK_NAME": convert_name(job.name),
    })
    return env


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
    """The variables a container is started with (create config `environments`)."""
    env = maro_env(cluster, node, job, component, index, container)
    env.update(peer_env(job, hosts))
    env["PAI_CURRENT_CONTAINER_IP"] = env["PAI_CONTAINER_HOST_IP"] = str(node["hostname"])
    return env
