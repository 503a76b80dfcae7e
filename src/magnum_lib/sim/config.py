"""What a simulation run is made of: request classes, the knobs, cluster and system presets.

Every knob of :class:`SimConfig` is in base units at the API (seconds, bytes/s,
fractions); :func:`check_config` checks each range and raises
:class:`~magnum_lib.base.validate.ParameterError` naming it. Presets are plain dicts of
overrides so that the CLI and the notebooks can show exactly what each one changes.

Scheduling work costs (``c_round_s``, ``c_decision_s``, ``c_node_s``, ``c_validate_s``) are
constants (a run must not depend on the machine), chosen from what the regional layer's own
kernels measure; ``python -m magnum_lib.sim.costs`` re-measures them. On the build machine
(2 shared cores, load average ~9) it gave 398 ns per decision for a whole round of 1,000
two-choices placements over 15,000 nodes plus their validation, and 220 ns per validation:

* ``c_decision_s`` = 250 ns: one placement decision (the round's figure less validation);
* ``c_node_s`` = 2 ns: one node examined (a fit test on one row of the view);
* ``c_validate_s`` = 150 ns: one lease validated at the node;
* ``c_round_s`` = 20 us: fixed cost of a round (batching, sending the round's leases).

They are of the order of a lightly loaded core's; ``borg_like`` overrides them (5 us per
decision and 400 ns per node: a scoring scan, not a fit test).
"""
from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass, field, fields, replace

from magnum_lib.base.validate import ParameterError, excerpt

__all__ = ["RequestClass", "DEFAULT_CLASSES", "SimConfig", "CLUSTERS", "PRESETS", "EVOLUTION",
           "make_config", "check_config", "check_backend", "BACKENDS"]

#: The backends :func:`~magnum_lib.sim.run.simulate` accepts (None: the active one).
BACKENDS = ("compiled", "python")


def check_backend(backend: object) -> str | None:
    """Return ``backend`` if it is None or one of :data:`BACKENDS`, else raise ParameterError."""
    if backend is not None and (not isinstance(backend, str) or backend not in BACKENDS):
        raise ParameterError("backend", f"must be one of {', '.join(BACKENDS)} or None (the active one), "
                                        f"got {excerpt(backend)}")
    return backend


def _class_error(cls_name: str, field_name: str, detail: str) -> ParameterError:
    return ParameterError(field_name, f"{detail} (request class {cls_name!r})")


def _real(cls_name: str, field_name: str, value: object, lo: float) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value < lo:
        raise _class_error(cls_name, field_name, f"must be a finite number >= {lo:g}, got {excerpt(value)}")
    return float(value)


#: The largest class priority (priorities are >= 1, higher = more urgent, as the planner's
#: ``job_priority``; kept well inside the core's int64).
MAX_PRIORITY = 2**31 - 1


@dataclass(frozen=True)
class RequestClass:
    """One stream of latency-critical inference requests.

    ``flops``/``bytes_moved`` feed the roofline cost model (:func:`hardware.cost_matrix`)
    at ``precision`` and ``efficiency``; ``types`` restricts the eligible device types
    (catalog keys; empty: every type with the precision); ``setup_s`` is the static-graph
    load a device pays per request when graphs are not pre-reserved (MTIA, C35/C36).
    """

    name: str
    flops: float
    bytes_moved: float
    sla_s: float
    priority: int
    share: float
    precision: str = "bf16"
    efficiency: float = 0.4
    types: tuple = ()
    setup_s: float = 0.0
    graph: str = ""  # its static graph: a shipped manifest name (graph.manifest); "" = none

    def __post_init__(self):
        # Checked here so a bad class fails where it is written, not as a ZeroDivisionError
        # or OverflowError deep in the run.
        for name in ("flops", "bytes_moved", "sla_s", "share", "setup_s", "efficiency"):
            _real(self.name, name, getattr(self, name), 0.0)
        if self.sla_s == 0:
            raise _class_error(self.name, "sla_s", "must be > 0 seconds, got 0")
        if self.flops == 0 and self.bytes_moved == 0:
            raise _class_error(self.name, "flops", "and bytes_moved are both 0: a request must do some work")
        if not 0 < self.efficiency <= 1:
            raise _class_error(self.name, "efficiency", f"must be in (0, 1], got {self.efficiency!r}")
        if isinstance(self.priority, bool) or not isinstance(self.priority, numbers.Integral) \
                or not 1 <= self.priority <= MAX_PRIORITY:
            raise _class_error(self.name, "priority",
                               f"must be an integer in [1, {MAX_PRIORITY}], got {excerpt(self.priority)}")


#: Four request classes (ours): sized so that the ``region`` preset at load 0.8 offers
#: about 800 k requests/s (the article's ~770 k/s per region; mean service about 30 ms
#: where the cost model sends each class: its SLA-meeting types in proportion to their
#: devices, see ``model._load_times``). Service times on (H100, MI300X, MTIA v2), roofline
#: at 40%: ranking 21/16/118 ms, llm_decode 37/24/610 ms, sticker_gen 84/64/471 ms,
#: mtia_graph -/-/27 ms. (Until 2026-12 they were 1.2x heavier and "load" was counted on
#: each class's fastest type alone, so load 0.8 really offered 0.96 of the devices.)
DEFAULT_CLASSES = (
    RequestClass("ranking", flops=8.35e12, bytes_moved=10e9, sla_s=0.050, priority=3, share=0.45),
    RequestClass("llm_decode", flops=0.835e12, bytes_moved=125e9, sla_s=0.100, priority=2, share=0.25),
    RequestClass("sticker_gen", flops=3.34e13, bytes_moved=16.7e9, sla_s=0.250, priority=1, share=0.10),
    RequestClass("mtia_graph", flops=3.76e12, bytes_moved=1.67e9, sla_s=0.050, priority=3, share=0.20,
                 precision="int8", types=("mtia_v2",), setup_s=0.010, graph="recsys_ours"),
)


@dataclass(frozen=True)
class SimConfig:
    """Every knob of one run (seconds, fractions; see the field comments)."""

    # cluster
    regions: int = 1
    cells_per_region: int = 2
    nodes_per_cell: int = 16
    devices_per_node: int = 8
    mix: tuple = (("h100_sxm", 0.5), ("mi300x", 0.3), ("mtia_v2", 0.2))
    # workload
    duration_s: float = 1.0
    load: float = 0.8  # offered work on each request's fastest device / devices not held by training
    rate: float = 0.0  # requests/s per region; 0: derived from load
    training_fraction: float = 0.25  # devices held by training leases at t = 0
    diurnal_amplitude: float = 0.2
    diurnal_period_s: float = 60.0  # a compressed "day"
    burst_factor: float = 1.5  # rate in a burst / rate at base
    burst_mean_s: float = 0.2
    base_mean_s: float = 1.0
    spike_at_s: float = -1.0  # a load spike starts here (< 0: none)
    spike_s: float = 0.1
    spike_factor: float = 1.5
    service: str = "roofline"  # or "exp": exponential service with the roofline mean
    service_cv: float = 0.5  # lognormal spread of service times around the roofline
    # regional scheduler
    scope: str = "region"  # "region": schedulers share the region; "cell": one per cell
    schedulers: int = 4
    policy: str = "two-choices"  # random, scan, two-choices, hash, hints
    draws: int = 4
    scan_limit: int = 32  # nodes a random pick scans after its draws miss (policy "scan": all)
    ring_vnodes: int = 1
    round_s: float = 0.001
    rtt_s: float = 100e-6  # C17
    lease_timeout_s: float = 0.1
    max_attempts: int = 50
    hetero_aware: bool = False
    planner_interval_s: float = 30.0  # policy "hints": the planner plans at t = 0, then every 30 s (C8)
    hint_jobs: int = 0  # hinted nodes per class; 0: sized from the class's expected devices (hint_headroom)
    hint_headroom: float = 1.5  # hint_jobs 0: a class is hinted whole free nodes for this x its expected devices
    pre_reserve: bool = False  # static graphs reserved on the nodes where they fit (graph.residency)
    graph_tenants: int = 8  # other tenants' static graphs drawn per static-graph node (0: empty nodes)
    graph_memory_pressure: float = 0.1  # a tenant graph's mean reservation / device memory
    # views
    view: str = "gossip"  # "fresh" (truth + in-flight), "round" (truth at each round), "gossip"
    gossip_interval_s: float = 0.001  # C27
    fanout: int = 2
    gossip_loss: float = 0.01
    digest_interval_s: float = 0.010  # C28 (0: no digest)
    bloom_fp: float = 0.01
    piggyback: bool = True  # a lease's reply carries the node's true state back to the view
    partition_start_s: float = -1.0
    partition_s: float = 0.0
    partition_fraction: float = 0.0
    # False: the partition cuts gossip only (the cut-off nodes' view entries freeze; leases still
    # reach them). True: a true partition, both channels: a lease sent to a cut-off node is lost
    # and its scheduler retries when the lease expires (lease_timeout_s)
    partition_leases: bool = False
    # node
    preempt: str = "checkpoint"  # none, kill (evict at once, lose work), checkpoint, micro
    micro_preempt_s: float = 20e-6  # pausing the running kernel at a boundary (C20), paid by the device
    micro_resume_s: float = 20e-6  # a paused inference copy restarting (the dispatcher's resume_cost)
    checkpoint_bandwidth: float = 25e9  # regional.validator.DEFAULT_CHECKPOINT_BANDWIDTH
    checkpoint_interval_s: float = 600.0
    training_memory_fraction: float = 0.5
    quantum_s: float = 0.0  # node decision quantum (250e-6 for the Bouncer, C19)
    hedge_factor: float = 0.0  # hedge a copy still running at this x its expected time (0: off)
    # energy (C46): "tdp" = TDP x time; "top" = the DVFS model (magnum_lib.energy) at the top
    # clock; "sla" = each (class, device type) at the slowest clock whose service time fits
    # clock_budget x the class's SLA (never below the least-energy clock)
    clock: str = "tdp"
    clock_budget: float = 0.5
    node_queue: int = 0  # requests a node queues beyond its devices
    # costs of the scheduling work (module docstring)
    c_round_s: float = 20e-6
    c_decision_s: float = 250e-9
    c_node_s: float = 2e-9
    c_validate_s: float = 150e-9
    # run
    seed: int = 0
    trace_request: int = -1  # -1: a request near the middle of the run
    classes: tuple = field(default=DEFAULT_CLASSES, repr=False)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["classes"] = [asdict(c) for c in self.classes]
        d["mix"] = dict(self.mix)
        return d


#: Cluster presets (``--cluster``).
CLUSTERS = {
    "classroom": dict(regions=1, cells_per_region=2, nodes_per_cell=16, schedulers=2),
    "region": dict(regions=1, cells_per_region=4, nodes_per_cell=1250),  # 5,000 x 8 = 40,000 GPUs
    "fleet": dict(regions=15, cells_per_region=4, nodes_per_cell=1250),  # 600,000 GPUs
}

#: The evolution (C39-C43): each preset is the one before plus the changes listed.
EVOLUTION = ("borg_like", "borg_plus", "cheetah", "magnum_v1", "magnum_v2")
PRESETS = {
    # 2013: one central scheduler per cell, scanning every node of its cell per decision,
    # with a fresh view (it owns the state), no preemption, no node dispatcher. Real Borg
    # does not scan every node: score caching, equivalence classes and relaxed randomization
    # (Verma et al., EuroSys 2015; see magnum_lib.sim.evolution). This is the full scan's cost.
    "borg_like": dict(scope="cell", policy="scan", view="fresh", preempt="none", round_s=1e-6,
                      c_node_s=400e-9, c_decision_s=5e-6, digest_interval_s=0.0, max_attempts=10_000),
    # 2016: + priority preemption of training. Borg preempts by killing the victim (it is
    # rescheduled and loses the work since its last checkpoint), so no checkpoint delay.
    "borg_plus": dict(scope="cell", policy="scan", view="fresh", preempt="kill", round_s=1e-6,
                      c_node_s=400e-9, c_decision_s=5e-6, digest_interval_s=0.0, max_attempts=10_000),
    # 2019: consistent hashing of requests to nodes: no scan, no view; the owner queues.
    "cheetah": dict(scope="region", schedulers=4, policy="hash", view="fresh", preempt="kill",
                    round_s=1e-6, node_queue=1_000_000, digest_interval_s=0.0),
    # 2021: regional schedulers, speculative leases on gossip views, retries on refusal.
    # Rounds every 3.7 ms: C25's 270 rounds per second. The global planner (layer 1, C8-C12)
    # plans at t = 0 and every 30 s; its chosen nodes are soft hints: the scheduler tries
    # the better of two hinted nodes first, then its own two-choices placement.
    "magnum_v1": dict(scope="region", schedulers=4, policy="hints", view="gossip",
                      preempt="checkpoint", round_s=0.0037),
    # 2023: + heterogeneity-aware dispatch (cost model), graph pre-reservation, the Bouncer
    # (micro-preemption, 250 us quantum) and tail hedging. C22 hedges past "5 ms"; our
    # requests last 20-100 ms, so a copy is hedged when it has run twice its expected
    # (roofline) time instead: about 4% of requests with service_cv 0.5.
    "magnum_v2": dict(scope="region", schedulers=4, policy="hints", view="gossip",
                      preempt="micro", round_s=0.0037, hetero_aware=True, pre_reserve=True,
                      quantum_s=250e-6, hedge_factor=2.0),
}

_CHOICES = {"scope": ("region", "cell"), "policy": ("random", "scan", "two-choices", "hash", "hints"),
            "view": ("fresh", "round", "gossip"), "preempt": ("none", "kill", "checkpoint", "micro"),
            "service": ("roofline", "exp"), "clock": ("tdp", "top", "sla")}
# (lo, hi, lo_open): ranges of the numeric knobs.
_RANGES = {
    "regions": (1, 64), "cells_per_region": (1, 4096), "nodes_per_cell": (1, 1_000_000),
    "devices_per_node": (1, 16), "duration_s": (1e-6, 3600.0), "load": (0.0, 10.0), "rate": (0.0, 1e9),
    "training_fraction": (0.0, 0.95), "diurnal_amplitude": (0.0, 1.0), "diurnal_period_s": (1e-3, 1e7),
    "burst_factor": (1.0, 100.0), "burst_mean_s": (1e-6, 1e6), "base_mean_s": (1e-6, 1e6),
    "spike_at_s": (-1.0, 1e7), "spike_s": (0.0, 1e7), "spike_factor": (1.0, 100.0),
    "service_cv": (0.0, 10.0), "schedulers": (1, 256), "draws": (1, 64), "scan_limit": (1, 2**31 - 1), "ring_vnodes": (1, 1024),
    "round_s": (1e-7, 10.0), "rtt_s": (0.0, 1.0), "lease_timeout_s": (1e-6, 3600.0),
    "max_attempts": (1, 1_000_000), "planner_interval_s": (1e-3, 1e7), "hint_jobs": (0, 1_000_000),
    "hint_headroom": (0.01, 100.0), "graph_tenants": (0, 1024), "graph_memory_pressure": (1e-3, 1.0), "gossip_interval_s": (1e-6, 1.0), "fanout": (1, 64),
    "gossip_loss": (0.0, 0.99), "digest_interval_s": (0.0, 10.0), "bloom_fp": (1e-9, 0.5),
    "partition_start_s": (-1.0, 1e7), "partition_s": (0.0, 1e7), "partition_fraction": (0.0, 1.0),
    "micro_preempt_s": (0.0, 1.0), "micro_resume_s": (0.0, 1.0), "checkpoint_bandwidth": (1e6, 1e13),
    "checkpoint_interval_s": (1e-3, 1e7), "training_memory_fraction": (0.0, 1.0),
    "quantum_s": (0.0, 0.1), "clock_budget": (0.01, 1.0), "hedge_factor": (0.0, 100.0), "node_queue": (0, 1_000_000_000),
    "c_round_s": (0.0, 10.0), "c_decision_s": (0.0, 10.0), "c_node_s": (0.0, 1.0),
    "c_validate_s": (0.0, 1.0), "seed": (0, 2**63 - 1), "trace_request": (-1, 2**62),
}
_INTS = {f.name for f in fields(SimConfig) if f.type == "int"}


def check_config(cfg: SimConfig) -> SimConfig:
    """Check every knob's type and range; raise ParameterError naming the first bad one."""
    for name, choices in _CHOICES.items():
        v = getattr(cfg, name)
        if v not in choices:
            raise ParameterError(name, f"must be one of {', '.join(choices)}, got {excerpt(v)}")
    for name, (lo, hi) in _RANGES.items():
        v = getattr(cfg, name)
        if name in _INTS:
            if isinstance(v, bool) or not isinstance(v, numbers.Integral):
                raise ParameterError(name, f"must be an integer, got {excerpt(v)}")
        elif isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v):
            raise ParameterError(name, f"must be a finite number, got {excerpt(v)}")
        if not lo <= v <= hi:
            raise ParameterError(name, f"must be in [{lo:g}, {hi:g}], got {v!r}")
    for name in ("hetero_aware", "pre_reserve", "piggyback", "partition_leases"):
        if not isinstance(getattr(cfg, name), bool):
            raise ParameterError(name, f"must be True or False, got {excerpt(getattr(cfg, name))}")
    if cfg.load == 0 and cfg.rate == 0:
        raise ParameterError("load", "and rate are both 0: give one of them > 0")
    if cfg.scope == "cell" and cfg.schedulers != cfg.cells_per_region:
        raise ParameterError("schedulers", f"must equal cells_per_region={cfg.cells_per_region} "
                             f"with scope 'cell' (one scheduler per cell), got {cfg.schedulers}")
    # Periodic work that runs whether or not requests are waiting stays laptop-sized (a 1 ns
    # digest period would never finish). Rounds are not on the list: an idle round costs nothing.
    periodic = [("digest_interval_s", 10**6)] + ([("gossip_interval_s", 10**8)] if cfg.view == "gossip" else [])
    for name, limit in periodic:
        period = getattr(cfg, name)
        if period > 0 and cfg.duration_s / period > limit:
            raise ParameterError(name, f"gives {cfg.duration_s / period:.3g} periods in {cfg.duration_s:g} s; "
                                       f"at most {limit:.0e} (0 turns the digest off)" if name == "digest_interval_s"
                                 else f"gives {cfg.duration_s / period:.3g} periods in {cfg.duration_s:g} s; "
                                      f"at most {limit:.0e}")
    nodes = cfg.cells_per_region * cfg.nodes_per_cell
    if nodes > 2_000_000:
        raise ParameterError("nodes_per_cell", f"gives {nodes} nodes per region; at most 2,000,000")
    if not cfg.classes:
        raise ParameterError("classes", "is empty; give at least one RequestClass")
    for i, c in enumerate(cfg.classes):
        if not isinstance(c, RequestClass):
            raise ParameterError(f"classes[{i}]", f"must be a RequestClass, got {excerpt(c)}")
    total = sum(c.share for c in cfg.classes)
    if any(c.share < 0 for c in cfg.classes) or not math.isclose(total, 1.0, rel_tol=1e-6):
        raise ParameterError("classes", f"shares must be >= 0 and sum to 1, got sum {total!r}")
    return cfg


def make_config(preset: str | None = "magnum_v2", cluster: str = "classroom", **overrides) -> SimConfig:
    """A :class:`SimConfig`: the cluster preset, then the system preset, then ``overrides``."""
    if cluster not in CLUSTERS:
        raise ParameterError("cluster", f"must be one of {', '.join(CLUSTERS)}, got {excerpt(cluster)}")
    if preset is not None and preset not in PRESETS:
        raise ParameterError("preset", f"must be one of {', '.join(PRESETS)}, got {excerpt(preset)}")
    known = {f.name for f in fields(SimConfig)}
    for k in overrides:
        if k not in known:
            raise ParameterError(k, "is not a simulation knob")
    kw = dict(CLUSTERS[cluster])
    if preset is not None:
        kw.update(PRESETS[preset])
    if kw.get("scope") == "cell":
        kw["schedulers"] = kw["cells_per_region"]
    kw.update(overrides)
    if kw.get("scope") == "cell" and "schedulers" not in overrides:
        kw["schedulers"] = kw["cells_per_region"]
    return check_config(replace(SimConfig(), **kw))
