"""How much memory and time a run will take, estimated from its knobs before anything is built.

:func:`estimate` counts what a run is made of (requests, nodes, regional rounds, gossip
ticks, digest chunks) from the configuration alone; the arrival rate a ``load`` implies
comes from a small proxy region of the same mix (a rate scales with the devices). Each
count is priced with constants measured on the build machine (2 shared cores, compiled
backend), written beside them; the pure-Python core is priced :data:`PYTHON_SLOWDOWN`
times slower per request-path event. The figures are rough (a factor of two either way;
``benchmarks/bench_estimate.py`` prints the error on real runs), which is what refusing a
run that would need 300 GiB or a week needs. :func:`check_budget` refuses a run past the
limits with one :class:`ParameterError` naming the knob that drives the cost.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

from magnum_lib.base.validate import ParameterError
from magnum_lib.sim.config import SimConfig, check_backend

__all__ = ["RunEstimate", "estimate", "check_budget", "DEFAULT_MAX_MEMORY", "DEFAULT_MAX_WALL_S"]

#: Default limits: what a student's laptop can give one run (8 GB machines are common).
DEFAULT_MAX_MEMORY = 4 * 2**30
DEFAULT_MAX_WALL_S = 600.0

# Measured (``faux-magnum simulate ... --json`` under /usr/bin/time, 2026-12-02):
BASE_BYTES = 100e6  # the interpreter, numpy, the library: ~90 MB RSS for a tiny run
REQUEST_BYTES = 240  # region preset, 1 s: 755 k requests, 180 MB above the base
DIGEST_BYTES = 25  # per request, kept for every region until the summary (latencies, pooled)
NODE_BYTES = 800  # 200 k nodes, 10 ms: ~640 B a node (views, gossip ring, pools, queues)
SLOT_BYTES = 12  # per device: its slot's copy and class
REQUEST_S = 3.5e-6  # region preset, 1 s: 2.5 s wall for 755 k requests (1.57 M events)
NODE_S = 50e-6  # building a node (cluster, training packing, planner): 200 k nodes in ~11 s
CHUNK_S, CHUNK_NODE_S = 50e-6, 400e-9  # digest chunks: 1,000 chunks x 5,000 nodes took ~2 s
GOSSIP_S, GOSSIP_NODE_S = 300e-9, 35e-9  # 1 M ticks x 32 nodes took ~1.2 s
ROUND_S = 800e-9  # an overloaded region's rounds: 5 M rounds of 100 ns took ~4 s
START_S = 1.0  # imports and the summary
# The pure-Python core, per request-path event. It was 60 (classroom, 2 s: 2.8 s for 9.8 k
# requests); the readable core got faster since (the region preset, 0.2 s, 162 k requests: 5.4 s
# where 60x priced 37 s), so 30 sits between the two.
PYTHON_SLOWDOWN = 30.0
# An overloaded round walks every waiting request; in Python that walk dominates: classroom at
# load 10 with 10 us rounds for 0.5 s ran past 250 s where 60x the compiled price gives 2.4 s
# (so 6000x the compiled price in all: PYTHON_SLOWDOWN x this).
PYTHON_OVERLOAD_ROUND = 200.0


@dataclass(frozen=True)
class RunEstimate:
    """What a run is made of (per region unless said) and what it costs, roughly."""

    requests: float  # over all regions
    nodes: int  # per region
    rounds: float  # regional rounds, upper estimate, per region
    gossip_ticks: float  # per region
    chunks: float  # digest intervals (or the 200 progress chunks), per region
    memory_bytes: float  # peak resident memory
    wall_s: float  # wall-clock time on a machine like the build machine
    drivers: dict  # knob -> wall seconds it drives (the largest is the one to lower)

    def describe(self) -> str:
        """``about 2.1 GB and 4 min (3.1e+07 requests)`` for messages and the progress bar."""
        from magnum_lib.units import format_duration, format_size

        return (f"about {format_size(self.memory_bytes, binary=True, digits=1)} and "
                f"{format_duration(int(self.wall_s * 1e9), digits=1)} ({self.requests:.2g} requests, "
                f"{self.nodes:,} nodes per region)")


@functools.lru_cache(maxsize=256)  # a proxy layout costs ~30 ms; explorers re-run one config often
def _rate_per_region(cfg: SimConfig) -> tuple[float, float]:
    """(requests/s per region, the rate at load 1) from a proxy region of at most 512 nodes."""
    from magnum_lib.sim.model import RegionLayout

    n = cfg.cells_per_region * cfg.nodes_per_cell
    small = min(n, 512)
    proxy = replace(cfg, regions=1, cells_per_region=1, nodes_per_cell=small, schedulers=1 if cfg.scope == "cell"
                    else cfg.schedulers, rate=0.0, load=1.0, hint_jobs=min(cfg.hint_jobs, small))
    try:
        at_one = RegionLayout(proxy, 0).rate * n / small
    except ParameterError:  # a proxy this small may lack a type: price the devices at 30 ms a request
        at_one = n * cfg.devices_per_node * (1 - cfg.training_fraction) / 0.03
    rate = cfg.rate if cfg.rate > 0 else cfg.load * at_one
    return rate, at_one


def estimate(cfg: SimConfig, backend: str | None = None) -> RunEstimate:
    """Estimate ``cfg``'s memory and wall time from its knobs (nothing of the run is built)."""
    from magnum_lib import _backend

    check_backend(backend)
    python = backend == "python" or (backend is None and _backend.backend() != "compiled")
    slow = PYTHON_SLOWDOWN if python else 1.0
    n = cfg.cells_per_region * cfg.nodes_per_cell
    d = cfg.duration_s
    rate, at_one = _rate_per_region(cfg)
    spike = rate * (cfg.spike_factor - 1) * min(cfg.spike_s, max(d - cfg.spike_at_s, 0)) if cfg.spike_at_s >= 0 else 0
    per_region = rate * d + spike
    requests = per_region * cfg.regions
    # Rounds run while requests wait: about one per arrival, and every round when overloaded.
    overloaded = rate >= at_one
    rounds = d / cfg.round_s if overloaded else min(d / cfg.round_s, 2 * per_region)
    ticks = d / cfg.gossip_interval_s if cfg.view == "gossip" else 0.0
    chunks = d / cfg.digest_interval_s if cfg.digest_interval_s > 0 else 200.0
    R = cfg.regions
    drivers = {
        "duration_s": R * per_region * REQUEST_S * slow,
        "nodes_per_cell": R * n * NODE_S,
        "digest_interval_s": R * chunks * (CHUNK_S + n * CHUNK_NODE_S),
        "gossip_interval_s": R * ticks * (GOSSIP_S + n * GOSSIP_NODE_S) * slow,
        "round_s": R * rounds * ROUND_S * slow * (PYTHON_OVERLOAD_ROUND if python and overloaded else 1.0),
    }
    wall = START_S + sum(drivers.values())
    # Regions run one after the other (their requests one region at a time) unless the planner
    # exchanges mid-run (a run past one planner interval holds every region between exchanges).
    held = R if (cfg.policy == "hints" and d > cfg.planner_interval_s) else 1
    memory = (BASE_BYTES + held * (per_region * REQUEST_BYTES + n * (NODE_BYTES + cfg.devices_per_node * SLOT_BYTES))
              + requests * DIGEST_BYTES)
    return RunEstimate(requests=requests, nodes=n, rounds=rounds, gossip_ticks=ticks, chunks=chunks,
                       memory_bytes=memory, wall_s=wall, drivers=drivers)


def _lower(cfg: SimConfig, knob: str) -> str:
    """What to change for ``knob`` (periods are raised, sizes lowered)."""
    if knob == "duration_s":
        return "lower duration_s" + (" or load/rate" if cfg.load > 1 or cfg.rate > 0 else "")
    if knob == "nodes_per_cell":
        return "lower nodes_per_cell, cells_per_region or regions"
    if knob == "digest_interval_s":
        return "raise digest_interval_s (0 turns the digest off)"
    return f"raise {knob}"


def check_budget(cfg: SimConfig, max_memory: float | None = DEFAULT_MAX_MEMORY,
                 max_wall_s: float | None = DEFAULT_MAX_WALL_S, backend: str | None = None) -> RunEstimate:
    """Return ``cfg``'s :func:`estimate`; raise ParameterError if it passes a limit (None: no limit).

    The error names the knob that drives the cost (the largest time term, or for memory
    the requests or the nodes) and says what the run would need.
    """
    est = estimate(cfg, backend)
    from magnum_lib.units import format_duration, format_size

    over_mem = max_memory is not None and est.memory_bytes > max_memory
    over_wall = max_wall_s is not None and est.wall_s > max_wall_s
    if not (over_mem or over_wall):
        return est
    if over_mem:
        per_node = est.nodes * (NODE_BYTES + cfg.devices_per_node * SLOT_BYTES)
        knob = "nodes_per_cell" if per_node > est.requests / cfg.regions * REQUEST_BYTES else "duration_s"
        limit, opt = f"the limit is {format_size(max_memory, binary=True, digits=1)}", "max_memory"
    else:
        knob = max(est.drivers, key=est.drivers.get)
        limit, opt = f"the limit is {format_duration(int(max_wall_s * 1e9), digits=1)}", "max_wall_s"
    if not math.isfinite(est.wall_s):  # pragma: no cover - every knob is bounded
        raise ParameterError(knob, "gives a run too large to estimate")
    raise ParameterError(knob, f"makes a run needing {est.describe()}; {limit}: {_lower(cfg, knob)}, "
                               f"or raise {opt}")
