"""Model behind the system explorer and notebooks 07 (the whole system) and 08 (the evolution).

No widget code here. Everything runs the whole-system simulator through its public API
(:func:`magnum_lib.sim.simulate`) and reads the summary dict it returns; what the
notebooks need beyond that dict is computed here from it:

* :func:`evaluate` - one explorer setting on the ``classroom`` cluster;
* :func:`journey` - one request's trace as timeline segments, each named by its layer;
* :func:`budget` - the decision latency's parts (mean and p95, ms);
* the three principles (C50) as experiments: :func:`leases_vs_locks`,
  :func:`cost_model_vs_one_size`, :func:`partition_experiment` (with
  :func:`consistent_wait_ms`, what a scheduler that waits for a consistent view pays);
* consistent hashing's load imbalance against theory and two choices
  (:func:`ring_shares`, :func:`hash_max_load`, :func:`two_choices_max_load`,
  :func:`ring_max_share_theory`, :func:`balls_max_load_theory`).

The lock model is ours (the simulator has no locks): with one lock over the shared state,
k schedulers decide one at a time, each holding the lock until the node has confirmed its
lease (one RTT), and the holder sees the truth. That is one scheduler with a fresh view
whose per-decision cost is ``c_decision_s + rtt_s``: a lower bound on what locks cost
(no lock hand-off is charged).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from magnum_lib.base.validate import ParameterError, check_int
from magnum_lib.checks.system import consistent_wait_ms, per_node_lock_knobs  # noqa: F401 (re-exported)
from magnum_lib.regional import hashing
from magnum_lib.sim import EVOLUTION, PRESETS, SimConfig, make_config, run_config, simulate

#: Simulated seconds per explorer change (classroom cluster: ~1,500 requests at load 0.8).
EXPLORER_DURATION_S = 0.3
#: The explorer's presets (the evolution, oldest first).
PRESET_NAMES = EVOLUTION
DEFAULT_C_DECISION_S = SimConfig().c_decision_s

#: Layer of each step of a request's journey, keyed by (event, next event).
_LAYER = {
    ("arrive", "round"): "region: waits for the next round",
    ("round", "placed"): "regional scheduler: places from its view",
    ("round", "no_fit_in_view"): "regional scheduler: nothing fits in its view",
    ("no_fit_in_view", "round"): "region: waits for the next round",
    ("placed", "lease_at_node"): "network: speculative lease (RTT/2)",
    ("lease_at_node", "refused"): "node validator: refuses",
    ("refused", "round"): "region: retries in the next round",
    ("lease_at_node", "start"): "node validator + Bouncer quantum",
    ("lease_at_node", "queued"): "node validator: queues",
    ("queued", "start"): "node: waits for a device",
    ("start", "finish"): "device: runs",
    ("start", "hedge"): "device: runs (past the hedge point)",
    ("hedge", "finish"): "device: runs, a hedged copy elsewhere",
}


@dataclass(frozen=True)
class Segment:
    """One step of a request's journey; times in ms from its arrival."""

    layer: str
    start_ms: float
    end_ms: float
    node: int

    @property
    def ms(self) -> float:
        return self.end_ms - self.start_ms


def journey(result: dict) -> list[Segment]:
    """The traced request's events (``result["trace"]``) as consecutive segments.

    Times are relative to the arrival; the node is the one the later event names (-1: none).
    """
    ev = result["trace"]["events"]
    if not ev:
        return []
    t0 = ev[0]["t_ms"]
    out = []
    for a, b in itertools.pairwise(ev):
        layer = _LAYER.get((a["event"], b["event"]), f"{a['event']} -> {b['event']}")
        out.append(Segment(layer, a["t_ms"] - t0, b["t_ms"] - t0, int(b["node"])))
    return out


def decision_ms(result: dict) -> float | None:
    """The traced request's decision latency (arrival to device start), ms; None if it never started."""
    ev = result["trace"]["events"]
    starts = [e["t_ms"] for e in ev if e["event"] == "start"]
    return starts[0] - ev[0]["t_ms"] if starts and ev else None


def budget(result: dict) -> dict:
    """The decision latency's parts: ``{component: {"mean": ms, "p95": ms, "p999": ms}}`` plus ``"total"``.

    The component means add up to the mean decision latency (every nanosecond between
    arrival and device start is charged to exactly one part); percentiles do not add.
    """
    d = result["decision_latency_ms"]
    out = {k: {"mean": v["mean"], "p95": v["p95"], "p999": v["p999"]} for k, v in d["breakdown"].items()}
    out["total"] = {"mean": d["mean"], "p95": d["p95"], "p999": d["p999"]}
    return out


def find_retried_request(candidates=range(0, 2000, 50), **knobs) -> tuple[int, dict] | None:
    """First traced request among ``candidates`` whose lease was refused once (a retry); None if none.

    One untraced run of ``knobs`` lists the requests that started after a failed attempt;
    the first few of them among ``candidates`` are traced until one shows a refusal.
    """
    run_knobs = {k: v for k, v in knobs.items() if k not in ("preset", "cluster", "backend")}
    _, runs = run_config(make_config(knobs.get("preset", "magnum_v2"), knobs.get("cluster", "classroom"),
                                     **run_knobs), backend=knobs.get("backend"), keep=True)
    arrays = runs[0].arrays
    allowed = set(int(c) for c in candidates)
    retried = [int(r) for r in np.flatnonzero((arrays["attempts"] >= 1) & (arrays["start"] >= 0)) if int(r) in allowed]
    for rid in retried[:20]:
        r = simulate(trace_request=rid, **knobs)
        if any(e["event"] == "refused" for e in r["trace"]["events"]) and decision_ms(r) is not None:
            return rid, r
    return None


# --- the explorer ------------------------------------------------------------------------

@dataclass(frozen=True)
class SystemScenario:
    """One evaluated explorer setting; ``ok`` False means ``message`` says why, ``result`` None."""

    preset: str
    load: float
    gossip_interval_ms: float
    rtt_us: float
    schedulers: int
    hedge_factor: float
    seed: int
    ok: bool
    message: str
    result: dict | None = None

    def pct(self, q: str) -> float:
        """Decision latency percentile ``q`` ("p50", "p95", "p99", "p999"), ms (NaN if none)."""
        v = None if self.result is None else self.result["decision_latency_ms"][q]
        return math.nan if v is None else float(v)

    @property
    def started_fraction(self) -> float:
        if self.result is None:
            return math.nan
        r = self.result["requests"]
        return r["started"] / r["total"] if r["total"] else math.nan


def knobs_for(preset: str, load: float, gossip_interval_ms: float, rtt_us: float, schedulers: int,
              hedge_factor: float, duration_s: float = EXPLORER_DURATION_S, seed: int = 0) -> dict:
    """``simulate`` keyword arguments of one explorer setting on the ``classroom`` cluster.

    ``schedulers`` only applies where the preset shares the region among schedulers (scope
    "region"); the cell-scoped presets keep one scheduler per cell.
    """
    kw = dict(preset=preset, cluster="classroom", duration_s=duration_s, load=load,
              gossip_interval_s=gossip_interval_ms / 1e3, rtt_s=rtt_us / 1e6, hedge_factor=hedge_factor,
              seed=seed)
    if preset in PRESETS and PRESETS[preset].get("scope", "region") == "region":
        kw["schedulers"] = schedulers
    return kw


def evaluate(preset: str = "magnum_v2", load: float = 0.8, gossip_interval_ms: float = 1.0,
             rtt_us: float = 100.0, schedulers: int = 2, hedge_factor: float = 2.0, *, seed: int = 0,
             duration_s: float = EXPLORER_DURATION_S, backend: str | None = None) -> SystemScenario:
    """Simulate one setting on the ``classroom`` cluster (32 nodes, 256 devices).

    Bad settings return ``ok=False`` with the simulator's message instead of raising.
    """
    base = dict(preset=preset, load=load, gossip_interval_ms=gossip_interval_ms, rtt_us=rtt_us,
                schedulers=schedulers, hedge_factor=hedge_factor, seed=seed)
    try:
        for name in ("gossip_interval_ms", "rtt_us"):
            v = base[name]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ParameterError(name, f"must be a finite number, got {v!r}")
        kw = knobs_for(preset, load, gossip_interval_ms, rtt_us, schedulers, hedge_factor, duration_s, seed)
        result = simulate(backend=backend, **kw)
    except (ParameterError, TypeError) as exc:
        return SystemScenario(**base, ok=False, message=str(exc))
    return SystemScenario(**base, ok=True, message="", result=result)


def seed_spread(scenario: SystemScenario, seeds=range(1, 6), q: str = "p95",
                duration_s: float = EXPLORER_DURATION_S) -> np.ndarray:
    """Percentile ``q`` (ms) of the same setting over ``seeds`` (the explorer's slow button)."""
    s = scenario
    out = []
    for seed in seeds:
        kw = knobs_for(s.preset, s.load, s.gossip_interval_ms, s.rtt_us, s.schedulers, s.hedge_factor,
                       duration_s, int(seed))
        v = simulate(**kw)["decision_latency_ms"][q]
        out.append(math.nan if v is None else v)
    return np.asarray(out, dtype=float)


# --- principle 1: leases, not locks ------------------------------------------------------

def _row(label: str, r: dict, **extra) -> dict:
    d = r["decision_latency_ms"]
    return {"mode": label, **extra, "mean_ms": d["mean"], "p50_ms": d["p50"], "p95_ms": d["p95"], "p99_ms": d["p99"],
            "p999_ms": d["p999"],
            "lease_failure_rate": r["lease_failure_rate"], "started": r["requests"]["started"],
            "requests": r["requests"]["total"], "sla_attainment": r["sla_attainment"],
            "energy_per_request_j": r["energy_per_request_j"], "leases": r["leases"],
            "staleness_ms": r["staleness_ms"], "preemptions": r["preemptions"]}


def lock_knobs(rtt_s: float = 100e-6, c_decision_s: float = DEFAULT_C_DECISION_S) -> dict:
    """The lock model's knobs (module docstring): one decider, fresh view, lock held one RTT per decision."""
    return dict(schedulers=1, view="fresh", c_decision_s=c_decision_s + rtt_s, rtt_s=rtt_s)


def leases_vs_locks(schedulers=(1, 2, 4, 8, 16), rate_per_scheduler: float = 1500.0, nodes_per_scheduler: int = 16,
                    duration_s: float = 0.3, seed: int = 0, backend: str | None = None) -> list[dict]:
    """Grow the region with its schedulers: k schedulers, 16 k nodes, k x ``rate_per_scheduler`` requests/s.

    Leases: magnum_v2's k schedulers on gossip views, conflicts refused by the nodes and
    retried. Node locks: the same k schedulers, each locking the node it picked before it
    dispatches (:func:`magnum_lib.checks.system.per_node_lock_knobs`: one more RTT per
    request, the node's truth, no refusal). Locks: the same traffic through one lock over the
    region (:func:`lock_knobs`). One row per mode and k.
    """
    rows = []
    for k in schedulers:
        common = dict(cluster="classroom", duration_s=duration_s, seed=seed, nodes_per_cell=nodes_per_scheduler // 2 * k,
                      rate=rate_per_scheduler * k, backend=backend)
        rows.append(_row("leases", simulate("magnum_v2", schedulers=k, **common), schedulers=k))
        rows.append(_row("node locks", simulate("magnum_v2", schedulers=k, **per_node_lock_knobs(), **common),
                         schedulers=k))
        rows.append(_row("locks", simulate("magnum_v2", **lock_knobs(), **common), schedulers=k))
    return rows


def lock_capacity_per_s(rtt_s: float = 100e-6, c_decision_s: float = DEFAULT_C_DECISION_S) -> float:
    """Decisions per second one lock allows, whatever the number of schedulers: 1 / (c_decision + RTT)."""
    return 1.0 / (c_decision_s + rtt_s)


# --- principle 2: one cost model ---------------------------------------------------------

def service_times_ms(preset: str = "magnum_v2", cluster: str = "classroom") -> dict:
    """Mean service time (ms) of each request class on each device type, from the catalog's
    roofline as the simulator computes it (``{class: {type: ms}}``; inf: not eligible)."""
    _, runs = run_config(make_config(preset, cluster, duration_s=1e-3), keep=True)
    run = runs[0]
    return {c.name: {k: float(run.times[i, j] * 1e3) for j, k in enumerate(run.type_keys)}
            for i, c in enumerate(run.cfg.classes)}


def cost_model_vs_one_size(duration_s: float = 0.3, seed: int = 0, load: float = 0.8,
                           backend: str | None = None) -> dict:
    """magnum_v2 on the heterogeneous classroom fleet, with its cost model and without it
    (``hetero_aware=False``: every device type is treated as the same)."""
    kw = dict(cluster="classroom", duration_s=duration_s, seed=seed, load=load, backend=backend)
    return {"cost_model": _row("cost_model", simulate("magnum_v2", **kw)),
            "one_size": _row("one_size", simulate("magnum_v2", hetero_aware=False, **kw))}


# --- principle 3: availability over consistency ------------------------------------------

def partition_experiment(partition_fraction: float = 0.5, start_s: float = 0.05, partition_s: float = 0.15,
                         duration_s: float = 0.3, seed: int = 0, backend: str | None = None) -> dict:
    """magnum_v2 as preset (the planner's hints on) calm, and through two partitions of
    ``partition_fraction`` of the nodes from ``start_s`` for ``partition_s``: ``"gossip"``
    cuts gossip only (the schedulers' view of those nodes freezes; leases still reach
    them), ``"true"`` cuts the lease channel too (``partition_leases``: a lease sent there
    is lost and retried when it expires, ``lease_timeout_s``).

    Returns the rows ``"calm"``, ``"gossip"`` and ``"true"`` plus ``utilization_max``: the
    largest fraction of any device type held at any sample of either partitioned run
    (training + inference), <= 1 because a node's validator refuses every lease its
    devices cannot take.
    """
    kw = dict(cluster="classroom", duration_s=duration_s, seed=seed, backend=backend)
    cut = dict(partition_start_s=start_s, partition_s=partition_s, partition_fraction=partition_fraction)
    runs = {"calm": simulate("magnum_v2", **kw), "gossip": simulate("magnum_v2", **cut, **kw),
            "true": simulate("magnum_v2", partition_leases=True, **cut, **kw)}
    umax = max((max(v) for name in ("gossip", "true") for k, v in runs[name]["utilization_series"].items()
                if k != "t_s" and v), default=0.0)
    return {**{k: _row(k, r) for k, r in runs.items()}, "utilization_max": float(umax),
            "partition_s": partition_s, "partition_fraction": partition_fraction, "duration_s": duration_s}


# --- consistent hashing vs two choices ---------------------------------------------------

def ring_shares(nodes: int, vnodes: int = 1, seed: int = 0) -> np.ndarray:
    """Fraction of the hash ring each node owns: the simulator's ring, ``vnodes`` points per node.

    The regional layer's :func:`~magnum_lib.regional.hashing.hash_ring` over nodes
    ``0 .. nodes-1``; each seed is another ring (salt ``seed x 2^40``: no point input shared).
    """
    if nodes < 1 or vnodes < 1:
        raise ParameterError("nodes", f"nodes and vnodes must be >= 1, got {nodes}, {vnodes}")
    seed = check_int("seed", seed, 0, 2**21)
    keys, owners = hashing.hash_ring(np.arange(nodes), vnodes, salt=seed << 40)
    return hashing.ring_shares(keys, owners, nodes)


def hash_max_load(nodes: int, balls: int, vnodes: int = 1, seed: int = 0) -> float:
    """Largest node load / mean load when ``balls`` keys are hashed onto the ring."""
    shares = ring_shares(nodes, vnodes, seed)
    rng = np.random.default_rng(seed + 1)
    loads = rng.multinomial(balls, shares / shares.sum())
    return float(loads.max() / (balls / nodes))


def two_choices_max_load(nodes: int, balls: int, seed: int = 0) -> float:
    """Largest load / mean when each ball joins the less loaded of two random nodes (sequential)."""
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, nodes, size=(balls, 2))
    loads = np.zeros(nodes, dtype=np.int64)
    for a, b in picks.tolist():
        loads[a if loads[a] <= loads[b] else b] += 1
    return float(loads.max() / (balls / nodes))


def random_max_load(nodes: int, balls: int, seed: int = 0) -> float:
    """Largest load / mean with one uniformly random node per ball (balls into bins)."""
    rng = np.random.default_rng(seed)
    loads = np.bincount(rng.integers(0, nodes, size=balls), minlength=nodes)
    return float(loads.max() / (balls / nodes))


def ring_max_share_theory(nodes: int, vnodes: int = 1) -> float:
    """Expected largest ring share / mean share, approximately.

    A node's share is the sum of ``vnodes`` spacings of ``nodes x vnodes`` uniform points:
    about Gamma(vnodes, 1) / vnodes times the mean. The largest of ``nodes`` such shares
    sits near the Gamma's 1 - 1/nodes quantile (for vnodes = 1: ln n, the largest of n
    exponential spacings, H_n ~ ln n + 0.577 exactly in expectation).
    """
    if vnodes == 1:
        return float(sum(1.0 / i for i in range(1, nodes + 1)))
    return float(stats.gamma.ppf(1.0 - 1.0 / nodes, vnodes) / vnodes)


def balls_max_load_theory(nodes: int, balls: int, choices: int = 1) -> float:
    """Leading-order max load / mean for ``balls`` into ``nodes`` bins (heavily loaded, m >= n ln n).

    One choice: m/n + sqrt(2 (m/n) ln n) (Raab and Steger 1998). Two choices:
    m/n + ln ln n / ln 2 (Berenbrink, Czumaj, Steger, Voecking 2000).
    """
    mean = balls / nodes
    if choices == 1:
        return (mean + math.sqrt(2.0 * mean * math.log(nodes))) / mean
    return (mean + math.log(math.log(nodes)) / math.log(choices)) / mean
