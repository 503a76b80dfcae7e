"""Hedged requests (Dean & Barroso, "The Tail at Scale", CACM 2013), simulated and in closed form.

A client sends a request; if no answer has come back after a delay ``t_h`` it sends a copy
to another replica, takes whichever answer comes first and cancels the other.

Independent-latency model (what the closed forms assume): the primary takes ``X1``; if
``X1 > t_h`` a copy leaves at ``t_h`` and takes ``X2``, independent of ``X1`` with the same
distribution. The response time is ``R = min(X1, t_h + X2)``, so for ``t > t_h``::

    P(R > t) = P(X > t) * P(X > t - t_h)        (and P(R > t) = P(X > t) below t_h)

and the fraction of requests that send a copy is ``P(X > t_h)``: hedging at the *true*
p95 adds exactly 5% load whatever the distribution.

Everything here is vectorized numpy on seeded draws; there is no compiled kernel because
the lesson is the formula above and its vector form already runs 10^6 requests in well
under a second (both backends run this same code; results report ``backend="numpy"``).
Times are seconds (floats); delays may also be strings such as ``"10ms"``. The one
exception is :func:`hedge_plan`, the per-request rule in int64 ns that the whole-system
simulator applies (``hedge_rule_ref`` / compiled ``_hedge_rule``).

>>> r = simulate_hedging("exp", requests=20_000, hedge_at="p95", seed=1)
>>> round(r.extra_load, 2), r.p99 < r.p99_unhedged
(0.05, True)
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from scipy import integrate, optimize, stats

from magnum_lib import _backend
from magnum_lib.base.validate import ParameterError, check_choice, check_int, check_positive, parse_param
from magnum_lib.node.hedge_rule_ref import sends_copy
from magnum_lib.units import parse_duration

__all__ = ["LATENCY_KINDS", "QUANTILE_SOURCES", "LatencyDist", "HedgeResult", "latency_dist", "TailLatency", "tail_latency",
           "hedge_delay", "simulate_hedging", "hedged_survival", "hedged_density",
           "hedged_quantile", "quantile_standard_error", "expected_extra_busy", "hedge_plan"]

LATENCY_KINDS = ("exp", "lognormal", "pareto")
QUANTILE_SOURCES = ("true", "warmup")
MAX_REQUESTS = 10_000_000  # about 80 MB per array; a handful of arrays are live at once
NS_PER_S = 1e9
_MAX_SIGMA = 10.0
_MAX_ALPHA = 1000.0


# ---------------------------------------------------------------------------
# Latency distributions
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class LatencyDist:
    """A service-latency distribution with a known CDF and quantile, scaled to a mean.

    Build it with :func:`latency_dist` (which validates). Every kind is scaled so that its
    mean is ``mean`` seconds:

    * ``"exp"``: exponential, ``P(X > t) = exp(-t / mean)``;
    * ``"lognormal"``: ``log X ~ Normal(mu, sigma)``, ``mu = log(mean) - sigma^2 / 2``;
    * ``"pareto"``: classic Pareto, ``P(X > t) = (x_m / t)^alpha`` for ``t >= x_m``, with
      ``x_m = mean (alpha - 1) / alpha`` (hence ``alpha > 1``: the mean must be finite).
    """

    kind: str
    mean: float = 0.01
    sigma: float = 1.0  # lognormal shape (ignored by the others)
    alpha: float = 2.0  # Pareto tail index (ignored by the others)

    @cached_property  # building a frozen scipy law costs ~1 ms; quad calls sf often
    def scipy(self):
        """The frozen ``scipy.stats`` distribution (cdf, sf, ppf, pdf)."""
        if self.kind == "exp":
            return stats.expon(scale=self.mean)
        if self.kind == "lognormal":
            return stats.lognorm(s=self.sigma, scale=self.mean * math.exp(-self.sigma ** 2 / 2))
        return stats.pareto(b=self.alpha, scale=self.mean * (self.alpha - 1) / self.alpha)

    def sf(self, t):
        """Survival ``P(X > t)``; ``t`` in seconds (scalar or array)."""
        return self.scipy.sf(t)

    def cdf(self, t):
        """``P(X <= t)``; ``t`` in seconds."""
        return self.scipy.cdf(t)

    def pdf(self, t):
        """Density at ``t`` seconds (per second)."""
        return self.scipy.pdf(t)

    def quantile(self, q):
        """The true ``q``-quantile in seconds, ``0 < q < 1``."""
        return self.scipy.ppf(q)

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` draws in seconds from ``rng`` (numpy's own samplers: exact and fast)."""
        if self.kind == "exp":
            return rng.exponential(self.mean, size)
        if self.kind == "lognormal":
            return rng.lognormal(math.log(self.mean) - self.sigma ** 2 / 2, self.sigma, size)
        # numpy's pareto is the Lomax (Pareto II) law; x_m (1 + Lomax) is the classic Pareto.
        x_m = self.mean * (self.alpha - 1) / self.alpha
        return x_m * (1.0 + rng.pareto(self.alpha, size))

    def to_dict(self) -> dict:
        """The parameters that matter for this kind."""
        out = {"dist": self.kind, "mean_s": self.mean}
        if self.kind == "lognormal":
            out["sigma"] = self.sigma
        elif self.kind == "pareto":
            out["alpha"] = self.alpha
        return out


def latency_dist(kind="exp", mean=0.01, sigma: float = 1.0, alpha: float = 2.0) -> LatencyDist:
    """Validate and build a :class:`LatencyDist`.

    Parameters
    ----------
    kind : {"exp", "lognormal", "pareto"} or LatencyDist
        The family (a ``LatencyDist`` is returned unchanged).
    mean : float or str
        Mean latency: seconds, or a duration string such as ``"10ms"`` (default 10 ms).
    sigma : float
        Lognormal shape, ``0 < sigma <= 10`` (``sigma = 1`` gives cv 1.31).
    alpha : float
        Pareto tail index, ``1 < alpha <= 1000``. It must exceed 1 because the law is
        scaled to ``mean`` and a Pareto with ``alpha <= 1`` has an infinite mean.

    Raises
    ------
    ParameterError
        naming ``dist``, ``mean``, ``sigma`` or ``alpha``.
    """
    if isinstance(kind, LatencyDist):
        return kind
    check_choice("dist", kind, LATENCY_KINDS)
    mean_s = _duration_s("mean", mean)
    if mean_s <= 0:
        raise ParameterError("mean", f"must be a duration > 0, got {mean!r}")
    sigma = check_positive("sigma", sigma, _MAX_SIGMA)
    alpha = check_positive("alpha", alpha, _MAX_ALPHA)
    if alpha <= 1:
        raise ParameterError(
            "alpha", f"must be > 1, got {alpha:g}: the Pareto is scaled to the given mean and "
            "a Pareto with alpha <= 1 has an infinite mean")
    return LatencyDist(kind, mean_s, sigma, alpha)


def _duration_s(name: str, value) -> float:
    """A duration (``"10ms"`` or seconds) as float seconds, errors naming ``name``."""
    return parse_param(name, parse_duration, value) / NS_PER_S


# ---------------------------------------------------------------------------
# Closed forms (independent-latency model)
# ---------------------------------------------------------------------------

def hedged_survival(t, dist: LatencyDist, t_h: float):
    """``P(R > t)`` for hedged response time ``R = min(X1, t_h + X2)``.

    ``P(X > t)`` for ``t <= t_h`` and ``P(X > t) P(X > t - t_h)`` beyond (both requests
    must still be running). ``t`` and ``t_h`` in seconds; ``t`` may be an array.
    """
    t = np.asarray(t, dtype=np.float64)
    tail = dist.sf(t) * dist.sf(np.maximum(t - t_h, 0.0))
    return np.where(t > t_h, tail, dist.sf(t))


def hedged_density(t, dist: LatencyDist, t_h: float):
    """Density of ``R`` (per second): ``-d/dt P(R > t)``."""
    t = np.asarray(t, dtype=np.float64)
    u = np.maximum(t - t_h, 0.0)
    tail = dist.pdf(t) * dist.sf(u) + dist.sf(t) * dist.pdf(u)
    return np.where(t > t_h, tail, dist.pdf(t))


def hedged_quantile(q: float, dist: LatencyDist, t_h: float) -> float:
    """The ``q``-quantile of ``R`` (seconds), solving ``P(R > t) = 1 - q``.

    Below ``P(X <= t_h)`` hedging has not started and the quantile is the unhedged one;
    above it the root lies between ``t_h`` and the unhedged quantile (hedging only
    removes tail), found with Brent's method.
    """
    q = float(q)
    if not 0 < q < 1:
        raise ParameterError("q", f"must be in (0, 1), got {q!r}")
    plain = float(dist.quantile(q))
    if q <= dist.cdf(t_h):
        return plain
    # Compare log-survivals so the root stays sharp far into the tail.
    target = math.log1p(-q)
    f = lambda t: float(np.log(hedged_survival(t, dist, t_h))) - target  # noqa: E731
    return optimize.brentq(f, t_h, plain, xtol=1e-15, rtol=1e-12)


def quantile_standard_error(q: float, n: int, dist: LatencyDist, t_h: float) -> float:
    """Asymptotic standard error (seconds) of the empirical ``q``-quantile of ``n`` hedged responses.

    ``sqrt(q (1 - q) / n) / f_R(x_q)``: how many requests you need before a measured p99.9
    means anything (the density at the far tail is small, so the error is large).
    """
    x = hedged_quantile(q, dist, t_h)
    return math.sqrt(q * (1 - q) / n) / float(hedged_density(x, dist, t_h))


def expected_extra_busy(dist: LatencyDist, t_h: float) -> float:
    """Expected extra server busy time with instant cancellation, relative to no hedging.

    Primary busy until ``R``; the copy (if sent) busy from ``t_h`` until ``R``. So
    ``E[busy] = E[R] + E[(R - t_h)+] = int_0^inf P(R>t) dt + int_{t_h}^inf P(R>t) dt``,
    divided by ``E[X]`` minus 1. It can be negative for heavy tails (a fast copy cuts a
    very long primary short).
    """
    s = lambda t: float(hedged_survival(t, dist, t_h))  # noqa: E731
    head = integrate.quad(s, 0, t_h, limit=200)[0] if t_h > 0 else 0.0
    tail = integrate.quad(s, t_h, np.inf, limit=200)[0]
    return (head + 2 * tail) / dist.mean - 1


# ---------------------------------------------------------------------------
# Simulation
# ---------------------------------------------------------------------------

def hedge_delay(hedge_at, dist: LatencyDist, quantile_from: str = "true",
                warmup_sample: np.ndarray | None = None) -> float:
    """Turn ``hedge_at`` into the hedge delay ``t_h`` in seconds.

    Parameters
    ----------
    hedge_at : str or float
        ``"p95"`` (any percentile ``"pX"`` with ``0 < X < 100``, e.g. ``"p99.9"``), a
        duration string (``"10ms"``) or a number of seconds (>= 0).
    quantile_from : {"true", "warmup"}
        For a percentile: the distribution's true quantile, or the empirical quantile of
        ``warmup_sample`` (what a real client can know).
    """
    q = _percentile(hedge_at)
    if q is None:
        return _duration_s("hedge_at", hedge_at)
    if check_choice("quantile_from", quantile_from, QUANTILE_SOURCES) == "true":
        return float(dist.quantile(q / 100))
    if warmup_sample is None or len(warmup_sample) == 0:
        raise ParameterError("warmup_sample", "must hold latencies when quantile_from='warmup'")
    return float(np.quantile(warmup_sample, q / 100))


def _percentile(hedge_at) -> float | None:
    """The X of a ``"pX"`` string (checked in (0, 100)), or None for a duration."""
    if not isinstance(hedge_at, str) or not hedge_at.strip().lower().startswith("p"):
        return None
    text = hedge_at.strip()[1:]
    try:
        q = float(text)
    except ValueError:
        raise ParameterError("hedge_at", f"must be a percentile such as 'p95' or a duration such as "
                                         f"'10ms', got {hedge_at!r}") from None
    if not 0 < q < 100:
        raise ParameterError("hedge_at", f"percentile must be in (0, 100), got {hedge_at!r}")
    return q


@dataclass(frozen=True, eq=False)
class TailLatency:
    """Response-time summary with and without hedging, on the same draws (seconds).

    ``latency`` and ``latency_unhedged`` hold one read-only entry per request.
    """

    p50: float
    p99: float
    p999: float
    p50_unhedged: float
    p99_unhedged: float
    p999_unhedged: float
    mean: float
    mean_unhedged: float
    latency: np.ndarray = field(repr=False)
    latency_unhedged: np.ndarray = field(repr=False)


def tail_latency(latency: np.ndarray, latency_unhedged: np.ndarray) -> dict:
    """The :class:`TailLatency` fields of two response-time arrays (made read-only)."""
    out = {}
    for suffix, arr in (("", latency), ("_unhedged", latency_unhedged)):
        arr.flags.writeable = False
        for key, value in zip(("p50", "p99", "p999"), np.quantile(arr, (0.5, 0.99, 0.999)), strict=True):
            out[key + suffix] = float(value)
        out["mean" + suffix] = float(arr.mean())
        out["latency" + suffix] = arr
    return out


@dataclass(frozen=True, eq=False)
class HedgeResult(TailLatency):
    """One hedging run. Times in seconds; loads and busy times are fractions of unhedged.

    ``latency_unhedged`` is the primaries' ``X1`` (the same draws); ``hedged`` marks the
    requests that sent a copy (read-only arrays).
    """

    dist: LatencyDist
    requests: int
    seed: int
    hedge_at: str
    hedge_delay_s: float  # t_h actually used
    quantile_from: str  # "true", "warmup" (percentiles) or "fixed" (durations)
    cancel_delay_s: float  # inf: the loser is never cancelled
    extra_load: float  # copies sent / requests
    copy_busy: float  # work done by copies / unhedged work
    extra_busy: float  # (all work with hedging) / unhedged work - 1; cancellation may make it < copy_busy
    backend: str
    wall_s: float
    hedged: np.ndarray = field(repr=False)

    def theory(self) -> dict:
        """Closed-form values for this run's distribution and ``t_h`` (same keys as to_dict)."""
        t_h = self.hedge_delay_s
        out = {"extra_load": float(self.dist.sf(t_h))}
        for key, q in (("p50", 0.5), ("p99", 0.99), ("p999", 0.999)):
            out[key] = hedged_quantile(q, self.dist, t_h)
            out[key + "_unhedged"] = float(self.dist.quantile(q))
        if self.cancel_delay_s == 0:
            out["extra_busy"] = expected_extra_busy(self.dist, t_h)
        return out

    def to_dict(self) -> dict:
        """The ``faux-magnum hedge --json`` object."""
        out = {key: getattr(self, key) for key in JSON_KEYS}
        out.update(self.dist.to_dict())
        if math.isinf(out["cancel_delay_s"]):
            out["cancel_delay_s"] = None  # JSON has no infinity: null means never cancelled
        return out


JSON_KEYS = ("extra_load", "p50", "p99", "p999", "p50_unhedged", "p99_unhedged", "p999_unhedged",
             "hedge_delay_s", "hedge_at", "quantile_from", "copy_busy", "extra_busy",
             "cancel_delay_s", "mean", "mean_unhedged", "requests", "seed", "backend", "wall_s")


def simulate_hedging(dist="exp", requests: int = 100_000, hedge_at="p95", seed: int = 0, *,
                     mean=0.01, sigma: float = 1.0, alpha: float = 2.0,
                     quantile_from: str = "true", warmup: int = 1000,
                     cancel_delay=0.0) -> HedgeResult:
    """Simulate ``requests`` independent hedged requests.

    Parameters
    ----------
    dist : {"exp", "lognormal", "pareto"} or LatencyDist
        Latency distribution (with ``mean``, ``sigma``, ``alpha``; see :func:`latency_dist`).
    requests : int
        Number of requests, 1 .. 10^7.
    hedge_at : str or float
        ``"p95"``-style percentile, duration string (``"10ms"``) or seconds (>= 0).
    seed : int
        Seed of the one numpy Generator. Draw order: ``X1`` for all requests, then ``X2``
        for all (used only where a copy is sent), then the warm-up sample. So the same seed
        gives the same ``X1`` and ``X2`` whatever ``hedge_at`` is: curves over ``hedge_at``
        compare like with like.
    quantile_from : {"true", "warmup"}
        Percentile ``hedge_at`` from the true quantile, or estimated from ``warmup``
        extra unhedged draws.
    warmup : int
        Warm-up sample size for ``quantile_from="warmup"`` (>= 1).
    cancel_delay : str or float or None
        Time for the cancellation to reach the loser (default 0: instant); the loser keeps
        working that long after the winner answers. ``None``: never cancelled.

    Returns
    -------
    HedgeResult
    """
    start = time.perf_counter()
    dist = latency_dist(dist, mean, sigma, alpha)
    requests = check_int("requests", requests, 1, MAX_REQUESTS)
    seed = check_int("seed", seed, 0)
    quantile_from = check_choice("quantile_from", quantile_from, QUANTILE_SOURCES)
    warmup = check_int("warmup", warmup, 1, MAX_REQUESTS)
    cancel_s = math.inf if cancel_delay is None else _duration_s("cancel_delay", cancel_delay)
    is_percentile = _percentile(hedge_at) is not None
    if not is_percentile:
        hedge_delay(hedge_at, dist)  # validate before drawing

    rng = np.random.default_rng(seed)
    x1 = dist.sample(rng, requests)
    x2 = dist.sample(rng, requests)
    warm = dist.sample(rng, warmup) if is_percentile and quantile_from == "warmup" else None
    t_h = hedge_delay(hedge_at, dist, quantile_from, warm)

    hedged = sends_copy(x1, t_h)  # the layer's rule (node/hedge_rule_ref.py)
    r = np.where(hedged, np.minimum(x1, t_h + x2), x1)
    # Busy time: the winner works until R; the loser until the cancel reaches it (or it ends).
    primary_work = np.minimum(x1, r + cancel_s)
    copy_work = np.where(hedged, np.minimum(x2, r - t_h + cancel_s), 0.0)
    unhedged_work = x1.sum()

    hedged.flags.writeable = False
    return HedgeResult(
        dist=dist, requests=requests, seed=seed, hedge_at=str(hedge_at), hedge_delay_s=t_h,
        quantile_from=quantile_from if is_percentile else "fixed", cancel_delay_s=cancel_s,
        extra_load=float(np.count_nonzero(hedged) / requests),
        copy_busy=float(copy_work.sum() / unhedged_work),
        extra_busy=float((primary_work.sum() + copy_work.sum()) / unhedged_work - 1),
        backend="numpy", hedged=hedged, **tail_latency(r, x1), wall_s=time.perf_counter() - start,
    )


def hedge_plan(duration_ns, expected_ns, factor_milli):
    """Per request, the delay (ns after its start) at which a copy is sent, or -1 for none.

    The relative rule of :mod:`magnum_lib.node.hedge_rule_ref` (a copy when the primary
    runs past ``factor_milli / 1000`` x ``expected_ns``) on a batch, on the active backend
    (compiled ``_hedge_rule`` or the reference). Bad arguments: TypeError / ValueError naming them.
    """
    return _backend.pick("magnum_lib.node._hedge_rule", "magnum_lib.node.hedge_rule_ref").hedge_plan(
        duration_ns, expected_ns, factor_milli)
