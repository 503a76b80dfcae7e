"""Seeded random draws for the engine, converted to integer nanoseconds at the boundary.

All randomness comes from one ``numpy.random.Generator``; the kernels (compiled and
reference) receive the same int64 arrays, so they agree exactly.
"""
from __future__ import annotations

import math

import numpy as np

NS_PER_S = 1_000_000_000
SERVICE_KINDS = ("exp", "det", "lognormal")


def to_ns(seconds) -> np.ndarray:
    """Seconds (float, scalar or array) -> int64 nanoseconds, rounded to the nearest ns.

    The one seconds-to-engine-time conversion of the package (time is int64 ns inside).
    """
    s = np.asarray(seconds, dtype=np.float64)
    if not np.all(np.isfinite(s)):
        raise ValueError("to_ns: times must be finite")
    return np.rint(s * NS_PER_S).astype(np.int64)


def exponential(rng: np.random.Generator, rate: float, size: int) -> np.ndarray:
    """``size`` exponential draws (seconds) with mean ``1 / rate``."""
    return rng.exponential(1.0 / rate, size)


def service_times(rng: np.random.Generator, kind: str, mean: float, cv: float,
                  size: int) -> np.ndarray:
    """``size`` service times (seconds) with the given mean.

    Parameters
    ----------
    kind : {"exp", "det", "lognormal"}
        Exponential (cv 1), deterministic (cv 0, draws nothing) or lognormal with
        coefficient of variation ``cv``.
    mean : float
        Mean service time, seconds.
    cv : float
        Coefficient of variation (std / mean); used by ``"lognormal"`` only.
    """
    if kind == "exp":
        return rng.exponential(mean, size)
    if kind == "det":
        return np.full(size, mean)
    if kind == "lognormal":
        # For lognormal(mu, sigma): mean = exp(mu + sigma^2/2), cv^2 = exp(sigma^2) - 1.
        sigma2 = math.log1p(cv * cv)
        return rng.lognormal(math.log(mean) - sigma2 / 2, math.sqrt(sigma2), size)
    raise ValueError(f"service must be one of {SERVICE_KINDS}, got {kind!r}")
