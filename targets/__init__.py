"""Compile targets: each is a plain module with a `compile(job, profile, **options) -> list[dict]` function.

Adding a target is one module plus its golden files, and one line in `TARGETS`. Modules are imported only when
chosen, so a target's dependencies cost nothing to the others. A target that accepts some jobs with reservations
may also define `compile_warnings(job, profile, document) -> list[Diagnostic]`; the CLI shows them like validation
warnings (targets never print).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Mapping, Protocol

if TYPE_CHECKING:
    from paictl.compiler.profiles import Profile
    from paictl.protocol.loading import Document
    from paictl.protocol.model import Job


class Target(Protocol):
    def compile(self, job: Job, profile: Profile, *, parameters: Mapping[str, Any] | None = None,
                secrets_from: str | None = None, document: Document | None = None) -> list[dict[str, Any]]: ...


TARGETS: dict[str, str] = {
    "framework": "paictl.targets.framework.target",  # FrameworkController Framework (+ HiveD), Secrets, PriorityClass
    "mars": "paictl.targets.mars.target",            # KubeDL MarsJob (Scheduler, WebService, Worker), Secrets
    "jobset": "paictl.targets.jobset.target",        # Kubernetes JobSet (one Indexed Job per task role), Secrets
    "local": "paictl.targets.local.target",          # a LocalPlan: the processes `paictl submit --target local` starts
}


def get_target(name: str) -> Target:
    return importlib.import_module(TARGETS[name])  # type: ignore[return-value]
