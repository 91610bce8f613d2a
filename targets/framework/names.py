"""How a job's names become FrameworkController names: the Framework's own, and its task roles' (openpai.md c.1).

Apart from the rest of the Framework target because a local run checks its task-role names the same way (its
variables and log folders use them) without building a Framework.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from paictl.protocol.names import convert_name

if TYPE_CHECKING:
    from paictl.compiler.profiles import Profile
    from paictl.protocol.diagnostics import Finding
    from paictl.protocol.model import Job

#: FrameworkController's name rule (`NamingConvention`): no dash, no dot, no upper case.
MAX_NAME = 63
_READABLE_HASH = 8


def framework_name(job: Job, profile: Profile) -> str:
    """The Framework's name, which also names its Secrets, PriorityClass and log directory.

    `openpai`: md5 hex of `<user>~<job>` (upstream `encodeName`), so a job keeps the name OpenPAI would give it.
    `readable`: the job name reduced to [a-z0-9], then a short hash of `<user>~<job>`, which keeps two users' (or two
    differently spelled) jobs apart; always within FrameworkController's ^[a-z0-9]{1,63}$.
    """
    import hashlib  # here, not at the top: a local run checks its names with this module and names no Framework

    digest = hashlib.md5(f"{profile.user}~{job.name}".encode("utf-8")).hexdigest()
    if profile.naming == "openpai":
        return digest
    stem = convert_name(job.name)[: MAX_NAME - _READABLE_HASH] or "job"
    return stem + digest[:_READABLE_HASH]


def task_role_name_findings(job: Job) -> list[Finding]:
    """E606 for task roles FrameworkController would reject or confuse, whatever the runtime.

    Task roles are named `convert_name(name)` (openpai.md c.1): the result must match ^[a-z0-9]{1,63}$ and be unique,
    or the API server refuses the Framework (empty, too long) or two roles share pods and variables (a clash, which
    FrameworkController does not check).
    """
    from paictl.protocol.codes import finding
    from paictl.protocol.diagnostics import Anchor

    findings: list[Finding] = []
    seen: dict[str, str] = {}
    for role in job.task_roles:
        converted = convert_name(role.name)
        pointer = "/taskRoles/" + role.name.replace("~", "~0").replace("/", "~1")
        problem = None
        if not converted:
            problem = f"task role '{role.name}' has no letter or digit, so its Framework name would be empty"
        elif len(converted) > MAX_NAME:
            problem = f"task role '{role.name}' becomes a {len(converted)}-character name; at most {MAX_NAME} fit"
        elif converted in seen:
            problem = f"task roles '{seen[converted]}' and '{role.name}' both become '{converted}'"
        seen.setdefault(converted, role.name)
        if problem:
            findings.append(finding("E606", pointer, problem + " (FrameworkController names are ^[a-z0-9]{1,63}$)",
                                    hint="rename the task role: lowercase letters and digits are what is kept",
                                    anchor=Anchor.KEY))
    return findings
