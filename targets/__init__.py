"""Compile targets and the backends that run them: the two registries of paictl.

A target is a package `targets/<name>/` whose `target.py` has `compile(job, profile, **options) -> list[dict]`
(the `Target` protocol, declared for type checkers). A target that accepts some jobs with reservations may also define
`compile_warnings(job, profile, document) -> list[Diagnostic]`, reported like validation warnings (targets never
print). A place that runs compiled jobs implements `backend.Backend` in the package's `backend.py`.

Adding a target is one package plus one line in `TARGETS` (and one in `RUNS_ON` if it can run); adding a place to run
jobs is one line in `BACKENDS`. Modules are imported only when chosen, so a target's dependencies cost nothing to the
others.
"""

from __future__ import annotations

#: typing.TYPE_CHECKING without importing typing: this package is imported on the way to an unreachable OpenPAI
#: cluster's one-line answer (cli/entry.py, targets/openpai/reach.py), where typing alone would cost a fifth of it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping, Optional, Protocol

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
    "jobset": "paictl.targets.jobset.target",        # Kubernetes JobSet (one Indexed Job per task role), Secrets
    "local": "paictl.targets.local.target",          # a LocalPlan: the processes `paictl submit --target local` starts
    "grass": "paictl.targets.grass.target",          # a MARO Grass job deployment file (+ the plan with --cluster)
    "openpai": "paictl.targets.openpai.target",      # the job protocol document POSTed to an OpenPAI REST server
}

#: Which backend runs each target's output ("module:class").
BACKENDS: dict[str, str] = {
    "local": "paictl.targets.local.backend:LocalBackend",   # this machine: host processes, a run folder
    "kube": "paictl.targets.kube.backend:KubeBackend",      # a Kubernetes cluster: server-side apply, watch
    "grass": "paictl.targets.grass.backend:GrassBackend",   # a MARO Grass cluster: its master's Redis records
    "openpai": "paictl.targets.openpai.backend:OpenPaiBackend",  # an OpenPAI cluster through its REST server
}
RUNS_ON: dict[str, str] = {
    "local": "local",
    "framework": "kube",
    "mars": "kube",
    "jobset": "kube",
    "grass": "grass",
    "openpai": "openpai",
}
#: Backends whose cluster can be asked whether it is there before anything else of paictl is loaded ("module:function";
#: `function(cluster)` gives the line an unreachable cluster raises, "" when it answered, or None when it cannot tell
#: and the backend's own `check_reachable` must): the CLI's early answer (cli/entry.py).
EARLY_PROBES: dict[str, str] = {
    "openpai": "paictl.targets.openpai.reach:probe_alias",
}
#: Where `status/stop/logs NAME` look when no --target is given: each backend but the last is asked `has_job`
#: (cheap: no connection), and the last one answers whatever it finds.
LOOKUP_ORDER: tuple[str, ...] = ("local", "kube")


def early_probe(name: str, cluster: Optional[str]) -> Optional[str]:
    """`EARLY_PROBES[name](cluster)` (see there), None for a backend that has none. `__import__`, not importlib:
    importing importlib is a few percent of the answer this serves."""
    if name not in EARLY_PROBES:
        return None
    module, _, function = EARLY_PROBES[name].partition(":")
    return getattr(__import__(module, fromlist=[function]), function)(cluster)


def get_target(name: str) -> Target:
    import importlib

    return importlib.import_module(TARGETS[name])  # type: ignore[return-value]


def open_backend(name: str, options: Optional[BackendOptions] = None, **settings: Any) -> Backend:
    """The backend called `name` ("local", "kube") or the one that runs target `name` ("framework", ...).

    A target name narrows a backend that runs several targets to that one (`options.target`). `settings` are
    `BackendOptions` fields, for callers that have no options object: `open_backend("local", run_dir="runs")`.
    """
    import dataclasses

    from .backend import BackendOptions

    options = dataclasses.replace(options or BackendOptions(), **settings)
    if name in RUNS_ON and RUNS_ON[name] != name:
        options = dataclasses.replace(options, target=name)
    return backend_class(name)(options)


def backend_class(name: str) -> type:
    """The class of the backend called `name` or running target `name` (see `open_backend`), imported now."""
    import importlib

    name = RUNS_ON.get(name, name)
    if name not in BACKENDS:
        from paictl.errors import UsageError

        raise UsageError(f"unknown target {name!r}; available: {', '.join(RUNS_ON)}")
    module, _, attribute = BACKENDS[name].partition(":")
    return getattr(importlib.import_module(module), attribute)
