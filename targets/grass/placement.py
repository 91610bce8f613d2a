"""Which node each container of a job goes to, exactly as MARO's master chooses (maro.md A.7).

MARO keeps two binary heaps (Python's heapq) of `(key, resource)` pairs:
- containers, keyed by minus the chosen metric (largest demand first), pushed in component order then index;
- nodes, keyed by minus the free metric (`single-metric-balanced`: most free first, i.e. worst fit / spread) or by
  the free metric (`single-metric-compacted`: least free first, i.e. best fit / pack), pushed in node order.
For each container it pops nodes until one fits on cpu, memory and gpu alike, places it, subtracts, and pushes
that node and every node it set aside back. When two keys are equal, heapq compares the resources themselves with
MARO's `BasicResource` ordering: two resources are equal when all three amounts are; `a < b` when `a` is not at
least `b` on every amount. That ordering is not a total order, so which of two tied nodes comes first depends on
the heap's shape: the only way to land where MARO lands is to run the same heap operations on entries whose `<`
answers as MARO's does for every pair heapq compares.

Why the entries are floats: MARO's time goes into Python-level comparisons (each tie calls `__cmp__`); here an
entry is a float (`_Entry`) compared by heapq in C, carrying its amounts in a slot. The float encodes (key, the
other two amounts) exactly and in tuple order (`_weights`), which agrees with MARO's answer for every pair except
two amounts on one key that are incomparable (more memory but fewer GPUs: MARO calls each less than the other).
The later entry of such a pair is a `_Tied` (`_TiedDown` when the key is minus the metric), compared in Python as
MARO compares. Which pairs can meet is decided per run of equal containers (`_parallel_chain`): while one
container size is placed, every node moves along the same line, so two nodes that meet on one key always differ
by the same amounts; if no two can cross, no entry of that run is tied, otherwise each new entry is checked
against the nodes on its key (`groups`). Amounts that cannot be encoded
(not finite, too wide for 53 bits, negative needs) make every entry tied: slower, never different.
tests/targets/grass checks the placements against MARO's own ResourceController, on many tie-heavy clusters.

Two things MARO does that paictl does not copy: a job that does not fit leaves its partial subtractions on the free
resources the rest of the pass uses (here the job's placement works on a copy and is committed only when every
container fits), and a misfit says only "Unable to allocate, Abort" (here `PlacementError` names the component,
the resource that fell short and by how much on the best node).
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
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


class _Entry(float):
    """A heap entry: a float whose C comparison gives MARO's answer, and in `n` what it stands for (a node:
    `[metric, a, b, name, (a, b) as recorded in groups]`, the other two amounts in field order; a container:
    `(metric, a, b, position in the demands)`)."""

    __slots__ = ("n",)


class _Tied(_Entry):
    """An entry compared in Python, as MARO compares: its key may hold an amount incomparable with it. The key is
    the metric itself (compacted nodes); different keys are compared on the metric, not through the float."""

    __slots__ = ()

    def __lt__(self, other: float) -> bool:  # type: ignore[override]
        x, y = self.n, other.n  # type: ignore[attr-defined]
        if x[0] != y[0]:
            return x[0] < y[0]
        return not (x[1] >= y[1] and x[2] >= y[2])

    def __gt__(self, other: float) -> bool:  # type: ignore[override]  # Python asks a subclass first
        x, y = self.n, other.n  # type: ignore[attr-defined]
        if x[0] != y[0]:
            return x[0] > y[0]
        return not (y[1] >= x[1] and y[2] >= x[2])


class _TiedDown(_Entry):
    """A `_Tied` whose key is minus the metric (balanced nodes, containers)."""

    __slots__ = ()

    def __lt__(self, other: float) -> bool:  # type: ignore[override]
        x, y = self.n, other.n  # type: ignore[attr-defined]
        if x[0] != y[0]:
            return x[0] > y[0]
        return not (x[1] >= y[1] and x[2] >= y[2])

    def __gt__(self, other: float) -> bool:  # type: ignore[override]
        x, y = self.n, other.n  # type: ignore[attr-defined]
        if x[0] != y[0]:
            return x[0] < y[0]
        return not (y[1] >= x[1] and y[2] >= x[2])


_INF = float("inf")
_OTHERS = {"cpu": ("memory", "gpu"), "memory": ("cpu", "gpu"), "gpu": ("cpu", "memory")}


def _weights(columns: Sequence[set], key_sign: int) -> tuple[tuple[float, float, float], tuple, tuple] | None:
    """(A, B, C) such that `m * A + a * B + b * C` is computed exactly and orders (key_sign * m, a, b) as tuples
    do, for every m, a and b in the ranges of `columns` (each the values one amount takes, 0 among them), and the
    power of two that makes each amount an integer; None when there are none (a value that is not a finite
    number, or ranges too wide for 53 bits), and the largest magnitude of each in those units."""
    units, spans, scales = [], [], []
    for values in columns:
        if not all(isinstance(v, (int, float)) and abs(v) < _INF for v in values):
            return None
        ratios = [v.as_integer_ratio() for v in values]
        scale = max(denominator for _, denominator in ratios)  # a power of two: every finite float is dyadic
        ints = [numerator * (scale // denominator) for numerator, denominator in ratios]
        scales.append(scale)
        spans.append(max(ints) - min(ints) + 1)
        units.append(max(-min(ints), max(ints)))
    a_weight = scales[0] * spans[1] * spans[2]
    if units[0] * spans[1] * spans[2] + units[1] * spans[2] + units[2] >= 2 ** 53 or a_weight >= 2 ** 53:
        return None
    weights = float(key_sign * a_weight), float(scales[1] * spans[2]), float(scales[2])
    return weights, (scales[0], scales[1], scales[2]), (units[0], units[1], units[2])


def _crossing(rests: Iterable[tuple[float, float]], a: float, b: float) -> bool:
    """Whether one of `rests` is incomparable with (a, b): more of one amount and less of the other."""
    for x, y in rests:
        if (x > a and y < b) or (x < a and y > b):
            return True
    return False


def _parallel_chain(nodes: list[list], need: tuple, scales: tuple[int, int, int], bounds: tuple) -> bool:
    """Whether no two nodes can be incomparable on one key while containers of size `need` are placed.

    Each placement moves a node by `need`; two nodes on one key m then differ by their difference projected along
    `need` onto m = 0, whatever each has taken: if those projections form a chain, no two cross. Computed in
    integers held exactly by floats (`bounds`: the largest amount of each, in units); False when they would not be.
    """
    sm, sa, sb = scales
    cm, ca, cb = need[0] * sm, need[1] * sa, need[2] * sb  # integers: `need` is one of the encoded amounts
    if max(bounds[1] * cm + bounds[0] * ca, bounds[2] * cm + bounds[0] * cb) >= 2 ** 53:
        return False
    a_m, a_a, b_m, b_b = sm * ca, sa * cm, sm * cb, sb * cm
    points = sorted({(a * a_a - m * a_m, b * b_b - m * b_m) for m, a, b, _, _ in nodes})
    ordinates = [y for _, y in points]
    return all(map(operator.le, ordinates, itertools.islice(ordinates, 1, None)))


def place(demands: Sequence[Demand], free: Sequence[Free], *, mode: str, metric: str,
          held: str = "free") -> dict[str, str]:
    """container name -> node name for every demand, or PlacementError; `free` is not changed. `held` names what
    `free` holds in a misfit's message ("capacity" when it is the nodes' whole resources).

    Use `commit` to subtract a successful placement from the free resources a later job sees.
    """
    if mode not in MODES:
        raise PlacementError(f"allocation mode {mode!r} is not one of {', '.join(MODES)} (MARO: Invalid allocation "
                             f"mode.)")
    if metric not in METRICS:
        raise PlacementError(f"allocation metric {metric!r} is not one of {', '.join(METRICS)}")
    sign = -1 if mode == "single-metric-balanced" else 1
    dims = (metric, *_OTHERS[metric])
    fields = operator.attrgetter(*dims)
    pop, push = heapq.heappop, heapq.heappush
    # Containers, largest need first. They never change: an entry is tied when its key holds an incomparable one.
    sizes = [fields(demand) for demand in demands]
    distinct = set(sizes)
    needs = [{size[dim] for size in distinct} | {0} for dim in range(3)]
    encoding = _weights(needs, -1)
    kinds = {}
    for m, a, b in distinct:
        if encoding is None:
            kinds[m, a, b] = _TiedDown, -m
        else:
            (first, second, third), _, _ = encoding
            tied = _crossing([(x, y) for n, x, y in distinct if n == m], a, b)
            kinds[m, a, b] = (_TiedDown if tied else _Entry), m * first + a * second + b * third
    heap: list[_Entry] = []
    for position, size in enumerate(sizes):
        kind, value = kinds[size]
        entry = kind(value)
        entry.n = (*size, position)
        push(heap, entry)
    order = [pop(heap) for _ in range(len(sizes))]  # equal floats: equal sizes (encoded or not, all alike)
    # Nodes. A node's amounts stay between 0 (or its start, when below) and its start, as multiples of the finest
    # precision of its own and the containers' (needs are never negative, or every entry is tied).
    nodes = [[*fields(item), item.node, None] for item in free]
    starts = [{node[dim] for node in nodes} for dim in range(3)]
    encoding = None
    if all(x >= 0 for need in needs for x in need):
        encoding = _weights([start | need for start, need in zip(starts, needs)], sign)
    (first, second, third), scales, bounds = encoding or ((0.0, 0.0, 0.0), (1, 1, 1), (0, 0, 0))
    # Two nodes can be incomparable only if both other amounts differ between nodes, at the start or once taken.
    possible = encoding is not None and all(len(start) > 1 or len(need) > 1
                                            for start, need in zip(starts[1:], needs[1:]))
    slow = _Tied if sign == 1 else _TiedDown
    groups: dict = {}  # key -> (a, b) -> how many nodes have them, while watched
    for node in nodes:
        m, a, b = node[:3]
        tied = encoding is None
        if possible:  # the later of two incomparable nodes is tied
            rest = node[4] = a, b
            rests = groups.setdefault(m, {})
            tied = _crossing(rests, a, b)
            rests[rest] = rests.get(rest, 0) + 1
        entry = slow(sign * m) if encoding is None else (slow if tied else _Entry)(m * first + a * second
                                                                                     + b * third)
        entry.n = node
        push(heap, entry)
    watched = possible
    plan: dict[str, str] = {}
    names = [demand.name for demand in demands]
    for _, run in itertools.groupby(order):  # runs of equal containers
        run = list(run)
        if possible:
            watch = (run[0].n[0] == 0 or len(run) < len(nodes) // 2
                     or not _parallel_chain(nodes, run[0].n, scales, bounds))
            if watch and not watched:  # the nodes as they are now
                groups = {}
                for node in nodes:
                    rest = node[4] = node[1], node[2]
                    rests = groups.setdefault(node[0], {})
                    rests[rest] = rests.get(rest, 0) + 1
            watched = watch
        for entry in run:  # the hot loop
            cm, ca, cb, position = entry.n
            set_aside = None  # entries as popped: their amounts have not changed, so the same entry goes back
            entry = pop(heap) if heap else None
            while entry is not None:
                node = entry.n
                if node[0] >= cm and node[1] >= ca and node[2] >= cb:
                    break
                if set_aside is None:
                    set_aside = [entry]
                else:
                    set_aside.append(entry)
                entry = pop(heap) if heap else None
            else:
                raise _misfit(demands[position], [Free(node=entry.n[3], **dict(zip(dims, entry.n)))
                                                  for entry in set_aside or ()], demands, held=held)
            plan[names[position]] = node[3]
            if watched:
                rests = groups[node[0]]
                rest = node[4]
                if rests[rest] == 1:
                    del rests[rest]
                else:
                    rests[rest] -= 1
            m = node[0] = node[0] - cm
            a = node[1] = node[1] - ca
            b = node[2] = node[2] - cb
            if encoding is None:
                entry = slow(sign * m)
            else:
                entry = _Entry(m * first + a * second + b * third)
                if watched:
                    rest = node[4] = a, b
                    rests = groups.setdefault(m, {})
                    if _crossing(rests, a, b):
                        entry = slow(entry)
                    rests[rest] = rests.get(rest, 0) + 1
            entry.n = node
            push(heap, entry)
            if set_aside is not None:
                for entry in set_aside:
                    push(heap, entry)
    return plan


def never_fits(demands: Sequence[Demand], capacity: Sequence[Free], *, mode: str, metric: str) -> PlacementError | None:
    """Why the job could not be placed even on an empty cluster (every node's whole resources free), or None: such
    a job would wait forever, so it is refused at submit rather than queued."""
    try:
        place(demands, capacity, mode=mode, metric=metric, held="capacity")
    except PlacementError as error:
        return error
    return None


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


def _misfit(demand: Demand, nodes: list[Free], demands: Sequence[Demand], *, held: str = "free") -> PlacementError:
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
    parts = [f"{name} short by {amount_text(short)} {UNITS[name]} ({held} {amount_text(getattr(node, name))}, "
             f"needs {amount_text(getattr(demand, name))})" for name, short in shorts]
    return PlacementError(f"{where} does not fit: on the best node {node.node!r}, " + "; ".join(parts)
                          + " (every container of a job is placed at once or none)",
                          component=demand.component, resource=metric, shortfall=shortfall, node=node.node)


def amount_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
