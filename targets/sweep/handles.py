"""The Python face of a sweep: `paictl.sweep(job, space, backend=...)` returns a `Sweep` whose `trials` are handles
on the trials' jobs (describe, logs, stop, their recorded metric), and which runs like the command does.

    sweep = paictl.sweep("job.yaml", {"lr": {"_type": "choice", "_value": [0.1, 0.01]}}, backend="local",
                         metric="loss", goal="min", parallel=2)
    final = sweep.run()                      # or: for view in sweep.follow(): ...
    print(final.best.parameters, [trial.metric for trial in sweep.trials])
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Optional, Sequence, Union

if TYPE_CHECKING:
    from paictl.targets.backend import Backend, Logs, StopResult
    from paictl.targets.states import JobView

    from .runner import SweepView
    from .store import SweepStore


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrialHandle:
    """One trial: its parameters, and its job on the sweep's backend once submitted."""

    index: int
    name: str
    parameters: dict[str, Any]
    sweep: Sweep = dataclasses.field(repr=False, compare=False)

    @property
    def record(self) -> Optional[dict[str, Any]]:
        return self.sweep.store.record(self.index)

    @property
    def job(self) -> str:
        """The backend's name for the trial's job (a Framework's hashed name, a local run's own)."""
        record = self.record
        return (record or {}).get("job") or self.name

    @property
    def metric(self) -> Optional[float]:
        return (self.record or {}).get("metric")

    def describe(self) -> JobView:
        return self.sweep.backend.describe(self.job)

    def logs(self, **options: Any) -> Logs:
        return self.sweep.backend.logs(self.job, **options)

    def stop(self) -> StopResult:
        return self.sweep.backend.stop(self.job)


class Sweep:
    """A prepared, recorded sweep (every trial compiled); `follow` or `run` submits and follows its trials."""

    def __init__(self, *, store: SweepStore, backend: Backend, definition: Mapping[str, Any], compiled: Mapping):
        from .runner import SweepRunner

        self.id = definition["id"]
        self.store, self.backend, self.definition = store, backend, definition
        self._runner = SweepRunner(store, backend, definition, compiled, poll=0.3 if "local" in backend.targets
                                   else 2.0)
        self.trials = tuple(TrialHandle(index=t["index"], name=t["name"], parameters=t["parameters"], sweep=self)
                            for t in definition["trials"])

    def follow(self) -> Iterator[SweepView]:
        """Submit and follow, yielding a view per change; the last one has `done`."""
        self.store.take()
        try:
            yield from self._runner.views()
        finally:
            self.store.release()

    def run(self) -> SweepView:
        view = None
        for view in self.follow():
            pass
        assert view is not None
        return view

    def status(self) -> SweepView:
        from .runner import observed

        return observed(self.store, self.backend)

    def stop(self, reason: str = "stopped from Python") -> None:
        from .runner import stop_sweep

        stop_sweep(self.store, self.backend, reason)

    def close(self) -> None:
        self.backend.close()


def sweep(job: Union[str, Path], space: Union[str, Path, Mapping[str, Any], Sequence[str]], *,
          backend: str = "local", strategy: Optional[str] = None, seed: Optional[int] = None,
          max_trials: Optional[int] = None, parallel: int = 1, metric: Optional[str] = None,
          goal: Optional[str] = None, stop_when: Optional[str] = None, profile: str = "default",
          user: Optional[str] = None, sweep_id: Optional[str] = None, sweeps_dir: Optional[Path] = None,
          **backend_options: Any) -> Sweep:
    """Check the job and the space, compile every trial and record the sweep; nothing is submitted until the
    returned `Sweep` is followed. `backend` is a target name (local, framework, jobset, mars, grass, openpai);
    `space` a search-space file, a mapping in NNI's format, or `--space` values; `backend_options` are
    `BackendOptions` fields (run_dir, kubeconfig, namespace, cluster, ...)."""
    from paictl.errors import UsageError
    from paictl.targets import open_backend

    from .metrics import parse_stop_when
    from .prepare import prepare_sweep
    from .runner import definition_of
    from .store import SweepStore

    if goal not in (None, "min", "max"):
        raise UsageError(f"goal {goal!r}: expected min or max")
    if stop_when is not None:
        parse_stop_when(stop_when, metric)
    opened = open_backend(backend, **backend_options)
    try:
        specs = space if isinstance(space, Mapping) else [str(space)] if isinstance(space, (str, Path)) else list(space)
        prepared = prepare_sweep(str(job), specs, target=backend, strategy=strategy, seed=seed,
                                 max_trials=max_trials, sweep_id=sweep_id, profile=profile, user=user,
                                 namespace=opened.namespace)
        recorded = {key: str(value) if isinstance(value, Path) else value for key, value in backend_options.items()
                    if key in ("context", "namespace", "kubeconfig", "run_dir", "exit_spec")}
        recorded.update({key: value for key, value in (backend_options.get("extra") or {}).items()
                         if key in ("virtual_cluster", "runtime", "pull")})
        if backend_options.get("cluster") is not None:
            recorded["cluster"] = [str(backend_options["cluster"])]
        definition = definition_of(prepared, backend=recorded, compile_options={"profile": profile, "user": user},
                                   parallel=parallel, metric=metric, goal=goal, stop_when=stop_when,
                                   max_trials=max_trials)
        store = SweepStore(prepared.sweep_id, sweeps_dir)
        store.create(definition)
    except BaseException:
        opened.close()
        raise
    return Sweep(store=store, backend=opened, definition=definition, compiled=dict(enumerate(prepared.compiled)))
