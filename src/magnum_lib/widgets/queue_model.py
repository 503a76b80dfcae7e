"""Model behind the queue explorer: a centralized scheduler seen as an M/M/c queue.

Pods arrive at ``arrival_rate`` per second; each scheduling decision takes on average
``decision_ms`` milliseconds (so the service rate is ``mu = 1000 / decision_ms`` per
second); ``replicas`` schedulers work in parallel from one FIFO queue. No widget code
here: the explorer (``queue_explorer.py``), the notebooks, the tests and the benchmark
all call :func:`evaluate`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from magnum_lib.engine import simulate_queue, theory

SLA_MS = 5.0
"""The latency target of notebook 01: 99% of pods placed within 5 ms."""

UNSTABLE_MESSAGE = "unstable: queue grows without bound (load >= 1)"


def _check_positive(name: str, value: float, unit: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number ({unit}), got {value!r}")
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0 ({unit}), got {value!r}")
    return value


def mmc_sojourn_tail(t: float, servers: int, arrival_rate: float, service_rate: float) -> float:
    """P(time in system > t) for an M/M/c FIFO queue, closed form.

    The wait W is 0 with probability 1 - C (C = Erlang C) and otherwise exponential
    with rate ``a = c*mu - lam``; the service S is exponential with rate ``mu``; the
    tail of W + S follows by convolution.

    Parameters
    ----------
    t : float
        Time in seconds (>= 0).
    servers, arrival_rate, service_rate
        c, lambda (1/s) and mu (1/s); requires lambda < c*mu.
    """
    c, lam, mu = int(servers), float(arrival_rate), float(service_rate)
    erlang = theory.erlang_c(c, lam, mu)
    a = c * mu - lam
    if math.isclose(a, mu, rel_tol=1e-12):
        tail_sum = (1.0 + mu * t) * math.exp(-mu * t)
    else:
        tail_sum = (a * math.exp(-mu * t) - mu * math.exp(-a * t)) / (a - mu)
    return (1.0 - erlang) * math.exp(-mu * t) + erlang * tail_sum


def mmc_sojourn_quantile(q: float, servers: int, arrival_rate: float, service_rate: float) -> float:
    """The q-quantile (0 < q < 1) of the M/M/c time in system, in seconds.

    Solved by bisection on :func:`mmc_sojourn_tail` (monotone in t), so it needs no
    SciPy and is exact to ~1e-12 relative.
    """
    if not 0.0 < q < 1.0:
        raise ValueError(f"q must be in (0, 1), got {q!r}")
    target = 1.0 - q
    lo, hi = 0.0, 1.0 / service_rate
    while mmc_sojourn_tail(hi, servers, arrival_rate, service_rate) > target:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mmc_sojourn_tail(mid, servers, arrival_rate, service_rate) > target:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return 0.5 * (lo + hi)


@dataclass(frozen=True)
class QueueScenario:
    """One evaluated explorer setting. Times in milliseconds.

    ``result`` is the engine's QueueResult, or None when the load is >= 1 (then every
    simulated/theory field is NaN and ``stable`` is False).
    """

    arrival_rate: float
    decision_ms: float
    replicas: int
    load: float
    stable: bool
    result: object | None
    p99_ms: float
    mean_ms: float
    p_wait: float
    theory_p99_ms: float
    theory_mean_ms: float
    theory_p_wait: float
    sla_ms: float = SLA_MS

    @property
    def sla_met(self) -> bool:
        """True when the simulated p99 is within the SLA."""
        return self.stable and self.p99_ms <= self.sla_ms

    def latencies_ms(self) -> np.ndarray:
        """Per-pod time in system (queueing + decision), in ms; empty when unstable."""
        if self.result is None:
            return np.empty(0)
        return np.asarray(self.result.time_in_system) * 1e3


def evaluate(
    arrival_rate: float,
    decision_ms: float,
    replicas: int,
    *,
    jobs: int = 20_000,
    seed: int = 0,
    sla_ms: float = SLA_MS,
) -> QueueScenario:
    """Simulate the scheduler queue and put the Erlang-C theory beside it.

    Parameters
    ----------
    arrival_rate : float
        Pods per second arriving at the scheduler (> 0).
    decision_ms : float
        Mean time per scheduling decision in milliseconds (> 0); exponential.
    replicas : int
        Scheduler replicas sharing one queue (>= 1).
    jobs, seed : int
        Pods simulated and the RNG seed (same seed, same answer).
    sla_ms : float
        Latency target the p99 is compared with, in ms.
    """
    lam = _check_positive("arrival_rate", arrival_rate, "pods/s")
    d_ms = _check_positive("decision_ms", decision_ms, "ms per decision")
    if isinstance(replicas, bool) or not isinstance(replicas, (int, np.integer)) or replicas < 1:
        raise ValueError(f"replicas must be an integer >= 1, got {replicas!r}")
    c = int(replicas)
    mu = 1e3 / d_ms
    load = lam / (c * mu)
    nan = float("nan")
    if load >= 1.0:
        return QueueScenario(lam, d_ms, c, load, False, None, nan, nan, nan, nan, nan, nan, sla_ms)
    res = simulate_queue(c, lam, mu, service="exp", jobs=int(jobs), seed=int(seed))
    return QueueScenario(
        arrival_rate=lam,
        decision_ms=d_ms,
        replicas=c,
        load=load,
        stable=True,
        result=res,
        p99_ms=float(res.p99) * 1e3,
        mean_ms=float(res.time_in_system_mean) * 1e3,
        p_wait=float(res.p_wait),
        theory_p99_ms=mmc_sojourn_quantile(0.99, c, lam, mu) * 1e3,
        theory_mean_ms=float(theory.mmc_time_in_system_mean(c, lam, mu)) * 1e3,
        theory_p_wait=float(theory.erlang_c(c, lam, mu)),
        sla_ms=sla_ms,
    )
