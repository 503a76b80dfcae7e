"""Timing of one regional scheduling round and of raw lease validation (``bench regional``).

A round: one scheduler places ``requests`` pending single-type requests (1-8 devices,
priorities 0-3) onto ``nodes`` 8-device H100 nodes half full, with power-of-two-choices
from its view, and the nodes validate the leases (preempting lower priorities). The state
is restored between repeats, outside the timed region.
"""
from __future__ import annotations

import time

import numpy as np

from magnum_lib import _backend
from magnum_lib.base.validate import check_int
from magnum_lib.regional.scheduler import RegionalScheduler, StaleView
from magnum_lib.regional.validator import NodeState

__all__ = ["bench_regional"]

_THROUGHPUT_LEASES = {"compiled": 1_000_000, "python": 20_000}


def _half_full(nodes: int, rng) -> NodeState:
    """Nodes holding 0-4 two-device jobs each (uniform): half the devices busy on average."""
    st = NodeState.uniform(nodes, "h100_sxm", 8)
    node = np.repeat(np.arange(nodes), rng.integers(0, 5, nodes))
    n = len(node)
    st.validate_arrays(node, np.zeros(n), np.full(n, 2), np.full(n, 10**9), np.full(n, st.node_ic[0]),
                       np.full(n, 10**18), rng.integers(0, 4, n), np.arange(n), 0)
    return st


def _requests(st: NodeState, r: int, rng) -> tuple:
    return (np.zeros(r, np.int32), rng.choice(np.array([1, 2, 4, 8], np.int32), r),
            np.full(r, 10**9, np.int64), np.full(r, st.node_ic[0], np.int32),
            rng.integers(0, 4, r).astype(np.int32))


def bench_regional(nodes: int = 15_000, requests: int = 1_000, repeats: int = 51,
                   backend: str | None = None) -> dict:
    """Median wall time of one round and validations per second, on one backend.

    Parameters
    ----------
    nodes, requests, repeats : int
    backend : {"compiled", "python"}, optional
        Default: the active backend.

    Returns
    -------
    dict
        ``round_ms`` (median), ``round_ms_min``, ``validations_per_s`` (the validator core
        on one batch of 10^6 single-device leases, 2 * 10^4 on the Python reference),
        ``validations_per_s_checked`` (the same batch through
        :meth:`NodeState.validate_arrays`, packing and boundary checks included),
        ``accepted_fraction``, plus the inputs.
    """
    nodes, requests = check_int("nodes", nodes, 1), check_int("requests", requests, 1)
    repeats = check_int("repeats", repeats, 1)
    names = ("magnum_lib.regional._validator", "magnum_lib.regional.validator_ref")
    if backend is None:
        backend = _backend.backend()
    mod = __import__(names[0 if backend == "compiled" else 1], fromlist=["x"])
    rng = np.random.default_rng(0)
    base = _half_full(nodes, rng)
    r_type, r_count, r_mem, r_ic, r_prio = _requests(base, requests, rng)
    jobs = np.arange(requests, dtype=np.int64) + 10 * nodes
    times = []
    for _ in range(repeats):
        st = base.copy()
        sched = RegionalScheduler(StaleView(st, 0), "two-choices", seed=len(times))
        t0 = time.perf_counter()
        node = sched.place_arrays(r_type, r_count, r_mem, r_ic, module=mod)
        st.validate_arrays(node, r_type, r_count, r_mem, r_ic, np.full(requests, 10**18), r_prio,
                           jobs, 1, module=mod)
        times.append(time.perf_counter() - t0)
    v = _THROUGHPUT_LEASES[backend]
    st = base.copy()
    cols = (rng.integers(0, nodes, v), np.zeros(v), np.ones(v), np.full(v, 10**9),
            np.full(v, st.node_ic[0]), np.full(v, 10**18), rng.integers(0, 4, v),
            np.arange(v) + 10 * nodes)
    t0 = time.perf_counter()
    out = st.validate_arrays(*cols, 1, module=mod)  # through the checked Python boundary
    checked_s = time.perf_counter() - t0
    # The core alone, inputs packed and checked beforehand (what the node runs per lease).
    st = base.copy()
    leases = np.stack(cols, axis=1).astype(np.int64)
    res, pre = np.empty((v, 2), np.int64), np.empty((v + len(st.running()), 5), np.int64)
    t0 = time.perf_counter()
    mod.validate_batch(leases, st.nodes, st.ic_ok, len(st.ic_names), st.slots, st.K, 1, True, res, pre)
    core_s = time.perf_counter() - t0
    assert np.array_equal(res[:, 0], out["code"])  # same decisions both ways
    return {"backend": backend, "nodes": nodes, "requests": requests, "repeats": repeats,
            "round_ms": float(np.median(times) * 1e3), "round_ms_min": float(min(times) * 1e3),
            "validations": v, "validations_per_s": v / core_s,
            "validations_per_s_checked": v / checked_s,
            "accepted_fraction": float((out["code"] <= 1).mean())}
