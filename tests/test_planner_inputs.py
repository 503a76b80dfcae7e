"""Bad parameters raise ValueError naming the field; odd data (NaN, inf, empty, too big) never crashes."""
from __future__ import annotations

import math

import numpy as np
import pytest

from magnum_lib.base.validate import ParameterError
from magnum_lib.planner.plan import ALGORITHMS, plan
from magnum_lib.planner.snapshot import Snapshot, make_snapshot

BASE = dict(node_group=[0, 1], node_type=[0, 1], node_capacity=[8, 8], node_free=[8, 4],
            group_bandwidth=[100.0, 50.0], job_demand=[2], job_type=[-1], job_comm=[1.0], job_priority=[1],
            type_keys=("h100", "mi300x"))


def snap_with(**changes):
    return Snapshot(**{**BASE, **changes})


@pytest.mark.parametrize("field, value, message", [
    ("node_free", [9, 4], "node_free must be <= node_capacity"),
    ("node_free", [-1, 4], "node_free must be >= 0"),
    ("node_capacity", [0, 8], "node_capacity must be >= 1"),
    ("node_group", [0, 2], "node_group must be < len"),
    ("node_type", [0], "node_type must be shape"),
    ("group_bandwidth", [-1.0, 5.0], "group_bandwidth must be >= 0"),
    ("job_demand", [0], "job_demand must be >= 1"),
    ("job_demand", [1.5], "job_demand must hold integers"),
    ("job_type", [-2], "job_type must be >= -1"),
    ("job_comm", ["x"], "job_comm must hold numbers"),
    ("job_priority", [0], "job_priority must be >= 1"),
    ("time_s", math.nan, "time_s must be a finite"),
])
def test_bad_snapshot_fields(field, value, message):
    with pytest.raises(ValueError, match=message):
        snap_with(**{field: value})


@pytest.mark.parametrize("kwargs, message", [
    ({"algo": "hungarian"}, "algo must be one of"),
    ({"weight": 1.5}, "weight must be a number in"),
    ({"weight": math.nan}, "weight must be a number in"),
    ({"unplaced_penalty": 0.0}, "unplaced_penalty must be"),
    ({"unplaced_penalty": math.inf}, "unplaced_penalty must be"),
    ({"horizon_s": 0}, "horizon_s must be"),
    ({"top_groups": 0}, "top_groups must be"),
])
def test_bad_plan_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        plan(snap_with(), **kwargs)


def test_bad_generator_parameters_and_snapshot_type():
    with pytest.raises(ValueError, match="nodes must be >= 1"):
        make_snapshot(0, 5)
    with pytest.raises(ValueError, match="load must be a number in"):
        make_snapshot(10, 5, load=1.5)
    with pytest.raises(TypeError, match="Snapshot"):
        plan({"nodes": 3})


def test_assignment_size_limit_names_it():
    with pytest.raises(ValueError, match="nodes must be <= 2000 for the assignment planner"):
        plan(make_snapshot(2001, 1), "assignment")


@pytest.mark.parametrize("algo", ALGORITHMS)
def test_unplaceable_jobs_get_reasons(algo):
    snap = snap_with(job_demand=[2, 100, 8, 6, 1], job_type=[1, -1, 1, 0, 1], job_comm=[1.0, 0.0, 0.0, 0.0, math.nan],
                     job_priority=[1, 1, 1, 1, 1])
    p = plan(snap, algo)
    reasons = dict(p.unplaced)
    assert set(reasons) == {1, 2, 4} and p.job_node[0] == 1 and p.job_node[3] == 0
    assert "exceeds the largest node" in reasons[1]
    assert "no node of type mi300x has 8 free devices" in reasons[2]
    assert "non-finite cost" in reasons[4]
    # Unplaceable jobs cost the penalty in both the plan and the bound: the gap stays 0.
    assert p.gap == 0.0 if algo != "article" else p.gap >= 0.0


@pytest.mark.parametrize("algo", ALGORITHMS)
def test_nan_and_inf_bandwidth_groups_are_avoided(algo):
    snap = snap_with(group_bandwidth=[math.nan, 0.0], job_demand=[1, 1], job_type=[-1, -1], job_comm=[1.0, 0.0],
                     job_priority=[1, 1])
    p = plan(snap, algo)
    assert p.job_node.tolist() == [-1, -1]
    assert all("non-finite" in r for _, r in p.unplaced)
    assert math.isfinite(p.cost) and math.isfinite(p.lower_bound)
    # Infinite bandwidth is a valid (free) network: traffic costs nothing there. The
    # article's score is bandwidth x traffic = inf there, so it goes to the slow node.
    p = plan(snap_with(group_bandwidth=[math.inf, 50.0]), algo, weight=1.0)
    if algo == "article":
        assert p.job_node[0] == 1 and p.cost == pytest.approx(1000.0 * 1.0 / 50.0)
    else:
        assert p.job_node[0] == 0 and p.cost == 0.0


@pytest.mark.parametrize("algo", ALGORITHMS)
def test_empty_inputs(algo):
    no_jobs = snap_with(job_demand=[], job_type=[], job_comm=[], job_priority=[])
    p = plan(no_jobs, algo)
    assert p.cost == 0.0 and p.lower_bound == 0.0 and p.gap == 0.0 and p.hints == ()
    no_nodes = snap_with(node_group=[], node_type=[], node_capacity=[], node_free=[])
    p = plan(no_nodes, algo)
    assert p.unplaced[0][0] == 0 and "no node" in p.unplaced[0][1]
    assert p.cost == p.lower_bound == 1000.0
    all_busy = snap_with(node_free=[0, 0])
    p = plan(all_busy, algo)
    assert "free devices" in p.unplaced[0][1]
    assert p.to_dict()["unplaced"] == 1


def test_zero_bound_gap_and_json_ready_dict():
    # A perfect fit with no traffic costs 0: bound 0, gap 0 (not NaN).
    snap = snap_with(node_free=[2, 4], job_comm=[0.0])
    p = plan(snap, "greedy")
    assert p.cost == 0.0 and p.lower_bound == 0.0 and p.gap == 0.0
    d = p.to_dict(hints="list")
    assert d["hints"][0]["node"] == 0 and d["gap"] == 0.0
    with pytest.raises(ValueError, match="hints must be one of"):
        p.to_dict(hints="all")


def test_same_seed_same_plan():
    a = plan(make_snapshot(500, 200, seed=7), "flow")
    b = plan(make_snapshot(500, 200, seed=7), "flow")
    assert np.array_equal(a.job_node, b.job_node) and a.cost == b.cost


def test_with_jobs_keeps_nodes_and_summary_counts():
    base = make_snapshot(64, 10, seed=1)
    snap = base.with_jobs([1, 2, 3])
    assert snap.n_nodes == 64 and snap.n_jobs == 3 and np.all(snap.job_type == -1)
    s = snap.summary()
    assert s["free_devices"] == int(base.node_free.sum()) and s["demand_devices"] == 6
    assert np.allclose(snap.node_utilization, 1 - snap.node_free / snap.node_capacity)
    with pytest.raises(ValueError, match="job_demand must be"):
        base.with_jobs([[1, 2]])


def test_snapshot_size_bounds_are_checked_before_allocating():
    from magnum_lib.planner.snapshot import MAX_SNAPSHOT_JOBS, MAX_SNAPSHOT_NODES
    for args, name in [((10**12, 10), "nodes"), ((MAX_SNAPSHOT_NODES + 1, 0), "nodes"),
                       ((10, MAX_SNAPSHOT_JOBS + 1), "jobs"), ((10, 10**15), "jobs")]:
        with pytest.raises(ParameterError) as e:
            make_snapshot(*args)
        assert e.value.name == name and "<=" in str(e.value)
    # the bounds themselves are accepted (a million nodes: about 1 s, 200 MB)
    assert make_snapshot(MAX_SNAPSHOT_NODES, 0).node_free.size == MAX_SNAPSHOT_NODES
    assert make_snapshot(1, MAX_SNAPSHOT_JOBS).job_demand.size == MAX_SNAPSHOT_JOBS
