"""Seeded random draws for the engine, converted to integer nanoseconds at the boundary.

All randomness comes from one ``numpy.random.Generator``; the kernels (compiled and
reference) receive the same int64 arrays, so they agree exactly.
"""
from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

NS_PER_S = 1_000_000_000
_INT64_LIMIT = 2.0**63  # float64 values strictly inside (-2^63, 2^63) convert exactly
SERVICE_KINDS = ("exp", "det", "lognormal")


def to_ns(seconds: npt.ArrayLike, *, overwrite: bool = False) -> np.ndarray:
    """Seconds (float, scalar or array) -> int64 nanoseconds, rounded to the nearest ns.

    The one seconds-to-engine-time conversion of the package (time is int64 ns inside).
    ``overwrite=True`` lets a float64 array ``seconds`` be used as scratch space (its
    contents are then garbage): one temporary array fewer for a caller that drops it.
    """
    scratch = seconds if overwrite and isinstance(seconds, np.ndarray) and seconds.dtype == np.float64 \
        and seconds.flags.writeable and seconds.ndim else None
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow becomes inf: refused below
        ns = np.multiply(seconds, NS_PER_S, dtype=np.float64, out=scratch)
    # min/max, not isfinite: two fast passes, no boolean temporary; NaN fails both tests.
    if ns.size and not (-_INT64_LIMIT < ns.min() and ns.max() < _INT64_LIMIT):
        raise ValueError("to_ns: times must be finite and within the int64 nanosecond range "
                         "(about +-292 years)")
    return np.rint(ns, out=ns).astype(np.int64) if ns.ndim else np.int64(np.rint(ns))


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
