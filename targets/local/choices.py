"""The --runtime and --pull choices of a local run, checked when the backend opens, and the images a plan names: a
module of their own, so that `status`, `logs` and `stop` of host runs, and `submit --runtime host`, never import the
docker machinery (containers.py, docker_runtime.py: HTTP and TLS, a fifth of a `status`)."""

from __future__ import annotations

from typing import Any, Mapping, Optional

from paictl.errors import UsageError

RUNTIMES = ("docker", "host")
PULL_POLICIES = ("never", "missing", "always")


def check_choices(runtime: Optional[str], pull: Optional[str]) -> None:
    """UsageError (2) for a --runtime or --pull that does not exist."""
    if runtime is not None and runtime not in RUNTIMES:
        raise UsageError(f"--runtime {runtime!r}: expected {' or '.join(RUNTIMES)}")
    if pull is not None and pull not in PULL_POLICIES:
        raise UsageError(f"--pull {pull!r}: expected {', '.join(PULL_POLICIES)}")


def images(plan: Mapping[str, Any]) -> dict[str, list[str]]:
    """image -> the task roles that run in it, in job order."""
    found: dict[str, list[str]] = {}
    for role in plan["spec"]["taskRoles"]:
        found.setdefault(role["image"], []).append(role["name"])
    return found
