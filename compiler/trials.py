"""A search space as trials: the parameter sets a sweep runs, by strategy (grid, random, list), and which of the job's
parameters its commands use.

Pure and deterministic: the same space, strategy, seed and limit give the same trials in the same order, so a sweep
resumed in another process, or `compile --space`, names and numbers every trial as the first run did. Random draws
come from one `random.Random(seed)` (Mersenne Twister, stable across CPython versions for these calls), one
dimension after another in the space's order, as NNI's random tuner draws them. A quantized value is
clip(round(x / q) * q, low, high) for the bounded types and round(x / q) * q for the normal ones (NNI's formulas;
`round` is half-to-even, as numpy's), written with at most 15 significant digits (`0.3`, not `0.30000000000000004`),
and an integer when the bounds and q are written as integers.
"""

from __future__ import annotations

import dataclasses
import math
import random
from typing import TYPE_CHECKING, Any, Callable, Optional

from paictl.errors import UsageError

if TYPE_CHECKING:
    from paictl.protocol.model import Job
    from paictl.protocol.searchspace import Dimension, SearchSpace

#: A sweep has at most this many trials (each is a job on a cluster); a larger grid needs --max-trials.
MAX_TRIALS = 10_000


def parameters_used(job: Job) -> frozenset[str]:
    """The parameters some task role's entrypoint depends on: rendered with its default and with two other values of
    a parameter, the entrypoint changes (so `<% $parameters.lr %>`, a bare `<% $parameters %>` and any path into
    it count, exactly as the rest-server renders them)."""
    from .render import render_entrypoint

    used: set[str] = set()
    for role in job.task_roles:
        default = render_entrypoint(job, role.name)
        for name in job.parameters:
            # two strings catch `<% $parameters.lr %>`; the default against them catches `.dataset.shards[0]`
            probes = {render_entrypoint(job, role.name, {name: probe})
                      for probe in ("paictl-probe-a", "paictl-probe-b")}
            if len(probes | {default}) > 1:
                used.add(name)
    return frozenset(used)


def grid_size(space: SearchSpace) -> int:
    if space.rows is not None:
        return len(space.rows)
    return math.prod(_grid_axis(d).count for d in space.dimensions)


def trials(space: SearchSpace, *, strategy: str, seed: Optional[int] = None,
           max_trials: Optional[int] = None) -> list[dict[str, Any]]:
    """The parameter sets, in order. grid: every combination, the last parameter varying fastest; random:
    `max_trials` draws from `seed`; list: the rows. A grid or list is cut to `max_trials` (refused beyond
    MAX_TRIALS without it)."""
    check_max_trials(max_trials)
    if strategy == "list":
        if space.rows is None:
            raise UsageError("--strategy list takes a space of explicit rows (`_rows`)")
        return [dict(row) for row in space.rows[:max_trials]]
    if space.rows is not None:
        raise UsageError(f"--strategy {strategy} takes distributions; a space of `_rows` is the list strategy's")
    if strategy == "random":
        if max_trials is None:
            raise UsageError("--strategy random needs --max-trials N (how many trials to draw)")
        generator = random.Random(seed)
        return [{d.name: sample(d, generator) for d in space.dimensions} for _ in range(max_trials)]
    if strategy != "grid":
        raise UsageError(f"unknown strategy {strategy!r}; available: grid, random, list")
    size = grid_size(space)
    if max_trials is None and size > MAX_TRIALS:
        shown = f"{size:,}" if size < 10 ** 15 else f"about 10^{len(str(size)) - 1}"
        raise UsageError(f"the grid has {shown} trials, more than {MAX_TRIALS:,}: give --max-trials N to run the "
                         "first N, or use --strategy random")
    count = size if max_trials is None else min(size, max_trials)
    axes = [(d.name, _grid_axis(d)) for d in space.dimensions]
    return [_grid_row(axes, index) for index in range(count)]


def check_max_trials(max_trials: Optional[int]) -> None:
    if max_trials is not None and not 1 <= max_trials <= MAX_TRIALS:
        raise UsageError(f"--max-trials {max_trials}: give 1 to {MAX_TRIALS:,} (each trial is a job)")


def _grid_row(axes: list[tuple[str, _Axis]], index: int) -> dict[str, Any]:
    """The grid's `index`th combination, the last parameter fastest, computed from the index: the first N of a grid
    with an axis of 10**9 values (randint [0, 10**9]) costs N rows, where a product would first list each axis."""
    row: dict[str, Any] = {}
    for name, axis in reversed(axes):
        index, position = divmod(index, axis.count)
        row[name] = axis.value(position)
    return {name: row[name] for name, _ in axes}


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Axis:
    """One parameter's grid values: `count` of them (may exceed sys.maxsize, where len() cannot go), the
    `position`th (0-based) computed when asked for."""

    count: int
    value: Callable[[int], Any]


def _grid_axis(dimension: Dimension) -> _Axis:
    """An axis's values, each once: a choice's distinct values in their order (NNI's grid search never runs a
    parameter set twice: [0.1, 0.1, 0.2] is two trials), lower to upper - 1, or clip(k * q, low, high) for k from
    round(low / q) to round(high / q) (each value the formula can give)."""
    kind, arguments = dimension.kind, dimension.arguments
    if kind == "choice":
        import json

        distinct: dict[str, Any] = {}
        for value in arguments:
            distinct.setdefault(json.dumps(value, sort_keys=True, default=str), value)
        values = list(distinct.values())
        return _Axis(count=len(values), value=values.__getitem__)
    if kind == "randint":
        lower = arguments[0]
        return _Axis(count=arguments[1] - lower, value=lambda position: lower + position)
    if kind not in ("quniform", "qloguniform"):
        raise UsageError(f"grid cannot enumerate {dimension.name!r} ({kind})")
    low, high, q = arguments
    first = round(low / q)
    return _Axis(count=round(high / q) - first + 1,
                 value=lambda position: _quantized((first + position) * q, dimension, low, high))


def sample(dimension: Dimension, generator: random.Random) -> Any:
    """One draw, as NNI defines each type."""
    kind, arguments = dimension.kind, dimension.arguments
    if kind == "choice":
        return arguments[generator.randrange(len(arguments))]
    if kind == "randint":
        return generator.randrange(arguments[0], arguments[1])
    if kind in ("uniform", "quniform"):
        x = generator.uniform(arguments[0], arguments[1])
    elif kind in ("loguniform", "qloguniform"):
        x = math.exp(generator.uniform(math.log(arguments[0]), math.log(arguments[1])))
    elif kind in ("normal", "qnormal"):
        x = generator.gauss(arguments[0], arguments[1])
    else:  # lognormal, qlognormal
        x = math.exp(generator.gauss(arguments[0], arguments[1]))
    if kind in ("quniform", "qloguniform"):
        return _quantized(round(x / arguments[2]) * arguments[2], dimension, arguments[0], arguments[1])
    if kind in ("qnormal", "qlognormal"):
        return _quantized(round(x / arguments[2]) * arguments[2], dimension, None, None)
    return x


def _quantized(value: float, dimension: Dimension, low: Optional[float], high: Optional[float]) -> Any:
    if low is not None and high is not None:
        value = min(max(value, low), high)
    if dimension.integral:
        return int(round(value))
    return float(f"{value:.15g}")
