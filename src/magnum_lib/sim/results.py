"""Summaries of a run: decision latency and its parts, SLA, utilization, leases, energy, trace."""
from __future__ import annotations

import numpy as np

from magnum_lib.engine.distributions import NS_PER_S
from magnum_lib.sim import core_ref as K

COMPONENTS = ("round_wait", "scheduling", "rtt", "validation", "retries", "dispatch_wait")
TRACE_EVENTS = ("arrive", "round", "placed", "no_fit_in_view", "lease_at_node", "refused", "queued",
                "start", "hedge", "finish", "dropped")
_Q = (50, 95, 99, 99.9)
_QNAMES = ("p50", "p95", "p99", "p999")


def _pct_ms(ns) -> dict:
    if len(ns) == 0:
        return {k: None for k in _QNAMES}
    v = np.percentile(ns, _Q) / 1e6
    return {k: float(x) for k, x in zip(_QNAMES, v)}


def summarize(runs, wall_s: float) -> dict:
    """One JSON-ready dict for the runs of every region (counts add, samples pool)."""
    cfg = runs[0].cfg
    keys = runs[0].type_keys
    cnt = sum(r.A["cnt"] for r in runs)
    cat = lambda name: np.concatenate([r.A[name] for r in runs])  # noqa: E731
    status, start, arr, finish, cls = cat("status"), cat("start"), cat("arr"), cat("finish"), cat("cls")
    comp = np.concatenate([r.A["comp"] for r in runs])
    started = start >= 0
    dl = (start - arr)[started]
    done = status == K.ST_DONE
    e2e = (finish - arr)
    comps = comp[started]
    breakdown = {name: {"mean": float(comps[:, k].mean() / 1e6) if len(comps) else None,
                        **_pct_ms(comps[:, k])} for k, name in enumerate(COMPONENTS)}
    sla, e2e_ms = {}, {}
    for c, rc in enumerate(cfg.classes):
        m = cls == c
        ok = done & m & (e2e <= round(rc.sla_s * NS_PER_S))
        sla[rc.name] = float(ok.sum() / m.sum()) if m.sum() else None
        e2e_ms[rc.name] = _pct_ms(e2e[done & m])
    dev = sum(np.bincount(r.A["node_type"], weights=r.A["node_dev"], minlength=len(keys)) for r in runs)
    horizon_ns = cfg.duration_s * NS_PER_S
    busy = sum(r.A["busy_type"] for r in runs)
    util_series = np.mean([np.array(r.util) for r in runs], axis=0) if runs[0].util else np.zeros((0, len(keys)))
    energy = float(sum(busy[t] / NS_PER_S * runs[0].power_w[t] for t in range(len(keys))))
    leases = int(cnt[K.K_LEASES])
    refused = int(cnt[K.K_REFUSED] + cnt[K.K_EXPIRED])
    n = len(status)
    in_flight = int(((status == K.ST_WAIT) | (status == K.ST_RUN)).sum())
    tr = runs[0].A["trace"]
    trace = [{"t_ms": float(t / 1e6), "event": TRACE_EVENTS[e], "node": int(nd)}
             for t, e, nd in tr if e >= 0]
    ages = cnt[K.K_VIEW_SAMPLES]
    sim_s = cfg.duration_s
    return {
        "preset_config": {k: v for k, v in cfg.to_dict().items() if k != "classes"},
        "backend": "python" if runs[0].core.__class__.__module__.endswith("_ref") else "compiled",
        "regions": len(runs),
        "nodes": int(sum(r.params[0] for r in runs)),
        "devices": int(dev.sum()),
        "rate_per_region": float(np.mean([r.rate for r in runs])),
        "decision_latency_ms": {**_pct_ms(dl), "mean": float(dl.mean() / 1e6) if len(dl) else None,
                                "breakdown": breakdown},
        "end_to_end_ms": e2e_ms,
        "sla_attainment": sla,
        "utilization": {k: float((busy[t] + 0) / (dev[t] * horizon_ns)) if dev[t] else None
                        for t, k in enumerate(keys)},
        "utilization_with_training": {k: float(util_series[:, t].mean()) if len(util_series) else None
                                      for t, k in enumerate(keys)},
        "utilization_series": {"t_s": [float(t / NS_PER_S) for t in runs[0].util_t],
                               **{k: [float(x) for x in util_series[:, t]] for t, k in enumerate(keys)}},
        "leases": {"issued": leases, "accepted": int(cnt[K.K_ACCEPT]),
                   "accepted_micro_preempt": int(cnt[K.K_ACCEPT_MICRO]),
                   "accepted_checkpoint_preempt": int(cnt[K.K_ACCEPT_CKPT]), "queued": int(cnt[K.K_QUEUED]),
                   "refused_insufficient_devices": int(cnt[K.K_REFUSED]), "refused_expired": int(cnt[K.K_EXPIRED]),
                   "in_flight": int(leases - cnt[K.K_ACCEPT] - cnt[K.K_ACCEPT_MICRO] - cnt[K.K_ACCEPT_CKPT]
                                    - refused),
                   "no_fit_in_view": int(cnt[K.K_NOFIT]), "rounds": int(cnt[K.K_ROUNDS])},
        "lease_failure_rate": float(refused / leases) if leases else 0.0,
        "preemptions": {"micro": int(cnt[K.K_ACCEPT_MICRO]), "checkpoint": int(cnt[K.K_EVICT]),
                        "resumed": int(cnt[K.K_RESUMED]),
                        "waiting_to_resume": int(sum((r.A["shard_state"] == 1).sum() for r in runs)),
                        "checkpoint_s": float(cnt[K.K_CKPT_NS] / NS_PER_S),
                        "lost_work_s": float(cnt[K.K_LOST_NS] / NS_PER_S),
                        "micro_paused_s": float(cnt[K.K_MICRO_NS] / NS_PER_S)},
        "hedges": {"issued": int(cnt[K.K_HEDGES]), "no_free_peer": int(cnt[K.K_HEDGE_NONE]),
                   "won": int(cnt[K.K_HEDGE_WON]), "extra_device_s": float(cnt[K.K_HEDGE_NS] / NS_PER_S)},
        "staleness_ms": {"mean_view_age": float(cnt[K.K_VIEW_AGE_NS] / ages / 1e6) if ages else 0.0,
                         "gossip_lag_rounds_mean": float(np.mean(runs[0].lag_dist)),
                         "gossip_ticks": int(cnt[K.K_GOSSIP])},
        "energy_j": energy,
        "energy_per_request_j": energy / max(int(done.sum()), 1),
        "requests": {"total": n, "done": int(done.sum()), "dropped": int((status == K.ST_DROP).sum()),
                     "dropped_reason": {"retries_exhausted": int((status == K.ST_DROP).sum())},
                     "in_flight": in_flight, "started": int(started.sum())},
        "trace": {"request": int(runs[0].params[K.PARAMS.index("trace_id")]), "events": trace},
        "events": int(cnt[K.K_EVENTS]),
        "wall_s": float(wall_s),
        "sim_s": float(sim_s),
        "requests_per_wall_s": float(n / wall_s) if wall_s > 0 else None,
    }
