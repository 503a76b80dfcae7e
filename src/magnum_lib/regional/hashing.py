"""Consistent hashing of requests to nodes (Karger et al., STOC 1997): the "Cheetah" placement (C41).

Every node puts ``vnodes`` points on a ring of ``KEY_SPACE`` keys; a request hashed to
key ``k`` goes to the owner of the first point at or after ``k`` (wrapping), or, when that
node is full, to the next points' owners in ring order. A node owns the arcs that end at
its points, so its share of the requests is its share of the ring: with one point each
the largest share is about ``H_n = ln n + 0.58`` times the mean (the imbalance that sank
Cheetah); virtual nodes shrink the spread only as ``1 / sqrt(vnodes)``.

* :func:`hash_ring` builds the ring (the whole-system simulator's ``hash`` policy uses it);
* :func:`ring_first` is the lookup rule, once (compiled twin of the same name in
  ``_place_rule.pxd``, inlined into ``sim/_core.pyx``; ``sim/core_ref.py`` calls this one);
* :func:`ring_owner` and :func:`ring_shares` answer "who gets key k" and "how much of the
  ring does each node own" on a built ring.

Keys are int64 in ``[0, KEY_SPACE)``; the hash is ``base.rng.hash64`` (SplitMix64's output), so a ring is a
pure function of its nodes, ``vnodes`` and ``salt`` (no random state).
"""
from __future__ import annotations

import numpy as np

from magnum_lib.base.rng import hash64_array
from magnum_lib.base.validate import ParameterError, check_int

__all__ = ["KEY_SPACE", "MAX_VNODES", "hash_ring", "ring_first", "ring_owner", "ring_shares"]

KEY_SPACE = 2**62   # keys are the top 62 bits of a 64-bit hash: int64, never negative
MAX_VNODES = 1024   # points per node; node x 1024 + point must not collide between nodes
MAX_POINTS = 2**31  # nodes x vnodes: the ring's arrays stay a few GB at most


def hash_ring(nodes, vnodes: int = 1, salt: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The ring of ``nodes`` (ids >= 0), ``vnodes`` points each: ``(keys, owners)`` sorted by key.

    Point ``v`` of node ``i`` sits at ``hash64(i x 1024 + v + salt) >> 2``; ``salt``
    gives another, independent-looking ring over the same nodes (use multiples of 2^40
    for rings that share no point input).
    """
    vnodes = check_int("vnodes", vnodes, 1, MAX_VNODES)
    salt = check_int("salt", salt, 0, 2**62)
    ids = np.asarray(nodes)
    if ids.ndim != 1 or (ids.size and not np.issubdtype(ids.dtype, np.integer)):
        raise ParameterError("nodes", "must be a 1-D array of integer node ids")
    if ids.size * vnodes > MAX_POINTS:
        raise ParameterError("nodes", f"nodes x vnodes must be at most {MAX_POINTS}, got {ids.size * vnodes}")
    if ids.size and (ids.min() < 0 or ids.max() >= 2**40):
        raise ParameterError("nodes", "node ids must lie in [0, 2^40)")
    x = (np.repeat(ids.astype(np.uint64), vnodes) * np.uint64(MAX_VNODES)
         + np.tile(np.arange(vnodes, dtype=np.uint64), ids.size) + np.uint64(salt))
    keys = (hash64_array(x) >> np.uint64(2)).astype(np.int64)
    order = np.argsort(keys, kind="stable")
    return keys[order], np.repeat(ids.astype(np.int64), vnodes)[order]


def ring_first(keys, lo: int, hi: int, key: int) -> int:
    """Index of the first point with ``keys[p] >= key`` in the sorted ``keys[lo:hi]``; ``lo`` past the last (wrap).

    The lookup rule, once (binary search; ``hi > lo``). The compiled twin in
    ``_place_rule.pxd`` takes a pointer to the same keys.
    """
    a, b = lo, hi
    while a < b:
        m = (a + b) // 2
        if keys[m] < key:
            a = m + 1
        else:
            b = m
    return lo if a == hi else a


def _check_ring(keys, owners) -> tuple[np.ndarray, np.ndarray]:
    keys, owners = np.asarray(keys), np.asarray(owners)
    if keys.ndim != 1 or keys.shape != owners.shape or keys.size == 0:
        raise ParameterError("keys", "keys and owners must be non-empty 1-D arrays of one length (a hash_ring)")
    if not (np.issubdtype(keys.dtype, np.integer) and np.issubdtype(owners.dtype, np.integer)):
        raise ParameterError("keys", "keys and owners must be integer arrays (a hash_ring)")
    if keys[0] < 0 or keys[-1] >= KEY_SPACE or np.any(np.diff(keys) < 0):
        raise ParameterError("keys", "must be sorted keys in [0, 2^62) (a hash_ring)")
    if owners.min() < 0 or owners.max() >= MAX_POINTS:
        raise ParameterError("owners", f"must be node ids in [0, {MAX_POINTS}) (a hash_ring)")
    return keys.astype(np.int64, copy=False), owners.astype(np.int64, copy=False)


def ring_owner(keys, owners, key: int) -> int:
    """The node a request hashed to ``key`` goes to first."""
    keys, owners = _check_ring(keys, owners)
    key = check_int("key", key, 0, KEY_SPACE - 1)
    return int(owners[ring_first(keys, 0, keys.size, key)])


def ring_shares(keys, owners, n_nodes: int | None = None) -> np.ndarray:
    """Fraction of the key space each node owns (sums to 1), indexed by node id.

    Point ``p`` owns the keys after the previous point up to its own (a key maps to the
    first point at or after it), the first point the arc that wraps past the last.
    """
    keys, owners = _check_ring(keys, owners)
    n = int(owners.max()) + 1 if n_nodes is None else check_int("n_nodes", n_nodes, int(owners.max()) + 1, MAX_POINTS)
    arcs = np.diff(keys, prepend=keys[-1] - KEY_SPACE).astype(np.float64)
    return np.bincount(owners, weights=arcs, minlength=n) / KEY_SPACE
