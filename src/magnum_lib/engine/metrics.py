"""Summary statistics of a simulation run: means, percentiles, utilization, Little's law.

Inputs are integer nanoseconds (as the kernels produce them); outputs are seconds or
plain fractions.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from magnum_lib.engine.distributions import NS_PER_S

__all__ = ["NS_PER_S", "LittleCheck", "batch_means", "littles_law", "mean_s", "percentiles_s", "utilization"]


def mean_s(values_ns: npt.ArrayLike) -> float:
    """Mean of an array of ns, in seconds."""
    return float(np.mean(np.asarray(values_ns))) / NS_PER_S


def percentiles_s(values_ns: npt.ArrayLike, qs: tuple[float, ...] = (50, 95, 99)) -> tuple[float, ...]:
    """Percentiles ``qs`` (0-100) of a non-empty array of ns, in seconds.

    The same numbers as ``numpy.percentile(values_ns, qs)`` (its default linear
    interpolation, computed the same way), from one ``numpy.partition`` on the order
    statistics needed. Why not call it: numpy.percentile's first call imports numpy.ma
    (about 10 ms) and it copies and converts more than the few values it needs, which
    is a third of a 2x10^5-job queue run's summary.
    """
    values = np.asarray(values_ns)
    n = values.size
    if n == 0:
        raise ValueError("percentiles_s: no values")
    where = []  # (index below, fraction of the way to the next one) per percentile
    for q in qs:
        if not 0 <= q <= 100:
            raise ValueError(f"percentiles_s: percentiles must be in [0, 100], got {q!r}")
        virtual = (n - 1) * (q / 100)
        below = min(int(math.floor(virtual)), n - 1)
        where.append((below, virtual - below))
    ranks = sorted({i for below, _ in where for i in (below, min(below + 1, n - 1))})
    ordered = np.partition(values, ranks)
    out = []
    for below, t in where:
        a, b = ordered[below].item(), ordered[min(below + 1, n - 1)].item()
        diff = b - a  # exact for integers, as numpy's
        # numpy's _lerp: from below when t < 0.5, from above otherwise (same rounding)
        value = a + diff * t if t < 0.5 else b - diff * (1 - t)
        out.append(float(value) / NS_PER_S)
    return tuple(out)


def utilization(busy_ns: int, servers: int, makespan_ns: int) -> float:
    """Fraction of server capacity used: busy-server time over ``servers x makespan``."""
    return busy_ns / (servers * makespan_ns) if makespan_ns > 0 else 0.0


class LittleCheck(NamedTuple):
    """Little's law ``L = lambda W`` measured on one run."""

    mean_in_system: float  # L: time average of the number in system (area / makespan)
    arrival_rate: float  # lambda_hat = jobs / makespan, per second
    time_in_system_mean: float  # W, seconds
    relative_error: float  # |L - lambda_hat W| / L


def littles_law(area_ns: int, makespan_ns: int, jobs: int, time_in_system_mean: float) -> LittleCheck:
    """Compare the time-average number in system with ``lambda_hat x W``.

    Parameters
    ----------
    area_ns : int
        Integral of the number of jobs in system over time (job x ns).
    makespan_ns : int
        Length of the run (ns), from 0 to the last departure.
    jobs : int
        Jobs completed.
    time_in_system_mean : float
        Mean time in system W (seconds).
    """
    if makespan_ns <= 0:
        return LittleCheck(0.0, 0.0, time_in_system_mean, 0.0)
    horizon_s = makespan_ns / NS_PER_S
    L = (area_ns / NS_PER_S) / horizon_s
    lam = jobs / horizon_s
    err = abs(L - lam * time_in_system_mean) / L if L > 0 else 0.0
    return LittleCheck(L, lam, time_in_system_mean, err)


def batch_means(values: npt.ArrayLike, batches: int = 20) -> tuple[float, float]:
    """Mean and its standard error by the method of batch means.

    Consecutive jobs in a queue are correlated, so the naive ``std / sqrt(n)``
    understates the error; averaging over ``batches`` long consecutive batches gives
    nearly independent batch means whose spread estimates it honestly.
    """
    values = np.asarray(values, dtype=np.float64)
    if batches < 2 or values.size < batches:
        raise ValueError(f"batches must be in [2, len(values)={values.size}], got {batches}")
    usable = values.size - values.size % batches
    means = values[:usable].reshape(batches, -1).mean(axis=1)
    return float(means.mean()), float(means.std(ddof=1) / np.sqrt(batches))
