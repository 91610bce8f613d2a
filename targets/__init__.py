"""Compile targets and the backends that run them: the two registries of paictl.

A target is a package `targets/<name>/` whose `target.py` has `compile(job, profile, **options) -> list[dict]`
(the `Target` protocol). A target that accepts some jobs with reservations may also define
`compile_warnings(job, profile, document) -> list[Diagnostic]`, reported like validation warnings (targets never
print). A place that runs compiled jobs implements `backend.Backend` in the package's `backend.py`.

Adding a target is one package plus one line in `TARGETS` (and one in `RUNS_ON` if it can run); adding a place to run
jobs is one line in `BACKENDS`. Modules are imported only when chosen, so a target's dependencies cost nothing to the
others.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Mapping, Optional, Protocol

if TYPE_CHECKING:
    from paictl.compiler.profiles import Profile
    from paictl.protocol.loading import Document
    from paictl.protocol.model import Job

    from .backend import Backend, BackendOptions


class Target(Protocol):
    def compile(self, job: Job, profile: Profile, *, parameters: Mapping[str, Any] | None = None,
                secrets_from: str | None = None, document: Document | None = None) -> list[dict[str, Any]]: ...


TARGETS: dict[str, str] = {
    "framework": "paictl.targets.framework.target",  # FrameworkController Framework (+ HiveD), Secrets, PriorityClass
    "mars": "paictl.targets.mars.target",            # KubeDL MarsJob (Scheduler, WebService, Worker), Secrets
    "local": "paictl.targets.local.target",          # a LocalPlan: the processes `paictl submit --target local` starts
}

#: Which backend runs each target's output ("module:class").
BACKENDS: dict[str, str] = {
    "local": "paictl.targets.local.backend:LocalBackend",   # this machine: host processes, a run folder
    "kube": "paictl.targets.kube.backend:KubeBackend",      # a Kubernetes cluster: server-side apply, watch
}
RUNS_ON: dict[str, str] = {
    "local": "local",
    "framework": "kube",
    "mars": "kube",
}
#: Where `status/stop/logs NAME` look when no --target is given: each backend but the last is asked `has_job`
#: (cheap: no connection), and the last one answers whatever it finds.
LOOKUP_ORDER: tuple[str, ...] = ("local", "kube")


def get_target(name: str) -> Target:
    return importlib.import_module(TARGETS[name])  # type: ignore[return-value]


def open_backend(name: str, options: Optional[BackendOptions] = None, **settings: Any) -> Backend:
    """The backend called `name` ("local", "kube") or the one that runs target `name` ("framework", ...).

    A target name narrows a backend that runs several targets to that one (`options.target`). `settings` are
    `BackendOptions` fields, for callers that have no options object: `open_backend("local", run_dir="runs")`.
    """
    import dataclasses

    from paictl.errors import UsageError

    from .backend import BackendOptions

    options = dataclasses.replace(options or BackendOptions(), **settings)
    if name in RUNS_ON:
        if RUNS_ON[name] != name:
            options = dataclasses.replace(options, target=name)
        name = RUNS_ON[name]
    if name not in BACKENDS:
        raise UsageError(f"unknown target {name!r}; available: {', '.join(RUNS_ON)}")
    module, _, attribute = BACKENDS[name].partition(":")
    return getattr(importlib.import_module(module), attribute)(options)
