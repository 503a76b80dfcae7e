"""Summaries of a run: decision latency and its parts, SLA, utilization, leases, energy, trace."""
from __future__ import annotations

import numpy as np

from magnum_lib.engine.distributions import NS_PER_S
from magnum_lib.sim import contract
from magnum_lib.sim.pages import on_small_pages

COMPONENTS = ("round_wait", "scheduling", "rtt", "validation", "retries", "dispatch_wait")
TRACE_EVENTS = ("arrive", "round", "placed", "no_fit_in_view", "lease_at_node", "refused", "queued",
                "start", "hedge", "finish", "dropped", "paused", "resumed")
_Q = (50, 95, 99, 99.9)
_QNAMES = ("p50", "p95", "p99", "p999")


def _pct_ms(ns) -> dict:
    if len(ns) == 0:
        return {k: None for k in _QNAMES}
    v = np.percentile(ns, _Q) / 1e6
    return {k: float(x) for k, x in zip(_QNAMES, v, strict=True)}


#: Rows of the latency breakdown kept per region (every k-th started request; means use all).
BREAKDOWN_SAMPLE = 200_000


#: Requests per block of :func:`digest`: its temporaries (a few MB) are reused, block after
#: block, where whole-run masks and gathers would each fault in a fresh 10-70 MB array.
_BLOCK = 1 << 18
_I32 = 2**31 - 1


class _Latencies:
    """``n`` latencies (ns), filled block by block: int32 while they fit (half the fresh
    pages of int64, which this output's cost mostly is), widened to int64 at the first that
    does not. Percentiles and means read them as float64 either way: the same figures."""

    def __init__(self, n: int):
        self.out, self.i = np.empty(n, np.int32), 0

    def put(self, v: np.ndarray) -> None:
        if self.out.dtype == np.int32 and len(v) and (v.max() > _I32 or v.min() < -_I32 - 1):
            wide = np.empty(len(self.out), np.int64)
            wide[: self.i] = self.out[: self.i]
            self.out = wide
        self.out[self.i: self.i + len(v)] = v
        self.i += len(v)


@on_small_pages  # its outputs are 4-8 B a request: see sim.pages
def digest(run) -> dict:
    """What the summary needs from one region, compact (a few bytes per request) and picklable.

    A Dask worker returns this for its region; :func:`summarize` pools digests. One pass
    over the requests in blocks of :data:`_BLOCK` (the same values as whole-array numpy).
    """
    arrays = run.arrays
    status, start, arr, finish, cls, node, comp = (arrays[k] for k in ("status", "start", "arr", "finish", "cls",
                                                                   "node", "comp"))
    R = len(status)
    C, T = len(run.cfg.classes), len(run.type_keys)
    n_started = int(np.count_nonzero(start >= 0))
    n_done = int(np.count_nonzero(status == contract.ST_DONE))
    # every step-th started request (uniform over the run) goes to the breakdown sample
    step = -(-n_started // BREAKDOWN_SAMPLE) if n_started else 1
    dl, e2e, e2e_cls = _Latencies(n_started), _Latencies(n_done), np.empty(n_done, np.int8)
    sample_idx = []
    # requests started per (node, class), folded by node type below: the power each type drew
    per_node = np.zeros(len(arrays["node_dev"]) * C, dtype=np.int64)
    cls_count = np.zeros(C, dtype=np.int64)
    comp_sum = np.zeros(comp.shape[1], dtype=np.int64)
    dropped = in_flight = 0
    i_s = i_d = 0  # started and done requests before the block
    tmp, buf = np.empty(min(_BLOCK, R), np.int64), np.empty(min(_BLOCK, R), np.int64)
    for lo in range(0, R, _BLOCK):
        sl = slice(lo, min(lo + _BLOCK, R))
        b = sl.stop - lo
        s, a, st, c = start[sl], arr[sl], status[sl], cls[sl]
        was = s >= 0
        k = int(np.count_nonzero(was))
        np.subtract(s, a, out=tmp[:b])
        dl.put(np.compress(was, tmp[:b], out=buf[:k]))
        ok = st == contract.ST_DONE
        kd = int(np.count_nonzero(ok))
        np.subtract(finish[sl], a, out=tmp[:b])
        e2e.put(np.compress(ok, tmp[:b], out=buf[:kd]))
        np.compress(ok, c, out=e2e_cls[i_d:i_d + kd])
        nd = node[sl]
        ran = was & (nd >= 0)
        per_node += np.bincount(nd[ran] * np.int32(C) + c[ran], minlength=len(per_node))
        cls_count += np.bincount(c, minlength=C)
        # all rows less the few not started: no gather of the started ones (einsum: 4x sum(axis=0))
        comp_sum += np.einsum("ij->j", comp[sl]) - np.einsum("ij->j", comp[sl][~was])
        first = (-i_s) % step  # the block's first started request whose rank is a multiple of step
        if first < k:
            sample_idx.append(np.flatnonzero(was)[first::step] + lo)
        dropped += int(np.count_nonzero(st == contract.ST_DROP))
        in_flight += int(np.count_nonzero((st == contract.ST_WAIT) | (st == contract.ST_RUN)))
        i_s, i_d = i_s + k, i_d + kd
    class_type = np.zeros((T, C), dtype=np.int64)
    np.add.at(class_type, arrays["node_type"], per_node.reshape(-1, C))
    class_type = np.ascontiguousarray(class_type.T)
    sample = comp[np.concatenate(sample_idx) if sample_idx else np.zeros(0, np.int64)]
    return {
        "cfg": run.cfg, "type_keys": run.type_keys, "power_w": run.power_w, "rate": run.rate,
        "class_type": class_type, "times": run.times, "energy": run.energy,
        "n_nodes": int(run.params[0]), "trace_id": int(run.params[contract.PARAMS.index("trace_id")]),
        "dl": dl.out, "e2e": e2e.out, "e2e_cls": e2e_cls,
        "cls_count": cls_count,
        "comp_sum": comp_sum, "comp_n": n_started, "comp_sample": sample,
        "n": R, "done": n_done, "dropped": dropped,
        "in_flight": in_flight, "started": n_started,
        "cnt": arrays["cnt"].copy(), "busy_type": arrays["busy_type"].copy(),
        "dev_by_type": np.bincount(arrays["node_type"], weights=arrays["node_dev"], minlength=len(run.type_keys)),
        "util_t": list(run.util_t), "util": np.array(run.util),
        "waiting_shards": int((arrays["shard_state"] == 1).sum()),
        "lag_mean": float(np.mean(run.lag_dist)), "trace": arrays["trace"].copy(),
        "backend": "python" if run.core.__class__.__module__.endswith("_ref") else "compiled",
    }


def _power_per_type(runs) -> np.ndarray:
    """Mean power (W) each device type drew while busy: the cost model's joules over its
    seconds, weighted by the requests each (class, type) started (the TDP where the table
    is TDP x time, or where a type started nothing)."""
    n = sum(r["class_type"] for r in runs)
    t, e = runs[0]["times"], runs[0]["energy"]
    finite = np.isfinite(t) & np.isfinite(e)
    seconds = np.where(finite, n * np.where(finite, t, 0.0), 0.0).sum(axis=0)
    joules = np.where(finite, n * np.where(finite, e, 0.0), 0.0).sum(axis=0)
    tdp = np.asarray(runs[0]["power_w"], dtype=float)
    return np.where(seconds > 0, joules / np.where(seconds > 0, seconds, 1.0), tdp)


@on_small_pages  # the percentiles partition copies of the latencies
def summarize(digests, wall_s: float) -> dict:
    """One JSON-ready dict for the digests of every region (counts add, samples pool)."""
    runs = [d if isinstance(d, dict) else digest(d) for d in digests]
    cfg = runs[0]["cfg"]
    keys = runs[0]["type_keys"]
    cnt = sum(r["cnt"] for r in runs)
    dev = sum(r["dev_by_type"] for r in runs)
    busy = sum(r["busy_type"] for r in runs)
    energy = float(busy / NS_PER_S @ _power_per_type(runs))
    n = sum(r["n"] for r in runs)
    done = sum(r["done"] for r in runs)
    dropped = sum(r["dropped"] for r in runs)
    trace = [{"t_ms": float(t / 1e6), "event": TRACE_EVENTS[e], "node": int(nd)}
             for t, e, nd in runs[0]["trace"] if e >= 0]
    sim_s = cfg.duration_s
    return {
        "preset_config": {k: v for k, v in cfg.to_dict().items() if k != "classes"},
        "backend": runs[0]["backend"],
        "regions": len(runs),
        "nodes": int(sum(r["n_nodes"] for r in runs)),
        "devices": int(dev.sum()),
        "rate_per_region": float(np.mean([r["rate"] for r in runs])),
        **_latency_summary(runs, cfg),
        **_utilization_summary(runs, keys, busy, dev, cfg.duration_s * NS_PER_S),
        **_counter_summary(cnt, runs),
        "energy_j": energy,
        "energy_per_request_j": energy / max(done, 1),
        "requests": {"total": n, "done": done, "dropped": dropped,
                     "dropped_reason": {"retries_exhausted": dropped},
                     "in_flight": sum(r["in_flight"] for r in runs), "started": sum(r["started"] for r in runs)},
        "trace": {"request": runs[0]["trace_id"], "region": 0, "events": trace},
        "events": int(cnt[contract.K_EVENTS]),
        "wall_s": float(wall_s),
        "sim_s": float(sim_s),
        "requests_per_wall_s": float(n / wall_s) if wall_s > 0 else None,
    }


def _latency_summary(runs, cfg) -> dict:
    """Decision latency (ms, with its breakdown), end-to-end latency per class (ms) and SLA attainment."""
    # pooled samples; one region's are used as they are (only read below): no 70 MB copy
    cat = lambda name: runs[0][name] if len(runs) == 1 else np.concatenate([r[name] for r in runs])  # noqa: E731
    dl, e2e, e2e_cls = cat("dl"), cat("e2e"), cat("e2e_cls")
    sample = cat("comp_sample")
    comp_sum, comp_n = sum(r["comp_sum"] for r in runs), sum(r["comp_n"] for r in runs)
    breakdown = {name: {"mean": float(comp_sum[k] / comp_n / 1e6) if comp_n else None,
                        **_pct_ms(sample[:, k])} for k, name in enumerate(COMPONENTS)}
    sla, e2e_ms = {}, {}
    cls_count = sum(r["cls_count"] for r in runs)
    for c, rc in enumerate(cfg.classes):
        mine = e2e[e2e_cls == c]
        sla[rc.name] = float((mine <= round(rc.sla_s * NS_PER_S)).sum() / cls_count[c]) if cls_count[c] else None
        e2e_ms[rc.name] = _pct_ms(mine)
    return {"decision_latency_ms": {**_pct_ms(dl), "mean": float(dl.mean() / 1e6) if len(dl) else None,
                                    "breakdown": breakdown},
            "end_to_end_ms": e2e_ms,
            "sla_attainment": sla}


def _utilization_summary(runs, keys, busy, dev, horizon_ns) -> dict:
    """Inference utilization per device type over ``horizon_ns`` (ns), with training, and its series (s)."""
    util_series = (np.mean([r["util"] for r in runs], axis=0) if len(runs[0]["util"])
                   else np.zeros((0, len(keys))))
    return {
        "utilization": {k: float((busy[t] + 0) / (dev[t] * horizon_ns)) if dev[t] else None
                        for t, k in enumerate(keys)},
        "utilization_with_training": {k: float(util_series[:, t].mean()) if len(util_series) else None
                                      for t, k in enumerate(keys)},
        "utilization_series": {"t_s": [float(t / NS_PER_S) for t in runs[0]["util_t"]],
                               **{k: [float(x) for x in util_series[:, t]] for t, k in enumerate(keys)}},
    }


def _counter_summary(cnt, runs) -> dict:
    """The counters ``cnt`` as leases, preemptions, hedges (times in s) and staleness (ms)."""
    leases = int(cnt[contract.K_LEASES])
    refused = int(cnt[contract.K_REFUSED] + cnt[contract.K_EXPIRED])
    ages = cnt[contract.K_VIEW_SAMPLES]
    return {
        "leases": {"issued": leases, "accepted": int(cnt[contract.K_ACCEPT]),
                   "accepted_micro_preempt": int(cnt[contract.K_ACCEPT_MICRO]),
                   "accepted_checkpoint_preempt": int(cnt[contract.K_ACCEPT_CKPT]), "queued": int(cnt[contract.K_QUEUED]),
                   "refused_insufficient_devices": int(cnt[contract.K_REFUSED]), "refused_expired": int(cnt[contract.K_EXPIRED]),
                   "in_flight": int(leases - cnt[contract.K_ACCEPT] - cnt[contract.K_ACCEPT_MICRO] - cnt[contract.K_ACCEPT_CKPT]
                                    - refused),
                   "no_fit_in_view": int(cnt[contract.K_NOFIT]), "rounds": int(cnt[contract.K_ROUNDS])},
        "lease_failure_rate": float(refused / leases) if leases else 0.0,
        "preemptions": {"micro": int(cnt[contract.K_ACCEPT_MICRO]), "checkpoint": int(cnt[contract.K_EVICT]),
                        "resumed": int(cnt[contract.K_RESUMED]),
                        "waiting_to_resume": int(sum(r["waiting_shards"] for r in runs)),
                        "checkpoint_s": float(cnt[contract.K_CKPT_NS] / NS_PER_S),
                        "lost_work_s": float(cnt[contract.K_LOST_NS] / NS_PER_S),
                        "micro_paused_s": float(cnt[contract.K_MICRO_NS] / NS_PER_S),
                        # inference copies paused for a more urgent class (micro-preemption,
                        # the dispatcher's pause rule) and restarted after it (with their remaining work)
                        "inference_paused": int(cnt[contract.K_PAUSED]), "inference_resumed": int(cnt[contract.K_UNPAUSED])},
        "hedges": {"issued": int(cnt[contract.K_HEDGES]), "no_free_peer": int(cnt[contract.K_HEDGE_NONE]),
                   "won": int(cnt[contract.K_HEDGE_WON]), "extra_device_s": float(cnt[contract.K_HEDGE_NS] / NS_PER_S)},
        "staleness_ms": {"mean_view_age": float(cnt[contract.K_VIEW_AGE_NS] / ages / 1e6) if ages else 0.0,
                         "gossip_lag_rounds_mean": float(runs[0]["lag_mean"]),
                         "gossip_ticks": int(cnt[contract.K_GOSSIP])},
    }
