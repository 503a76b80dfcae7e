"""What a serving run measured: latencies, goodput, throughput, KV use, energy.

Definitions (per request, over the requests that finished):

* TTFT = first token time - arrival; end-to-end (E2E) = finish - arrival.
* TPOT = (finish - first token) / (output - 1), for requests of at least two output
  tokens (a one-token request has no inter-token time).
* SLO attainment: the fraction of *arrived* requests (refused and unfinished count as
  misses) with TTFT <= ``slo_ttft_s`` and TPOT <= ``slo_tpot_s`` (one-token requests need
  only the TTFT SLO). Goodput = requests meeting both per second of the run per GPU.
  DistServe (Zhong et al., OSDI 2024) defines goodput as the highest arrival rate whose
  attainment stays >= a target (90%); :func:`summarize` reports the attainment at the
  given rate, and a sweep over ``rate_scale`` finds DistServe's figure.
* Throughput = output tokens / run time. KV utilization = pages holding KV (sequences'
  and resident prefix entries', including those the iteration's new tokens take) / pages,
  sampled at every iteration start and weighted
  by the time to the replica's next sample.
* Energy = busy time x ``tp`` x TDP (idle draw left out: an upper bound while busy, a
  lower one for the fleet).
"""
from __future__ import annotations

import numpy as np

from magnum_lib.base.validate import ParameterError, check_positive
from magnum_lib.serving.loop import simulate
from magnum_lib.serving.serve_ref import DONE, REFUSED, ServingResult

__all__ = ["PERCENTILES", "latencies", "kv_utilization", "summarize", "distserve_goodput"]

NS = 1e9
PERCENTILES = (50, 90, 99, 99.9)


def latencies(res: ServingResult) -> dict:
    """Per finished request: ``ttft_s``, ``tpot_s`` (NaN for one-token requests), ``e2e_s``."""
    req = res.requests
    done = res.status == DONE
    arr = req.arrival_ns[done]
    first, fin = res.first_token_ns[done], res.finish_ns[done]
    out = req.output[done]
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(out > 1, (fin - first) / NS / np.maximum(out - 1, 1), np.nan)
    return {"ttft_s": (first - arr) / NS, "tpot_s": tpot, "e2e_s": (fin - arr) / NS, "done": done}


def _pcts(x: np.ndarray) -> dict:
    x = x[~np.isnan(x)]
    if x.size == 0:
        return {f"p{p:g}": None for p in PERCENTILES} | {"mean": None}
    vals = np.percentile(x, PERCENTILES)
    return {f"p{p:g}": float(v) * 1e3 for p, v in zip(PERCENTILES, vals, strict=True)} | {"mean": float(x.mean()) * 1e3}


def kv_utilization(res: ServingResult) -> dict:
    """Time-weighted mean and peak KV-page utilization per replica, and over all."""
    pages = res.replica.kv_blocks
    per = []
    for i in range(res.n_replicas):
        m = res.kv_replica == i
        t, used = res.kv_t_ns[m], res.kv_used[m]
        if t.size == 0:
            per.append((0.0, 0.0))
            continue
        w = np.diff(np.append(t, max(res.end_ns, int(t[-1]) + 1)))
        per.append((float(np.sum(used * w) / np.sum(w) / pages), float(used.max() / pages)))
    return {"mean": float(np.mean([p[0] for p in per])), "peak": float(max(p[1] for p in per)),
            "per_replica_mean": [p[0] for p in per]}


def summarize(res: ServingResult, slo_ttft_s: float = 2.0, slo_tpot_s: float = 0.1) -> dict:
    """The run's figures as one JSON-ready dict (ms for latencies)."""
    slo_ttft_s = check_positive("slo_ttft_s", slo_ttft_s, 1e6)
    slo_tpot_s = check_positive("slo_tpot_s", slo_tpot_s, 1e6)
    lat = latencies(res)
    n = len(res.requests)
    arrived = int(np.sum(res.requests.arrival_ns <= res.end_ns)) if n else 0
    ok = (lat["ttft_s"] <= slo_ttft_s) & (np.isnan(lat["tpot_s"]) | (lat["tpot_s"] <= slo_tpot_s))
    span_s = max(res.end_ns / NS, 1e-9)
    c = res.counters
    prompt_admitted = int(np.sum(res.requests.prompt[res.status != REFUSED])) if n else 0
    busy_s = res.busy_ns / NS
    energy = float(np.sum(busy_s) * res.replica.power_w)
    return {
        "requests": n, "finished": int(lat["done"].sum()), "refused": int(np.sum(res.status == REFUSED)),
        "refused_because": (f"prompt + output longer than a replica's KV cache ({res.replica.kv_blocks:,} pages "
                            f"of {res.replica.block_size} tokens)") if np.any(res.status == REFUSED) else None,
        "in_flight": n - int(lat["done"].sum()) - int(np.sum(res.status == REFUSED)),
        "ttft_ms": _pcts(lat["ttft_s"]), "tpot_ms": _pcts(lat["tpot_s"]), "e2e_ms": _pcts(lat["e2e_s"]),
        "slo_ttft_s": slo_ttft_s, "slo_tpot_s": slo_tpot_s,
        "slo_attainment": float(ok.sum() / arrived) if arrived else 0.0,
        "goodput_rps_per_gpu": float(ok.sum()) / span_s / res.n_gpus,
        "throughput_tok_s": c["output_tokens"] / span_s,
        "prefix_hit_rate": float(res.prefix_hit_tokens.sum() / prompt_admitted) if prompt_admitted else 0.0,
        "preemptions": {"recompute": c["preempt_recompute"], "swap": c["preempt_swap"]},
        "kv_utilization": kv_utilization(res),
        "energy_j_per_token": energy / c["output_tokens"] if c["output_tokens"] else None,
        "gpus": res.n_gpus, "simulated_s": span_s, "iterations": c["iterations"], "config": res.config,
    }


def distserve_goodput(requests, replica, rate_scales, slo_ttft_s: float = 2.0, slo_tpot_s: float = 0.1,
                      target: float = 0.9, **simulate_kw) -> dict:
    """DistServe's goodput: the highest arrival rate (of ``requests`` scaled by each of
    ``rate_scales``) whose SLO attainment is >= ``target``, per GPU.

    Returns ``{"rate_rps_per_gpu", "rate_scale", "attainment": {scale: attainment}}``;
    ``rate_scale`` is None (and the rate 0) when no scale meets the target.
    """
    if not 0 < target <= 1:
        raise ParameterError("target", f"must be in (0, 1], got {target!r}")
    scales = sorted(check_positive("rate_scales[]", s, 1e6) for s in rate_scales)
    if not scales:
        raise ParameterError("rate_scales", "must hold at least one scale")
    attained, best, gpus = {}, None, 1
    for s in scales:
        res = simulate(requests.scaled(s), replica, **simulate_kw)
        gpus = res.n_gpus
        attained[s] = summarize(res, slo_ttft_s, slo_tpot_s)["slo_attainment"]
        if attained[s] >= target:
            best = s
    rate = len(requests) / requests.duration_s * best / gpus if best and requests.duration_s > 0 else 0.0
    return {"rate_rps_per_gpu": rate, "rate_scale": best, "attainment": attained}
