"""Model behind the Bouncer explorer (notebook 04): one node's three decisions at once.

1. *Which node?* Mitzenmacher's supermarket model (:func:`magnum_lib.node.balance.supermarket`):
   ``servers`` FIFO servers, each serving a request in ``SERVICE_MS`` ms on average
   (exponential), Poisson arrivals at ``load``; each request joins the shortest of ``choices``
   sampled queues. Theory beside it: the queue-length tail ``load^((d^i - 1)/(d - 1))`` and the
   mean time in system.
2. *When to hedge?* A request still unanswered after ``hedge_ms`` sends a copy; the answer is
   ``min(X1, t_h + X2)``. ``X1`` are the simulated times in system, ``X2`` the same times in a
   seeded random order (the independent-copy model of :mod:`magnum_lib.node.hedging`,
   applied to the supermarket's own latency distribution). It ignores the load the copies
   add: ``hedging_queue`` in the notebook shows when that matters.
3. *Which device?* :func:`magnum_lib.node.placement.compare_policies` on a request stream sized
   for ``load`` on the chosen device ``mix``, with the latency target ``sla_ms``.

No widget code here: the explorer, the notebook and the tests call :func:`evaluate`.
The article's device table as a catalog (:func:`article_catalog`) is also here, because
the library's catalog keeps the article's figures only as claims.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from types import MappingProxyType

import numpy as np

from magnum_lib.hardware import Catalog, default_catalog
from magnum_lib.node import balance, placement

SERVICE_MS = 1.0
"""Mean service time of one request on one server of the supermarket, in ms."""

MIXES = MappingProxyType({
    "2 H100 + 4 MTIA v2": {"h100_sxm": 2, "mtia_v2": 4},
    "4 H100": {"h100_sxm": 4},
    "1 MI300X + 6 MTIA v2": {"mi300x": 1, "mtia_v2": 6},
    "8 MTIA v2": {"mtia_v2": 8},
    "2 H100 + 2 MI300X": {"h100_sxm": 2, "mi300x": 2},
})
"""Device mixes of one node (catalog key -> count), by display name."""

DEFAULT_MIX = "2 H100 + 4 MTIA v2"
NO_SLA_MESSAGE = "no device can meet this SLA\nfor most requests: every policy misses"
HEDGE_ALL_MESSAGE = "hedge delay 0: every request\nis sent twice (+100% load)"
_CCDF_POINTS = 200


def article_catalog(catalog: Catalog | None = None) -> Catalog:
    """The hardware catalog with the article's figures where it gave any.

    Peak BF16/FP16 compute (H100 50, MI300X 45, MTIA v2 40 TFLOPS), MI300X bandwidth 2x
    the H100's, MTIA power 0.3x the H100's TDP. Everything the article did not state
    (the other bandwidths and powers) keeps its public value.
    """
    cat = catalog or default_catalog()
    h100 = cat["h100_sxm"]
    accs = {}
    for key in cat:
        acc = cat[key]
        claim = acc.article_claim or {}
        changes = {}
        if "peak_tflops" in claim:
            peak = dict(acc.peak_flops)
            for p in ("bf16", "fp16"):
                peak[p] = float(claim["peak_tflops"]) * 1e12
            changes["peak_flops"] = MappingProxyType(peak)
        if "bandwidth_vs_h100" in claim:
            changes["mem_bandwidth_Bps"] = float(claim["bandwidth_vs_h100"]) * h100.mem_bandwidth_Bps
        if "power_vs_h100" in claim:
            changes["tdp_w"] = float(claim["power_vs_h100"]) * h100.tdp_w
        accs[key] = replace(acc, **changes)
    return Catalog(accs)


def hedge(latency: np.ndarray, hedge_ms: float, seed: int = 0) -> tuple[np.ndarray, float]:
    """Hedged response times ``min(X1, t_h + X2)`` and the extra load (copies / requests).

    ``latency`` (ms) are the ``X1``; the ``X2`` are the same values in a seeded random
    order, so a copy's latency follows the same distribution, independently.
    """
    x1 = np.asarray(latency, dtype=np.float64)
    if not math.isfinite(hedge_ms) or hedge_ms < 0:
        raise ValueError(f"hedge_ms must be a finite number >= 0, got {hedge_ms!r}")
    x2 = np.random.default_rng(seed).permutation(x1)
    copied = x1 > hedge_ms
    return np.where(copied, np.minimum(x1, hedge_ms + x2), x1), float(copied.mean())


def ccdf_points(latency: np.ndarray, points: int = _CCDF_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """(t, P(latency > t)) at log-spaced tail probabilities 1 .. 1/n, for a log-y plot."""
    n = latency.size
    tail = np.logspace(0, -math.log10(n), points)
    return np.quantile(latency, 1.0 - tail), tail


@dataclass(frozen=True, eq=False)
class BouncerScenario:
    """One evaluated explorer setting. Times in ms, energy in joules per request."""

    load: float
    choices: int
    hedge_ms: float
    sla_ms: float
    mix: str
    devices: dict
    market: balance.SupermarketResult
    latency_ms: np.ndarray  # simulated time in system per request (power-of-d)
    hedged_ms: np.ndarray  # the same requests with hedging
    extra_load: float  # copies sent / requests
    mean_ms: float
    p99_ms: float
    p99_hedged_ms: float
    theory_mean_ms: float
    theory_tail: tuple
    random_mean_ms: float  # d = 1 (M/M/1) theory, for comparison
    placements: dict  # policy name -> placement.PlacementResult

    @property
    def queue_tail(self) -> tuple:
        """Simulated fraction of servers with at least i requests, i = 1..10."""
        return self.market.queue_tail

    @property
    def sla_feasible(self) -> bool:
        """False when even fastest-first meets the SLA for fewer than half of the requests."""
        return self.placements["fastest_first"].sla_attainment >= 0.5

    @property
    def best_policy(self) -> str:
        """The built-in policy with the lowest energy among those within 1% of the best attainment."""
        top = max(p.sla_attainment for p in self.placements.values())
        ok = {k: p for k, p in self.placements.items() if p.sla_attainment >= top - 0.01}
        return min(ok, key=lambda k: ok[k].energy_j)


@functools.lru_cache(maxsize=8)
def _supermarket(servers: int, load: float, choices: int, jobs: int, seed: int) -> balance.SupermarketResult:
    """The supermarket run, remembered: it is seeded (same arguments, same result), and a
    hedge, SLA or mix change does not touch it (on the pure-Python backend it is most of
    the cost of a change)."""
    return balance.supermarket(servers=servers, load=load, choices=choices, policy="power_of_d",
                               jobs=jobs, seed=seed)


def evaluate(load: float = 0.9, choices: int = 2, hedge_ms: float = 5.0, sla_ms: float = 20.0,
             mix: str = DEFAULT_MIX, *, servers: int = 300, jobs: int = 100_000,
             requests: int = 200, seed: int = 0) -> BouncerScenario:
    """Run the three models for one setting.

    Parameters
    ----------
    load : float
        Utilization in (0, 1) of the supermarket's servers and of the node's devices.
    choices : int
        d, queues sampled per request (1 = random placement).
    hedge_ms : float
        Delay before a copy is sent (>= 0 ms).
    sla_ms : float
        Latency target of the placement requests (> 0 ms).
    mix : str
        A key of :data:`MIXES`.
    servers, jobs, requests, seed
        Sizes (small, so a slider change answers fast) and the seed.
    """
    if mix not in MIXES:
        raise ValueError(f"mix must be one of {list(MIXES)}, got {mix!r}")
    if not (isinstance(sla_ms, (int, float)) and math.isfinite(sla_ms) and sla_ms > 0):
        raise ValueError(f"sla_ms must be a finite number > 0, got {sla_ms!r}")
    market = _supermarket(servers, load, choices, jobs, seed)
    latency = np.asarray(market.time_in_system) * SERVICE_MS  # the model's unit is one mean service
    hedged, extra = hedge(latency, float(hedge_ms), seed)
    devices = dict(MIXES[mix])
    stream = placement.request_stream(devices, requests=requests, load=load, sla=sla_ms / 1e3, seed=seed)
    p99, p99_h = np.quantile(latency, 0.99), np.quantile(hedged, 0.99)
    return BouncerScenario(
        load=float(load), choices=int(choices), hedge_ms=float(hedge_ms), sla_ms=float(sla_ms), mix=mix,
        devices=devices, market=market, latency_ms=latency, hedged_ms=hedged, extra_load=extra,
        mean_ms=float(latency.mean()), p99_ms=float(p99), p99_hedged_ms=float(p99_h),
        theory_mean_ms=balance.theory_time_in_system(load, choices) * SERVICE_MS,
        theory_tail=balance.theory_queue_tail(load, choices),
        random_mean_ms=balance.theory_time_in_system(load, 1) * SERVICE_MS,
        placements=placement.compare_policies(stream, devices))
