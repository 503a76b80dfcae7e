"""Consistent hashing (regional/hashing.py): the ring, its lookup rule, shares, bad input."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from magnum_lib.base.validate import ParameterError
from magnum_lib.regional import hashing
from magnum_lib.regional.hashing import KEY_SPACE, hash_ring, ring_first, ring_owner, ring_shares


def test_ring_has_vnodes_points_per_node_sorted_and_is_a_pure_function():
    nodes = np.array([3, 7, 11, 20])
    keys, owners = hash_ring(nodes, vnodes=5, salt=9)
    assert keys.dtype == owners.dtype == np.int64
    assert np.all(np.diff(keys) >= 0) and keys.min() >= 0 and keys.max() < KEY_SPACE
    assert sorted(np.unique(owners, return_counts=True)[1]) == [5] * 4
    assert set(owners) == set(nodes)
    again = hash_ring(nodes, vnodes=5, salt=9)
    assert np.array_equal(again[0], keys) and np.array_equal(again[1], owners)
    other = hash_ring(nodes, vnodes=5, salt=10 << 40)
    assert not np.array_equal(other[0], keys)


def test_a_node_keeps_its_points_when_others_join():
    """Consistent hashing's point: adding a node moves only the keys the new node takes."""
    k1, o1 = hash_ring(np.arange(10), vnodes=3)
    k2, o2 = hash_ring(np.arange(11), vnodes=3)
    assert set(k1) <= set(k2)
    probe = np.random.default_rng(1).integers(0, KEY_SPACE, 2000)
    before = np.array([ring_owner(k1, o1, int(k)) for k in probe])
    after = np.array([ring_owner(k2, o2, int(k)) for k in probe])
    moved = before != after
    assert moved.any() and np.all(after[moved] == 10)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 2**62 - 1), min_size=1, max_size=40), st.integers(0, 2**62 - 1),
       st.integers(0, 39), st.integers(1, 40))
def test_ring_first_is_searchsorted_with_wrap(raw, key, lo, width):
    keys = np.sort(np.array(raw, dtype=np.int64))
    lo = min(lo, len(keys) - 1)
    hi = min(len(keys), lo + width)
    got = ring_first(keys, lo, hi, key)
    want = lo + int(np.searchsorted(keys[lo:hi], key, side="left"))
    assert got == (lo if want == hi else want)
    assert lo <= got < hi


def test_owner_is_the_first_point_at_or_after_the_key_wrapping():
    keys = np.array([10, 20, 30], dtype=np.int64)
    owners = np.array([2, 0, 1], dtype=np.int64)
    assert [ring_owner(keys, owners, k) for k in (0, 10, 11, 20, 30, 31, KEY_SPACE - 1)] == [2, 2, 0, 0, 1, 2, 2]


def test_shares_are_the_arcs_ending_at_each_nodes_points():
    keys = np.array([10, 20, 30], dtype=np.int64)
    owners = np.array([2, 0, 2], dtype=np.int64)
    s = ring_shares(keys, owners, n_nodes=4)
    assert s[0] == 10 / KEY_SPACE and s[1] == 0 and s[3] == 0
    assert s[2] == pytest.approx((KEY_SPACE - 20) / KEY_SPACE, rel=1e-15)
    _, owners1 = hash_ring(np.arange(1), 1)
    assert ring_shares(*hash_ring(np.arange(1), 1)).tolist() == [1.0] and owners1.tolist() == [0]


def test_shares_match_where_uniform_keys_land():
    """The share is what a node gets: 200,000 uniform keys land in proportion to it (binomial 5 sd)."""
    keys, owners = hash_ring(np.arange(20), vnodes=4, salt=3)
    share = ring_shares(keys, owners)
    probe = np.random.default_rng(7).integers(0, KEY_SPACE, 200_000)
    idx = np.searchsorted(keys, probe, side="left") % len(keys)
    got = np.bincount(owners[idx], minlength=20) / probe.size
    assert np.all(np.abs(got - share) < 5 * np.sqrt(share * (1 - share) / probe.size))
    assert share.sum() == pytest.approx(1.0, abs=1e-12)


def test_one_point_per_node_largest_share_is_near_harmonic_number():
    """With one point per node the largest of n spacings is H_n times the mean in expectation."""
    n = 500
    largest = np.mean([ring_shares(*hash_ring(np.arange(n), 1, salt=s << 40)).max() * n for s in range(200)])
    h_n = sum(1 / i for i in range(1, n + 1))
    assert abs(largest - h_n) < 4 * 1.2825 / np.sqrt(200)   # Gumbel sd pi / sqrt(6)


@pytest.mark.parametrize("nodes, vnodes, salt", [
    (np.zeros((2, 2), dtype=np.int64), 1, 0), (np.array([0.5]), 1, 0), (np.array([-1]), 1, 0),
    (np.array([2**40]), 1, 0), (np.arange(3), 0, 0), (np.arange(3), hashing.MAX_VNODES + 1, 0),
    (np.arange(3), 1.5, 0), (np.arange(3), True, 0), (np.arange(3), 1, -1), (np.arange(3), 1, 2**62 + 1),
])
def test_bad_ring_inputs_are_refused(nodes, vnodes, salt):
    with pytest.raises(ParameterError):
        hash_ring(nodes, vnodes, salt)


def test_too_many_points_refused_before_allocating():
    with pytest.raises(ParameterError, match="at most"):
        hash_ring(np.broadcast_to(np.int64(0), (hashing.MAX_POINTS // 1024 + 1,)), 1024)


@pytest.mark.parametrize("keys, owners", [
    (np.array([], dtype=np.int64), np.array([], dtype=np.int64)),
    (np.array([3, 1], dtype=np.int64), np.array([0, 1])),
    (np.array([1, 2], dtype=np.int64), np.array([0])),
    (np.array([-1, 2], dtype=np.int64), np.array([0, 1])),
    (np.array([1.0, 2.0]), np.array([0, 1])),
])
def test_bad_rings_refused_by_owner_and_shares(keys, owners):
    with pytest.raises(ParameterError):
        ring_owner(keys, owners, 0)
    with pytest.raises(ParameterError):
        ring_shares(keys, owners)


def test_bad_key_refused():
    keys, owners = hash_ring(np.arange(3))
    for bad in (-1, KEY_SPACE, 1.5, "7"):
        with pytest.raises(ParameterError):
            ring_owner(keys, owners, bad)
