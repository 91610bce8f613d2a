"""HiveD pod scheduling specs, computed the way OpenPAI's rest-server computes them (openpai.md c.6).

Upstream finds most HiveD misfits only when the job is submitted (HTTP 400 from `middlewares/v2/hived.js`), or never
(the pod then waits in the scheduler forever). The SKU table is in the cluster profile, so paictl checks all of them
while compiling, reports every one at once and locates each in the job file.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any, Mapping

from paictl.protocol.diagnostics import Anchor

if TYPE_CHECKING:
    from paictl.compiler.profiles import Profile, Sku
    from paictl.protocol.diagnostics import Finding
    from paictl.protocol.model import Job, TaskRole

#: `extras.hivedScheduler.jobPriorityClass` to HiveD priority (hived.js); the ajv schema allows only these three.
PRIORITIES = {"prod": 100, "test": 10, "oppo": -1}
DEFAULT_PRIORITY_CLASS = "test"

SPEC_ANNOTATION = "hivedscheduler.microsoft.com/pod-scheduling-spec"
ENABLE_RESOURCE = "hivedscheduler.microsoft.com/pod-scheduling-enable"
ISOLATION_FIELD = "metadata.annotations['hivedscheduler.microsoft.com/pod-leaf-cell-isolation']"

_MAX_SAFE_INTEGER = 2 ** 53 - 1

#: Job-level switches copied into every pod's spec when the job sets them.
_SWITCHES = ("gangReleaseEnable", "lazyPreemptionEnable", "ignoreK8sSuggestedNodes")


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Unit:
    """One SKU's resources per leaf cell (HiveD's resourceUnits entry)."""
    cpu: int
    memory_mb: int
    gpu: int


def hived_specs(job: Job, profile: Profile, virtual_cluster: str) -> tuple[dict[str, dict[str, Any]], list[Finding]]:
    """Per task role name, the pod scheduling spec (an ordered dict); plus every finding that prevents it."""
    from paictl.protocol.codes import finding

    config = job.extras.get("hivedScheduler") or {}
    config = config if isinstance(config, Mapping) else {}
    roles_config = config.get("taskRoles") or {}
    roles_config = roles_config if isinstance(roles_config, Mapping) else {}
    findings: list[Finding] = []
    skus = profile.hived.skus
    base = "/extras/hivedScheduler"

    priority_class = config.get("jobPriorityClass") or DEFAULT_PRIORITY_CLASS
    if priority_class not in PRIORITIES:
        findings.append(finding("E605", f"{base}/jobPriorityClass",
                                f"HiveD jobPriorityClass {priority_class!r} is not one of {', '.join(PRIORITIES)}"))
    priority = PRIORITIES.get(priority_class)

    names = [role.name for role in job.task_roles]
    for name in roles_config:
        if name not in names:
            findings.append(finding("E605", f"{base}/taskRoles/{name}", f"Taskrole {name} does not exist.",
                                    hint=f"task roles of this job: {', '.join(names)}", anchor=Anchor.KEY))

    cells: dict[str, int] = {}
    groups: dict[str, list[str]] = {}
    for role in job.task_roles:
        role_config = roles_config.get(role.name)
        role_config = role_config if isinstance(role_config, Mapping) else {}  # a Date: no settings, as upstream
        where = f"{base}/taskRoles/{role.name}"
        # hived.js reads these with lodash `get(..., null)` and tests `!= null`: an empty string is a value.
        sku_type, pinned = role_config.get("skuType"), role_config.get("pinnedCellId")
        if sku_type is not None and pinned is not None:
            findings.append(finding("E603", f"{where}/pinnedCellId", f"Taskrole {role.name} has both skuType and "
                                    "pinnedCellId, only one is allowed.", hint="remove one of them"))
        if sku_type is not None and sku_type not in skus:  # upstream crashes on it (resourceUnits[sku] is undefined)
            findings.append(finding("E602", f"{where}/skuType", f"Taskrole {role.name} has unknown skuType "
                                    f"{sku_type}, allow {', '.join(skus)}.", hint=_sku_hint(sku_type, skus)))
            continue
        count, problem = _leaf_cells(role, skus[sku_type] if sku_type is not None else None, skus)
        if problem:
            findings.append(finding("E604", f"/taskRoles/{role.name}/resourcePerInstance", problem))
        cells[role.name] = count
    # hived.js lists a group's members in the order of `hivedScheduler.taskRoles`, not of the job's task roles.
    for name in (n for n in roles_config if n in cells):
        role_config = roles_config[name] if isinstance(roles_config[name], Mapping) else {}
        group = role_config.get("affinityGroupName")
        if group is not None:
            members = groups.setdefault(group, [])
            if members and _placement(roles_config.get(members[0])) != _placement(role_config):
                findings.append(finding("E605", f"{base}/taskRoles/{name}/affinityGroupName",
                                        f"AffinityGroup {group} has inconsistent skuType or pinnedCellId."))
            members.append(name)
    requested = sum(role.instances * cells.get(role.name, 0) for role in job.task_roles)
    if requested > _MAX_SAFE_INTEGER and job.extras.get("gangAllocation", True) is True and priority_class != "oppo":
        # upstream's best-effort quota check; without HiveD's web service the quota is JavaScript's largest integer
        findings.append(finding("E604", "/taskRoles", f"Job requests {requested} SKUs, exceeds maximum "
                                f"{_MAX_SAFE_INTEGER} SKUs in VC {virtual_cluster}.", anchor=Anchor.KEY))
    if findings:
        return {}, findings

    user_job = f"{profile.user}~{job.name}"
    by_name = {role.name: role for role in job.task_roles}
    specs = {}
    for role in job.task_roles:
        role_config = roles_config.get(role.name)
        role_config = role_config if isinstance(role_config, Mapping) else {}  # a Date: no settings, as upstream
        spec: dict[str, Any] = {
            "virtualCluster": virtual_cluster,
            "priority": priority,
            "pinnedCellId": role_config.get("pinnedCellId"),
            "leafCellType": role_config.get("skuType"),
            "leafCellNumber": cells[role.name],
        }
        spec.update({key: config[key] for key in _SWITCHES if key in config})
        group = role_config.get("affinityGroupName")
        if groups:
            members = groups.get(group) if group is not None else None
        else:
            # hived.js makes the default group only when `extras.gangAllocation` is absent or exactly true
            # (`get(..., true) === true`); k8s.js turns gang allocation off only when it is exactly false.
            group, members = "default", (names if job.extras.get("gangAllocation", True) is True else None)
        spec["affinityGroup"] = None if members is None else {
            "name": f"{user_job}/{group}",
            "members": [{"podNumber": by_name[m].instances_written, "leafCellNumber": cells[m]} for m in members],
        }
        specs[role.name] = spec
        unsized = [m for m in members or () if by_name[m].instances_written is None]
        for name in unsized if not findings else ():
            # upstream writes `podNumber: undefined`, which js-yaml's safeDump refuses: the submission fails
            findings.append(finding("E609", f"/taskRoles/{name}", f"task role '{name}' has no `instances`; with "
                                    f"HiveD it is a member of affinity group '{group}', whose pod count OpenPAI "
                                    "takes from `instances` as written, and its rest-server fails on the missing "
                                    "value", "write `instances: 1` (the default elsewhere)", anchor=Anchor.KEY))
    return ({}, findings) if findings else (specs, [])


def priority_of(specs: Mapping[str, Mapping[str, Any]]) -> int:
    """The job's HiveD priority as the PriorityClass value uses it: clamped to [-1, 126]."""
    priority = next(iter(specs.values()))["priority"] if specs else 0
    return max(-1, min(126, priority or 0))


def _leaf_cells(role: TaskRole, sku: Sku | None, skus: Mapping[str, Sku]) -> tuple[int, str | None]:
    """max(ceil(request / per-cell)) over gpu, cpu and memory; without a skuType, per-cell is the minimum of all SKUs.

    Upstream takes the minimum over the VC's SKUs (all SKUs when the HiveD web service is unreachable, as for the
    golden outputs); the profile lists the cluster's SKUs, so all of them are the candidates here.
    """
    unit = _Unit(cpu=sku.cpu, memory_mb=sku.memory_mb, gpu=sku.gpu) if sku else _Unit(
        cpu=min(s.cpu for s in skus.values()), memory_mb=min(s.memory_mb for s in skus.values()),
        gpu=min(s.gpu for s in skus.values()))
    res = role.resources
    # hived.js checks gpu, then cpu, then memory, and reports the first a cell has none of
    for request, per_cell, what in ((res.gpu, unit.gpu, "GPU"), (res.cpu, unit.cpu, "CPU"),
                                    (res.memory_mb, unit.memory_mb, "memory")):
        if request > 0 and per_cell == 0:
            return 0, (f"Taskrole {role.name} requests {request} {what}, but SKU "
                       f"{sku.name if sku else '(any)'} does not configure {what}.")
    terms = [math.ceil(request / per_cell) for request, per_cell in
             ((res.gpu, unit.gpu), (res.cpu, unit.cpu), (res.memory_mb, unit.memory_mb)) if per_cell > 0]
    count = max(terms) if terms else 0
    if count <= 0:  # hived.js writes it as computed; HiveD refuses a pod whose leafCellNumber is not positive
        return count, (f"Taskrole {role.name} requests no gpu, cpu or memory, so its leafCellNumber is {count}; "
                       "HiveD refuses such a pod and would never schedule it")
    limits = [sku.cells_per_node] if sku else [s.cells_per_node for s in skus.values()]
    if limits and all(limit is not None for limit in limits) and count > max(limits):
        return count, (f"Taskrole {role.name} needs {count} leaf cells per instance, but no node has more than "
                       f"{max(limits)}{' ' + sku.name if sku else ''} cells; HiveD would never schedule it")
    return count, None


def _placement(config: Any) -> tuple[Any, Any]:
    config = config if isinstance(config, Mapping) else {}
    return config.get("skuType"), config.get("pinnedCellId")


def _sku_hint(sku_type: str, skus: Mapping[str, Sku]) -> str | None:
    from paictl.protocol.suggest import did_you_mean

    guess = did_you_mean(sku_type, list(skus), {})
    return f"did you mean {guess!r}?" if guess else f"the cluster profile's SKUs: {', '.join(skus) or 'none'}"


def dump_spec(spec: Mapping[str, Any]) -> str:
    """The annotation's text: the spec as js-yaml 3 `safeDump` writes it, which is what the rest-server stores."""
    from paictl.targets.framework.jsyaml import safe_dump

    return safe_dump(spec)
