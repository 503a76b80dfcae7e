"""Model behind the Conductor explorer (notebook 03): speculative leases from a stale view.

One setting (staleness, concurrent schedulers C, cluster load, placement policy, lease
timeout) is evaluated with the library's contention simulator
(:func:`magnum_lib.regional.contention.simulate_contention`): each trial, C schedulers
place one single-slot job at the same moment from one shared view of ``nodes`` nodes with
``slots`` slots each, and the nodes validate the leases (jobs carry ``priorities``
levels, so a lease on a full node preempts a strictly lower-priority job). From that:

* **conflict rate**: the three policies side by side at this setting, beside the
  birthday bound ``1 - prod_{i<C}(1 - i/N)`` (C uniform picks on N empty 1-slot nodes)
  and the article's 0.001 %;
* **utilization**: the lease failure rate against the utilization reached, over a sweep
  of the cluster load, for the chosen policy;
* **preemptions** per 1,000 leases, each costing a checkpoint of the victim's memory
  (:func:`checkpoint_seconds`);
* **decision latency**, closed form on top of the simulated failure rate: one attempt is
  ``decision + rtt``; a refused lease is retried, so the speculative mean is
  ``(decision + rtt) / (1 - lease_failure_rate)``; behind one lock the k-th of C decisions
  waits for the k - 1 before it, mean ``(C + 1) / 2 * (decision + rtt)``, worst ``C * (...)``.

The lease timeout is checked with the node-side validator itself
(:func:`magnum_lib.regional.validator.validate`): a lease reaches its node ``decision +
rtt / 2`` after it was issued, and a lease that has expired by then is refused
(``"expired"``). Longer timeouts cost renewals less often but leave the devices of a
vanished holder idle for up to the timeout.

No widget code here: the explorer, the notebook and the tests call :func:`evaluate`.
The latency model and the timeout check are computed here from the library's public API
(the regional package has no closed form for them).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from magnum_lib.regional.contention import POLICIES, birthday_bound, simulate_contention
from magnum_lib.regional.lease import LeaseIds, issue_lease
from magnum_lib.regional.validator import DEFAULT_CHECKPOINT_BANDWIDTH, NodeState, validate
from magnum_lib.units import parse_bandwidth

ARTICLE_CONTENTION = 1e-5
"""The article's "<0.001 %" lease-conflict rate, as a fraction."""

LEASE_BUDGET_MS = 10.0
"""The article's regional decision budget: a lease in under 10 ms."""

DECISION_US = 20.0
"""Scheduler's own decision time per attempt, µs (the default of ``simulate_scheduling``)."""

RTT_US = 100.0
"""Scheduler-to-node round trip, µs (the article's "RTT ~100 µs")."""

LOAD_SWEEP = (0.0, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95)
"""Cluster loads of the utilization panel."""

EXPIRED_MESSAGE = "lease timeout shorter than the trip to the node:\nevery lease expires before it is validated"
FULL_MESSAGE = "the view shows no free slot:\nevery lease is refused"

DEFAULTS = MappingProxyType({"nodes": 2000, "slots": 8, "trials": 1000, "churn": 50.0, "priorities": 3,
                             "seed": 0})
"""Model sizes used by the explorer (small, so a change answers in well under 150 ms)."""


def checkpoint_seconds(memory, bandwidth=DEFAULT_CHECKPOINT_BANDWIDTH) -> float:
    """Seconds to save ``memory`` (bytes or ``"80GB"``) at ``bandwidth`` (B/s or ``"25GB/s"``).

    The same rule the validator applies to a preempted job (memory per device /
    checkpoint bandwidth; devices save in parallel over their own links).
    """
    from magnum_lib.units import parse_size

    mem = memory if isinstance(memory, (int, np.integer)) and not isinstance(memory, bool) else parse_size(memory)
    bw = parse_bandwidth(bandwidth) if isinstance(bandwidth, str) else float(bandwidth)
    if not bw > 0:
        raise ValueError(f"bandwidth must be > 0, got {bandwidth!r}")
    return float(mem) / bw


def lease_survives_trip(timeout_ms: float, decision_us: float = DECISION_US, rtt_us: float = RTT_US) -> bool:
    """Does a lease with ``timeout_ms`` still hold when its node validates it?

    Issued at 0, it reaches the node ``decision + rtt / 2`` later; decided by the library's
    :func:`~magnum_lib.regional.validator.validate` on a one-node region.
    """
    state = NodeState.uniform(1, "h100_sxm", 8)
    lease = issue_lease(LeaseIds("explorer"), "probe", 0, "h100", 1, "80GB", "nvlink_4", timeout_ms / 1e3)
    arrival_ns = int(round((decision_us + rtt_us / 2) * 1e3))
    return validate(lease, state, arrival_ns).accepted


def speculative_latency_us(failure_rate: float, decision_us: float = DECISION_US,
                           rtt_us: float = RTT_US) -> float:
    """Mean time to a placement when each refused lease is retried: step / (1 - p)."""
    step = decision_us + rtt_us
    return math.inf if failure_rate >= 1.0 else step / (1.0 - failure_rate)


def locking_latency_us(concurrent: int, decision_us: float = DECISION_US, rtt_us: float = RTT_US) -> tuple:
    """(mean, worst) time to a placement for C decisions serialised behind one lock."""
    step = decision_us + rtt_us
    return (concurrent + 1) / 2 * step, concurrent * step


@dataclass(frozen=True, eq=False)
class ConductorScenario:
    """One evaluated explorer setting (rates are fractions, latencies µs)."""

    staleness_ms: float
    concurrent: int
    load: float
    policy: str
    timeout_ms: float
    nodes: int
    slots: int
    results: dict          # policy -> ContentionResult at this setting
    sweep: tuple           # ContentionResult per LOAD_SWEEP value, chosen policy
    birthday: float
    lease_alive: bool
    speculative_us: float
    locking_mean_us: float
    locking_worst_us: float
    checkpoint_s: float

    @property
    def result(self):
        """The chosen policy's ContentionResult."""
        return self.results[self.policy]

    @property
    def conflict_rate(self) -> float:
        return self.result.round_conflict_rate

    @property
    def failure_rate(self) -> float:
        return self.result.lease_failure_rate

    @property
    def utilization(self) -> float:
        return self.result.utilization

    def preemptions_per_1000(self, policy: str | None = None) -> float:
        r = self.results[policy or self.policy]
        return 1000.0 * r.preemptions / (r.trials * r.concurrent)

    @property
    def view_full(self) -> bool:
        """True when every lease is refused because the view shows no free slot."""
        return self.failure_rate >= 1.0

    @property
    def meets_article(self) -> bool:
        """Lease failure rate below C26's 0.001 % (its unit is the lease: "1 in 100,000 leases")."""
        return self.failure_rate < ARTICLE_CONTENTION

    @property
    def message(self) -> str:
        """Why this setting cannot work, or ''."""
        if not self.lease_alive:
            return EXPIRED_MESSAGE
        if self.view_full:
            return FULL_MESSAGE
        return ""


@functools.lru_cache(maxsize=64)
def _contention(**kwargs):
    """:func:`simulate_contention`, remembered: it is seeded (same arguments, same result), and
    a policy or timeout change reuses every run that does not depend on it (the explorer's
    answer on the pure-Python backend, where one run costs tens of ms)."""
    return simulate_contention(**kwargs)


def evaluate(staleness_ms: float = 2.0, concurrent: int = 10, load: float = 0.7, policy: str = "random",
             timeout_ms: float = 100.0, *, nodes: int = DEFAULTS["nodes"], slots: int = DEFAULTS["slots"],
             trials: int = DEFAULTS["trials"], churn: float = DEFAULTS["churn"],
             priorities: int = DEFAULTS["priorities"], seed: int = DEFAULTS["seed"],
             memory="80GB", bandwidth=DEFAULT_CHECKPOINT_BANDWIDTH) -> ConductorScenario:
    """Evaluate one setting; see the module docstring. Bad values raise ``ValueError``."""
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {', '.join(POLICIES)}, got {policy!r}")
    for name, value in (("staleness_ms", staleness_ms), ("timeout_ms", timeout_ms)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
            raise ValueError(f"{name} must be a finite number of ms >= 0, got {value!r}")
    common = dict(nodes=nodes, concurrent=concurrent, slots=slots, staleness=staleness_ms / 1e3, trials=trials,
                  seed=seed, load=load, churn=churn, priorities=priorities)
    results = {p: _contention(policy=p, **common) for p in POLICIES}
    sweep = tuple(results[policy] if x == load else _contention(policy=policy, **{**common, "load": x})
                  for x in LOAD_SWEEP)
    mean_lock, worst_lock = locking_latency_us(concurrent)
    return ConductorScenario(
        staleness_ms=float(staleness_ms), concurrent=int(concurrent), load=float(load), policy=policy,
        timeout_ms=float(timeout_ms), nodes=int(nodes), slots=int(slots), results=results, sweep=sweep,
        birthday=birthday_bound(nodes, concurrent), lease_alive=lease_survives_trip(timeout_ms),
        speculative_us=speculative_latency_us(results[policy].lease_failure_rate),
        locking_mean_us=mean_lock, locking_worst_us=worst_lock,
        checkpoint_s=checkpoint_seconds(memory, bandwidth))
