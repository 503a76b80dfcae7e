"""Small argument checks shared by the workload generators (one message style)."""
from __future__ import annotations

import math
import numbers

import numpy as np

from magnum_lib.base.validate import excerpt
from magnum_lib.engine.distributions import to_ns  # the package-wide conversion (re-exported)

#: The longest time a workload or trace may state, seconds (about 31.7 years): a submit
#: time plus a duration then stays far inside int64 nanoseconds (9.2e9 s).
MAX_SECONDS = 10**9
#: The most GPUs one job or node may ask for or hold (the largest public traces: 128 and 8).
MAX_GPUS = 65_536


def rng_from(seed) -> np.random.Generator:
    """A ``numpy.random.Generator`` from an int seed, ``None`` or a Generator."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or (isinstance(seed, numbers.Integral) and not isinstance(seed, bool)):
        if seed is not None and seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {excerpt(seed)}")
        return np.random.default_rng(seed)
    raise TypeError(
        f"seed must be an int, None or a numpy.random.Generator, got {type(seed).__name__} {excerpt(seed)}"
    )


def real(name: str, value, *, positive=False, nonneg=False, lo=None, hi=None,
         lo_open=False, hi_open=False) -> float:
    """Check that ``value`` is a finite real number within the stated bounds."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {excerpt(value)}")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {excerpt(value)}")
    if positive and v <= 0:
        raise ValueError(f"{name} must be > 0, got {excerpt(value)}")
    if nonneg and v < 0:
        raise ValueError(f"{name} must be >= 0, got {excerpt(value)}")
    if lo is not None and (v < lo or (lo_open and v == lo)):
        raise ValueError(f"{name} must be {'>' if lo_open else '>='} {lo}, got {excerpt(value)}")
    if hi is not None and (v > hi or (hi_open and v == hi)):
        raise ValueError(f"{name} must be {'<' if hi_open else '<='} {hi}, got {excerpt(value)}")
    return v


def count(name: str, value, *, minimum: int = 0) -> int:
    """Check that ``value`` is an integer >= ``minimum`` (bools are refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {excerpt(value)}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {excerpt(value)}")
    return int(value)


def unit(value) -> str:
    if value not in ("s", "ns"):
        raise ValueError(f"unit must be 's' (float64 seconds) or 'ns' (int64 nanoseconds), got {excerpt(value)}")
    return value


def in_unit(times_s: np.ndarray, unit_: str) -> np.ndarray:
    return to_ns(times_s) if unit_ == "ns" else times_s
