"""paictl: validate, compile and run OpenPAI job protocol v2 jobs, from the command line or from Python.

The Python API (the CLI is a thin layer over the same calls, and raises the same errors)::

    import paictl

    result = paictl.validate("job.yaml")            # every diagnostic, located; never raises for a bad job
    job = paictl.load_job("job.yaml")               # the typed model, or paictl.InvalidJobError
    compiled = paictl.compile_job("job.yaml", target="local")   # .objects, .warnings
    backend = paictl.open_backend("local")          # or "framework", "mars", ... (see paictl.targets.RUNS_ON)
    submission = backend.submit(compiled)
    final = list(backend.watch(submission.name))[-1]  # JobView snapshots, the last one final
    trials = paictl.sweep("job.yaml", "space.json", backend="local", parallel=2)  # .trials: handles; .run()

Every error is a `paictl.PaictlError` whose `exit_code` is what the CLI would exit with.

Nothing is imported until it is used: `paictl --version` and `paictl validate` must start fast.
"""

__version__ = "0.1.0"

#: name -> (module, attribute): the public API, imported on first use.
_API = {
    "validate": ("paictl.protocol", "validate_file"),
    "validate_text": ("paictl.protocol", "validate_text"),
    "load_job": ("paictl.protocol", "load_job"),
    "load_job_text": ("paictl.protocol", "load_job_text"),
    "compile_job": ("paictl.targets.compiled", "compile_job"),
    "CompiledJob": ("paictl.targets.compiled", "CompiledJob"),
    "open_backend": ("paictl.targets", "open_backend"),
    "sweep": ("paictl.targets.sweep.handles", "sweep"),
    "BackendOptions": ("paictl.targets.backend", "BackendOptions"),
    "Backend": ("paictl.targets.backend", "Backend"),
    "JobView": ("paictl.targets.states", "JobView"),
    "JobState": ("paictl.targets.states", "JobState"),
    "PaictlError": ("paictl.errors", "PaictlError"),
    "InvalidJobError": ("paictl.errors", "InvalidJobError"),
    "UsageError": ("paictl.errors", "UsageError"),
    "InputError": ("paictl.errors", "InputError"),
    "ClusterError": ("paictl.errors", "ClusterError"),
    "NotFoundError": ("paictl.errors", "NotFoundError"),
    "InternalError": ("paictl.errors", "InternalError"),
    "ConfigFileError": ("paictl.errors", "ConfigFileError"),
}

__all__ = ["__version__", *_API]


def __getattr__(name: str):
    if name in _API:
        import importlib

        module, attribute = _API[name]
        return getattr(importlib.import_module(module), attribute)
    raise AttributeError(f"module 'paictl' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
