"""Claim checks of notebook 09 (the future): firmware decisions, downclocking, prediction, CXL.

* C45: decision latency of the whole system when the scheduler's round and the node's
  quantum shrink to 1 µs (what firmware would allow), against "microsecond-level";
* C46: the DVFS model's energy saving when a 5 ms job may take 10 ms, against "60% power,
  saving 40% energy";
* C47: whether a learned forecast beats the naive ones 50 ms ahead on bursty load;
* C48: a 70 GB cold start from CXL memory, against "eliminate cold-start latency entirely".
"""
from __future__ import annotations

from magnum_lib.base.validate import ParameterError
from magnum_lib.checks.check import ClaimCheck
from magnum_lib.claims import NOT_REPRODUCED, REFUTED, REPRODUCED, SET_BY_INPUT, Verdict
from magnum_lib.energy import C46_POWER, C46_SAVING, DvfsModel
from magnum_lib.sim import simulate
from magnum_lib.storage import TIERS, cold_start_s
from magnum_lib.workload.forecast import compare, load_series
from magnum_lib.workload.generators import bursty_arrivals

MICROSECOND_LEVEL_S = 10e-6   # C45: "microsecond-level": a p95 decision in single-digit µs
C46_TOLERANCE = 0.05          # within 5 points of 60% power and 40% saving counts as the article's
C47_LEAD_MS = 50              # C47: "predicts contention 50 ms ahead"
C47_MARGIN = 0.05             # a forecast "predicts" when its RMSE is 5% below every naive one's


# -- C45 ----------------------------------------------------------------------------------
def decision_latency(round_s: float, quantum_s: float, rtt_s: float = 100e-6, c_round_s: float = 20e-6,
                     duration_s: float = 0.4, seed: int = 1) -> dict:
    """magnum_v2's decision latency on ``classroom`` at load 0.5, in seconds: mean, p95, p99.9
    and the p95 of each part (``breakdown_p95_s``: round wait, scheduling, RTT, ...)."""
    r = simulate("magnum_v2", cluster="classroom", duration_s=duration_s, load=0.5, seed=seed,
                 round_s=round_s, quantum_s=quantum_s, rtt_s=rtt_s, c_round_s=c_round_s)
    d = r["decision_latency_ms"]
    return {k: d[k] * 1e-3 for k in ("mean", "p95", "p999")} | {
        "breakdown_p95_s": {k: v["p95"] * 1e-3 for k, v in d["breakdown"].items()}}


def _measure_c45(round_s: float, quantum_s: float, rtt_s: float, c_round_s: float, duration_s: float,
                 seed: int) -> dict:
    """Decision latency (s) with the given round and quantum, and with the article's (3.7 ms, 250 µs)."""
    return {"fast": decision_latency(round_s, quantum_s, rtt_s, c_round_s, duration_s, seed),
            "article": decision_latency(3.7e-3, 250e-6, rtt_s, c_round_s, duration_s, seed),
            "round_s": round_s, "rtt_s": rtt_s, "c_round_s": c_round_s}


def _judge_c45(m: dict) -> Verdict:
    fast, art = m["fast"], m["article"]
    figures = {"p95_us": fast["p95"] * 1e6, "article_p95_ms": art["p95"] * 1e3}
    stats = (f"mean {fast['mean'] * 1e6:,.1f}, p95 {fast['p95'] * 1e6:,.1f}, p99.9 {fast['p999'] * 1e6:,.1f} µs "
             f"(3.7 ms rounds: p95 {art['p95'] * 1e3:.2f} ms)")
    if fast["p95"] <= MICROSECOND_LEVEL_S:
        return Verdict("C45", REPRODUCED, f"with {m['round_s'] * 1e6:g} µs rounds, RTT {m['rtt_s'] * 1e6:g} µs and "
                       f"{m['c_round_s'] * 1e6:g} µs per round, decisions take {stats}", figures)
    b = fast["breakdown_p95_s"]
    return Verdict("C45", NOT_REPRODUCED, f"a {m['round_s'] * 1e6:g} µs round and quantum (the scheduler in "
                   f"firmware) give {stats}: the lease's half round trip ({b['rtt'] * 1e6:.0f} µs, C17) and the "
                   f"round's fixed cost ({m['c_round_s'] * 1e6:g} µs, ours) remain; microsecond-level needs the "
                   "decision on the node, with no network hop", figures)


# -- C46 ----------------------------------------------------------------------------------
def _measure_c46(compute_ms: float, memory_ms: float, sla_ms: float, static_fraction: float) -> dict:
    """Run as slowly as ``sla_ms`` allows (energy.DvfsModel, our shape parameters)."""
    r = DvfsModel(static_fraction=static_fraction).sla_downclock(sla_ms, compute=compute_ms, memory=memory_ms)
    return {**r, "compute_ms": compute_ms, "memory_ms": memory_ms, "sla_ms": sla_ms}


def _judge_c46(m: dict) -> Verdict:
    p, t, s = m["power_ratio"], m["time_ratio"], m["energy_saving"]
    figures = {"power_ratio": p, "time_ratio": t, "energy_saving": s}
    run = (f"downclocked to {m['clock']:.2f} so that {max(m['compute_ms'], m['memory_ms']):g} ms takes "
           f"{t * max(m['compute_ms'], m['memory_ms']):g} ms of its {m['sla_ms']:g} ms SLA, it draws {p:.0%} power "
           f"and saves {s:.1%} of the energy")
    if abs(p - C46_POWER) <= C46_TOLERANCE and abs(s - C46_SAVING) <= C46_TOLERANCE:
        return Verdict("C46", REPRODUCED, f"{run}: the article's 60% and 40%", figures)
    return Verdict("C46", REFUTED, f"{run} (our DVFS model), not 40%; on the article's own figures 60% power "
                   "for twice the time is 120% of the energy: a saving of 40% needs a run that does not stretch",
                   figures)


# -- C47 ----------------------------------------------------------------------------------
def _measure_c47(burst_s: float, base_s: float, horizon_s: float, seed: int) -> dict:
    """RMSE of 50 ms-ahead forecasts of requests per 1 ms bin on MMPP load (20k/s base, 60k/s bursts)."""
    arrivals = bursty_arrivals(20_000, 60_000, base_s, burst_s, horizon=horizon_s, seed=seed)
    series = load_series(arrivals, 0.001, horizon_s)
    r = compare(series, lead=C47_LEAD_MS, order=16, window=20, threshold=45)
    return {"rmse": {k: v["rmse"] for k, v in r.items()}, "burst_s": burst_s, "base_s": base_s}


def _judge_c47(m: dict) -> Verdict:
    rmse = m["rmse"]
    learned = rmse["autoregressive"]
    naive = min((v, k) for k, v in rmse.items() if k != "autoregressive")
    gain = 1 - learned / naive[0]
    figures = {"gain": gain, **rmse}
    load = f"bursts of {m['burst_s'] * 1e3:g} ms between base spells of {m['base_s'] * 1e3:g} ms (ours)"
    if gain >= C47_MARGIN:
        return Verdict("C47", SET_BY_INPUT, f"50 ms ahead a learned forecast beats the best naive one "
                       f"({naive[1]}) by {gain:.0%} RMSE on load with {load}: that it can is set by how long "
                       "the load we generate remembers, not by the model", figures)
    return Verdict("C47", NOT_REPRODUCED, f"50 ms ahead no learned forecast beats the best naive one ({naive[1]}: "
                   f"{gain:+.1%} RMSE) on load with {load}: the load forgets faster than 50 ms", figures)


# -- C48 ----------------------------------------------------------------------------------
def _measure_c48(model_gb: float, tier: str, device: str, init_s: float) -> dict:
    if tier not in TIERS:
        raise ParameterError("tier", f"must be one of {tuple(TIERS)}, got {tier!r}")
    nbytes = int(model_gb * 1e9)
    return {"tier": tier, "device": device, "model_gb": model_gb, "init_s": init_s,
            "cold_start_s": cold_start_s(nbytes, tier, device, init_s=init_s),
            "copy_s": cold_start_s(nbytes, tier, device, init_s=0),
            "host_dram_s": cold_start_s(nbytes, "host_dram", device, init_s=init_s),
            "nvme_s": cold_start_s(nbytes, "nvme_ssd", device, init_s=init_s)}


def _judge_c48(m: dict) -> Verdict:
    figures = {k: m[k] for k in ("cold_start_s", "copy_s", "host_dram_s", "nvme_s")}
    if m["copy_s"] == 0:
        return Verdict("C48", REPRODUCED, f"from {m['tier']} nothing is copied: the start is the "
                       f"{m['init_s']:g} s of set-up alone", figures)
    same = "the same as" if abs(m["host_dram_s"] - m["cold_start_s"]) < 1e-9 else f"against {m['host_dram_s']:.2f} s from"
    return Verdict("C48", REFUTED, f"a {m['model_gb']:g} GB cold start on {m['device']} from {m['tier']} takes "
                   f"{m['cold_start_s']:.2f} s ({m['copy_s']:.2f} s of copy over the host link), {same} host DRAM "
                   f"and {m['nvme_s'] / m['cold_start_s']:.1f}x faster than one NVMe SSD ({m['nvme_s']:.1f} s), not "
                   "zero: only weights already resident in device memory skip the copy", figures)


CHECKS = (
    ClaimCheck("C45", _measure_c45, _judge_c45,
               defaults={"round_s": 1e-6, "quantum_s": 1e-6, "rtt_s": 100e-6, "c_round_s": 20e-6,
                         "duration_s": 0.4, "seed": 1},
               perturbations=({"rtt_s": 0.0, "c_round_s": 0.0},),
               about="whole-system decision latency with 1 µs rounds and quantum, against the 3.7 ms round"),
    ClaimCheck("C46", _measure_c46, _judge_c46,
               defaults={"compute_ms": 5.0, "memory_ms": 0.0, "sla_ms": 10.0, "static_fraction": 0.3},
               perturbations=({"compute_ms": 2.5, "memory_ms": 5.0, "static_fraction": 0.18},),
               about="the DVFS model's energy saving for a 5 ms job allowed 10 ms"),
    ClaimCheck("C47", _measure_c47, _judge_c47,
               defaults={"burst_s": 0.1, "base_s": 0.3, "horizon_s": 30.0, "seed": 1},
               perturbations=({"burst_s": 0.01, "base_s": 0.03},),
               about="a learned 50 ms-ahead forecast against the naive ones on bursty load"),
    ClaimCheck("C48", _measure_c48, _judge_c48,
               defaults={"model_gb": 70.0, "tier": "cxl_memory", "device": "h100_sxm", "init_s": 0.5},
               perturbations=({"tier": "hbm_resident"},),
               about="a 70 GB cold start from CXL memory, host DRAM and NVMe"),
)
