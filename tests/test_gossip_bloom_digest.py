"""The planner's digest: truthful at build time, stale later, and sized as claimed."""
from __future__ import annotations

import math

import numpy as np
import pytest

from magnum_lib.cluster import build_cluster
from magnum_lib.gossip.bloom import HEADER_BYTES, BloomFilter
from magnum_lib.gossip.digest import NODE_ID_BYTES, build_digest, digest_over_time, free_nodes_by_type, staleness_theory

CLUSTER = build_cluster()  # 960 nodes of 8 devices


def _free_by_type(seed=0):
    rng = np.random.default_rng(seed)
    free_count = rng.integers(0, 3, CLUSTER.n_nodes) * (rng.random(CLUSTER.n_nodes) < 0.3)
    return free_count, free_nodes_by_type(CLUSTER.node_type, free_count, CLUSTER.type_keys)


def test_free_nodes_by_type_matches_brute_force():
    free_count, by_type = _free_by_type()
    assert set(by_type) == set(CLUSTER.type_keys)
    for code, key in enumerate(CLUSTER.type_keys):
        want = [n for n in range(CLUSTER.n_nodes) if CLUSTER.node_type[n] == code and free_count[n] > 0]
        assert by_type[key].tolist() == want


def test_digest_has_no_false_negatives_at_build_time():
    _, by_type = _free_by_type(1)
    d = build_digest(by_type, fp_rate=0.01)
    for key, ids in by_type.items():
        assert d.contains(key, ids).all()
        assert d.counts[key] == ids.size
    assert d.raw_list_nbytes == NODE_ID_BYTES * sum(ids.size for ids in by_type.values())
    assert d.nbytes == sum(HEADER_BYTES + math.ceil(f.m / 8) for f in d.filters.values())
    # about 9.6 bits per member at 1 % (+ header and prime rounding): smaller than 4-byte ids
    assert d.nbytes < d.raw_list_nbytes


def test_fixed_shape_digests_union():
    _, a = _free_by_type(2)
    _, b = _free_by_type(3)
    da, db = build_digest(a, m=4099, k=5), build_digest(b, m=4099, k=5)
    both = build_digest({key: np.union1d(a[key], b[key]) for key in a}, m=4099, k=5)
    for key in a:
        assert da.filters[key].union(db.filters[key]) == both.filters[key]
    assert set(da.to_dict()) >= {"nbytes", "raw_list_nbytes", "counts", "filters"}


def test_empty_predicate():
    d = build_digest({"h100_sxm": np.array([], dtype=np.int64)})
    assert d.counts["h100_sxm"] == 0 and not d.contains("h100_sxm", np.arange(100)).any()


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"m": 100}, ValueError, "both m and k"),
    ({"k": 3}, ValueError, "both m and k"),
    ({"m": 0, "k": 3}, ValueError, "m must be"),
    ({"fp_rate": 1.0}, ValueError, "fp_rate"),
    ({"fp_rate": 0}, ValueError, "fp_rate"),
])
def test_build_digest_rejects(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        build_digest({"a": np.arange(3)}, **kwargs)


def test_build_digest_rejects_shapes():
    with pytest.raises(TypeError, match="mapping"):
        build_digest([np.arange(3)])
    with pytest.raises(ValueError, match=r"free_by_type\['a'\] must be a 1-d"):
        build_digest({"a": np.zeros((2, 2), dtype=int)})
    with pytest.raises(ValueError, match="negative key"):
        build_digest({"a": np.array([-1])})
    with pytest.raises(KeyError, match="not in digest"):
        build_digest({"a": np.arange(3)}).contains("b", [1])
    with pytest.raises(ValueError, match="one length"):
        free_nodes_by_type(np.zeros(3, int), np.zeros(4, int), ["a"])
    with pytest.raises(ValueError, match="codes must lie"):
        free_nodes_by_type(np.array([0, 2]), np.ones(2, int), ["a", "b"])


# -- over time: Bloom error and staleness -------------------------------------------

@pytest.fixture(scope="module")
def runs():
    return {p: digest_over_time(CLUSTER, duration="0.6s", period=p, tick="1ms", seed=5)
            for p in ("1ms", "10ms", "50ms")}


def test_no_staleness_when_rebuilt_every_tick(runs):
    r = runs["1ms"]
    assert r.stale_disagreement == 0 and r.false_negative_at_query == 0 and r.staleness_error == 0
    assert r.error_at_query == r.error_at_build == r.false_positive_at_query
    assert r.n_builds == 600 and r.n_queries == 600 * CLUSTER.n_nodes


def test_staleness_grows_with_period(runs):
    s = [runs[p].staleness_error for p in ("1ms", "10ms", "50ms")]
    assert s[0] < s[1] < s[2]
    d = [runs[p].stale_disagreement for p in ("1ms", "10ms", "50ms")]
    assert d[0] < d[1] < d[2]
    # staleness errs both ways; the Bloom filter alone never gives a false negative
    assert runs["50ms"].false_negative_at_query > 0


@pytest.mark.parametrize("period", ["10ms", "50ms"])
def test_staleness_matches_closed_form(runs, period):
    r = runs[period]
    # Nodes are independent (their devices are), so the overall disagreement is the mean
    # of 960 independent per-node fractions: 4 standard errors of that mean.
    se = r.node_stale_fraction.std(ddof=1) / math.sqrt(r.n_nodes)
    assert abs(r.stale_disagreement - r.stale_theory) <= 4 * se, (r.stale_disagreement, r.stale_theory, se)


def test_build_time_false_positives_near_target(runs):
    r = runs["10ms"]
    # Only the busy nodes can be false positives; the theory is the per-filter formula.
    assert r.fp_theory <= 0.01
    # Loose: 60 builds x ~640 busy nodes, but builds 10 ms apart share most of their state,
    # so the queries are far from independent; a factor 2 still catches a broken filter.
    assert 0.5 * r.fp_theory <= r.fp_rate_at_build <= 2 * r.fp_theory
    assert r.error_at_build < r.fp_rate_at_build  # members cannot be false positives
    assert r.digest_nbytes_mean < r.raw_list_nbytes_mean
    assert r.bitmap_nbytes == sum(math.ceil(np.sum(CLUSTER.node_type == c) / 8) for c in range(3))
    assert len(r.build_time_s) == len(r.free_nodes) == len(r.digest_nbytes) == r.n_builds == 60


def test_staleness_theory_limits():
    u, d = 0.9, 8
    assert staleness_theory(0.0, u, 0.5, d) == pytest.approx(0.0)
    # far apart the two times are independent: P(differ) = 2 a (1 - a), a = u^d
    assert staleness_theory(1e3, u, 0.5, d) == pytest.approx(2 * u**d * (1 - u**d))
    lags = np.linspace(0, 0.1, 20)
    assert np.all(np.diff(staleness_theory(lags, u, 0.5, d)) > 0)


def test_same_seed_same_run():
    a = digest_over_time(duration="50ms", seed=9).to_dict()
    b = digest_over_time(duration="50ms", seed=9).to_dict()
    assert a == b
    assert isinstance(a["free_nodes"], list)


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"period": "15ms", "tick": "10ms"}, ValueError, "whole number of ticks"),
    ({"period": "0ms"}, ValueError, "period must be > 0"),
    ({"tick": "-1ms"}, ValueError, "tick"),
    ({"duration": "5ms"}, ValueError, "duration must be at least one period"),
    ({"period": "ten"}, ValueError, "period"),
    ({"utilization": 1.0}, ValueError, "utilization"),
    ({"mean_busy": 0}, ValueError, "mean_busy"),
    ({"seed": -1}, ValueError, "seed"),
    ({"m": 100}, ValueError, "both m and k"),
    ({"fp_rate": 2}, ValueError, "fp_rate"),
    ({"cluster": "big"}, TypeError, "cluster"),
])
def test_digest_over_time_rejects(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        digest_over_time(**kwargs)


def test_fixed_shape_run():
    r = digest_over_time(duration="40ms", m=2003, k=4)
    assert r.digest_nbytes_mean == 3 * BloomFilter(2003, 4).wire_nbytes
