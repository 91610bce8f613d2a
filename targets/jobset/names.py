"""Names on a JobSet cluster: the JobSet's and each replicatedJob's, and the pod hostnames peers reach each other by.

JobSet builds every child name from its parts (reference jobset.md 1.3): Job `<js>-<rjob>-<jobIndex>`, pod hostname
`<js>-<rjob>-<jobIndex>-<podIndex>`, pod name that hostname plus `-<5 random chars>`, FQDN `<hostname>.<subdomain>`.
Its webhook refuses a JobSet whose longest pod name is not a DNS-1035 label of at most 63 characters. With one
replicatedJob per task role (`replicas: 1`, so jobIndex is always 0) the budget is

    len(jobset) + len(rjob) + len(str(instances - 1)) + 10 <= 63

(10: four dashes, the job index "0" and the pod name's 5 random characters; POD_NAME_OVERHEAD).

OpenPAI names do not fit DNS labels as they are: job names are `^[a-zA-Z0-9_-]+$`, task roles
`^[a-zA-Z_][a-zA-Z0-9_]*$`. Both are lowercased with `_` as `-`. The JobSet name is the converted job name, cut to
what the longest role leaves, plus a short hash of `<user>~<job>` (as the MarsJob's), so two users' jobs of the same
name stay apart and a cut name stays unique. A role name cannot be cut (peers' hostnames are built from it), so a
role too long to fit beside the shortest JobSet name, one that converts to nothing, or two roles that convert to the
same name, are errors (E901). The original names stay in the PAI_* variables.
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from paictl.compiler.profiles import Profile
    from paictl.protocol.diagnostics import Finding
    from paictl.protocol.model import Job, TaskRole

MAX_LABEL = 63
#: The characters of the longest pod name besides the JobSet name, the role name and the pod index:
#: `-` rjob `-0-` index `-abcde`.
POD_NAME_OVERHEAD = len("-") + len("-0-") + len("-abcde")
HASH = 8
#: The shortest JobSet name paictl makes: one letter, a dash and the hash.
SHORTEST_NAME = 1 + 1 + HASH
_NOT_LABEL = re.compile(r"[^a-z0-9-]+")


def dns_label(name: str) -> str:
    """An OpenPAI name as a DNS-1035 label (not yet length-checked): lower case, `_` and others as `-`, starting
    with a letter, ending with a letter or digit; "" when nothing is left."""
    label = _NOT_LABEL.sub("-", name.lower().replace("_", "-")).strip("-")
    if label and not label[0].isalpha():
        label = "r-" + label
    return label


def replicated_job_names(job: Job) -> dict[str, str]:
    """Task role name -> replicatedJob name (converted; clashes and length are checked by `name_findings`)."""
    return {role.name: dns_label(role.name) for role in job.task_roles}


def _index_width(role: TaskRole) -> int:
    return len(str(max(role.instances, 1) - 1))


def jobset_name(job: Job, profile: Profile) -> str:
    """The JobSet's name (also its headless Service, its subdomain and the Secrets' prefix).

    The converted job name, cut so that the longest pod name of every role fits in 63 characters, then `-` and the
    first 8 hex digits of md5(`<user>~<job>`).
    """
    digest = hashlib.md5(f"{profile.user}~{job.name}".encode("utf-8")).hexdigest()[:HASH]
    stem = dns_label(job.name) or "job"
    widest = max((len(dns_label(r.name)) + _index_width(r) for r in job.task_roles), default=0)
    room = MAX_LABEL - POD_NAME_OVERHEAD - widest - 1 - HASH
    stem = stem[:max(room, 1)].rstrip("-") or "j"
    return f"{stem}-{digest}"


def hostname(jobset: str, rjob: str, index: int | str) -> str:
    """The pod hostname of instance `index` of a role (Indexed Job, replica 0): `<js>-<rjob>-0-<index>`."""
    return f"{jobset}-{rjob}-0-{index}"


def name_findings(job: Job) -> list[Finding]:
    """E901 for task roles that cannot be replicatedJob names: empty or clashing once converted, or too long."""
    from paictl.protocol.codes import finding
    from paictl.protocol.diagnostics import Anchor

    findings: list[Finding] = []
    seen: dict[str, str] = {}
    for role in job.task_roles:
        label = dns_label(role.name)
        pointer = "/taskRoles/" + role.name.replace("~", "~0").replace("/", "~1")
        longest = SHORTEST_NAME + len(label) + _index_width(role) + POD_NAME_OVERHEAD
        problem = None
        if not label:
            problem = f"task role '{role.name}' has no letter or digit, so its replicatedJob name would be empty"
        elif label in seen:
            problem = f"task roles '{seen[label]}' and '{role.name}' both become replicatedJob '{label}'"
        elif longest > MAX_LABEL:
            problem = (f"task role '{role.name}' becomes replicatedJob '{label}' ({len(label)} characters): its pod "
                       f"names `<jobset>-{label}-0-{max(role.instances, 1) - 1}-xxxxx` would be {longest} "
                       f"characters even with the shortest JobSet name, and JobSet allows {MAX_LABEL}")
        seen.setdefault(label, role.name)
        if problem:
            findings.append(finding("E901", pointer, problem, anchor=Anchor.KEY,
                                    hint="rename the task role (lower-case letters, digits and '_' are kept; at most "
                                         f"{MAX_LABEL - SHORTEST_NAME - POD_NAME_OVERHEAD - _index_width(role)} "
                                         "characters here)"))
    return findings
