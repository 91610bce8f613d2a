"""W209-W211: values of a job that JavaScript (the OpenPAI rest-server) reads other than they look.

Why a module of its own: these warnings come from JavaScript's value model, not from the rest-server's checks or
the job's structure that protocol/semantics.py walks: a decimal integer too long for Python to convert is a
JavaScript Infinity (W209), an infinite retry count is sent as null and dropped (W210), and a `__proto__` port
label sets the prototype of the object it is copied into (W211). semantics.py runs them with the rest.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

from .codes import finding
from .diagnostics import Anchor, Finding, pointer_of

#: A run of more decimal digits than Python converts (protocol/yamlscalars.py reads such an integer as Infinity).
LONG_DIGITS = re.compile(r"(?<![0-9_])[0-9_]{4301}")  # each run scanned once, from its start


def long_number_findings(data: dict[str, Any]) -> list[Finding]:
    """W209 at each infinite number of a text holding a digit run longer than 4,300 (the caller checks the text: a
    `.inf` in a job without one is what its author wrote)."""
    found: list[Finding] = []
    pending: list[tuple[Any, tuple[Any, ...]]] = [(data, ())]
    while pending:
        node, path = pending.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            if isinstance(value, (dict, list)):
                pending.append((value, (*path, key)))
            elif isinstance(value, float) and math.isinf(value):
                found.append(finding("W209", pointer_of(*path, key), "a number of more than 4,300 digits; "
                                     f"JavaScript (OpenPAI) reads it as {'-' if value < 0 else ''}Infinity, and so "
                                     "does paictl", "quote it if it is meant as text"))
    return found


def infinite_retries(data: dict[str, Any]) -> Iterator[Finding]:
    """W210: an infinite retry count, which OpenPAI's Framework cannot carry (protocol/model.py reads it as 0)."""
    roles = data.get("taskRoles")
    places = [(("jobRetryCount",), data.get("jobRetryCount"))] + [
        (("taskRoles", name, "taskRetryCount"), role.get("taskRetryCount"))
        for name, role in (roles.items() if isinstance(roles, dict) else ()) if isinstance(role, dict)]
    for path, value in places:
        if type(value) is float and math.isinf(value):
            yield finding("W210", pointer_of(*path), f"{path[-1]} is {'' if value > 0 else '-'}Infinity; OpenPAI "
                          "sends it as null, which the API server drops, so FrameworkController never retries (paictl "
                          "compiles 0)", "write the number of retries you want")


def prototype_port_labels(data: dict[str, Any]) -> Iterator[Finding]:
    """W211: a `__proto__` port label, which OpenPAI drops (protocol/model.py drops it too); W212: a list of port
    counts, whose indexes OpenPAI takes for labels."""
    roles = data.get("taskRoles")
    for name, role in roles.items() if isinstance(roles, dict) else ():
        resources = role.get("resourcePerInstance") if isinstance(role, dict) else None
        ports = resources.get("ports") if isinstance(resources, dict) else None
        if isinstance(ports, list) and ports and all(type(count) is int for count in ports):  # else E210
            labels = ", ".join(f"{index}: {count}" for index, count in enumerate(ports[:3]))
            yield finding("W212", pointer_of("taskRoles", name, "resourcePerInstance", "ports"),
                          f"ports is a list; OpenPAI takes its indexes for port labels ({labels}"
                          f"{', ...' if len(ports) > 3 else ''}), so the task finds them in "
                          "$PAI_CONTAINER_HOST_0_PORT_LIST and so on; a mapping of label to count was probably meant",
                          "write `ports: {http: 1}`: a label and how many ports to allocate under it")
        if isinstance(ports, dict) and "__proto__" in ports:
            yield finding("W211", pointer_of("taskRoles", name, "resourcePerInstance", "ports", "__proto__"),
                          "a port label named __proto__: OpenPAI copies the labels into a JavaScript object, where "
                          "this name sets the prototype instead of adding a label, so it gets no port",
                          "rename the label", Anchor.KEY)
