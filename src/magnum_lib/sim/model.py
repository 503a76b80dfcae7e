"""Wiring: build one region's inputs from the layers, run the core chunk by chunk, summarize.

Layers used (the simulator only wires them):

* :func:`magnum_lib.cluster.build_cluster` - regions > cells > nodes > devices;
* :func:`magnum_lib.hardware.cost_matrix` - roofline service time and energy per class
  and device type (eligibility: the precision exists and the class allows the type);
* :mod:`magnum_lib.workload` - MMPP bursts (:func:`bursty_arrivals`), diurnal thinning
  (:func:`diurnal_rate`), the Philly-calibrated sample (:func:`load_sample_workload`) for
  training lease sizes and ages;
* :func:`magnum_lib.gossip.dissemination.simulate` - the rounds a node's update takes to
  reach the scheduler (fan-out, loss), drawn per node per digest interval;
* :class:`magnum_lib.gossip.bloom.BloomFilter` - the digest of full nodes every
  ``digest_interval``, false positives included;
* ``magnum_lib.sim`` core (:mod:`core_ref` / ``_core``) - the request path.
"""
from __future__ import annotations

import functools
import math
import time

import numpy as np

from magnum_lib import _backend
from magnum_lib.cluster import build_cluster
from magnum_lib.energy import DvfsModel, clock_for_deadline
from magnum_lib.engine.distributions import NS_PER_S
from magnum_lib.hardware import cost_matrix, default_catalog
from magnum_lib.regional.hashing import hash_ring
from magnum_lib.regional.validator_ref import checkpoint_s
from magnum_lib.sim import contract, core_ref
from magnum_lib.sim.config import SimConfig, check_backend, check_config
from magnum_lib.sim.pages import on_small_pages

__all__ = ["core_module", "build_region", "run_region", "advance_region", "RegionRun", "RegionLayout",
           "region_snapshot", "plan_hints", "plan_seed", "apply_hints"]

_SCOPE_ALL = -1


def core_module(backend: str | None = None):
    """The core for ``backend`` ("compiled", "python") or the active one."""
    import importlib
    if check_backend(backend) == "python":
        return core_ref
    if backend == "compiled":
        return importlib.import_module("magnum_lib.sim._core")
    return _backend.pick("magnum_lib.sim._core", "magnum_lib.sim.core_ref")


def _ns(seconds: float) -> int:
    return int(round(seconds * NS_PER_S))


def _to_ns(seconds: np.ndarray) -> np.ndarray:
    """Seconds (float64, overwritten) to int64 ns, rounded to nearest, in place."""
    seconds *= NS_PER_S
    np.rint(seconds, out=seconds)
    return seconds.astype(np.int64)


def dispatch_classes(priorities) -> tuple[np.ndarray, int]:
    """The node dispatcher's class of each request class, and how many there are.

    The one place the two conventions meet: a :class:`RequestClass` priority is *higher =
    more urgent* (as the validator compares them), the dispatcher's class is *0 = most
    urgent* (``node.dispatcher_ref``). Class ``k`` is the k-th distinct priority from the
    top, so classes of equal priority share one FIFO queue at each node, as in the dispatcher.
    """
    levels = sorted(set(int(p) for p in priorities), reverse=True)
    return np.array([levels.index(int(p)) for p in priorities], dtype=np.int64), len(levels)


def class_costs(cfg: SimConfig, type_keys):
    """Service seconds and energy joules per (class, type); inf where not eligible."""
    t = np.full((len(cfg.classes), len(type_keys)), np.inf)
    e = np.full_like(t, np.inf)
    for c, rc in enumerate(cfg.classes):
        m = cost_matrix(type_keys, [rc.flops], [rc.bytes_moved], precision=rc.precision,
                        efficiency=rc.efficiency, missing="inf")
        ok = np.isfinite(m.time_s[0])
        if rc.types:
            cat = default_catalog()
            allowed = {cat.resolve(k) for k in rc.types}
            ok &= np.array([k in allowed for k in type_keys])
        t[c] = np.where(ok, m.time_s[0], np.inf)
        e[c] = np.where(ok, m.energy_j[0], np.inf)
        if cfg.clock != "tdp":
            for k in np.flatnonzero(ok):
                t[c, k], e[c, k] = _clocked(cfg, rc, type_keys[k])
    return t, e


def _clocked(cfg: SimConfig, rc, key: str) -> tuple[float, float]:
    """Service seconds and joules of class ``rc`` on device ``key`` under the DVFS model
    (``cfg.clock`` "top": the top clock; "sla": the clock fitting ``clock_budget`` x SLA)."""
    acc = default_catalog()[key]
    compute = rc.flops / (acc.peak(rc.precision) * rc.efficiency)
    memory = rc.bytes_moved / acc.mem_bandwidth_Bps
    model = DvfsModel(tdp_w=acc.tdp_w)
    f = 1.0 if cfg.clock == "top" else clock_for_deadline(model, compute, memory, cfg.clock_budget * rc.sla_s)
    return float(model.runtime(f, compute, memory)), float(model.energy_j(f, compute, memory))


def type_order(cfg: SimConfig, times, energy, c: int) -> list:
    """Eligible types of class c, the cost model's order: meets the SLA first, then least energy."""
    el = [t for t in range(times.shape[1]) if np.isfinite(times[c, t])]
    sla = cfg.classes[c].sla_s
    return sorted(el, key=lambda t: (times[c, t] > sla, energy[c, t], t))


def _load_times(cfg: SimConfig, times, node_type, free_dev) -> np.ndarray:
    """Mean service seconds per class where the cost model sends it: its SLA-meeting types
    present (all its eligible types if none meets the SLA), in proportion to their devices
    not held by training. ``load`` is offered work at these times over those devices, the
    same for every preset (one workload). Each class's fastest type alone would understate
    it: that type rarely holds enough devices for the whole class."""
    T = times.shape[1]
    cap = np.bincount(node_type, weights=free_dev, minlength=T)
    if cap.sum() <= 0:  # training holds everything: weigh by presence
        cap = np.bincount(node_type, minlength=T).astype(np.float64)
    out = np.empty(times.shape[0])
    for c, rc in enumerate(cfg.classes):
        el = [t for t in range(T) if np.isfinite(times[c, t]) and cap[t] > 0]
        el = el or [t for t in range(T) if np.isfinite(times[c, t]) and (node_type == t).any()]
        use = [t for t in el if times[c, t] <= rc.sla_s] or el
        w = cap[use] if cap[use].sum() > 0 else np.ones(len(use))
        out[c] = float(w @ times[c, use] / w.sum())
    return out


def _arrivals(cfg: SimConfig, rate: float, rng) -> np.ndarray:
    """Arrival times (s): MMPP bursts, thinned by the diurnal curve, plus a load spike."""
    from magnum_lib.workload import bursty_arrivals, bursty_mean_rate, diurnal_rate

    amp = cfg.diurnal_amplitude
    m = bursty_mean_rate(1.0, cfg.burst_factor, cfg.base_mean_s, cfg.burst_mean_s)
    base = rate * (1 + amp) / m
    seed = int(rng.integers(2**63))
    t = bursty_arrivals(base, base * cfg.burst_factor, cfg.base_mean_s, cfg.burst_mean_s,
                        horizon=cfg.duration_s, start="stationary", seed=seed, method="spacings")
    if amp > 0:  # thinning, block by block: the temporaries stay small (and reused)
        keep = np.empty(t.size, dtype=bool)
        for lo in range(0, t.size, 1 << 20):
            seg = t[lo:lo + (1 << 20)]
            keep[lo:lo + seg.size] = rng.random(seg.size) * (1 + amp) < diurnal_rate(seg, 1.0, amp, cfg.diurnal_period_s)
        t = t[keep]
    if cfg.spike_at_s >= 0 and cfg.spike_s > 0 and cfg.spike_factor > 1:
        lo, hi = cfg.spike_at_s, min(cfg.spike_at_s + cfg.spike_s, cfg.duration_s)
        if hi > lo:
            n = rng.poisson(rate * (cfg.spike_factor - 1) * (hi - lo))
            t = np.sort(np.concatenate([t, lo + rng.random(n) * (hi - lo)]))
    return t


@functools.lru_cache(maxsize=1)
def _sample_jobs():
    """GPUs and run times of the shipped Philly-calibrated sample (read once)."""
    from magnum_lib.workload import load_sample_workload
    wl = load_sample_workload()
    return np.asarray(wl.num_gpus), np.asarray(wl.duration_s)


def _training(cfg: SimConfig, node_dev: np.ndarray, rng):
    """Training shards (node, devices, start ns) packed first-fit on random nodes.

    Job sizes and ages come from the Philly-calibrated sample: a job of g GPUs is split
    into shards of at most one node; its age is uniform in its run time (a lease already
    held at t = 0; every sample run time exceeds a few-second simulation, so leases are
    held to the end).
    """
    gpus, durations = _sample_jobs()
    target = int(cfg.training_fraction * node_dev.sum())
    free = node_dev.astype(np.int64).copy()
    n = len(node_dev)
    nodes, devs, starts = [], [], []
    held = 0
    tries = 0
    widest = int(node_dev.max())  # once: a max per shard made packing quadratic in the nodes
    while held < target and tries < 20 * n + 100:
        j = int(rng.integers(len(gpus)))
        g = min(int(gpus[j]), target - held)
        age = rng.random() * float(durations[j])
        while g > 0 and tries < 20 * n + 100:
            tries += 1
            d = min(g, widest)
            i = int(rng.integers(n))
            d = min(d, int(free[i]))
            if d <= 0:
                continue
            free[i] -= d
            nodes.append(i)
            devs.append(d)
            starts.append(-_ns(age))
            held += d
            g -= d
    order = np.argsort(np.array(nodes, dtype=np.int64), kind="stable")
    sn = np.array(nodes, dtype=np.int64)[order]
    return sn, np.array(devs, dtype=np.int64)[order], np.array(starts, dtype=np.int64)[order]


class RegionRun:
    """One region's inputs, core and collected series (see :func:`build_region`)."""

    def __init__(self, cfg, arrays, params, core, type_keys, energy_w, times, rate, lag_dist, n_inf_dev):
        self.cfg, self.arrays, self.params, self.core = cfg, arrays, params, core
        self.type_keys, self.power_w, self.times, self.rate = type_keys, energy_w, times, rate
        self.lag_dist = lag_dist
        self.inference_devices = n_inf_dev
        self.util_t: list = []
        self.util: list = []
        self.running: list = []  # inference copies running at each chunk end (Little's law)
        self.wall_s = 0.0


class RegionLayout:
    """What a region is before any request: cluster, training leases, costs, graph residency.

    Enough for the planner's snapshot at t = 0 (:func:`region_snapshot`), so a fleet can
    plan before building (and holding in memory) every region's requests.
    """

    def __init__(self, cfg: SimConfig, region: int):
        cfg = check_config(cfg)
        self.cfg, self.region = cfg, region
        rng = np.random.default_rng([cfg.seed, region])
        cl = build_cluster(regions=1, cells_per_region=cfg.cells_per_region, nodes_per_cell=cfg.nodes_per_cell,
                           devices_per_node=cfg.devices_per_node, mix=dict(cfg.mix),
                           seed=int(rng.integers(2**31)))
        self.keys = keys = cl.type_keys
        self.node_type = node_type = cl.node_type.astype(np.int64)
        self.node_dev = node_dev = np.diff(cl.node_device_offset).astype(np.int64)
        self.node_cell = cl.node_cell.astype(np.int64)
        self.times, self.energy = times, _ = class_costs(cfg, keys)
        self.graph_ok, self.graph_left = graph_residency(cfg, keys, node_type, region)
        C, T = times.shape
        for c in range(C):
            ok = np.isfinite(times[c])[node_type] & self.graph_ok[c]
            if not ok.any():
                from magnum_lib.base.validate import ParameterError
                if np.isfinite(times[c])[node_type].any():
                    raise ParameterError("graph_tenants", f"leaves no node where class {cfg.classes[c].name!r}'s "
                                                          f"static graph fits (pre_reserve)")
                raise ParameterError("classes", f"class {cfg.classes[c].name!r} has no eligible device in the cluster")
        # Training leases, then the rate that makes the offered load.
        self.training = _training(cfg, node_dev, rng)
        sh_node, sh_dev, _ = self.training
        self.train = np.bincount(sh_node, weights=sh_dev, minlength=cl.n_nodes).astype(np.int64)
        self.inf_dev = int(node_dev.sum() - self.train.sum())
        shares = np.array([c.share for c in cfg.classes])
        # Load: offered work where the cost model sends each class (``_load_times``), over the
        # devices training does not hold.
        self.rate = cfg.rate if cfg.rate > 0 else cfg.load * max(self.inf_dev, 1) / float(
            shares @ _load_times(cfg, times, node_type, node_dev - self.train))
        self.rng = rng
        self.stream_class, self.stream_type, self.stream_jobs = _streams(cfg, self, shares)


def graph_residency(cfg: SimConfig, keys, node_type: np.ndarray, region: int):
    """Per class and node: can the node serve the class without a graph load, and bytes left.

    Classes with a static graph (``RequestClass.graph``, a shipped manifest) under
    ``pre_reserve``: the graph layer reserves the graph (:func:`graph.reserve.reserve`) on
    each eligible type and admits it beside the tenants already packed on each node of that
    type (:mod:`magnum_lib.graph.residency`, one tenant draw per node: a node's devices host
    the same graphs); it serves the class only where the graph fits. Other classes (or
    without ``pre_reserve``, where the graph is loaded per request): every node, left -1.
    """
    n, C = len(node_type), len(cfg.classes)
    ok = np.ones((C, n), dtype=bool)
    left = np.full((C, n), -1, dtype=np.int64)
    if not cfg.pre_reserve:
        return ok, left
    from magnum_lib.graph.manifest import load_manifest, resolve_manifest
    from magnum_lib.graph.reserve import reserve
    from magnum_lib.graph.residency import graph_fits, tenant_reservations
    cat = default_catalog()
    resident = {}
    for c, rc in enumerate(cfg.classes):
        if not rc.graph:
            continue
        manifest = load_manifest(resolve_manifest(rc.graph))
        allowed = {cat.resolve(k) for k in rc.types} if rc.types else set(keys)
        for t, key in enumerate(keys):
            on_t = node_type == t
            if key not in allowed or not on_t.any():
                continue
            if key not in resident:  # the tenants of this type's nodes (one stream per region and type)
                resident[key] = tenant_reservations(int(on_t.sum()), cfg.graph_tenants, key,
                                                    cfg.graph_memory_pressure, seed=graph_seed(cfg, region, t))
            try:
                need = reserve(manifest, device=key).peak_memory_bytes
            except ValueError:  # larger than the device: no node of this type can hold it
                ok[c, on_t] = False
                continue
            fits, rest = graph_fits(need, resident[key], cat[key].memory_bytes)
            ok[c, on_t] = fits
            left[c, on_t] = rest
    return ok, left


def graph_seed(cfg: SimConfig, region: int, type_code: int) -> int:
    """Seed of the tenant graphs on region ``region``'s nodes of type ``type_code``."""
    return int(np.random.SeedSequence([cfg.seed, region, type_code, 7]).generate_state(1, np.uint64)[0] >> 1)


def _streams(cfg: SimConfig, lay: RegionLayout, shares: np.ndarray):
    """The planner's streams: (class, node type) pairs and how many jobs each asks for.

    Types, like the schedulers' own pools: under ``hetero_aware`` the class's types meeting
    its SLA (the cost model; its first type if none does), else every eligible type
    (type -1, "any", when that is every type present). A class's expected busy devices
    (rate x share x mean service, the mean over its types weighted by their devices) are
    split over its types in proportion to their devices. Jobs: ``hint_jobs`` per class, or
    (0) enough half nodes for ``hint_headroom`` x those devices.
    """
    from magnum_lib.planner.streams import jobs_for_devices
    times, node_type, C = lay.times, lay.node_type, len(cfg.classes)
    present = [int(t) for t in np.unique(node_type)]
    dev_t = np.bincount(node_type, weights=lay.node_dev, minlength=times.shape[1])
    streams = []  # (class, type, expected busy devices)
    for c in range(C):
        el = [t for t in present if np.isfinite(times[c, t])]
        if cfg.hetero_aware:
            types = ([t for t in el if times[c, t] <= cfg.classes[c].sla_s]
                     or [t for t in type_order(cfg, times, lay.energy, c) if t in el][:1])
        else:
            types = el
        w = dev_t[types] / dev_t[types].sum()
        busy = lay.rate * shares[c] * (float(w @ times[c, types]) + cfg.classes[c].setup_s * (not cfg.pre_reserve))
        if len(types) == len(present) and not cfg.hetero_aware:
            streams.append((c, -1, busy))  # any type
        else:
            streams.extend((c, t, busy * wt) for t, wt in zip(types, w, strict=True))
    s_cls, s_type, s_dev = (np.array(col) for col in zip(*streams, strict=True))
    s_cls = s_cls.astype(np.int64)
    if cfg.hint_jobs > 0:
        counts = np.bincount(s_cls, minlength=C)
        jobs = -(-cfg.hint_jobs // counts[s_cls])  # hint_jobs per class, split over its streams
    else:
        jobs = jobs_for_devices(np.array(s_dev) * cfg.hint_headroom, hint_demand(cfg), len(node_type))
    return s_cls, np.array(s_type, dtype=np.int64), jobs


def hint_demand(cfg: SimConfig) -> int:
    """Devices of one planner job of a stream: half a node (nodes with that much free qualify)."""
    return max(1, cfg.devices_per_node // 2)


def _requests(cfg: SimConfig, lay: RegionLayout):
    """Draw the requests: arrival times (s), classes (int8) and the two service multipliers (mean 1, float32)."""
    rng, C = lay.rng, lay.times.shape[0]
    arr = _arrivals(cfg, lay.rate, rng)
    R = arr.size
    if R >= 2**30 - 1 or C > 127:  # the per-copy arrays hold copy ids (2 per request) in int32, classes in int8
        from magnum_lib.base.validate import ParameterError
        raise ParameterError("duration_s" if C <= 127 else "classes",
                             f"gives {R} requests and {C} classes; at most 2^30 - 2 and 127")
    from magnum_lib.workload import categorical
    shares = np.array([c.share for c in cfg.classes])
    cls = categorical(rng, shares, R)  # = rng.choice(C, size=R, p=shares), in int8 blocks
    # service multipliers (mean 1), drawn in float32 as they are stored
    if cfg.service == "exp":
        noise = rng.standard_exponential(R, dtype=np.float32)
        hnoise = rng.standard_exponential(R, dtype=np.float32)
    else:
        s2 = math.log1p(cfg.service_cv ** 2)
        noise, hnoise = rng.standard_normal(R, dtype=np.float32), rng.standard_normal(R, dtype=np.float32)
        for x in (noise, hnoise):  # in place: no R-sized temporaries (the same float32 operations)
            x *= np.float32(math.sqrt(s2))
            x -= np.float32(s2 / 2)
            np.exp(x, out=x)
    return arr, cls, noise, hnoise


def _pools(cfg: SimConfig, lay: RegionLayout) -> dict:
    """The pools: per scheduler scope and class, node lists tried in order (node ids), with hash rings."""
    times, energy, node_type = lay.times, lay.energy, lay.node_type
    n, C, S = len(node_type), times.shape[0], cfg.schedulers
    scopes = [np.arange(n)] * S if cfg.scope == "region" else [np.flatnonzero(lay.node_cell == s) for s in range(S)]
    pool_nodes, pool_off, cpool, cpool_off = [], [0], [], [0]
    ring_key, ring_node, ring_off = [], [], [0]
    cache = {}

    def pool_for(s, types, c):
        graph = -1 if lay.graph_ok[c].all() else c  # nodes where class c's static graph fits
        key = (s if cfg.scope == "cell" else 0, tuple(types), graph)
        if key not in cache:
            nodes = scopes[s][np.isin(node_type[scopes[s]], types)]
            if graph >= 0:
                nodes = nodes[lay.graph_ok[c][nodes]]
            cache[key] = len(pool_off) - 1
            pool_nodes.append(nodes)
            pool_off.append(pool_off[-1] + len(nodes))
            if cfg.policy == "hash":
                k_, n_ = hash_ring(nodes, cfg.ring_vnodes, salt=len(pool_off))  # the regional layer's ring
            else:
                k_, n_ = np.zeros(0, np.int64), np.zeros(0, np.int64)
            ring_key.append(k_)
            ring_node.append(n_)
            ring_off.append(ring_off[-1] + len(k_))
        return cache[key]

    for s in range(S):
        for c in range(C):
            order = type_order(cfg, times, energy, c)
            if cfg.hetero_aware:  # the cost model: types meeting the SLA first, then the rest
                meets = sorted(t for t in order if times[c, t] <= cfg.classes[c].sla_s)
                rest = sorted(t for t in order if times[c, t] > cfg.classes[c].sla_s)
                groups = [g for g in (meets, rest) if g]
            else:  # one size fits all: any eligible device
                groups = [sorted(order)]
            for g in groups:
                cpool.append(pool_for(s, g, c))
            cpool_off.append(len(cpool))
    return dict(pool_nodes=np.concatenate(pool_nodes).astype(np.int64), pool_off=np.array(pool_off, dtype=np.int64),
                cpool=np.array(cpool, dtype=np.int64), cpool_off=np.array(cpool_off, dtype=np.int64),
                ring_key=np.concatenate(ring_key).astype(np.int64), ring_node=np.concatenate(ring_node).astype(np.int64),
                ring_off=np.array(ring_off, dtype=np.int64))


def _node_tables(cfg: SimConfig, lay: RegionLayout, cat) -> dict:
    """Service times and setup per class (ns), hedge targets per (class, type), shards and checkpoint cost per node (ns)."""
    times, node_type = lay.times, lay.node_type
    n, (C, T) = len(node_type), times.shape
    service = np.where(np.isfinite(times), np.rint(times * NS_PER_S), -1).astype(np.int64)
    setup = np.array([0 if cfg.pre_reserve else _ns(c.setup_s) for c in cfg.classes], dtype=np.int64)
    # Hedge targets per (class, type): the nodes of the type that can serve the class (for a
    # static-graph class, only those where the graph is resident: ``lay.graph_ok``).
    ct_nodes = [np.flatnonzero((node_type == t) & lay.graph_ok[c]) for c in range(C) for t in range(T)]
    type_nodes = np.concatenate(ct_nodes).astype(np.int64)
    type_off = np.concatenate([[0], np.cumsum([len(x) for x in ct_nodes])]).astype(np.int64)
    node_shard_off = np.concatenate([[0], np.cumsum(np.bincount(lay.training[0], minlength=n))]).astype(np.int64)
    mem = np.array([cat[k].memory_bytes for k in lay.keys], dtype=np.float64)
    ckpt = np.rint(checkpoint_s(mem[node_type] * cfg.training_memory_fraction, cfg.checkpoint_bandwidth) * NS_PER_S)
    if cfg.preempt == "kill":  # evicted at once: no checkpoint delay, the work since the last is lost
        ckpt[:] = 0
    return dict(node_ckpt_ns=ckpt.astype(np.int64), service=service.ravel(), cls_setup=setup,
                type_nodes=type_nodes, type_off=type_off, node_shard_off=node_shard_off)


def _gossip_lag(cfg: SimConfig, n: int, rng) -> tuple[np.ndarray, int]:
    """Gossip: rounds for a node's update to reach the scheduler (per node), and the snapshot ring's length."""
    lag_dist = np.zeros(1, dtype=np.int64)
    ring_m = 2
    if cfg.view == "gossip":
        from magnum_lib.gossip.dissemination import simulate
        g = simulate(nodes=max(2, min(n, 5000)), fanout=min(cfg.fanout, max(1, min(n, 5000) - 1)),
                     mode="pushpull", loss=cfg.gossip_loss, seed=int(rng.integers(2**31)), max_rounds=1000)
        rounds = g.infection_round[1:]
        lag_dist = np.where(rounds < 0, 1000, rounds).astype(np.int64)
        ring_m = int(min(64, lag_dist.max() + 2))
    return lag_dist, ring_m


def _core_arrays(cfg: SimConfig, lay: RegionLayout, requests, tables: dict, ring_m: int, part: np.ndarray) -> dict:
    """The core's arrays (contract.ARRAYS): node state, queues, slots, per request and per copy (times in ns)."""
    arr, cls, noise, hnoise = requests
    node_dev, node_type, train = lay.node_dev, lay.node_type, lay.train
    sh_node, sh_dev, sh_start = lay.training
    n, R, (C, T), S = len(node_type), arr.size, lay.times.shape, cfg.schedulers
    z = lambda k, dt=np.int64: np.zeros(k, dtype=dt)  # noqa: E731
    cls_rank, NR = dispatch_classes([c.priority for c in cfg.classes])
    slot_off = np.concatenate([[0], np.cumsum(node_dev)]).astype(np.int64)
    arrays = dict(
        node_dev=node_dev, node_type=node_type, node_ckpt_ns=tables["node_ckpt_ns"],
        run=z(n), qlen=z(n), train=train.copy(), hold=z(n), inflight=z(n),
        view_busy=z(n), view_train=train.copy(), view_time=z(n), view_ver=np.full(n, -1, dtype=np.int64),
        snap_busy=z(n * ring_m), snap_train=np.tile(train, ring_m), lag=z(n), part=part,
        own=z(S * n), own_tick=np.full(S * n, -1, dtype=np.int64),
        # the node's queues: one FIFO per dispatcher class (dispatch_classes), per node
        nq_head=np.full(n * NR, -1, dtype=np.int64), nq_tail=np.full(n * NR, -1, dtype=np.int64), nq_len=z(n * NR),
        # the node's devices as slots (the pause rule's device order): copy and class on each
        slot_off=slot_off, slot_copy=np.full(int(slot_off[-1]), -1, dtype=np.int32),
        slot_rank=np.full(int(slot_off[-1]), -1, dtype=np.int64),
        # per request and per copy: the narrowest types their ranges allow (ids < 2^31,
        # classes < 128, attempts <= 10^6; service multipliers in float32)
        arr=_to_ns(arr), cls=cls, noise=noise, hnoise=hnoise,
        status=z(R, np.int8), start=np.full(R, -1, dtype=np.int64), finish=np.full(R, -1, dtype=np.int64),
        node=np.full(R, -1, dtype=np.int32), attempts=z(R, np.int32), comp=np.zeros((R, 6), dtype=np.int64),
        ready=z(R), expiry=z(R),
        cstate=z(2 * R, np.int8), cnode=np.full(2 * R, -1, dtype=np.int32), cstart=z(2 * R), cborrow=z(2 * R, np.int8),
        cend=z(2 * R), cq_next=np.full(2 * R, -1, dtype=np.int32), cslot=z(2 * R, np.int8),
        **_pools(cfg, lay),
        hint_off=z(C + 1), hint_nodes=np.full(max(n, C * cfg.hint_jobs), -1, dtype=np.int64),
        shard_node=sh_node, shard_dev=sh_dev, shard_start=sh_start, shard_state=z(len(sh_node)),
        node_shard_off=tables["node_shard_off"],
        service=tables["service"], cls_prio=np.array([c.priority for c in cfg.classes], dtype=np.int64), cls_rank=cls_rank,
        cls_setup=tables["cls_setup"], type_nodes=tables["type_nodes"], type_off=tables["type_off"],
        cnt=z(contract.N_COUNTERS), busy_type=z(T), skip=np.full(S * C, -1, dtype=np.int64), trace=np.full((contract.TRACE_ROWS, 3), -1, dtype=np.int64),
    )
    if cfg.view != "fresh":
        arrays["view_busy"][:] = 0
    return arrays


def _core_params(cfg: SimConfig, arrays: dict, T: int, ring_m: int, rng) -> list:
    """The core's parameters in contract.PARAMS order (times in ns; the core's seed drawn from ``rng``)."""
    n, R, C, S = arrays["node_dev"].size, arrays["arr"].size, len(cfg.classes), cfg.schedulers
    NR = dispatch_classes([c.priority for c in cfg.classes])[1]
    trace_id = cfg.trace_request if cfg.trace_request >= 0 else R // 2
    by_name = dict(n_nodes=n, n_req=R, n_types=T, n_cls=C, n_sched=S, round_ns=max(1, _ns(cfg.round_s)),
                   rtt_half_ns=_ns(cfg.rtt_s / 2), c_round_ns=_ns(cfg.c_round_s), c_dec_ns=_ns(cfg.c_decision_s),
                   c_node_ns=_ns(cfg.c_node_s), c_val_ns=_ns(cfg.c_validate_s), quantum_ns=_ns(cfg.quantum_s),
                   policy=("random", "scan", "two-choices", "hash", "hints").index(cfg.policy),
                   view_mode=("fresh", "round", "gossip").index(cfg.view),
                   preempt={"none": 0, "kill": 1, "checkpoint": 1, "micro": 2}[cfg.preempt],
                   micro_ns=_ns(cfg.micro_preempt_s), hedge_milli=int(round(cfg.hedge_factor * 1000)),
                   node_queue=cfg.node_queue, lease_ns=_ns(cfg.lease_timeout_s),
                   max_attempts=cfg.max_attempts, gossip_ns=max(1, _ns(cfg.gossip_interval_s)), ring_m=ring_m,
                   trace_id=trace_id, ckpt_interval_ns=max(1, _ns(cfg.checkpoint_interval_s)), train_prio=0,
                   draws=cfg.draws, scan_limit=cfg.scan_limit, piggyback=int(cfg.piggyback),
                   seed=int(rng.integers(2**62)),
                   part_start_ns=_ns(cfg.partition_start_s) if cfg.partition_start_s >= 0 else -1,
                   part_end_ns=_ns(cfg.partition_start_s + cfg.partition_s) if cfg.partition_start_s >= 0 else -1,
                   n_rank=NR, resume_ns=_ns(cfg.micro_resume_s), part_leases=int(cfg.partition_leases))
    return [by_name[k] for k in contract.PARAMS]


@on_small_pages  # the per-request arrays (about 150 B a request): see sim.pages
def build_region(cfg: SimConfig, region: int = 0, backend: str | None = None,
                 layout: RegionLayout | None = None) -> RegionRun:
    """Build region ``region`` of ``cfg``: cluster, requests, training, views, the core.

    ``layout``: its :class:`RegionLayout` if already made (the fleet planner's t = 0 snapshot).
    Draws from the layout's generator in a fixed order: requests, the gossip seed, the
    partition, the core's seed, the nodes' lags.
    """
    lay = layout if layout is not None else RegionLayout(cfg, region)
    cfg, rng, keys = lay.cfg, lay.rng, lay.keys
    n = len(lay.node_type)
    cat = default_catalog()
    C, T = lay.times.shape
    requests = _requests(cfg, lay)
    tables = _node_tables(cfg, lay, cat)
    lag_dist, ring_m = _gossip_lag(cfg, n, rng)
    part = np.zeros(n, dtype=np.int64)
    if cfg.partition_fraction > 0:
        part[rng.permutation(n)[: int(round(cfg.partition_fraction * n))]] = 1
    arrays = _core_arrays(cfg, lay, requests, tables, ring_m, part)
    params = _core_params(cfg, arrays, T, ring_m, rng)
    arrays["lag"][:] = rng.choice(lag_dist, size=n)
    core = core_module(backend).Core(arrays, np.array(params, dtype=np.int64))
    power = np.array([cat[k].tdp_w for k in keys])
    run = RegionRun(cfg, arrays, params, core, keys, power, lay.times, lay.rate, lag_dist, lay.inf_dev)
    run.energy = lay.energy  # joules per request by (class, type): the summary's power per type
    run.rng = rng
    run.hint_types = np.array([type_order(cfg, lay.times, lay.energy, c)[0] for c in range(C)], dtype=np.int64)
    run.node_cell = lay.node_cell
    run.layout = lay
    run.t = 0
    run.plan_times = []  # when hints were applied (ns)
    if layout is not None and getattr(layout, "hints", None) is not None:
        apply_hints(run, layout.hints)
    return run


def region_snapshot(obj) -> dict:
    """What a region sends the planner: free devices per node (with its type, cell, size) and its streams.

    ``obj``: a :class:`RegionRun` (free = devices - inference - training - held) or a
    :class:`RegionLayout` (t = 0: devices - training). Compact (int16 per node) and picklable.
    """
    lay = obj.layout if isinstance(obj, RegionRun) else obj
    if isinstance(obj, RegionRun):
        arrays = obj.arrays
        free = arrays["node_dev"] - arrays["run"] - arrays["train"] - arrays["hold"]
    else:
        free = lay.node_dev - lay.train
    return dict(region=lay.region, free=np.maximum(free, 0).astype(np.int16), node_type=lay.node_type.astype(np.int8),
                node_cell=lay.node_cell.astype(np.int32), node_dev=lay.node_dev.astype(np.int16),
                type_keys=tuple(lay.keys), stream_class=lay.stream_class, stream_type=lay.stream_type,
                stream_jobs=lay.stream_jobs, n_classes=len(lay.cfg.classes), job_demand=hint_demand(lay.cfg),
                priority=np.array([c.priority for c in lay.cfg.classes], dtype=np.int64)[lay.stream_class])


def plan_hints(snaps: list, seed: int, t_ns: int = 0) -> list:
    """The global planner over the union of ``snaps`` (one per region): per region, per class, hinted nodes.

    Every region's streams are pooled (jobs add up per class) and placed at once on the
    union snapshot (cells of every region as groups) by :func:`planner.streams.stream_hints`;
    a region's hints for a class are the nodes of that region its jobs got, so a region with
    more free nodes of a class's type receives a larger share of the class's hints.
    """
    from magnum_lib.planner.streams import stream_hints
    keys = snaps[0]["type_keys"]
    if any(sn["type_keys"] != keys for sn in snaps):
        from magnum_lib.base.validate import ParameterError
        raise ParameterError("mix", "regions of one plan must have the same device types")
    sizes = [len(sn["free"]) for sn in snaps]
    offs = np.concatenate([[0], np.cumsum(sizes)])
    cells = [int(sn["node_cell"].max()) + 1 for sn in snaps]
    goff = np.concatenate([[0], np.cumsum(cells)])
    group = np.concatenate([sn["node_cell"].astype(np.int64) + goff[k] for k, sn in enumerate(snaps)])
    jobs = np.sum([sn["stream_jobs"] for sn in snaps], axis=0)
    per_stream, _ = stream_hints(
        group, np.concatenate([sn["node_type"] for sn in snaps]).astype(np.int64),
        np.concatenate([sn["node_dev"] for sn in snaps]).astype(np.int64),
        np.concatenate([sn["free"] for sn in snaps]).astype(np.int64), np.full(int(goff[-1]), 100.0),
        jobs, snaps[0]["stream_type"], snaps[0]["priority"], snaps[0]["job_demand"],
        seed=seed, type_keys=keys, time_s=t_ns / NS_PER_S)
    scls = snaps[0]["stream_class"]
    per_class = [np.concatenate([per_stream[i] for i in np.flatnonzero(scls == c)] or [np.zeros(0, np.int64)])
                 for c in range(snaps[0]["n_classes"])]
    return [[np.sort(nodes[(nodes >= offs[k]) & (nodes < offs[k + 1])] - offs[k]) for nodes in per_class]
            for k in range(len(snaps))]


def plan_seed(cfg: SimConfig, regions, t_ns: int) -> int:
    """The planner's tie-breaking seed for one plan of ``regions`` at ``t_ns`` (same in serial and Dask)."""
    return int(np.random.SeedSequence([cfg.seed, t_ns, *regions]).generate_state(1, np.uint64)[0] >> 1)


def apply_hints(run, hints: list) -> None:
    """Write per-class hinted nodes into the core's ``hint_off``/``hint_nodes`` (in place).

    Nodes that cannot serve the class (ineligible type, static graph not resident) are
    dropped: a hint is advice, the region keeps what it can use.
    """
    if not isinstance(run, RegionRun):  # a layout: kept until the region is built
        run.hints = hints
        return
    arrays, lay = run.arrays, run.layout
    T = len(run.type_keys)
    cap = len(arrays["hint_nodes"])
    off = 0
    for c, nodes in enumerate(hints):
        nodes = np.asarray(nodes, dtype=np.int64)
        ok = (arrays["service"][c * T + arrays["node_type"][nodes]] >= 0) & lay.graph_ok[c][nodes]
        nodes = nodes[ok][: cap - off]
        arrays["hint_off"][c] = off
        arrays["hint_nodes"][off:off + len(nodes)] = nodes
        off += len(nodes)
    arrays["hint_off"][len(hints)] = off
    arrays["hint_nodes"][off:] = -1
    run.plan_times.append(run.t)


def _plan_hints(run: RegionRun, t_ns: int) -> None:
    """The planner (layer 1) replans this region alone from its snapshot: its chosen nodes become hints."""
    apply_hints(run, plan_hints([region_snapshot(run)], plan_seed(run.cfg, [run.layout.region], t_ns), t_ns)[0])


@functools.lru_cache(maxsize=4096)
def _bloom_params(n: int, fp: float) -> tuple[int, int]:
    from magnum_lib.gossip.bloom import optimal_params
    return optimal_params(n, fp)


def _digest(run: RegionRun, t_ns: int) -> None:
    """The Bloom digest of full nodes reaches the scheduler: flagged nodes look full, others not."""
    from magnum_lib.gossip.bloom import member_flags

    arrays, cfg = run.arrays, run.cfg
    is_full = arrays["node_dev"] - arrays["run"] - arrays["train"] - arrays["hold"] <= 0
    # a real filter of the full nodes: members flagged, the others at its false-positive rate
    flagged = member_flags(is_full, *_bloom_params(max(int(np.count_nonzero(is_full)), 1), cfg.bloom_fp),
                           seed=int(t_ns % (2**31)))
    no_free = arrays["node_dev"] - arrays["view_train"]
    vb = arrays["view_busy"]
    p = run.params
    ps, pe = p[contract.PARAMS.index("part_start_ns")], p[contract.PARAMS.index("part_end_ns")]
    if ps <= t_ns < pe:  # the partitioned nodes' digest does not arrive
        reach = arrays["part"] == 0
        vb[:] = np.where(reach & flagged, np.maximum(vb, no_free),
                         np.where(reach & ~flagged, np.minimum(vb, no_free - 1), vb))
        arrays["view_time"][reach] = t_ns
    else:
        vb[:] = np.where(flagged, np.maximum(vb, no_free), np.minimum(vb, no_free - 1))
        arrays["view_time"][:] = t_ns


def _chunk_ns(cfg: SimConfig) -> int:
    return _ns(cfg.digest_interval_s) if cfg.digest_interval_s > 0 else max(_ns(cfg.duration_s) // 200, 1)


def advance_region(run: RegionRun, t_stop: int, progress=None) -> int:
    """Advance ``run`` chunk by chunk (digest, lags, samples) until ``t_stop`` or its end; return its time.

    Chunks keep one grid (every ``digest_interval``) whatever ``t_stop`` is, so stopping to
    exchange with the planner does not change the run: it stops at the first chunk
    boundary at or after ``t_stop``.
    """
    cfg, arrays = run.cfg, run.arrays
    end = _ns(cfg.duration_s)
    chunk = _chunk_ns(cfg)
    if not hasattr(run, "dev_by_type"):
        run.dev_by_type = np.bincount(arrays["node_type"], weights=arrays["node_dev"], minlength=len(run.type_keys))
    start = time.perf_counter()
    t = run.t
    while t < min(t_stop, end):
        t = min(t + chunk, end)
        run.core.advance(t)
        if cfg.view == "gossip":
            if cfg.digest_interval_s > 0:
                _digest(run, t)
            arrays["lag"][:] = run.rng.choice(run.lag_dist, size=len(arrays["lag"]))
        run.running.append(int(arrays["run"].sum()))
        used = arrays["run"] + arrays["train"] + arrays["hold"]
        run.util_t.append(t)
        run.util.append(np.bincount(arrays["node_type"], weights=used, minlength=len(run.type_keys)) / run.dev_by_type)
        if progress is not None:
            progress(t / end)
    run.t = t
    run.wall_s += time.perf_counter() - start
    return t


def next_plan_ns(cfg: SimConfig, t_ns: int) -> int:
    """When the planner plans next after planning at ``t_ns`` (every ``planner_interval``)."""
    return t_ns + _ns(cfg.planner_interval_s)


def run_region(run: RegionRun, progress=None) -> RegionRun:
    """Advance ``run`` to the end of its duration, this region alone.

    Policy "hints": the planner plans this region at t = 0 from its snapshot and again at
    the first chunk boundary at or after every ``planner_interval`` (30 s by default, C8:
    runs shorter than that keep the t = 0 hints throughout).
    """
    cfg = run.cfg
    end = _ns(cfg.duration_s)
    while run.t < end:
        stop = end
        if cfg.policy == "hints":
            _plan_hints(run, run.t)
            stop = next_plan_ns(cfg, run.t)
        advance_region(run, stop, progress)
    return run
