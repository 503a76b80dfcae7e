"""Closed-form queueing results, to check the simulator against and to teach with.

Rates are per second, times in seconds. ``lam`` is the arrival rate lambda, ``mu`` the
service rate of one server, ``c`` the number of servers; every formula needs a stable
system (load ``lam / (c mu) < 1``) and raises ``ValueError`` otherwise.
"""
from __future__ import annotations

import numpy as np
import numpy.typing as npt

from magnum_lib.base.validate import ParameterError, check_int, check_positive


def _load(c: int, lam: float, mu: float) -> float:
    rho = lam / (c * mu)
    if rho >= 1:
        raise ParameterError(
            "lam", f"gives load lam / (c x mu) = {lam:g} / ({c} x {mu:g}) = {rho:.4g} >= 1; "
            "the queue is unstable, the formulas need load < 1")
    return rho


def erlang_c(c: int, lam: float, mu: float) -> float:
    """Probability that an arriving job waits in an M/M/c queue (Erlang C formula).

    Computed through the Erlang B recursion ``B(k) = a B(k-1) / (k + a B(k-1))`` with
    ``a = lam / mu``, which stays accurate for hundreds of servers (no factorials), then
    ``C = B / (1 - rho (1 - B))``.
    """
    c = check_int("c", c, 1)
    lam, mu = check_positive("lam", lam), check_positive("mu", mu)
    rho = _load(c, lam, mu)
    a = lam / mu
    b = 1.0
    for k in range(1, c + 1):
        b = a * b / (k + a * b)
    return b / (1 - rho * (1 - b))


def mmc_wait_mean(c: int, lam: float, mu: float) -> float:
    """Mean wait in line Wq of an M/M/c queue: ``C(c, a) / (c mu - lam)``."""
    return erlang_c(c, lam, mu) / (c * mu - lam)


def mmc_time_in_system_mean(c: int, lam: float, mu: float) -> float:
    """Mean time in system W of an M/M/c queue: ``Wq + 1 / mu``."""
    return mmc_wait_mean(c, lam, mu) + 1.0 / mu


def mm1_time_in_system_mean(lam: float, mu: float) -> float:
    """Mean time in system of an M/M/1 queue: ``1 / (mu - lam)``."""
    lam, mu = check_positive("lam", lam), check_positive("mu", mu)
    _load(1, lam, mu)
    return 1.0 / (mu - lam)


def mg1_wait_mean(lam: float, mean_service: float, cv: float) -> float:
    """Mean wait in line of an M/G/1 queue (Pollaczek-Khinchine formula).

    ``Wq = rho (1 + cv^2) / 2 x E[S] / (1 - rho)`` with ``rho = lam E[S]`` and ``cv`` the
    coefficient of variation of the service time (0 deterministic, 1 exponential).
    """
    lam = check_positive("lam", lam)
    mean_service = check_positive("mean_service", mean_service)
    if not (isinstance(cv, (int, float)) and not isinstance(cv, bool) and 0 <= cv < float("inf")):
        raise ParameterError("cv", f"must be a finite number >= 0, got {cv!r}")
    rho = _load(1, lam, 1.0 / mean_service)
    return rho * (1 + cv * cv) / 2 * mean_service / (1 - rho)


def md1_wait_mean(lam: float, mu: float) -> float:
    """Mean wait in line of an M/D/1 queue: ``rho / (2 mu (1 - rho))`` (P-K with cv = 0)."""
    mu = check_positive("mu", mu)
    return mg1_wait_mean(lam, 1.0 / mu, 0.0)


def amdahl_speedup(parallel_fraction: float, n: npt.ArrayLike) -> float | npt.NDArray[np.float64]:
    """Amdahl's law: speed-up on ``n`` workers when ``parallel_fraction`` of the work scales.

    ``S(n) = 1 / ((1 - p) + p / n)``. ``n`` may be a number or an array (>= 1 each); the
    result has the same shape.
    """
    p = parallel_fraction
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 1:
        raise ParameterError("parallel_fraction", f"must be a number in [0, 1], got {p!r}")
    n_arr = np.asarray(n, dtype=np.float64)
    if n_arr.size == 0 or not np.all(np.isfinite(n_arr)) or np.any(n_arr < 1):
        raise ParameterError("n", f"must be a number of workers >= 1 (or an array of them), got {n!r}")
    speedup = 1.0 / ((1.0 - p) + p / n_arr)
    return float(speedup) if speedup.ndim == 0 else speedup
