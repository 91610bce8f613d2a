"""Placement as MARO's master places: hand-checked cases for both modes and every kind of tie, and misfit errors.

The expected nodes below were worked out by hand from MARO's algorithm (maro.md A.7 and the module docstring of
targets/grass/placement.py): heapq pops the smallest (key, resources) pair, keys tie, and then MARO's resource
comparison decides, where `a < b` whenever `a` is not at least `b` on cpu, memory and gpu alike.
"""

from __future__ import annotations


import pytest

from paictl.targets.grass.placement import Demand, Free, PlacementError, commit, place


def demand(name, cpu, memory=1024, gpu=0, component=None, index=0):
    return Demand(name=name, component=component or name, index=index, cpu=cpu, memory=memory, gpu=gpu)


def nodes(*specs):
    return [Free(node=name, cpu=cpu, memory=memory, gpu=gpu) for name, cpu, memory, gpu in specs]


BALANCED, COMPACTED = "single-metric-balanced", "single-metric-compacted"


def test_balanced_spreads_and_compacted_packs():
    free = nodes(("a", 8, 8192, 0), ("b", 4, 8192, 0))
    two = [demand("c0", 2, component="c", index=0), demand("c1", 2, component="c", index=1)]
    # balanced: a (8 free) takes c0 -> 6; a (6) still has the most -> c1
    assert place(two, free, mode=BALANCED, metric="cpu") == {"c0": "a", "c1": "a"}
    # compacted: b (4, the least free) takes c0 -> 2; b (2) still fits -> c1
    assert place(two, free, mode=COMPACTED, metric="cpu") == {"c0": "b", "c1": "b"}


def test_balanced_moves_on_once_the_biggest_node_is_no_longer_biggest():
    free = nodes(("a", 4, 8192, 0), ("b", 3, 8192, 0))
    two = [demand("c0", 2, component="c", index=0), demand("c1", 2, component="c", index=1)]
    assert place(two, free, mode=BALANCED, metric="cpu") == {"c0": "a", "c1": "b"}
    # compacted: b (3) takes c0 -> 1, which no longer fits 2 cores: set aside, a takes c1
    assert place(two, free, mode=COMPACTED, metric="cpu") == {"c0": "b", "c1": "a"}


def test_containers_go_largest_demand_first_whatever_the_component_order():
    free = nodes(("a", 4, 8192, 0), ("b", 3, 8192, 0))
    job = [demand("small", 1), demand("big", 3)]
    # compacted: big first takes b (3, the least that fits) -> 0; small does not fit b any more -> a
    assert place(job, free, mode=COMPACTED, metric="cpu") == {"big": "b", "small": "a"}
    # balanced: big takes a (4) -> 1; small goes to b (3 > 1)
    assert place(job, free, mode=BALANCED, metric="cpu") == {"big": "a", "small": "b"}


def test_the_metric_decides_the_order():
    free = nodes(("a", 8, 4096, 0), ("b", 2, 16384, 0))
    one = [demand("c", 1, memory=1024)]
    assert place(one, free, mode=BALANCED, metric="memory") == {"c": "b"}
    assert place(one, free, mode=COMPACTED, metric="memory") == {"c": "a"}
    assert place(one, free, mode=BALANCED, metric="cpu") == {"c": "a"}
    assert place(one, free, mode=COMPACTED, metric="cpu") == {"c": "b"}


@pytest.mark.parametrize("mode", [BALANCED, COMPACTED])
def test_tie_goes_to_the_node_with_less_of_another_resource_in_either_file_order(mode):
    # Same cpu; n2 has at least as much of everything, so MARO's comparison says n1 < n2: n1 is popped first
    # whichever was pushed first.
    n1, n2 = ("n1", 4, 4096, 0), ("n2", 4, 8192, 0)
    one = [demand("c", 1)]
    assert place(one, nodes(n1, n2), mode=mode, metric="cpu") == {"c": "n1"}
    assert place(one, nodes(n2, n1), mode=mode, metric="cpu") == {"c": "n1"}


def test_incomparable_tie_goes_to_the_node_pushed_last_of_two():
    # n1 has more memory, n2 a GPU: each is "less" than the other, so the second push sifts above the first.
    n1, n2 = ("n1", 4, 8192, 0), ("n2", 4, 4096, 1)
    one = [demand("c", 1)]
    assert place(one, nodes(n1, n2), mode=BALANCED, metric="cpu") == {"c": "n2"}
    assert place(one, nodes(n2, n1), mode=BALANCED, metric="cpu") == {"c": "n1"}


def test_identical_nodes_tie_to_the_first_in_file_order():
    one = [demand("c", 1)]
    assert place(one, nodes(("n1", 4, 4096, 0), ("n2", 4, 4096, 0)), mode=BALANCED, metric="cpu") == {"c": "n1"}
    assert place(one, nodes(("n2", 4, 4096, 0), ("n1", 4, 4096, 0)), mode=COMPACTED, metric="cpu") == {"c": "n2"}


def test_identical_containers_are_popped_in_heap_order_not_index_order():
    # Containers pushed L (4 cores) then c0, c1, c2 (2 cores, equal): heap [L, c0, c1, c2]. Popping L puts c2 at
    # the root; its children c0 and c1 tie, and heapq moves the right one (c1) up: pops are L, c1, c0, c2.
    job = [demand("L", 4), demand("c0", 2, component="c", index=0), demand("c1", 2, component="c", index=1),
           demand("c2", 2, component="c", index=2)]
    free = nodes(("a", 6, 8192, 0), ("b", 5, 8192, 0), ("c", 3, 8192, 0))
    # Balanced on cpu: L -> a (6 -> 2, 7168 MB); c1 -> b (5 -> 3, 7168 MB); now b and c both have 3 cores, and b has
    # less memory, so MARO's comparison puts b first: c0 -> b (3 -> 1); then c (3) is the most free: c2 -> c.
    assert place(job, free, mode=BALANCED, metric="cpu") == {"L": "a", "c1": "b", "c0": "b", "c2": "c"}


def test_misfit_names_the_component_the_resource_and_the_shortfall_on_the_best_node():
    free = nodes(("a", 4, 8192, 0), ("b", 2, 16384, 0))
    job = [demand("w0", 3, memory=12288, component="worker", index=0)]
    with pytest.raises(PlacementError) as caught:
        place(job, free, mode=BALANCED, metric="cpu")
    error = caught.value
    # a lacks 4096 of 12288 MB (1/3); b lacks 1 of 3 cores (1/3): equal, so the first in order, a
    assert (error.component, error.resource, error.shortfall, error.node) == ("worker", "memory", 4096, "a")
    assert str(error) == ("component 'worker' (container 1 of 1) does not fit: on the best node 'a', memory short by "
                          "4096 MB (free 8192, needs 12288) (every container of a job is placed at once or none)")


def test_all_or_none_the_last_container_that_does_not_fit_fails_the_job_and_changes_nothing():
    free = nodes(("a", 4, 8192, 0))
    job = [demand(f"c{i}", 2, component="c", index=i) for i in range(3)]
    with pytest.raises(PlacementError) as caught:
        place(job, free, mode=COMPACTED, metric="cpu")
    assert "container 3 of 3" in str(caught.value) and "cpu short by 2 cores (free 0, needs 2)" in str(caught.value)
    assert free == nodes(("a", 4, 8192, 0))  # untouched: the next job in the pass sees the same free resources


def test_commit_subtracts_a_placement():
    free = nodes(("a", 4, 8192, 1), ("b", 2, 4096, 0))
    job = [demand("x", 1, memory=1000, gpu=1), demand("y", 2, memory=96)]
    plan = place(job, free, mode=BALANCED, metric="cpu")
    assert plan == {"y": "a", "x": "a"}
    assert commit(plan, job, free) == nodes(("a", 1, 7096, 0), ("b", 2, 4096, 0))


def test_no_node_and_bad_mode_or_metric():
    with pytest.raises(PlacementError, match="no running node"):
        place([demand("c", 1)], [], mode=BALANCED, metric="cpu")
    with pytest.raises(PlacementError, match="allocation mode 'multi'"):
        place([demand("c", 1)], nodes(("a", 1, 1, 0)), mode="multi", metric="cpu")
    with pytest.raises(PlacementError, match="allocation metric 'disk'"):
        place([demand("c", 1)], nodes(("a", 1, 1, 0)), mode=BALANCED, metric="disk")


class ReferenceResource:
    """MARO's resource ordering written plainly (equal on all three; else greater when at least as much of all
    three; else less), with `==` and `<` the way heapq and tuples ask: the oracle the fast comparison must match."""

    def __init__(self, label, cpu, memory, gpu):
        self.label, self.cpu, self.memory, self.gpu = label, cpu, memory, gpu

    def _cmp(self, other):
        if (self.cpu, self.memory, self.gpu) == (other.cpu, other.memory, other.gpu):
            return 0
        return 1 if self.cpu >= other.cpu and self.memory >= other.memory and self.gpu >= other.gpu else -1

    def __eq__(self, other):
        return self._cmp(other) == 0

    def __lt__(self, other):
        return self._cmp(other) == -1


def reference_place(demands, free, mode, metric):
    """MARO's allocation loop over (key, resource) tuples, transcribed from maro.md A.7 (an independent oracle)."""
    import heapq

    sign = -1 if mode == BALANCED else 1
    wanted, nodes = [], []
    for d in demands:
        heapq.heappush(wanted, (-getattr(d, metric), ReferenceResource(d.name, d.cpu, d.memory, d.gpu)))
    for f in free:
        heapq.heappush(nodes, (sign * getattr(f, metric), ReferenceResource(f.node, f.cpu, f.memory, f.gpu)))
    plan = {}
    while wanted:
        need = heapq.heappop(wanted)[1]
        aside, chosen = [], None
        while nodes:
            node = heapq.heappop(nodes)[1]
            if node._cmp(need) >= 0:
                chosen = node
                break
            aside.append(node)
        if chosen is None:
            return None
        plan[need.label] = chosen.label
        chosen.cpu, chosen.memory, chosen.gpu = chosen.cpu - need.cpu, chosen.memory - need.memory, chosen.gpu - need.gpu
        for node in [chosen, *aside]:
            heapq.heappush(nodes, (sign * getattr(node, metric), node))
    return plan


GRID = [(m, a, b) for m in (0, 0.5, 1, 2) for a in (0, 1024, 2048) for b in (0, 1, 3)]


@pytest.mark.parametrize("sign", [1, -1])
def test_the_encoded_floats_order_amounts_as_tuples_exactly(sign):
    from paictl.targets.grass.placement import _weights

    columns = [{x[dim] for x in GRID} for dim in range(3)]
    (first, second, third), _, _ = _weights(columns, sign)
    values = {x: x[0] * first + x[1] * second + x[2] * third for x in GRID}
    assert len(set(values.values())) == len(GRID)  # one float per amount
    assert sorted(GRID, key=values.__getitem__) == sorted(GRID, key=lambda x: (sign * x[0], x[1], x[2]))
    assert all(value.is_integer() for value in values.values())  # computed exactly


def test_amounts_that_cannot_be_encoded_are_refused():
    from paictl.targets.grass.placement import _weights

    assert _weights([{0, 0.1}, {0}, {0}], 1) is None  # 0.1 is not a short binary fraction
    assert _weights([{0, float("inf")}, {0}, {0}], 1) is None
    assert _weights([{0, float("nan")}, {0}, {0}], 1) is None
    assert _weights([{0, 2.0 ** 40}, {0, 2.0 ** 20}, {0}], 1) is None  # 61 bits
    assert _weights([{0, 2.0 ** 20}, {0, 2.0 ** 20}, {0, 7}], 1) is not None


def test_both_entry_kinds_compare_as_maro_does_on_every_pair_of_a_grid():
    """A `_Tied` (`_TiedDown` for keys that are minus the metric) against anything answers as MARO; two plain
    entries answer as MARO whenever their amounts are comparable (the only pairs `place` lets meet)."""
    from itertools import product

    from paictl.targets.grass.placement import _Entry, _Tied, _TiedDown, _weights

    for sign, tied in ((1, _Tied), (-1, _TiedDown)):
        (first, second, third), _, _ = _weights([{x[dim] for x in GRID} for dim in range(3)], sign)

        def entry(kind, x):
            made = kind(x[0] * first + x[1] * second + x[2] * third)
            made.n = [*x, "node", None]
            return made

        for x, y in product(GRID, GRID):
            theirs = (sign * x[0], ReferenceResource("x", *x)) < (sign * y[0], ReferenceResource("y", *y))
            for left, right in product((_Entry, tied), repeat=2):
                if left is right is _Entry and (x[1] - y[1]) * (x[2] - y[2]) < 0 and x[0] == y[0]:
                    continue
                assert (entry(left, x) < entry(right, y)) == theirs, (x, y, sign, left, right)


@pytest.mark.parametrize("seed", range(40))
def test_random_workloads_land_where_maros_loop_puts_them(seed):
    import random

    rng = random.Random(seed)
    sizes = [(rng.choice([0.5, 1, 2, 4]), rng.choice([512, 1024, 4096]), rng.choice([0, 0, 1])) for _ in range(3)]
    demands = [Demand(name=f"c{i}", component=f"k{i % 3}", index=i // 3, cpu=sizes[i % 3][0], memory=sizes[i % 3][1],
                      gpu=sizes[i % 3][2]) for i in range(rng.randint(1, 60))]
    shapes = [(rng.choice([4, 8, 16]), rng.choice([8192, 16384]), rng.choice([0, 2])) for _ in range(3)]
    free = [Free(node=f"n{i}", cpu=shapes[i % 3][0], memory=shapes[i % 3][1], gpu=shapes[i % 3][2])
            for i in range(rng.randint(1, 12))]
    for mode in (BALANCED, COMPACTED):
        for metric in ("cpu", "memory", "gpu"):
            expected = reference_place(demands, free, mode, metric)
            if expected is None:
                with pytest.raises(PlacementError):
                    place(demands, free, mode=mode, metric=metric)
            else:
                assert place(demands, free, mode=mode, metric=metric) == expected


@pytest.fixture(scope="module")
def maro_controller():
    """MARO's own ResourceController, from PyPI's pymaro (tests/maro_peer/package.py), imported into this process
    so that both sides run under one interpreter. Built on first use when not cached; skipped when it cannot be
    installed here, except under CI, which provisions it (.ci/provision-grass.sh)."""
    import os

    from maro_peer import package

    try:
        venv = package.ensure_venv()
    except package.Unavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI provisions MARO (.ci/provision-grass.sh), but {exc}", pytrace=False)
        pytest.skip(str(exc))
    return package.resource_controller(venv)


@pytest.mark.parametrize("seed", range(25))
def test_placements_equal_maros_own_resource_controller(seed, maro_controller):
    import logging
    import random

    controller, container, node = maro_controller
    logging.getLogger("services.master_agent.agent").setLevel(logging.CRITICAL)
    rng = random.Random(1000 + seed)
    sizes = [(rng.choice([0.5, 1, 2, 4]), rng.choice([512, 1024, 4096]), rng.choice([0, 0, 1])) for _ in range(4)]
    demands = [Demand(name=f"c{i}", component=f"k{i % 4}", index=i // 4, cpu=sizes[i % 4][0], memory=sizes[i % 4][1],
                      gpu=sizes[i % 4][2]) for i in range(rng.randint(1, 120))]
    shapes = [(rng.choice([4, 8, 16]), rng.choice([8192, 16384]), rng.choice([0, 2])) for _ in range(3)]
    free = [Free(node=f"n{i}", cpu=shapes[i % 3][0], memory=shapes[i % 3][1], gpu=shapes[i % 3][2])
            for i in range(rng.randint(1, 20))]
    for mode in (BALANCED, COMPACTED):
        for metric in ("cpu", "memory", "gpu"):
            required = [container(container_name=d.name, cpu=d.cpu, memory=d.memory, gpu=d.gpu) for d in demands]
            nodes = [node(node_name=f.node, cpu=f.cpu, memory=f.memory, gpu=f.gpu) for f in free]
            try:
                expected = controller.get_allocation_plan({"mode": mode, "metric": metric}, required, nodes)
            except Exception as exc:  # MARO's ResourceAllocationFailed
                assert type(exc).__name__ == "ResourceAllocationFailed"
                with pytest.raises(PlacementError):
                    place(demands, free, mode=mode, metric=metric)
                continue
            assert place(demands, free, mode=mode, metric=metric) == expected, (mode, metric)


def random_cluster(draw_int, draw_choice):
    """A tie-heavy cluster: amounts on few levels (so keys tie and amounts cross), components of equal containers
    (so runs of one size are long), sometimes amounts no float encodes or a cluster that cannot take the job."""
    levels = {"cpu": [0, 0.5, 1, 2, 3], "memory": [0, 512, 1024, 2048], "gpu": [0, 1, 2]}
    if draw_int(0, 9) == 0:
        levels["cpu"] = [0.1, 0.3, 1]  # not binary fractions: every entry compared in Python
    components = draw_int(1, 4)
    demands = []
    for component in range(components):
        cpu, memory, gpu = (draw_choice(levels[name][:3]) for name in METRIC_NAMES)
        for index in range(draw_int(1, 25)):
            demands.append(Demand(name=f"k{component}-{index}", component=f"k{component}", index=index, cpu=cpu,
                                  memory=memory, gpu=gpu))
    free = [Free(node=f"n{i}", cpu=draw_choice(levels["cpu"]) * draw_int(1, 8),
                 memory=draw_choice(levels["memory"]) * draw_int(1, 8), gpu=draw_choice(levels["gpu"]) * draw_int(0, 3))
            for i in range(draw_int(1, 14))]
    return demands, free


METRIC_NAMES = ("cpu", "memory", "gpu")


def maro_plan(maro, demands, free, mode, metric):
    """MARO's own plan, or None when MARO says it cannot allocate."""
    import logging

    controller, container, node = maro
    logging.getLogger("services.master_agent.agent").setLevel(logging.CRITICAL)
    required = [container(container_name=d.name, cpu=d.cpu, memory=d.memory, gpu=d.gpu) for d in demands]
    nodes = [node(node_name=f.node, cpu=f.cpu, memory=f.memory, gpu=f.gpu) for f in free]
    try:
        return controller.get_allocation_plan({"mode": mode, "metric": metric}, required, nodes)
    except Exception as exc:  # MARO's ResourceAllocationFailed
        assert type(exc).__name__ == "ResourceAllocationFailed"
        return None


def assert_same_as(expected, demands, free, mode, metric):
    if expected is None:
        with pytest.raises(PlacementError):
            place(demands, free, mode=mode, metric=metric)
    else:
        assert place(demands, free, mode=mode, metric=metric) == expected, (mode, metric)


from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.data())
def test_tie_heavy_clusters_land_where_maros_own_resource_controller_puts_them(maro_controller, data):
    demands, free = random_cluster(lambda lo, hi: data.draw(st.integers(lo, hi)),
                                   lambda options: data.draw(st.sampled_from(options)))
    for mode in (BALANCED, COMPACTED):
        for metric in METRIC_NAMES:
            assert_same_as(maro_plan(maro_controller, demands, free, mode, metric), demands, free, mode, metric)


def test_tie_heavy_clusters_take_every_path_and_land_where_maros_loop_puts_them(monkeypatch):
    """Seeded clusters of the same kind against the transcription (runs without MARO), counting that the cases
    reach every way `place` compares: tied entries, runs proven free of crossings, runs watched node by node,
    amounts no float encodes, misfits."""
    import random

    from paictl.targets.grass import placement

    seen = {"tied": 0, "chain": 0, "watched": 0, "unencoded": 0, "misfit": 0}
    chain = placement._parallel_chain

    def counting_chain(*args):
        result = chain(*args)
        seen["chain" if result else "watched"] += 1
        return result

    def counting_tied(cls, value):
        seen["tied"] += 1
        return float.__new__(cls, value)

    monkeypatch.setattr(placement, "_parallel_chain", counting_chain)
    monkeypatch.setattr(placement._Tied, "__new__", counting_tied)
    monkeypatch.setattr(placement._TiedDown, "__new__", counting_tied)
    rng = random.Random(27)
    for _ in range(300):
        demands, free = random_cluster(rng.randint, rng.choice)
        seen["unencoded"] += any(d.cpu == 0.1 or d.cpu == 0.3 for d in demands)
        for mode in (BALANCED, COMPACTED):
            for metric in METRIC_NAMES:
                expected = reference_place(demands, free, mode, metric)
                seen["misfit"] += expected is None
                assert_same_as(expected, demands, free, mode, metric)
    assert all(count > 10 for count in seen.values()), seen
