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

import math
import random
from typing import TYPE_CHECKING, Any, Optional

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
    return math.prod(_grid_count(d) for d in space.dimensions)


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
    return [_grid_row(space.dimensions, index) for index in range(count)]


def _grid_row(dimensions: tuple[Dimension, ...], index: int) -> dict[str, Any]:
    """The grid's `index`th combination, the last parameter fastest, computed from the index: the first N of a grid
    with an axis of 10**9 values (randint [0, 10**9]) costs N rows, where a product would first list each axis."""
    row: dict[str, Any] = {}
    for dimension in reversed(dimensions):
        index, position = divmod(index, _grid_count(dimension))
        row[dimension.name] = _grid_value(dimension, position)
    return {dimension.name: row[dimension.name] for dimension in dimensions}


def check_max_trials(max_trials: Optional[int]) -> None:
    if max_trials is not None and not 1 <= max_trials <= MAX_TRIALS:
        raise UsageError(f"--max-trials {max_trials}: give 1 to {MAX_TRIALS:,} (each trial is a job)")


def _grid_count(dimension: Dimension) -> int:
    kind, arguments = dimension.kind, dimension.arguments
    if kind == "choice":
        return len(arguments)
    if kind == "randint":
        return int(arguments[1] - arguments[0])
    low, high, q = arguments
    if kind == "qloguniform" or kind == "quniform":
        return int(round(high / q) - round(low / q) + 1) if low < high else 1
    raise UsageError(f"grid cannot enumerate {dimension.name!r} ({kind})")


def _grid_value(dimension: Dimension, position: int) -> Any:
    """The axis's `position`th value (0-based): a choice's value, lower + position, or a multiple of q clipped."""
    kind, arguments = dimension.kind, dimension.arguments
    if kind == "choice":
        return arguments[position]
    if kind == "randint":
        return arguments[0] + position
    low, high, q = arguments
    return _quantized((round(low / q) + position) * q, dimension, low, high)


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
