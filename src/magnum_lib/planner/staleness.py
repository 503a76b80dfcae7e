"""How fast a hint goes stale while the cluster churns.

The article plans every 30 s "while resources change every 10 ms". Model the churn as
independent Poisson events per node at ``rate_per_node`` events per second; each event
redraws the node's free devices from the snapshot generator's distribution
(:func:`magnum_lib.planner.snapshot.draw_free`). A hint is *still good* at time ``t`` if its
node can still take its job (free devices >= demand). Because a redraw forgets the past,

    P(good at t) = exp(-rate * t) + (1 - exp(-rate * t)) * P(fresh node fits the job)

per hint, averaged over the hints (:func:`expected_hint_validity`);
:func:`simulate_hint_validity` measures the same thing by stepping the churn forward.
"Every 10 ms" can mean one change per node every 10 ms (rate 100/s: after a few tens of
ms a hint is only as good as a random node, about two thirds of the default generated
plan's hints) or one change somewhere in the fleet every 10 ms (rate 100 / nodes per node:
at 50,000 nodes exp(-0.06) = 94 % of hinted nodes are untouched after 30 s and about 98 %
of the hints still fit).
"""
from __future__ import annotations

import numbers

import numpy as np
from scipy.stats import binom

from magnum_lib.base.validate import ParameterError, check_int
from magnum_lib.planner.snapshot import NODE_STATE_SHARES, Snapshot, draw_free

__all__ = ["simulate_hint_validity", "expected_hint_validity"]


def _check(rate_per_node, times_s, load):
    if isinstance(rate_per_node, bool) or not isinstance(rate_per_node, numbers.Real) or not 0 <= rate_per_node < np.inf:
        raise ParameterError("rate_per_node", f"must be a finite number of events per second >= 0, got {rate_per_node!r}")
    t = np.asarray(times_s, dtype=np.float64)
    if t.ndim != 1 or t.size == 0 or not np.all(np.isfinite(t)) or np.any(t < 0) or np.any(np.diff(t) < 0):
        raise ParameterError("times_s", "must be a non-empty increasing 1-D array of finite seconds >= 0")
    if isinstance(load, bool) or not isinstance(load, numbers.Real) or not 0 <= load <= 1:
        raise ParameterError("load", f"must be a number in [0, 1], got {load!r}")
    return float(rate_per_node), t, float(load)


def _hinted(snap: Snapshot, job_node: np.ndarray):
    placed = np.flatnonzero(np.asarray(job_node) >= 0)
    return snap.job_demand[placed], snap.node_capacity[job_node[placed]]


def expected_hint_validity(snap: Snapshot, job_node: np.ndarray, rate_per_node: float, times_s,
                           load: float = 0.5) -> np.ndarray:
    """Closed-form share of the plan's hints still good at each of ``times_s`` (see module doc)."""
    rate, t, load = _check(rate_per_node, times_s, load)
    demand, cap = _hinted(snap, job_node)
    if demand.size == 0:
        return np.ones_like(t)
    idle, _, partly = NODE_STATE_SHARES
    # fresh free = cap - busy fits iff busy <= cap - demand; idle always fits, full never.
    p_fit = np.mean(idle + partly * binom.cdf(cap - demand, cap, load))
    stay = np.exp(-rate * t)
    return stay + (1 - stay) * p_fit


def simulate_hint_validity(snap: Snapshot, job_node: np.ndarray, rate_per_node: float, times_s,
                           load: float = 0.5, seed: int = 0) -> np.ndarray:
    """Measured share of hints still good at each of ``times_s`` under Poisson churn.

    Steps the churn from one time to the next: a node changes in ``(t1, t2]`` with
    probability ``1 - exp(-rate * (t2 - t1))`` (Poisson), and then holds a fresh draw.
    """
    rate, t, load = _check(rate_per_node, times_s, load)
    seed = check_int("seed", seed, 0)
    job_node = np.asarray(job_node)
    demand, cap = _hinted(snap, job_node)
    if demand.size == 0:
        return np.ones_like(t)
    rng = np.random.default_rng(seed)
    free = snap.node_free[job_node[job_node >= 0]].copy()
    out = np.empty_like(t)
    prev = 0.0
    for i, ti in enumerate(t):
        changed = rng.random(free.size) < -np.expm1(-rate * (ti - prev))
        free[changed] = draw_free(rng, cap[changed], load)
        out[i] = np.mean(free >= demand)
        prev = ti
    return out
