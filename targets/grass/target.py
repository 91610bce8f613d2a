"""Compile a job for MARO's Grass: the job deployment file `maro grass job start` reads, and with a cluster, the plan.

- **The job file** (`schemas/grass-job.schema.json`, maro.md A.6): one component per task role, in job order, with
  the role's image (its dockerimage prerequisite's uri), `resources {cpu, memory "<MB>m", gpu}`, `num` = instances,
  `mount.target` (`extras.grass.mount`, default /mnt/data: where the cluster's shared data folder appears) and
  `command`: the entrypoint rendered as for the other targets (deployment pre/post commands, parameters), run by
  `bash -o errexit -o nounset -o pipefail` as OpenPAI's runtime runs it, after exporting the PAI_* variables that
  follow from the job (env.static_exports). MARO runs `docker run ... IMAGE COMMAND` through a shell, so the
  command is one shell-quoted string. `allocation` comes from `extras.grass.allocation: {mode, metric}`, default
  `single-metric-balanced` on `cpu` (MARO's own fallback for restarts); `mode` from `extras.grass.mode`
  (default grass/on-premises).
- **The plan** (`--cluster`): where each container lands (placement.py, MARO's heaps on the nodes' declared
  resources, as on an empty cluster) and its whole environment (env.py). Ids are derived from the job name, so the
  same job gives the same plan; `paictl submit` derives them from the submission instead (redis_records).
- **Secrets**: Grass has nowhere safe to put them (Redis and docker labels are readable by the whole private
  network), so a job whose commands use `$secrets` is refused (E821) rather than leaked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Optional

from paictl.protocol.codes import finding
from paictl.targets.findings import raise_if_any

from .cluster import load_cluster
from .placement import METRICS, MODES

if TYPE_CHECKING:
    from paictl.compiler.profiles import Profile
    from paictl.protocol.diagnostics import Finding
    from paictl.protocol.loading import Document
    from paictl.protocol.model import Job, TaskRole

    from .cluster import Cluster

PLAN_API_VERSION = "paictl.dev/v1alpha1"
PLAN_KIND = "GrassPlan"
DEFAULT_ALLOCATION = {"mode": "single-metric-balanced", "metric": "cpu"}
DEFAULT_MODE = "grass/on-premises"
DEFAULT_MOUNT = "/mnt/data"
_EXTRAS_KEYS = {"allocation", "mode", "mount"}


def compile_grass(job: Job, profile: Profile, *, parameters: Mapping[str, Any] | None = None,
                  secrets_from: str | None = None, document: Document | None = None,
                  cluster: Optional[Cluster] = None, redis: Optional[str] = None) -> list[dict[str, Any]]:
    """[job file] or, with a cluster, [job file, plan]. Raises InvalidJobError (E821, E822) and PlacementError.

    `redis` (host:port; default: the cluster's) is where the commands find the master's Redis under a master that
    does not set their PAI_* variables (a stock MARO master); `submit` always passes its cluster's."""
    from paictl.compiler.render import render_entrypoint
    from paictl.errors import UsageError

    from paictl.targets.framework.native import runtime_commands

    if secrets_from is not None:
        raise UsageError("--secrets-from names a Kubernetes Secret; Grass has no secret store")
    from paictl.targets.framework.env import min_failed

    from . import wrapper
    from .env import job_env, role_exports, table_text
    from .redis_records import KILL_ALL_EXIT_CODE, NON_RESTART_EXIT_CODE

    errors: list[Finding] = []
    settings = _settings(job, errors)
    scalars, table = job_env(job, profile)
    if redis is None and cluster is not None:
        redis = cluster.redis_address
    components = {}
    for role in job.task_roles:
        entrypoint = render_entrypoint(job, role.name, parameters)
        _, substitutions = runtime_commands(entrypoint, bool(job.secrets))
        if substitutions:
            errors.append(finding("E821", f"/taskRoles/{role.name}/commands",
                                  f"task role '{role.name}' uses $secrets in its commands; Grass would have to put "
                                  f"them in Redis and docker labels, which the whole cluster network can read",
                                  hint="pass the values through the cluster's shared data folder instead"))
        for key, value, least in (("cpu", role.resources.cpu, "above 0"), ("memoryMB", role.resources.memory_mb, "0"),
                                  ("gpu", role.resources.gpu, "0")):
            if value < 0 or (key == "cpu" and value == 0):
                errors.append(finding("E823", f"/taskRoles/{role.name}/resourcePerInstance/{key}",
                                      f"task role '{role.name}' asks for {key} {value}; a Grass node reserves "
                                      f"{key} for each container, so it must be at least {least}",
                                      hint="give the resources each container really needs"))
        components[role.name] = {
            "image": _image(job, role),
            "resources": {"cpu": role.resources.cpu, "memory": f"{role.resources.memory_mb}m",
                          "gpu": role.resources.gpu},
            "num": role.instances,
            "mount": {"target": settings["mount"]},
            "command": wrapper.command(role_exports(job, role, scalars), entrypoint, redis=redis,
                                       fail_status=KILL_ALL_EXIT_CODE if min_failed(role) == 1 else
                                       NON_RESTART_EXIT_CODE),
        }
    raise_if_any(errors, document, document.path if document is not None else "<job>")
    job_file = {"mode": settings["mode"], "name": job.name, "allocation": settings["allocation"],
                "tags": {wrapper.ENV_TAG: table_text(table)}, "components": components}
    if cluster is None:
        return [job_file]
    return [job_file, plan(job, profile, job_file, cluster)]


#: What a plan shows for the ids MARO's records draw per submission (a job submitted twice runs twice, with new
#: container names: a fixed id would collide with the containers its previous run left on the nodes).
AT_SUBMIT = "(assigned at submit)"


def plan(job: Job, profile: Profile, job_file: dict[str, Any], cluster: Cluster) -> dict[str, Any]:
    """Where each container lands, placed as MARO would on the cluster's idle nodes, and what it starts with: the
    job-wide variables once (`env`), each container's own beside it. Ids are drawn at submit, and say so."""
    from .env import parse_table, peer_env, role_exports
    from .placement import Demand, Free, place
    from .wrapper import ENV_TAG

    free, notes = [], []
    for node in cluster.nodes:
        if "all" in (node.cpu, node.memory, node.gpu):
            notes.append(f"node {node.name} is left out: its resources are 'all', known only to its agent")
            continue
        free.append(Free(node=node.name, cpu=float(node.cpu), memory=float(node.memory), gpu=float(node.gpu)))
    wanted = [Demand(name=f"{component}-{index}", component=component, index=index,
                     cpu=float(details["resources"]["cpu"]), memory=float(details["resources"]["memory"][:-1]),
                     gpu=float(details["resources"]["gpu"]))
              for component, details in job_file["components"].items() for index in range(details["num"])]
    placement = place(wanted, free, mode=job_file["allocation"]["mode"], metric=job_file["allocation"]["metric"])
    hosts = {(d.component, d.index): cluster.node(placement[d.name]).hostname for d in wanted}
    env = {**parse_table(job_file["tags"][ENV_TAG]), **peer_env(job_file, hosts),
           "CLUSTER_ID": cluster.id, "CLUSTER_NAME": cluster.name, "JOB_ID": AT_SUBMIT, "JOB_NAME": job.name,
           "MASTER_HOSTNAME": cluster.master.hostname, "MASTER_REDIS_PORT": str(cluster.master.redis_port),
           "PYTHONUNBUFFERED": "0"}
    roles = {role.name: role for role in job.task_roles}
    containers = []
    for demand in wanted:
        node = cluster.node(placement[demand.name])
        own = {key: str(demand.index) if value == "$COMPONENT_INDEX" else value
               for key, value in role_exports(job, roles[demand.component], {}).items()}
        own.update({"NODE_ID": node.name, "NODE_NAME": node.name, "COMPONENT_ID": AT_SUBMIT,
                    "COMPONENT_TYPE": demand.component, "COMPONENT_INDEX": str(demand.index),
                    "CONTAINER_NAME": AT_SUBMIT, "PAI_CURRENT_CONTAINER_IP": node.hostname,
                    "PAI_CONTAINER_HOST_IP": node.hostname})
        containers.append({
            "task": demand.name, "node": node.name, "hostname": node.hostname, "component": demand.component,
            "index": demand.index, "resources": dict(job_file["components"][demand.component]["resources"]),
            "env": dict(sorted(own.items())),
        })
    return {
        "apiVersion": PLAN_API_VERSION,
        "kind": PLAN_KIND,
        "metadata": {"name": job.name},
        "cluster": {"name": cluster.name, "id": cluster.id, "redis": cluster.redis_address},
        "job": {"id": AT_SUBMIT, "name": job.name, "components": {name: AT_SUBMIT for name in job_file["components"]}},
        "allocation": dict(job_file["allocation"]),
        "notes": notes,
        "env": dict(sorted(env.items())),
        "containers": containers,
    }


def _settings(job: Job, errors: list[Finding]) -> dict[str, Any]:
    extras = job.extras.get("grass") if isinstance(job.extras, Mapping) else None
    settings: dict[str, Any] = {"allocation": dict(DEFAULT_ALLOCATION), "mode": DEFAULT_MODE,
                                "mount": DEFAULT_MOUNT}
    if extras is None:
        return settings
    if not isinstance(extras, Mapping):
        errors.append(finding("E822", "/extras/grass", "extras.grass must be a mapping"))
        return settings
    for key in sorted(set(extras) - _EXTRAS_KEYS):
        errors.append(finding("E822", f"/extras/grass/{key}", f"unknown key '{key}' in extras.grass "
                              f"(known: {', '.join(sorted(_EXTRAS_KEYS))})"))
    allocation = extras.get("allocation", {})
    if not isinstance(allocation, Mapping):
        errors.append(finding("E822", "/extras/grass/allocation", "extras.grass.allocation must be a mapping"))
        allocation = {}
    for key, allowed in (("mode", MODES), ("metric", METRICS)):
        value = allocation.get(key, DEFAULT_ALLOCATION[key])
        if value not in allowed:
            errors.append(finding("E822", f"/extras/grass/allocation/{key}",
                                  f"extras.grass.allocation.{key} {value!r} is not one of {', '.join(allowed)}"))
        settings["allocation"][key] = value
    for key in sorted(set(allocation) - {"mode", "metric"}):
        errors.append(finding("E822", f"/extras/grass/allocation/{key}",
                              f"unknown key '{key}' in extras.grass.allocation (known: metric, mode)"))
    mode = extras.get("mode", DEFAULT_MODE)
    if mode not in ("grass/on-premises", "grass/azure"):
        errors.append(finding("E822", "/extras/grass/mode", f"extras.grass.mode {mode!r} is not grass/on-premises "
                              f"or grass/azure"))
    settings["mode"] = mode
    mount = extras.get("mount", DEFAULT_MOUNT)
    if not isinstance(mount, str) or not mount.startswith("/"):
        errors.append(finding("E822", "/extras/grass/mount", "extras.grass.mount must be an absolute path"))
    settings["mount"] = mount
    return settings


def _image(job: Job, role: TaskRole) -> str:
    prerequisite = job.prerequisite("dockerimage", role.docker_image)
    uri = prerequisite.uri if prerequisite is not None else None
    return uri if isinstance(uri, str) else role.docker_image


def master_agent(cluster_files: list[str], *, interval: Optional[float] = None) -> Any:
    """`paictl grass master`: the master agent for the cluster the files describe (reached through the target
    registry, as the CLI reaches everything below it)."""
    from .master import MasterAgent

    return MasterAgent(load_cluster(cluster_files), interval=interval)


def node_agent(cluster_files: list[str], name: str, *, work_dir: Any, interval: Optional[float] = None,
               engine: str = "auto") -> Any:
    """`paictl grass node`: the agent of node `name`; its API is served once `start()` is called."""
    from .node import NodeAgent

    return NodeAgent(load_cluster(cluster_files), name, work_dir=work_dir, interval=interval, engine=engine)


#: The `Target` protocol's entry point (paictl.targets.get_target("grass").compile).
compile = compile_grass  # noqa: A001 - the name every target module exports
