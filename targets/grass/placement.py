"""Which node each container of a job goes to, exactly as MARO's master chooses (maro.md A.7).

MARO keeps two binary heaps (Python's heapq) of `(key, resource)` pairs:
- containers, keyed by minus the chosen metric (largest demand first), pushed in component order then index;
- nodes, keyed by minus the free metric (`single-metric-balanced`: most free first, i.e. worst fit / spread) or by
  the free metric (`single-metric-compacted`: least free first, i.e. best fit / pack), pushed in node order.
For each container it pops nodes until one fits on cpu, memory and gpu alike, places it, subtracts, and pushes
that node and every node it set aside back. When two keys are equal, heapq compares the resources themselves with
MARO's `BasicResource` ordering: two resources are equal when all three amounts are; `a < b` when `a` is not at
least `b` on every amount. That ordering is not a total order, so which of two tied nodes comes first depends on
the heap's shape; the only way to land where MARO lands is to run the same heap operations with the same
comparison, which is what `_Rest` and `place` do (our code, MARO's semantics; tests/targets/grass checks the two
orderings agree on every pair of a grid of amounts, and the placements against MARO's own ResourceController).

Two things MARO does that paictl does not copy: a job that does not fit leaves its partial subtractions on the free
resources the rest of the pass uses (here the job's placement works on a copy and is committed only when every
container fits), and a misfit says only "Unable to allocate, Abort" (here `PlacementError` names the component,
the resource that fell short and by how much on the best node).
"""

from __future__ import annotations

import dataclasses
import heapq
import operator
from typing import Iterable, Sequence

from paictl.errors import ClusterError

MODES = ("single-metric-balanced", "single-metric-compacted")
METRICS = ("cpu", "memory", "gpu")
UNITS = {"cpu": "cores", "memory": "MB", "gpu": "GPUs"}


@dataclasses.dataclass(frozen=True, kw_only=True)
class Demand:
    """One container to place: what it reserves."""

    name: str
    component: str
    index: int
    cpu: float
    memory: float   # MB
    gpu: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class Free:
    """What a node has free (MARO: its record's `resources.target_free_*`)."""

    node: str
    cpu: float
    memory: float
    gpu: float


class PlacementError(ClusterError):
    """The job does not fit the free resources; nothing was placed."""

    def __init__(self, message: str, *, component: str = "", resource: str = "", shortfall: float = 0.0,
                 node: str = ""):
        super().__init__(message)
        self.component, self.resource, self.shortfall, self.node = component, resource, shortfall, node


class _Amounts:
    """A node's or a container's cpu, memory and gpu (a node's change as containers are placed on it)."""

    __slots__ = ("label", "cpu", "memory", "gpu")

    def __init__(self, label: str, cpu: float, memory: float, gpu: float):
        self.label, self.cpu, self.memory, self.gpu = label, cpu, memory, gpu


class _Rest(tuple):
    """The two amounts other than the heap's metric, as the second item of a heap entry.

    MARO's heaps hold `(key, BasicResource)`; on equal keys a tuple asks the resources `==` (all three amounts
    equal: the tuples are equal, so neither is less) and then `<` ("not at least as much of all three"). Here an
    entry is `(key, _Rest, nan, _Amounts)`: on equal keys the metric is equal, so `==` of the other two (tuple's
    own, in C) is MARO's `==`, and `_Rest.__lt__` is MARO's `<` on them. When they are equal too, the next items
    are two distinct NaNs, which are neither equal nor less: the entries compare as MARO's equal resources do,
    and the `_Amounts` after them is never compared. Same answers as MARO's, with a Python call only for ties
    between different amounts (most ties are between equal ones: nodes of one shape, containers of one size).
    """

    __slots__ = ()

    def __lt__(self, other: tuple) -> bool:  # type: ignore[override]
        return not (self[0] >= other[0] and self[1] >= other[1])


_OTHERS = {"cpu": ("memory", "gpu"), "memory": ("cpu", "gpu"), "gpu": ("cpu", "memory")}


_INF = float("inf")


def _entry(key: float, amounts: _Amounts, metric: str) -> tuple:
    first, second = _OTHERS[metric]
    return (key, _Rest((getattr(amounts, first), getattr(amounts, second))), _INF - _INF, amounts)


def place(demands: Sequence[Demand], free: Sequence[Free], *, mode: str, metric: str) -> dict[str, str]:
    """container name -> node name for every demand, or PlacementError; `free` is not changed.

    Use `commit` to subtract a successful placement from the free resources a later job sees.
    """
    if mode not in MODES:
        raise PlacementError(f"allocation mode {mode!r} is not one of {', '.join(MODES)} (MARO: Invalid allocation "
                             f"mode.)")
    if metric not in METRICS:
        raise PlacementError(f"allocation metric {metric!r} is not one of {', '.join(METRICS)}")
    sign = -1 if mode == "single-metric-balanced" else 1
    pop, push, key = heapq.heappop, heapq.heappush, operator.attrgetter(metric)
    first, second = _OTHERS[metric]
    wanted: list[tuple] = []
    by_label = {}
    for demand in demands:
        amounts = _Amounts(demand.name, demand.cpu, demand.memory, demand.gpu)
        by_label[demand.name] = demand
        push(wanted, _entry(-key(amounts), amounts, metric))
    nodes: list[tuple] = []
    for item in free:
        amounts = _Amounts(item.node, item.cpu, item.memory, item.gpu)
        push(nodes, _entry(sign * key(amounts), amounts, metric))
    plan: dict[str, str] = {}
    rest, inf = _Rest, _INF
    others = operator.attrgetter(first, second)
    while wanted:  # the hot loop: heap calls and attribute tests inlined
        needed = pop(wanted)[3]
        cpu, memory, gpu = needed.cpu, needed.memory, needed.gpu
        set_aside = []  # heap entries as popped: they go back unchanged, so the same tuple goes back
        chosen = None
        while nodes:
            entry = pop(nodes)
            candidate = entry[3]
            if candidate.cpu >= cpu and candidate.memory >= memory and candidate.gpu >= gpu:
                chosen = candidate
                break
            set_aside.append(entry)
        if chosen is None:
            raise _misfit(by_label[needed.label], [entry[3] for entry in set_aside], demands)
        plan[needed.label] = chosen.label
        chosen.cpu -= cpu
        chosen.memory -= memory
        chosen.gpu -= gpu
        push(nodes, (sign * key(chosen), rest(others(chosen)), inf - inf, chosen))  # inf - inf: a new NaN
        for entry in set_aside:
            push(nodes, entry)
    return plan


def commit(plan: dict[str, str], demands: Iterable[Demand], free: Sequence[Free]) -> list[Free]:
    """The free resources once `plan` is running (a new list, same node order)."""
    used: dict[str, list[float]] = {item.node: [0.0, 0.0, 0.0] for item in free}
    for demand in demands:
        if demand.name in plan:
            totals = used[plan[demand.name]]
            totals[0] += demand.cpu
            totals[1] += demand.memory
            totals[2] += demand.gpu
    return [Free(node=item.node, cpu=item.cpu - used[item.node][0], memory=item.memory - used[item.node][1],
                 gpu=item.gpu - used[item.node][2]) for item in free]


def _misfit(demand: Demand, nodes: list[_Amounts], demands: Sequence[Demand]) -> PlacementError:
    """The error for the first container that fits nowhere: its component, and on the node that comes closest
    (fewest resources short, then the smallest shortfall relative to the need, then node order), what is short and by how much."""
    total = sum(1 for d in demands if d.component == demand.component)
    where = f"component {demand.component!r} (container {demand.index + 1} of {total})"
    if not nodes:
        return PlacementError(f"{where} does not fit: the cluster has no running node", component=demand.component)
    best = None
    for position, node in enumerate(nodes):
        shorts = [(metric, getattr(demand, metric) - getattr(node, metric)) for metric in METRICS
                  if getattr(node, metric) < getattr(demand, metric)]
        relative = sum(short / getattr(demand, metric) for metric, short in shorts)
        rank = (len(shorts), relative, position)
        if best is None or rank < best[0]:
            best = (rank, node, shorts)
    assert best is not None
    _, node, shorts = best
    metric, shortfall = shorts[0]
    parts = [f"{name} short by {_amount(short)} {UNITS[name]} (free {_amount(getattr(node, name))}, needs "
             f"{_amount(getattr(demand, name))})" for name, short in shorts]
    return PlacementError(f"{where} does not fit: on the best node {node.label!r}, " + "; ".join(parts)
                          + " (every container of a job is placed at once or none)",
                          component=demand.component, resource=metric, shortfall=shortfall, node=node.label)


def _amount(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
