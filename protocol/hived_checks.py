"""`extras.hivedScheduler` as OpenPAI's rest-server checks it: its HiveD schema, then the 400 errors of its HiveD code.

Upstream checks these only on a cluster that runs HiveD (src/config/v2/hived.js, an ajv schema with allErrors, and
src/middlewares/v2/hived.js); elsewhere it runs the job and ignores the settings. So paictl reports them as
warnings (W306, W307), and as the errors a HiveD cluster answers (E306, E307) only for a profile with HiveD on
(`compile`/`submit`, and `validate --profile`) (openpai.md a.4 and c.6):
- E306, the schema: hivedScheduler is a mapping; jobPriorityClass is prod, test or oppo; taskRoles, when it is a
  mapping, has at least one entry, every name matches ^[A-Za-z0-9._~]+$, every entry is a mapping whose skuType,
  pinnedCellId and affinityGroupName are strings or null. (ajv checks none of this on a taskRoles that is not a
  mapping; JavaScript's `Object.keys` then reads a string's or a list's indexes as task role names: see E307.)
- E307, the code: a name in hivedScheduler.taskRoles that is no task role of the job; a task role with both
  skuType and pinnedCellId; two task roles of one affinity group with different skuType or pinnedCellId. Upstream
  compares with `!= null` and `!==`, so an empty string is a value like any other.
"""

from __future__ import annotations

import re
from typing import Any, Iterator

from .codes import finding
from .diagnostics import Anchor, Finding, kind_of, pointer_of
from .timestamps import is_timestamp

#: The priority classes HiveD's schema allows (hived.js also maps `crit`, which the schema never lets through).
PRIORITY_CLASSES = ("prod", "test", "oppo")
#: JavaScript's `$` matches only at the very end; Python's also before a final newline, hence the lookahead.
_ROLE_NAME = re.compile(r"^[A-Za-z0-9._~]+$(?!\n)")
_NAMED = ("skuType", "pinnedCellId", "affinityGroupName")
_BASE = ("extras", "hivedScheduler")


def hived_findings(data: dict[str, Any], *, enforced: bool = False) -> list[Finding]:
    """E306/E307 when `enforced` (a HiveD cluster refuses the job), else the same findings as W306/W307."""
    found = _findings(data)
    if enforced:
        return found
    from .codes import severity_of

    return [f._replace(code="W" + f.code[1:], severity=severity_of("W" + f.code[1:])) for f in found]


def _findings(data: dict[str, Any]) -> list[Finding]:
    extras = data.get("extras")
    if not isinstance(extras, dict) or "hivedScheduler" not in extras:
        return []
    hived = extras["hivedScheduler"]
    if is_timestamp(hived):
        return []  # ajv takes a Date for an object: upstream ignores it (W809)
    if not isinstance(hived, dict):
        return [finding("E306", pointer_of(*_BASE), f"extras.hivedScheduler is {kind_of(hived)}; OpenPAI's HiveD "
                        "schema wants a mapping", "write `hivedScheduler:` with jobPriorityClass and taskRoles keys")]
    found = list(_schema(hived))
    if not found:  # upstream's HiveD code runs only on a document its schema accepted
        found += _code(hived, data.get("taskRoles"))
    return found


def _schema(hived: dict[str, Any]) -> Iterator[Finding]:
    if "jobPriorityClass" in hived and hived["jobPriorityClass"] not in PRIORITY_CLASSES:
        value = hived["jobPriorityClass"]
        yield finding("E306", pointer_of(*_BASE, "jobPriorityClass"), f"hivedScheduler.jobPriorityClass is "
                      f"{_shown(value)}; OpenPAI's HiveD schema allows only {', '.join(PRIORITY_CLASSES)}",
                      "use prod, test (the default) or oppo")
    roles = hived.get("taskRoles")
    if is_timestamp(roles):
        roles = {}  # a Date: an object without properties, so minProperties fails
    if not isinstance(roles, dict):
        return
    if not roles:
        yield finding("E306", pointer_of(*_BASE, "taskRoles"), "hivedScheduler.taskRoles is empty; OpenPAI's HiveD "
                      "schema wants at least one task role there", "remove taskRoles, or name a task role in it")
    for name, settings in roles.items():
        if not _ROLE_NAME.match(name):
            yield finding("E306", pointer_of(*_BASE, "taskRoles", name), f"hivedScheduler.taskRoles key {name!r} "
                          "does not match ^[A-Za-z0-9._~]+$ (OpenPAI's HiveD schema)", anchor=Anchor.KEY)
        if is_timestamp(settings):
            continue  # a Date passes `type: object`: upstream ignores it (W809)
        if not isinstance(settings, dict):
            yield finding("E306", pointer_of(*_BASE, "taskRoles", name), f"hivedScheduler.taskRoles.{name} is "
                          f"{kind_of(settings)}; OpenPAI's HiveD schema wants a mapping", "write `{skuType: K80}`, say")
            continue
        for key in _NAMED:
            value = settings.get(key)
            if value is not None and (not isinstance(value, str) or is_timestamp(value)):
                yield finding("E306", pointer_of(*_BASE, "taskRoles", name, key), f"hivedScheduler.taskRoles.{name}."
                              f"{key} is {kind_of(value)}; OpenPAI's HiveD schema wants a string or null",
                              "quote the value")


def _code(hived: dict[str, Any], job_roles: Any) -> Iterator[Finding]:
    roles = hived.get("taskRoles")
    if is_timestamp(roles):
        return
    if isinstance(roles, (str, list)) and roles:
        # ajv skips a non-mapping; `Object.keys` then gives its indexes, and "0" is no task role.
        yield finding("E307", pointer_of(*_BASE, "taskRoles"), f"hivedScheduler.taskRoles is {kind_of(roles)}; "
                      "OpenPAI reads its indexes as task role names and refuses the job: Taskrole 0 does not exist.",
                      "write a mapping of task role name to HiveD settings")
        return
    if not isinstance(roles, dict) or not isinstance(job_roles, dict):
        return
    groups: dict[str, tuple[Any, Any]] = {}
    for name, settings in roles.items():
        where = (*_BASE, "taskRoles", name)
        if name not in job_roles:
            yield finding("E307", pointer_of(*where), f"Taskrole {name} does not exist.", anchor=Anchor.KEY,
                          hint=f"task roles of this job: {', '.join(job_roles)}")
            continue
        if not isinstance(settings, dict):
            continue
        placement = (settings.get("skuType"), settings.get("pinnedCellId"))
        if placement[0] is not None and placement[1] is not None:
            yield finding("E307", pointer_of(*where, "pinnedCellId"), f"Taskrole {name} has both skuType and "
                          "pinnedCellId, only one is allowed.", "remove one of them (an empty string counts as set)")
        group = settings.get("affinityGroupName")
        if group is not None:
            if group in groups and groups[group] != placement:
                yield finding("E307", pointer_of(*where, "affinityGroupName"), f"AffinityGroup {group} has "
                              "inconsistent skuType or pinnedCellId.", "give every task role of the group the same "
                              "skuType and pinnedCellId")
            groups.setdefault(group, placement)


def _shown(value: Any) -> str:
    if is_timestamp(value):
        return f"the unquoted date {value}"
    return repr(value) if isinstance(value, str) else kind_of(value)
