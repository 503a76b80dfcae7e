"""Heterogeneity-aware allocation: LP feasibility, never worse than blind, closed forms, Gavel data."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from magnum_lib.base.validate import ParameterError
from magnum_lib.graph.hetero import (
    ThroughputMatrix,
    allocate,
    blind_allocation,
    compare,
    gavel_matrix,
    parse_cluster,
    roofline_matrix,
)
from magnum_lib.hardware import default_catalog
from magnum_lib.workload.traces import load_gavel_throughputs

TOL = 1e-7


def matrix(rows, types=("k80", "p100")) -> ThroughputMatrix:
    rows = np.asarray(rows, dtype=np.float64)
    return ThroughputMatrix(tuple(f"m{i}" for i in range(len(rows))), types, rows, "test")


def assert_feasible(alloc, counts):
    x = alloc.x
    assert (x >= -TOL).all() and (x <= 1 + TOL).all()
    assert (x.sum(axis=1) <= 1 + TOL).all()
    assert (x.sum(axis=0) <= np.array(list(counts.values())) + TOL).all()


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 12), st.integers(1, 3), st.lists(st.integers(1, 6), min_size=3, max_size=3),
       st.integers(0, 2**32 - 1))
def test_lp_feasible_and_never_worse_than_blind(n_jobs, n_types, count_list, seed):
    types = ("k80", "p100", "v100")[:n_types]
    counts = dict(zip(types, count_list))  # noqa: B905 (count_list has 3 entries; n_types may be fewer)
    tm = matrix(np.random.default_rng(seed).uniform(0.1, 10, (n_jobs, n_types)), types)
    blind = blind_allocation(tm, counts)
    assert_feasible(blind, counts)
    for objective in ("throughput", "maxmin"):
        aware = allocate(tm, counts, objective)
        assert_feasible(aware, counts)
        if objective == "throughput":
            assert aware.normalised_total >= blind.normalised_total - TOL
        else:  # the blind share itself is feasible with every ratio 1
            assert (aware.job_throughput / blind.job_throughput).min() >= 1 - TOL
    assert compare(tm, counts)["speedup"] >= 1 - TOL


def test_two_jobs_two_types_closed_form():
    # Each job is 10x faster on a different type; one device of each.
    tm = matrix([[10.0, 1.0], [1.0, 10.0]])
    counts = {"k80": 1, "p100": 1}
    aware, blind = allocate(tm, counts), blind_allocation(tm, counts)
    np.testing.assert_allclose(aware.x, np.eye(2), atol=TOL)
    assert aware.normalised_total == pytest.approx(2.0)
    assert blind.normalised_total == pytest.approx(2 * (0.5 + 0.05))  # half the time on each type
    assert compare(tm, counts)["speedup"] == pytest.approx(2 / 1.1)


def test_one_type_gains_nothing():
    tm = matrix(np.arange(1.0, 8.0)[:, None], ("v100",))
    for n in (3, 7, 20):
        out = compare(tm, {"v100": n})
        assert out["throughput_aware"] == pytest.approx(min(n, 7)) and out["speedup"] == pytest.approx(1.0)


def test_enough_devices_every_job_gets_its_best():
    tm = matrix(np.random.default_rng(1).uniform(1, 5, (6, 3)), ("k80", "p100", "v100"))
    aware = allocate(tm, {"k80": 6, "p100": 6, "v100": 6})
    assert aware.normalised_total == pytest.approx(6.0)


def test_parse_cluster():
    assert parse_cluster("v100:16,p100:16,k80:16") == {"v100": 16, "p100": 16, "k80": 16}
    assert parse_cluster(" H100 : 2 , mtia-v2:4") == {"h100_sxm": 2, "mtia_v2": 4}
    for bad, match in [("v100", "not TYPE:COUNT"), ("v100:0", ">= 1"), ("v100:1.5", ">= 1"),
                       ("tpu:3", "unknown device type 'tpu'"), ("v100:1,tesla_v100:2", "given twice"),
                       ("", "must be"), (None, "must be")]:
        with pytest.raises(ParameterError, match=match) as info:
            parse_cluster(bad)
        assert info.value.name == "cluster"


def test_cluster_must_match_the_table():
    tm = matrix([[1.0, 2.0]])
    with pytest.raises(ParameterError, match="missing"):
        allocate(tm, {"k80": 1})
    with pytest.raises(ParameterError, match="objective"):
        allocate(tm, {"k80": 1, "p100": 1}, "fastest")


def test_roofline_matrix_matches_the_roofline():
    tm = roofline_matrix(5, seed=3)
    assert tm.types == ("h100_sxm", "mi300x", "mtia_v2") and tm.steps_per_s.shape == (5, 3)
    rng = np.random.default_rng(3)  # the same draws, recomputed by hand for one job and device
    flops, intensity = 10.0 ** rng.uniform(11, 14, 5), 10.0 ** rng.uniform(0, 3, 5)
    mtia = default_catalog()["mtia_v2"]
    t = max(flops[0] / mtia.peak_flops["bf16"], flops[0] / intensity[0] / mtia.mem_bandwidth_Bps)
    assert tm.steps_per_s[0, 2] == pytest.approx(1 / t)
    out = compare(tm, {"h100_sxm": 1, "mi300x": 1, "mtia_v2": 4})
    assert out["speedup"] >= 1 - TOL


def test_gavel_lp(shared_data):
    gavel = load_gavel_throughputs(shared_data / "gavel" / "simulation_throughputs.json")
    tm = gavel_matrix(None, gavel=gavel)
    assert len(tm.jobs) == 26 and tm.types == ("k80", "p100", "v100")
    counts = {"v100": 16, "p100": 16, "k80": 16}
    for jobs in (None, 64):
        tm = gavel_matrix(jobs, seed=0, gavel=gavel)
        aware = allocate(tm, counts)
        assert_feasible(aware, counts)
        assert aware.normalised_total > blind_allocation(tm, counts).normalised_total
    # Seeded draw of models: same seed, same jobs.
    assert gavel_matrix(30, seed=5, gavel=gavel).jobs == gavel_matrix(30, seed=5, gavel=gavel).jobs


@pytest.mark.parametrize("rows", [[[1.0, 2.0], [-1.0, 1.0]], [[0.0, 1.0]], [[np.nan, 1.0]], [[np.inf, 1.0]]])
def test_throughputs_must_be_positive_and_finite(rows):
    """A negative throughput once reported a normalised total of 2.0 for one job."""
    with pytest.raises(ParameterError) as e:
        matrix(rows)
    assert e.value.name == "steps_per_s" and "> 0" in str(e.value)


def test_throughput_shape_must_match_the_names():
    with pytest.raises(ParameterError, match="steps_per_s must be a 1 x 2 array"):
        ThroughputMatrix(("m0",), ("k80", "p100"), np.ones((2, 2)), "test")
    tiny = matrix([[1e-300, 1.0]])  # the edge: positive however small
    assert allocate(tiny, {"k80": 1, "p100": 1}).normalised_total == pytest.approx(1.0)
