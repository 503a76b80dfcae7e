"""Min-cost flow, LP bound and exact planners: feasibility, optimality, bound validity.

The independent references are a brute-force enumeration on tiny snapshots and the
per-node assignment solver (no equivalence classes); the invariants are feasibility
(one job per node, fit, type, finite cost) and cost >= bound for every planner.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from magnum_lib.base.validate import ParameterError
from magnum_lib.planner.classes import build_classes, class_costs, unroll
from magnum_lib.planner.flow import class_penalty
from magnum_lib.planner.lp import transport_lp
from magnum_lib.planner.metrics import evaluate, gap, group_placements, violations
from magnum_lib.planner.plan import ALGORITHMS, plan
from magnum_lib.planner.scoring import placement_cost
from magnum_lib.planner.snapshot import Snapshot, make_snapshot

PENALTY = 1000.0


@st.composite
def small_snapshots(draw, max_nodes=6, max_jobs=5):
    n = draw(st.integers(0, max_nodes))
    g = draw(st.integers(1, 3))
    cap = draw(st.lists(st.sampled_from([1, 2, 4]), min_size=n, max_size=n))
    free = [draw(st.integers(0, c)) for c in cap]
    m = draw(st.integers(0, max_jobs))
    bw_values = st.sampled_from([10.0, 50.0, 400.0, 0.0, math.inf, math.nan])
    return Snapshot(
        node_group=draw(st.lists(st.integers(0, g - 1), min_size=n, max_size=n)),
        node_type=draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)),
        node_capacity=cap, node_free=free,
        group_bandwidth=draw(st.lists(bw_values, min_size=g, max_size=g)),
        job_demand=draw(st.lists(st.integers(1, 5), min_size=m, max_size=m)),
        job_type=draw(st.lists(st.integers(-1, 1), min_size=m, max_size=m)),
        job_comm=draw(st.lists(st.sampled_from([0.0, 0.5, 2.0]), min_size=m, max_size=m)),
        job_priority=draw(st.lists(st.integers(1, 3), min_size=m, max_size=m)),
        type_keys=("a", "b"))


def brute_force_optimum(snap: Snapshot, weight: float) -> float:
    """Least cost over every feasible placement, by enumeration (tiny snapshots only)."""
    best = math.inf
    for choice in itertools.product(range(-1, snap.n_nodes), repeat=snap.n_jobs):
        job_node = np.array(choice, dtype=np.int64)
        if violations(snap, job_node, weight):
            continue
        best = min(best, evaluate(snap, job_node, weight, PENALTY).cost)
    return best


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snap=small_snapshots(max_nodes=4, max_jobs=3), weight=st.sampled_from([0.0, 0.5, 1.0]))
def test_flow_matches_brute_force_and_bound_is_tight(snap, weight):
    best = brute_force_optimum(snap, weight)
    p = plan(snap, "flow", weight=weight)
    assert violations(snap, p.job_node, weight) == []
    assert p.cost == pytest.approx(best, rel=1e-9, abs=1e-9)
    assert p.lower_bound <= best + 1e-9 * max(1.0, best)
    assert p.gap == 0.0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snap=small_snapshots(), weight=st.sampled_from([0.0, 0.3, 1.0]))
def test_bound_never_above_any_planner(snap, weight):
    costs = {}
    for algo in ALGORITHMS:
        p = plan(snap, algo, weight=weight)
        assert violations(snap, p.job_node, weight) == [], algo
        # The plan's own metrics agree with an independent evaluation.
        assert p.cost == pytest.approx(evaluate(snap, p.job_node, weight, PENALTY).cost, rel=1e-12)
        assert p.lower_bound <= p.cost + 1e-9 * max(1.0, p.cost), algo
        assert p.gap >= 0.0
        assert len(p.hints) + len(p.unplaced) == snap.n_jobs
        costs[algo] = p.cost
    # Three exact planners, three routes to the optimum: they must agree.
    assert costs["flow"] == pytest.approx(costs["assignment"], rel=1e-9, abs=1e-9)
    assert costs["flow"] == pytest.approx(costs["lp"], rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_flow_equals_assignment_on_generated_snapshots(seed):
    snap = make_snapshot(400, 300, seed=seed, group_size=16)
    flow, exact = plan(snap, "flow"), plan(snap, "assignment")
    assert violations(snap, flow.job_node, 0.5) == []
    assert flow.cost == pytest.approx(exact.cost, rel=1e-9)
    assert flow.gap <= 0.01 and flow.gap == pytest.approx(flow.cost / flow.lower_bound - 1, abs=1e-9)


def test_contended_snapshot_leaves_lowest_priority_out_first():
    # 3 nodes of 1 free device, 5 one-device jobs: the optimum keeps the 3 highest priorities.
    snap = Snapshot(node_group=[0, 0, 0], node_type=[0, 0, 0], node_capacity=[1, 1, 1], node_free=[1, 1, 1],
                    group_bandwidth=[100.0], job_demand=[1] * 5, job_type=[-1] * 5, job_comm=[0.0] * 5,
                    job_priority=[1, 3, 1, 2, 3])
    p = plan(snap, "flow")
    assert sorted(j for j, _ in p.unplaced) == [0, 2]
    assert p.cost == pytest.approx(2 * PENALTY)
    assert all("too few fitting nodes" in r for _, r in p.unplaced)


def test_classes_collapse_and_unroll_exactly():
    snap = make_snapshot(5000, 500, seed=3)
    cl = build_classes(snap)
    assert cl.n_node_classes < 100 and cl.n_job_classes <= 500
    # Every node of a class has the same cost-relevant attributes as the class.
    usable = np.flatnonzero(snap.node_free > 0)
    c = cl.node_class[usable]
    assert np.array_equal(snap.node_free[usable], cl.nc_free[c])
    assert np.array_equal(snap.node_type[usable], cl.nc_type[c])
    assert np.array_equal(snap.group_bandwidth[snap.node_group[usable]], cl.nc_bandwidth[c])
    assert cl.nc_count.sum() == usable.size and cl.jc_count.sum() == snap.n_jobs
    # Class cost = concrete cost for every (job, node) pair of a sample.
    cc = class_costs(cl, 0.5)
    rng = np.random.default_rng(0)
    jobs, nodes = rng.integers(0, snap.n_jobs, 200), rng.choice(usable, 200)
    direct = placement_cost(snap.job_demand[jobs], snap.node_free[nodes], snap.job_comm[jobs],
                            snap.group_bandwidth[snap.node_group[nodes]], 0.5)
    ok = cc.allowed[cl.job_class[jobs], cl.node_class[nodes]]
    assert np.array_equal(cc.cost[cl.job_class[jobs], cl.node_class[nodes]][ok], direct[ok])
    # Unroll gives distinct nodes of the requested classes.
    job_nc = np.full(snap.n_jobs, -1)
    job_nc[:3] = cl.node_class[usable[0]]
    job_node = unroll(cl, job_nc)
    assert len(set(job_node[:3])) == 3 and np.all(cl.node_class[job_node[:3]] == job_nc[0])
    with pytest.raises(ValueError, match="receives"):
        job_nc[:] = int(np.argmin(cl.nc_count))
        unroll(cl, job_nc)


def test_gap_definition():
    assert gap(10.0, 8.0) == pytest.approx(0.25)
    assert gap(0.0, 0.0) == 0.0
    assert gap(1.0, 0.0) == math.inf
    assert gap(5.0 + 1e-13, 5.0) == 0.0
    assert gap(math.nan, 1.0) == math.inf


def test_hints_rank_groups_with_horizon():
    snap = make_snapshot(600, 200, seed=4, time_s=12.0)
    p = plan(snap, "flow", horizon_s=30.0, top_groups=3)
    assert len(p.hints) == p.metrics.placed
    for h in p.hints:
        assert h.valid_until_s == 42.0
        assert snap.node_group[h.node] == h.groups[0]
        assert 1 <= len(h.groups) <= 3 and len(set(h.groups)) == len(h.groups)
        assert list(h.scores) == sorted(h.scores)  # optimal plan: fallbacks are never cheaper
        assert h.to_dict()["job_id"] == h.job_id


def test_group_placements_add_up():
    snap = make_snapshot(300, 100, seed=6, group_size=10)
    p = plan(snap, "flow")
    per_group = group_placements(snap, p.job_node)
    assert per_group.shape == (snap.n_groups,)
    assert per_group.sum() == snap.job_demand[p.job_node >= 0].sum()
    # No group receives more devices than it had free.
    free = np.bincount(snap.node_group, weights=snap.node_free, minlength=snap.n_groups)
    assert np.all(per_group <= free)


def test_class_flow_respects_supplies_and_capacities():
    snap = make_snapshot(800, 1500, seed=8)  # contended: capacities bind
    cl = build_classes(snap)
    cc = class_costs(cl, 0.5)
    sol = transport_lp(cc.cost, cl.jc_count, cl.nc_count, class_penalty(cl, PENALTY))
    assert sol.integral and np.all(sol.arc_flow > 0) and np.all(sol.unplaced >= 0)
    into = np.bincount(sol.arc_sink, weights=sol.arc_flow, minlength=cl.n_node_classes)
    out = np.bincount(sol.arc_source, weights=sol.arc_flow, minlength=cl.n_job_classes)
    assert np.all(into <= cl.nc_count)
    assert np.array_equal(out + sol.unplaced, cl.jc_count)
    assert np.all(cc.allowed[sol.arc_source, sol.arc_sink])
    objective = (cc.cost[sol.arc_source, sol.arc_sink] * sol.arc_flow).sum() + (
        class_penalty(cl, PENALTY) * sol.unplaced).sum()
    assert objective == pytest.approx(sol.objective, rel=1e-9)
    # Every placement costs less than the penalty, so no job is left out while a node it
    # fits stays free.
    assert np.nanmax(np.where(cc.allowed, cc.cost, np.nan)) < PENALTY
    spare = into < cl.nc_count
    assert sol.unplaced.sum() > 0
    assert not np.any(cc.allowed[sol.unplaced > 0][:, spare])


@pytest.mark.parametrize("kw, name", [
    (dict(capacity=np.array([-1, 1])), "capacity"), (dict(capacity=np.array([1.5, 1])), "capacity"),
    (dict(capacity=np.array([1])), "capacity"), (dict(supply=np.array([-2])), "supply"),
    (dict(cost=np.array([[np.nan, 1.0]])), "cost"), (dict(cost=np.array([[-np.inf, 1.0]])), "cost"),
    (dict(cost=np.ones(2)), "cost"), (dict(penalty=np.array([0.0])), "penalty"),
    (dict(penalty=np.array([np.inf])), "penalty"),
])
def test_transport_lp_refuses_bad_inputs_before_highs(kw, name, monkeypatch):
    import magnum_lib.planner.lp as lp

    def never(*args, **kwargs):
        raise AssertionError("HiGHS was asked")

    args = dict(cost=np.array([[1.0, np.inf]]), supply=np.array([2]), capacity=np.array([1, 0]),
                penalty=np.array([5.0]))
    sol = transport_lp(**args)  # the valid edge: +inf is no arc, a capacity of 0, one job left out
    assert sol.objective == 6.0 and sol.unplaced.tolist() == [1]
    monkeypatch.setattr(lp, "linprog", never)
    with pytest.raises(ParameterError) as e:
        transport_lp(**{**args, **kw})
    assert e.value.name == name
