"""The placement LP (a transportation problem) solved with SciPy's HiGHS, and its lower bound.

Sources ``s`` (job classes, or single jobs) supply ``supply[s]`` jobs; sinks ``t`` (node
classes) take at most ``capacity[t]`` jobs; ``x[s, t] >= 0`` jobs of ``s`` go to ``t`` at
``cost[s, t]`` each (only finite entries are arcs) and ``u[s]`` stay unplaced at
``penalty[s]`` each::

    minimize    sum cost[s,t] x[s,t] + sum penalty[s] u[s]
    subject to  sum_t x[s,t] + u[s] = supply[s]      (every job placed or left out)
                sum_s x[s,t]        <= capacity[t]   (one job per node)

This is a min-cost flow (source -> sources -> sinks -> sink, plus an overflow arc per
source). Its constraint matrix is a network matrix, totally unimodular, so every vertex
of the polytope is integral: a simplex solver returns a whole-job plan, and the LP optimum
*is* the optimum of the integer problem. That is why this module is both the ``flow``
solver and the lower bound of every other planner: each feasible plan (greedy, article,
assignment) is a feasible integer point of the same LP, so its cost is >= the bound.

Why HiGHS: SciPy has no general min-cost flow; HiGHS ships with SciPy (no extra
dependency), is well kept, and its dual simplex ("highs-ds") returns a vertex, hence
integers (the interior-point method would not). Measured on the 50,000-node, 5,000-job
class instance (benchmarks/bench_planner.py, same run, same optimum): HiGHS 18 ms,
OR-tools' SimpleMinCostFlow 2.2 ms, networkx's network_simplex 117 ms. OR-tools is faster
but a large extra dependency, and the whole plan already takes ~76 ms against a 900 ms
target, so the planner stays on HiGHS; the benchmark keeps OR-tools as the peer.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.optimize import linprog

from magnum_lib.base.validate import ParameterError, excerpt

__all__ = ["TransportSolution", "transport_lp", "INTEGRALITY_TOL"]

INTEGRALITY_TOL = 1e-6


@dataclass(frozen=True, eq=False)
class TransportSolution:
    """Optimal flow: ``arc_source[k] -> arc_sink[k]`` carries ``arc_flow[k]`` jobs (integers).

    ``unplaced[s]``: jobs of source ``s`` left out. ``objective``: the LP optimum (the
    lower bound). ``integral``: HiGHS returned whole numbers (always, for a vertex).
    """

    arc_source: np.ndarray
    arc_sink: np.ndarray
    arc_flow: np.ndarray
    unplaced: np.ndarray
    objective: float
    integral: bool
    iterations: int


def _counts(name: str, value, size: int) -> np.ndarray:
    a = np.asarray(value)
    if a.shape != (size,) or a.dtype.kind not in "iuf":
        raise ParameterError(name, f"must be {size} numbers (shape ({size},)), got {a.dtype} of shape {a.shape}")
    if a.size and not (np.all(np.isfinite(a)) and np.all(a == np.round(a)) and a.min() >= 0):
        bad = a[~(np.isfinite(a) & (a == np.round(a)) & (a >= 0))][0]
        raise ParameterError(name, f"must hold whole numbers >= 0, got {excerpt(float(bad))}")
    return a.astype(np.int64)


def _check_inputs(cost, supply, capacity, penalty):
    """The LP's inputs as arrays, or a ParameterError naming the first bad one. Bad inputs
    (a negative capacity makes the LP infeasible) are refused before HiGHS is asked."""
    c = np.asarray(cost)
    if c.ndim != 2 or c.dtype.kind not in "iuf":
        raise ParameterError("cost", f"must be a 2-D array of numbers, got {c.dtype} of shape {c.shape}")
    c = c.astype(np.float64, copy=False)
    bad = np.isnan(c) | np.isneginf(c)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise ParameterError("cost", f"must be finite or +inf (no arc), got {c[i, j]} at ({i}, {j})")
    n_src, n_snk = c.shape
    p = np.asarray(penalty)
    if p.shape != (n_src,) or p.dtype.kind not in "iuf":
        raise ParameterError("penalty", f"must be {n_src} numbers (shape ({n_src},)), got {p.dtype} of shape {p.shape}")
    p = p.astype(np.float64)
    if p.size and not (np.all(np.isfinite(p)) and p.min() > 0):
        raise ParameterError("penalty", f"must be finite and > 0, got {excerpt(float(p[~(np.isfinite(p) & (p > 0))][0]))}")
    return c, _counts("supply", supply, n_src), _counts("capacity", capacity, n_snk), p


def transport_lp(cost: np.ndarray, supply: np.ndarray, capacity: np.ndarray,
                 penalty: np.ndarray, method: str = "highs-ds") -> TransportSolution:
    """Solve the transportation LP above with HiGHS dual simplex.

    Parameters
    ----------
    cost : ndarray, shape (S, T)
        Cost per job; ``+inf`` entries are not arcs (NaN and ``-inf`` are refused).
    supply : ndarray of int, shape (S,)
        Jobs of each source (>= 0).
    capacity : ndarray of int, shape (T,)
        Jobs each sink takes at most (>= 0).
    penalty : ndarray of float, shape (S,)
        Cost per unplaced job of each source (finite, > 0).
    method : str
        ``linprog`` method; the default dual simplex returns a vertex (integral flows).
        ``"highs-ipm"`` may not: then flows are rounded down and ``integral`` is False.

    Raises
    ------
    ParameterError
        Bad shapes, NaN or ``-inf`` costs, negative or fractional supplies or capacities,
        penalties not finite and > 0: checked here, before HiGHS is asked.
    """
    cost, supply, capacity, penalty = _check_inputs(cost, supply, capacity, penalty)
    n_src, n_snk = cost.shape
    src, snk = np.nonzero(np.isfinite(cost))
    n_arc = src.size
    if n_src == 0:
        empty = np.zeros(0, dtype=np.int64)
        return TransportSolution(empty, empty, empty, empty, 0.0, True, 0)
    c = np.concatenate([cost[src, snk], penalty.astype(np.float64)])
    cols = np.arange(n_arc + n_src)
    rows_eq = np.concatenate([src, np.arange(n_src)])
    a_eq = sparse.csr_matrix((np.ones(n_arc + n_src), (rows_eq, cols)), shape=(n_src, n_arc + n_src))
    if n_arc:
        a_ub = sparse.csr_matrix((np.ones(n_arc), (snk, np.arange(n_arc))), shape=(n_snk, n_arc + n_src))
        b_ub = capacity.astype(np.float64)
    else:
        a_ub = b_ub = None
    res = linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=supply.astype(np.float64),
                  bounds=(0, None), method=method)
    if res.status != 0:  # cannot happen for a valid input: u = supply is always feasible
        raise RuntimeError(f"HiGHS failed on the placement LP: {res.message}")
    x = res.x
    flow = np.rint(x)
    integral = bool(np.all(np.abs(flow - x) <= INTEGRALITY_TOL))
    if not integral:
        # Keep the plan feasible whatever happens: round down, leftovers become unplaced.
        flow = np.floor(x + INTEGRALITY_TOL)
    flow = flow.astype(np.int64)
    arc_flow = flow[:n_arc]
    unplaced = supply.astype(np.int64) - np.bincount(src, weights=arc_flow, minlength=n_src).astype(np.int64)
    keep = arc_flow > 0
    return TransportSolution(src[keep], snk[keep], arc_flow[keep], unplaced, float(res.fun), integral,
                             int(getattr(res, "nit", 0) or 0))
