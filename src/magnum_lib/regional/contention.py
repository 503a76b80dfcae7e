"""Lease contention: how often do C schedulers placing at the same moment collide?

Each trial, ``concurrent`` schedulers each place one single-slot job at the same moment
from the same view of ``nodes`` nodes with ``slots`` slots each; the nodes then validate
the leases against their truth. A trial *conflicts* when at least one lease is refused or
forces a preemption.

The model, stated so it can be checked:

* occupancy: each node holds ``Binomial(slots, load)`` jobs, drawn once per run; the view
  and the truth start from it (``load=0``: an empty cluster, the birthday problem);
* staleness: the view is refreshed every ``staleness`` seconds, so a trial sees a view of
  age ``U[0, staleness)``; each node changes state at ``churn`` events/s, so its entry is
  out of date with probability ``1 - exp(-churn * age)``, and a stale node's true occupancy
  is a fresh ``Binomial(slots, load)`` draw;
* policies (:data:`POLICIES`): ``random`` picks a node the view shows with a free slot,
  uniformly; ``least-loaded`` picks the view's emptiest node (lowest index on ties) - all
  schedulers share the view, so all pick the same node: the herd; ``two-choices`` picks
  two such nodes at random and takes the emptier in the view;
* priorities: with ``priorities=K > 1`` every job (new or running) has a priority uniform
  in ``0..K-1`` and a lease on a full node preempts the lowest-priority job there when
  strictly lower; with ``K=1`` (default) a full node refuses.

With ``load=0`` and ``slots=1`` under ``random``, a trial conflicts exactly when two of the
C uniform picks coincide: :func:`birthday_bound`.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass

import numpy as np

from magnum_lib import _backend
from magnum_lib.base.validate import ParameterError, check_choice, check_int
from magnum_lib.regional.lease import as_ns

__all__ = ["POLICIES", "ContentionResult", "simulate_contention", "birthday_bound",
           "expected_lease_failure_rate"]

POLICIES = ("random", "least-loaded", "two-choices")
_BATCH_ELEMENTS = 1 << 21  # random numbers drawn per batch, bounding memory (~16 MB per array)


def birthday_bound(nodes: int, concurrent: int) -> float:
    """P(at least two of C uniform picks among N nodes coincide) = 1 - prod_{i<C} (1 - i/N)."""
    return 1.0 - math.prod(1.0 - i / nodes for i in range(concurrent))


def expected_lease_failure_rate(nodes: int, concurrent: int) -> float:
    """Expected refused leases / leases for C uniform single-slot picks on N empty 1-slot nodes.

    Refused = C - distinct nodes picked, and E[distinct] = N (1 - (1 - 1/N)^C); for C << N
    this is about C(C-1)/(2N) / C = (C-1)/(2N).
    """
    return 1.0 - nodes * (1.0 - (1.0 - 1.0 / nodes) ** concurrent) / concurrent


@dataclass(frozen=True)
class ContentionResult:
    """Outcome of :func:`simulate_contention` (rates are fractions, times seconds)."""

    nodes: int
    concurrent: int
    slots: int
    policy: str
    staleness_s: float
    load: float
    churn: float
    priorities: int
    trials: int
    seed: int
    round_conflict_rate: float
    lease_failure_rate: float
    utilization: float
    preemptions: int
    wall_s: float
    backend: str

    def to_dict(self) -> dict:
        return asdict(self)


def _kernels():
    return _backend.pick("magnum_lib.regional._contention", "magnum_lib.regional.contention_ref")


def _check_fraction(name: str, value, upper_open: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1 \
            or (upper_open and value == 1):
        raise ParameterError(name, f"must be a number in [0, 1{')' if upper_open else ']'}, got {value!r}")
    return float(value)


def _check_args(nodes, concurrent, slots, priorities, trials, seed, policy, staleness, load, churn):
    """Check :func:`simulate_contention`'s arguments; return them as ints, the policy's code, staleness (s)."""
    n = check_int("nodes", nodes, 1)
    c = check_int("concurrent", concurrent, 1)
    s = check_int("slots", slots, 1, 4096)
    k = check_int("priorities", priorities, 1, 2**31 - 1)
    trials = check_int("trials", trials, 1)
    seed = check_int("seed", seed, 0)
    policy_code = POLICIES.index(check_choice("policy", policy, POLICIES))
    stale_s = as_ns("staleness", staleness) / 1e9
    load = _check_fraction("load", load)
    if isinstance(churn, bool) or not isinstance(churn, (int, float)) or not 0 <= churn < math.inf:
        raise ParameterError("churn", f"must be a finite number of events/s >= 0, got {churn!r}")
    return n, c, s, k, trials, seed, policy_code, stale_s, load


def simulate_contention(nodes: int, concurrent: int, slots: int = 1, policy: str = "random",
                        staleness="2ms", trials: int = 10_000, seed: int = 0, load: float = 0.0,
                        churn: float = 50.0, priorities: int = 1, module=None) -> ContentionResult:
    """Simulate ``trials`` independent contention rounds (see the module docstring).

    Parameters
    ----------
    nodes, concurrent, slots : int
        N nodes, C schedulers placing at once, S slots per node.
    policy : str
        One of :data:`POLICIES`.
    staleness : float or str
        View refresh period, seconds or ``"2ms"``.
    trials, seed : int
    load : float
        Fraction of slots already busy, in [0, 1].
    churn : float
        State changes per node per second (only matters when ``load > 0``).
    priorities : int
        Priority levels; 1 disables preemption.
    module : optional
        Kernel module override (parity tests); default the active backend.
    """
    n, c, s, k, trials, seed, policy_code, stale_s, load = _check_args(
        nodes, concurrent, slots, priorities, trials, seed, policy, staleness, load, churn)
    mod = module or _kernels()

    start = time.perf_counter()
    rng = np.random.default_rng(seed)
    view_occ = (rng.binomial(s, load, n) if load > 0 else np.zeros(n)).astype(np.int32)
    feas = np.flatnonzero(view_occ < s).astype(np.int64)
    ll_node = int(np.argmin(view_occ))  # argmin returns the lowest index among ties
    stale = load > 0 and stale_s > 0 and churn > 0
    per_trial = c * (3 + (s if k > 1 else 0))
    batch = max(1, min(trials, _BATCH_ELEMENTS // per_trial))
    t_node, t_occ = np.empty(c, dtype=np.int64), np.empty(c, dtype=np.int32)
    t_prio = np.empty(c * s, dtype=np.int32)
    totals = np.zeros(4, dtype=np.int64)
    # Arrays that carry no randomness in this configuration are built once and reused.
    fixed = {"p": np.zeros(batch), "u": np.ones((batch, c)), "redraw": np.zeros((batch, c), np.int32),
             "pick": np.zeros((batch, c), np.int32), "new": np.zeros((batch, c), np.int32),
             "old": np.zeros((batch, c, 0), np.int32)}
    random_picks = policy_code != 1 and len(feas) > 0
    done = 0
    while done < trials:
        b = min(batch, trials - done)
        if stale:
            p_stale = -np.expm1(-churn * stale_s * rng.random(b))
            u_stale = rng.random((b, c))
            redraw = rng.binomial(s, load, (b, c)).astype(np.int32)
        else:
            p_stale, u_stale, redraw = fixed["p"][:b], fixed["u"][:b], fixed["redraw"][:b]
        pick1 = rng.integers(0, len(feas), (b, c), dtype=np.int32) if random_picks else fixed["pick"][:b]
        pick2 = rng.integers(0, len(feas), (b, c), dtype=np.int32) if random_picks and policy_code == 2 else pick1
        if k > 1:
            new_prio = rng.integers(0, k, (b, c), dtype=np.int32)
            old_prio = rng.integers(0, k, (b, c, s), dtype=np.int32)
        else:
            new_prio, old_prio = fixed["new"][:b], fixed["old"][:b]
        totals += mod.contention_batch(view_occ, feas, ll_node, s, policy_code, p_stale, u_stale,
                                       redraw, pick1, pick2, new_prio, old_prio, t_node, t_occ,
                                       t_prio)
        done += b
    conflicted, refused, preemptions, accepted = (int(x) for x in totals)
    base = float(view_occ.sum())
    # Preemption swaps one job for another, so busy slots grow only by the net acceptances.
    utilization = (base + (accepted - preemptions) / trials) / (n * s)
    return ContentionResult(
        nodes=n, concurrent=c, slots=s, policy=policy, staleness_s=stale_s, load=load,
        churn=float(churn), priorities=k, trials=trials, seed=seed,
        round_conflict_rate=conflicted / trials, lease_failure_rate=refused / (trials * c),
        utilization=utilization, preemptions=preemptions, wall_s=time.perf_counter() - start,
        backend="compiled" if mod.__name__.endswith("._contention") else "python")
