"""Round-based fairness policies: Gavel's max-min fairness (aware and blind) and Themis' FTF.

Gavel (Narayanan et al., OSDI 2020, ``MaxMinFairnessPolicyWithPerf``): each round the
LP  max z  s.t.  z <= w_j * s_j * sum_t thr[j,t] X[j,t],  sum_t X[j,t] <= 1,
sum_j s_j X[j,t] <= N_t,  0 <= X <= 1  is solved with HiGHS (scipy ``linprog``), where
``thr`` is the job's throughput on each type (here its speed relative to the
reference type), ``s_j`` its GPU count and ``w_j = 1 / (throughput under Gavel's
proportional split)``. The blind baseline (Gavel's ``MaxMinFairnessPolicy``) solves
the same LP with every ``thr`` set to 1. Round mechanism (a simplification of Gavel's
``_schedule_jobs_on_workers_helper`` run with a global queue; Gavel's default keeps one
sorted list per type and resets its time-based priorities every 1920 s, which
``replay.gavel_rounds.GavelRounds`` reproduces exactly): priority of (job, type) =
``X[j,t] / (rounds j ran on t / rounds j has been active)`` (infinite when it never
ran there); pairs are taken by priority, then X, then lowest id, a job gets at most one
type per round and only if all its GPUs of that type are free. Jobs keep their GPUs
when re-chosen on the same type; the others are preempted.

One GPU type without an LP (:func:`maxmin_waterfill`). With one type Gavel's split gives
every job the whole type (``xp = 1``), so ``w_j = 1 / thr_j`` and job j's row is
``z <= a_j x_j`` with ``a_j = w_j s_j thr_j`` (= s_j up to one rounding); ``thr_j = 0``
leaves the row ``z <= 0`` and the bound ``x_j = 0``. The LP is max z s.t. z <= a_j x_j,
0 <= x_j <= 1, sum_j s_j x_j <= N. Its optimum is ``z* = min(min_j a_j, N / sum_j s_j / a_j)``
(0 if a job has thr = 0). When ``N / sum_j s_j / a_j < min_j a_j`` the capacity binds and X
is unique, ``x_j = z* / a_j`` (N / (m s_j) for m jobs); otherwise many X are optimal (HiGHS
returns a vertex, Gavel's cvxpy/Clarabel an interior point) and we take the max-min fair
one, by progressive filling: the levels ``a_j x_j`` rise together, a job stops at
``x_j = 1``, the others share what is left. It is the unique lexicographic max-min X (its
smallest level is z*, so it is optimal for the LP; tests/test_replay_waterfill.py checks
it against HiGHS) and, unlike a solver's vertex, depends on no solver. A job with thr = 0
keeps 0 and takes no GPUs.

Themis-style finish-time fairness (Mahajan et al., NSDI 2020): each round jobs are
ranked by their estimated rho = (time since submit + remaining run time) / T_id, with
``T_id = duration * max(1, N g / G)`` the run time on a 1/N share of the G GPUs (N =
active jobs), largest first, and given GPUs in that order (skip-ahead), preempting
running jobs left out. Themis' partial-allocation auction is replaced by this greedy.
"""
from __future__ import annotations

import numpy as np

from magnum_lib.base.validate import ParameterError
from magnum_lib.replay.api import Policy, check_round
from magnum_lib.replay.policies import _give_in_order

__all__ = ["GavelMaxMin", "FinishTimeFairness", "maxmin_allocation", "maxmin_waterfill"]


def maxmin_allocation(thr, scale, num_gpus_by_type):
    """Gavel's max-min LP (see the module docstring). ``thr``: jobs x types; returns X."""
    from scipy.optimize import linprog

    thr = np.asarray(thr, dtype=np.float64)
    m, T = thr.shape
    scale = np.asarray(scale, dtype=np.float64)
    N = np.asarray(num_gpus_by_type, dtype=np.float64)
    # Gavel's proportional split: X_prop[t] = N_t / m, rows scaled so the largest sums to 1.
    xp = np.tile(N / m, (m, 1))
    xp /= xp.sum(axis=1).max()
    prop = np.sum(thr * xp, axis=1)
    w = 1.0 / np.where(prop > 0, prop, 1.0)
    c, A, b, bounds = _maxmin_lp(thr, scale, N, w)
    res = linprog(c, A_ub=A, b_ub=b, bounds=bounds, method="highs")
    if res.status != 0:
        raise RuntimeError(f"Gavel LP failed: {res.message}")
    return np.clip(res.x[:-1].reshape(m, T), 0.0, 1.0)


def maxmin_waterfill(scale, num_gpus, thr=None):
    """Gavel's max-min LP on ONE GPU type without an LP solver: the max-min fair X (1-D).

    ``scale``: each job's GPU count s_j (> 0); ``num_gpus``: the type's GPUs N (>= 0);
    ``thr``: each job's throughput on the type (>= 0; None: all 1, the blind policy).
    Progressive filling (see the module docstring): the level ``a_j x_j`` of every job
    with ``thr > 0`` rises together; a job stops at ``x_j = 1`` (level ``a_j``), the rest
    share what capacity is left, ``x_j = L / a_j``; a job with ``thr == 0`` keeps 0.
    ``a_j = ((1 / thr_j) s_j) thr_j`` is the LP's own coefficient (``w_j s_j thr_j`` with
    ``w_j = 1 / thr_j``: s_j up to one rounding), so both solve the same LP.

    Written as the compiled kernel computes it (``replay/_gavel_rounds.pyx``, ``waterfill``):
    the same float operations in the same order, so both give the same bits.
    """
    s = _float_list("scale", scale, 0.0, 2.0 ** 40, low_open=True)
    m = len(s)
    if not (isinstance(num_gpus, (int, float, np.integer, np.floating)) and 0 <= num_gpus <= 2 ** 40):
        raise ParameterError("num_gpus", f"must be a GPU count in [0, 2^40], got {str(num_gpus)[:40]!r}")
    th = [1.0] * m if thr is None else _float_list("thr", thr, 0.0, 1e12)
    if len(th) != m:
        raise ParameterError("thr", f"needs one throughput per job ({m}), got {len(th)}")
    N = float(num_gpus)
    a = [((1.0 / t) * sj) * t if t > 0.0 else 0.0 for sj, t in zip(s, th, strict=True)]
    frozen = [False] * m
    level = 0.0
    while N > 0.0:
        left, per_level = N, 0.0        # capacity left; GPUs one unit of level takes (d/dL sum s_j x_j)
        for j in range(m):
            if frozen[j]:
                left -= s[j]
            elif th[j] > 0.0:
                per_level += s[j] / a[j]
        if per_level == 0.0:            # every job is at x = 1
            break
        level = left / per_level
        grew = False
        for j in range(m):              # jobs the level reaches stop at x = 1
            if not frozen[j] and th[j] > 0.0 and a[j] <= level:
                frozen[j] = grew = True
        if not grew:
            break
    x = np.zeros(m)
    for j in range(m):
        if N > 0.0 and th[j] > 0.0:
            v = level / a[j]
            x[j] = 1.0 if frozen[j] else (v if v > 0.0 else 0.0)
    return x


def _float_list(name, values, lo, hi, low_open=False):
    """``values`` as a list of floats in [lo, hi] (``low_open``: > lo), else ParameterError."""
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError(name, f"must be numbers, got {str(values)[:40]!r}") from None
    if arr.ndim != 1:
        raise ParameterError(name, f"must be one number per job (1-D), got shape {arr.shape}")
    ok = np.isfinite(arr) & (arr <= hi) & ((arr > lo) if low_open else (arr >= lo))
    if not np.all(ok):
        raise ParameterError(name, f"must be finite numbers in {'(' if low_open else '['}{lo:g}, {hi:g}], "
                                   f"got {arr[~ok][0]!r}")
    return arr.tolist()


def _maxmin_lp(thr, scale, N, w):
    """The LP's ``(c, A_ub, b_ub, bounds)``, variables X row by row then z. ``A_ub`` is
    sparse with exactly the nonzeros of the dense matrix row-by-row building gives (the
    solver sees the same model; tests/test_replay_gavel_fast.py builds that one and checks it), built in
    whole-array steps (the LP runs at every allocation reset of a replay)."""
    from scipy.sparse import coo_array

    m, T = thr.shape
    nv = m * T + 1
    c = np.zeros(nv)
    c[-1] = -1.0
    jt = np.repeat(np.arange(m), T)                      # row j of each X[j, t]
    tt = np.tile(np.arange(T), m)                        # its type t
    cols = np.arange(m * T)
    data = np.concatenate([(-w[:, None] * scale[:, None] * thr).ravel(),   # z - w_j s_j sum_t thr X <= 0
                           np.ones(m),                                     # (z's column)
                           np.ones(m * T),                                 # sum_t X[j,t] <= 1
                           np.repeat(scale, T)])                           # sum_j s_j X[j,t] <= N_t
    row = np.concatenate([jt, np.arange(m), m + jt, 2 * m + tt])
    col = np.concatenate([cols, np.full(m, m * T), cols, cols])
    keep = data != 0                                     # a dense matrix's zeros are not entries
    A = coo_array((data[keep], (row[keep], col[keep])), shape=(2 * m + T, nv)).tocsr()
    b = np.concatenate([np.zeros(m), np.ones(m), N])
    bounds = np.zeros((nv, 2))
    bounds[:-1, 1] = np.where(thr.ravel() > 0, 1.0, 0.0)             # 0 <= X <= 1, 0 where thr <= 0
    bounds[-1] = (-np.inf, np.inf)
    return c, A, b, bounds


class GavelMaxMin(Policy):
    """Gavel's max-min fairness on its throughput matrix (``aware=False``: blind baseline)."""

    def __init__(self, aware: bool = True, round_s: float = 360.0):
        self.aware = bool(aware)
        self.round_s = check_round(round_s)
        self.name = "gavel" if self.aware else "gavel-blind"

    def reset(self, jobs, cluster):
        self.jobs, self.cluster = jobs, cluster
        T = len(cluster.type_names)
        self.N = np.array([cluster.gpus_of_type(t) for t in range(T)])
        self.speed = jobs.speed if jobs.speed is not None else np.ones((len(jobs), T))
        self.ran = {}      # (job, type) -> rounds run there
        self.active = {}   # job -> rounds active
        self._cache = (None, None)

    def schedule(self, view):
        active = sorted(view.running + view.queue, key=lambda j: j.id)
        plan = view.plan()
        if not active:
            return plan
        ids = tuple(j.id for j in active)
        if self._cache[0] != ids:
            thr = self.speed[list(ids)]
            if not self.aware:
                thr = np.where(thr > 0, 1.0, 0.0)
            X = maxmin_allocation(thr, [j.num_gpus for j in active], self.N)
            self._cache = (ids, X)
        X = self._cache[1]
        T = X.shape[1]
        pairs = []
        for r, j in enumerate(active):
            rounds = self.active.get(j.id, 0)
            for t in range(T):
                if X[r, t] <= 1e-9:
                    continue
                got = self.ran.get((j.id, t), 0)
                prio = np.inf if got == 0 else X[r, t] / (got / max(rounds, 1))
                pairs.append((-prio, -X[r, t], j.id, t, j))
        pairs.sort(key=lambda p: p[:4])
        free = {t: int(self.N[t]) for t in range(T)}
        choice = {}
        for _, _, jid, t, j in pairs:
            if jid in choice or j.num_gpus > free[t]:
                continue
            choice[jid] = (t, j)
            free[t] -= j.num_gpus
        names = self.cluster.type_names
        for j in view.running:
            keep = choice.get(j.id)
            if keep is None or names[keep[0]] != j.gpu_type:
                plan.preempt(j)
        for _jid, (t, j) in sorted(choice.items()):
            if not j.running or names[t] != j.gpu_type:
                plan.start(j, gpu_type=names[t])
        for j in active:
            self.active[j.id] = self.active.get(j.id, 0) + 1
        for jid, (t, _) in choice.items():
            self.ran[(jid, t)] = self.ran.get((jid, t), 0) + 1
        return plan


class FinishTimeFairness(Policy):
    """Themis-style finish-time fairness, rounds of ``round_s`` (see the module docstring)."""

    name = "ftf"
    oracle = True       # its rho estimate uses the remaining run time

    def __init__(self, round_s: float = 360.0):
        self.round_s = check_round(round_s)

    def schedule(self, view):
        active = view.running + view.queue
        plan = view.plan()
        if not active:
            return plan
        G = view.cluster.total_gpus
        N = len(active)

        def rho(j):
            t_id = j.duration_s * max(1.0, N * j.num_gpus / G)
            return (view.now_s - j.submit_s + j.remaining_s) / t_id

        order = sorted(active, key=lambda j: (-rho(j), j.id))
        _give_in_order(view, order, plan)
        return plan
