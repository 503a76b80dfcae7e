"""Claim checks of notebook 08 (the evolution, C39-C44): five presets of one simulator.

Every check runs the simulator (:func:`magnum_lib.sim.simulate`) on the same workload as
notebook 08 (:data:`WORK`: one 1,250-node cell of the ``region`` preset, load 0.3, seed 0)
and judges from what it measures, never from a constant it was given:

* C39, C41 (and C40): a saturated design has no steady-state latency. Its p95 grows with
  the run, so "the figure" is whatever run length one picks: the check measures the p95 at
  several run lengths, and when it grows (at least as the square root of the run) the run
  length that lands on the article's figure is found by interpolation. A figure crossed
  inside the measured runs is **set by an input** (the run length).
* C42, C43: the regional schedulers' p95 is one round period (C25's 3.7 ms). The check
  measures the p95 at a sweep of rounds; when it tracks the round (slope 0.7-1.2, R^2 >=
  0.95), a figure that lands on the article's is **set by an input** (``round_s``).
* C44: the fraction of leases accepted first time, and how long a refused one takes to start.

All percentiles are of the decision latency (arrival to start on a device), in ms, over the
requests that started; every measurement also carries the mean and the p99.9.
"""
from __future__ import annotations

import math

import numpy as np

from magnum_lib.base.validate import ParameterError
from magnum_lib.checks.check import ClaimCheck
from magnum_lib.claims import NOT_REPRODUCED, REPRODUCED, SET_BY_INPUT, Verdict

#: The workload of every check and of notebook 08's section 1 (the knobs of ``simulate``).
WORK = dict(cluster="region", cells_per_region=1, load=0.3, seed=0, duration_s=0.3)
#: The article's figures (ms) and how far "~" or an exact figure may be: a ratio band.
ARTICLE_MS = {"C39": 1000.0, "C40": 200.0, "C41": 50.0, "C42": 15.0, "C43": 3.7}
BAND = {"C39": (1 / 1.5, 1.5), "C40": (1 / 1.5, 1.5),   # "~1 second", "~200 ms"
        "C41": (0.8, 1.2), "C42": (0.8, 1.2), "C43": (0.9, 1.1)}   # "50 ms", "15 ms", "3.7 ms"
GROWS = 0.5        # p95 ~ run^k with k >= 0.5: a queue that grows with the run, no steady state
TRACKS = (0.7, 1.2)  # slope of p95 against the round that counts as "the round sets it"
TRACKS_R2 = 0.95
#: C44: "the right call 99.9% of the time", "fixed in under 1 ms".
RIGHT_CALLS, FIX_MS = 0.999, 1.0
#: The five presets' v2 features; with these v2 is v1 (notebook 08 shows it run for run).
V2_FEATURES_OFF = dict(hetero_aware=False, pre_reserve=False, preempt="checkpoint", quantum_s=0.0,
                       hedge_factor=0.0)


def latency_stats(out: dict) -> dict:
    """The decision latency's mean, p50, p95, p99.9 (ms) and how many requests started."""
    d = out["decision_latency_ms"]
    req = out["requests"]
    cfg = out["preset_config"]
    expected = out["rate_per_region"] * out["sim_s"] * out["regions"]   # arrivals the nominal load asks for
    return {"mean_ms": d["mean"], "p50_ms": d["p50"], "p95_ms": d["p95"], "p999_ms": d["p999"],
            "started": req["started"] / req["total"] if req["total"] else 0.0,
            "lease_failure_rate": out["lease_failure_rate"],
            # bursts and the diurnal curve make a short run's arrivals differ from the mean rate's
            "realized_load": cfg["load"] * req["total"] / expected if expected else 0.0}


def _sim(preset: str, **knobs) -> dict:
    from magnum_lib.sim import simulate  # the simulator is the layer below
    return simulate(preset, **knobs)


def _positive_windows(windows) -> tuple[float, ...]:
    try:
        w = tuple(float(x) for x in windows)
    except (TypeError, ValueError):
        raise ParameterError("windows", f"must be a sequence of run lengths in s, got {windows!r}") from None
    if len(w) < 2 or any(not 0 < x <= 60 for x in w) or list(w) != sorted(set(w)):
        raise ParameterError("windows", f"must be >= 2 increasing run lengths in (0, 60] s, got {w!r}")
    return w


# --- a figure on a growing queue (C39, C40, C41) ------------------------------------------

def measure_windows(preset: str, windows=(0.5, 1.0, 2.0), **knobs) -> dict:
    """The p95 (mean, p99.9) of ``preset`` after each run length in ``windows`` (s)."""
    w = _positive_windows(windows)
    runs = [latency_stats(_sim(preset, **{**WORK, **knobs, "duration_s": x})) for x in w]
    return {"preset": preset, "windows_s": w, "runs": runs, "p95_ms": [r["p95_ms"] for r in runs]}


def growth_exponent(windows, p95) -> float:
    """k in p95 ~ run^k between the shortest and the longest run (0: a steady state)."""
    if min(p95) <= 0:
        return 0.0
    return math.log(p95[-1] / p95[0]) / math.log(windows[-1] / windows[0])


def crossing_run_s(windows, p95, figure_ms: float) -> float | None:
    """The run length (s) at which p95 passes ``figure_ms`` (log-log interpolation), or None."""
    pts = list(zip(windows, p95, strict=True))
    for (w0, p0), (w1, p1) in zip(pts, pts[1:], strict=False):
        if p0 > 0 and p1 > 0 and min(p0, p1) <= figure_ms <= max(p0, p1):
            if p0 == p1:
                return w0
            f = math.log(figure_ms / p0) / math.log(p1 / p0)
            return math.exp(math.log(w0) + f * math.log(w1 / w0))
    return None


def _series(m: dict) -> str:
    return (", ".join(f"{p:,.1f}" for p in m["p95_ms"]) + " ms after "
            + ", ".join(f"{w:g}" for w in m["windows_s"]) + " s")


def judge_growing(claim: str, m: dict, why_steady: str = "") -> Verdict:
    """The verdict on a figure that may be a queue's: set by the run length when it grows."""
    fig, (lo, hi) = ARTICLE_MS[claim], BAND[claim]
    w, p95 = m["windows_s"], m["p95_ms"]
    k = growth_exponent(w, p95)
    figures = {"growth_exponent": k, "p95_ms": p95, "windows_s": w, "article_ms": fig}
    if k >= GROWS:
        at = crossing_run_s(w, p95, fig)
        figures["crossing_run_s"] = at
        if at is not None:
            return Verdict(claim, SET_BY_INPUT, f"the run length: {m['preset']}'s p95 grows with the run "
                           f"(~run^{k:.1f}: {_series(m)}), so it has no steady state and passes the article's "
                           f"{fig:g} ms after a {at:.2g} s run", figures)
        return Verdict(claim, NOT_REPRODUCED, f"{m['preset']}'s p95 grows with the run (~run^{k:.1f}: "
                       f"{_series(m)}) and does not pass {fig:g} ms in these runs: no steady-state figure",
                       figures)
    last = p95[-1]
    if lo <= last / fig <= hi:
        return Verdict(claim, REPRODUCED, f"{m['preset']}'s p95 is steady ({_series(m)}), at the article's "
                       f"{fig:g} ms{why_steady}", figures)
    return Verdict(claim, NOT_REPRODUCED, f"{m['preset']}'s p95 is steady at {last:,.3g} ms ({_series(m)}), "
                   f"{last / fig:.2g}x the article's {fig:g} ms{why_steady}", figures)


def _measure_c39(windows, c_node_s) -> dict:
    return measure_windows("borg_like", windows, c_node_s=c_node_s)


def _judge_c39(m: dict) -> Verdict:
    return judge_growing("C39", m)


def _measure_c40(windows, c_node_s) -> dict:
    plus = measure_windows("borg_plus", windows, c_node_s=c_node_s)
    like = measure_windows("borg_like", windows, c_node_s=c_node_s)
    rate = _sim("borg_plus", **{**WORK, "duration_s": 0.01, "c_node_s": c_node_s})["rate_per_region"]
    nodes = 1250   # one cell of the region preset: borg_plus's scheduler scans all of it
    # A scanner keeps up when one decision (5 us + nodes x c_node) takes less than 1 / rate.
    keep_up_ns = max(1 / rate - 5e-6, 0.0) / nodes * 1e9
    return {**plus, "borg_like_p95_ms": like["p95_ms"], "arrivals_per_s": rate, "keep_up_c_node_ns": keep_up_ns}


def _judge_c40(m: dict) -> Verdict:
    step = float(np.median([a / b for a, b in zip(m["borg_like_p95_ms"], m["p95_ms"], strict=True) if b > 0]))
    v = judge_growing("C40", m)
    what = (f"; preemption moves the p95 {step:.2f}x from borg_like's (the article: ~1 s -> ~200 ms, 5x); "
            f"a scan that keeps up with {m['arrivals_per_s']:,.0f} arrivals/s needs under "
            f"{m['keep_up_c_node_ns']:.1f} ns per node (400 ns here), a faster scan, not preemption")
    return Verdict("C40", v.verdict, v.because + what, {**v.figures, "preemption_step": step})


def _measure_c41(windows, policy) -> dict:
    return measure_windows("cheetah", windows, policy=policy)


def _judge_c41(m: dict) -> Verdict:
    return judge_growing("C41", m)


# --- a figure set by the round period (C42, C43) -----------------------------------------

def measure_rounds(preset: str, round_ms: float, sweep_ms=(0.5, 1.0, 2.0, 5.0, 10.0), duration_s: float = 0.15,
                   **knobs) -> dict:
    """The p95 (mean, p99.9) of ``preset`` with a round of ``round_ms``, and at each round of ``sweep_ms``."""
    if not isinstance(round_ms, (int, float)) or not 0.01 <= round_ms <= 1000:
        raise ParameterError("round_ms", f"must be a round period in [0.01, 1000] ms, got {round_ms!r}")
    try:
        sweep = tuple(float(x) for x in sweep_ms)
    except (TypeError, ValueError):
        raise ParameterError("sweep_ms", f"must be a sequence of round periods in ms, got {sweep_ms!r}") from None
    if len(sweep) < 3 or any(not 0.01 <= x <= 1000 for x in sweep):
        raise ParameterError("sweep_ms", f"must be >= 3 round periods in [0.01, 1000] ms, got {sweep!r}")
    work = {**WORK, **knobs, "duration_s": duration_s}
    at = latency_stats(_sim(preset, **work, round_s=round_ms / 1e3))
    runs = [latency_stats(_sim(preset, **work, round_s=x / 1e3)) for x in sweep]
    y = np.array([r["p95_ms"] for r in runs])
    slope, icept = np.polyfit(sweep, y, 1)
    resid = y - (slope * np.array(sweep) + icept)
    r2 = 1 - float(resid @ resid) / float(((y - y.mean()) ** 2).sum()) if y.std() > 0 else 0.0
    return {"preset": preset, "round_ms": float(round_ms), "at_round": at, "p95_ms": at["p95_ms"],
            "sweep_ms": sweep, "sweep_runs": runs, "sweep_p95_ms": y.tolist(), "slope": float(slope), "intercept_ms": float(icept),
            "r2": r2}


def judge_round(claim: str, m: dict) -> Verdict:
    """Set by the round when the p95 tracks the round and lands on the figure."""
    fig, (lo, hi) = ARTICLE_MS[claim], BAND[claim]
    tracks = TRACKS[0] <= m["slope"] <= TRACKS[1] and m["r2"] >= TRACKS_R2
    p95 = m["p95_ms"]
    fit = f"p95 = {m['slope']:.2f} x round + {m['intercept_ms']:.2f} ms (R^2 {m['r2']:.3f}, rounds " \
          f"{m['sweep_ms'][0]:g}-{m['sweep_ms'][-1]:g} ms)"
    figures = {"p95_ms": p95, "slope": m["slope"], "intercept_ms": m["intercept_ms"], "r2": m["r2"],
               "tracks_round": tracks, "article_ms": fig}
    on = lo <= p95 / fig <= hi
    if on and tracks:
        given = "C25's 3.7 ms" if m["round_ms"] == 3.7 else f"{m['round_ms']:g} ms; C25's is 3.7 ms"
        return Verdict(claim, SET_BY_INPUT, f"the round period (round_s = {given}): "
                       f"{m['preset']}'s p95 is {p95:.2f} ms and {fit}", figures)
    if on:
        return Verdict(claim, REPRODUCED, f"{m['preset']}'s p95 {p95:.2f} ms with a {m['round_ms']:g} ms round, "
                       f"and it does not follow the round ({fit})", figures)
    if tracks and m["slope"] > 0:
        need = (fig - m["intercept_ms"]) / m["slope"]
        return Verdict(claim, NOT_REPRODUCED, f"{m['preset']}'s p95 is {p95:.2f} ms with a {m['round_ms']:g} ms "
                       f"round ({p95 / fig:.2g}x the article's {fig:g} ms); {fit}, so {fig:g} ms would take "
                       f"a {need:.1f} ms round, an input", figures)
    return Verdict(claim, NOT_REPRODUCED, f"{m['preset']}'s p95 is {p95:.2f} ms ({p95 / fig:.2g}x the article's "
                   f"{fig:g} ms) and does not follow the round ({fit})", figures)


def _measure_c42(round_ms, preset) -> dict:
    return measure_rounds(preset, round_ms)


def _measure_c43(round_ms, preset) -> dict:
    return measure_rounds(preset, round_ms)


# --- C44: right calls, and how fast a bad one is fixed -----------------------------------

def measure_c44(load: float = 0.3, round_ms: float = 3.7, duration_s: float = 0.3, seed: int = 0) -> dict:
    """magnum_v2's leases accepted first time, and each refused request's wait from refusal to start.

    A "bad call" is a lease the node refuses (no device free, even by preemption); it is
    "fixed" when the request starts elsewhere. The wait is from the last refusal at the node
    to the start (for a request refused once, the whole fix). Leases accepted by
    micro-preempting training count as right calls (the preemption is the node's, 20 us).
    """
    from magnum_lib.sim import make_config, run_config
    if not isinstance(load, (int, float)) or not 0 < load <= 10:
        raise ParameterError("load", f"must be in (0, 10], got {load!r}")
    work = {**WORK, "load": load, "seed": seed, "duration_s": duration_s, "round_s": round_ms / 1e3}
    cfg = make_config("magnum_v2", work.pop("cluster"), **work)
    out, runs = run_config(cfg, keep=True)
    fix = []
    for run in runs:
        arrays = run.arrays
        bad = (arrays["attempts"] > 0) & (arrays["start"] >= 0)
        back = arrays["arr"][bad] + arrays["comp"][bad, 4]          # the last refusal back at the scheduler (ns)
        fix.append((arrays["start"][bad] - (back - cfg.rtt_s * 0.5e9)) / 1e6)
    fix = np.concatenate(fix) if fix else np.zeros(0)
    leases = out["leases"]
    refused = leases["refused_insufficient_devices"] + leases["refused_expired"]
    n = leases["issued"]
    # Wilson 95% interval of the refused fraction
    p, z = (refused / n if n else 0.0), 1.96
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n) if n else 0.0
    centre = (p + z * z / (2 * n)) / (1 + z * z / n) if n else 0.0
    return {"leases": n, "refused": refused, "right_calls": 1 - p,
            "right_calls_ci": (1 - (centre + half), 1 - max(centre - half, 0.0)),
            "micro_preempt": leases["accepted_micro_preempt"], "fixed": int(fix.size),
            "fix_ms_p50": float(np.median(fix)) if fix.size else None,
            "fix_ms_max": float(fix.max()) if fix.size else None, "round_ms": round_ms, "load": load,
            **{k: v for k, v in latency_stats(out).items() if k.endswith("_ms")}}


def judge_c44(m: dict) -> Verdict:
    lo, hi = m["right_calls_ci"]
    right = (f"{m['right_calls']:.3%} of {m['leases']:,} leases accepted first time (95% CI {lo:.3%}-{hi:.3%}; "
             f"the article: 99.9%)")
    figures = {k: m[k] for k in ("right_calls", "right_calls_ci", "fixed", "fix_ms_p50", "fix_ms_max")}
    if m["right_calls"] < RIGHT_CALLS:
        return Verdict("C44", NOT_REPRODUCED, f"{right}: below the claim at load {m['load']:g}", figures)
    if not m["fixed"]:
        return Verdict("C44", NOT_REPRODUCED, f"{right}, but no refused lease in the run to time its fix: "
                       "run longer or busier", figures)
    how = (f"{m['fixed']} refused requests started {m['fix_ms_p50']:.2f} ms (median; max "
           f"{m['fix_ms_max']:.2f} ms) after the refusal")
    if m["fix_ms_max"] < FIX_MS:
        return Verdict("C44", REPRODUCED, f"{right}; {how}, under 1 ms, with a {m['round_ms']:g} ms round",
                       figures)
    return Verdict("C44", NOT_REPRODUCED, f"{right}, but a bad call is fixed by a retry at the next "
                   f"{m['round_ms']:g} ms round, not by preemption in under 1 ms: {how}; under 1 ms would take "
                   f"a retry that does not wait for a round (or a round under "
                   f"{m['round_ms'] - (m['fix_ms_max'] - FIX_MS):.1f} ms)", figures)


CHECKS = (
    ClaimCheck("C39", _measure_c39, _judge_c39, defaults={"windows": (0.5, 1.0, 2.0), "c_node_s": 400e-9},
               perturbations=({"c_node_s": 2e-9}, {"windows": (0.05, 0.1, 0.2)}),
               about="borg_like's p95 after runs of 0.5-2 s: does it grow with the run (a saturated scanner)?"),
    ClaimCheck("C40", _measure_c40, _judge_c40, defaults={"windows": (0.5, 1.0, 2.0), "c_node_s": 400e-9},
               perturbations=({"windows": (0.1, 0.2, 0.4)},),
               about="borg_plus beside borg_like in the runs where borg_like is at C39's ~1 s"),
    ClaimCheck("C41", _measure_c41, _judge_c41, defaults={"windows": (0.15, 0.3, 0.6, 1.0), "policy": "hash"},
               perturbations=({"policy": "two-choices"}, {"windows": (0.05, 0.1)}),
               about="Cheetah's p95 after runs of 0.15-1 s: a figure of the run length, or of the design?"),
    ClaimCheck("C42", _measure_c42, lambda m: judge_round("C42", m),
               defaults={"round_ms": 3.7, "preset": "magnum_v1"}, perturbations=({"round_ms": 15.5},),
               about="magnum_v1's p95 at C25's round and against a sweep of rounds"),
    ClaimCheck("C43", _measure_c43, lambda m: judge_round("C43", m),
               defaults={"round_ms": 3.7, "preset": "magnum_v2"},
               perturbations=({"round_ms": 15.0}, {"preset": "cheetah"}),
               about="magnum_v2's p95 at C25's round and against a sweep of rounds"),
    ClaimCheck("C44", measure_c44, judge_c44, defaults={"load": 0.3, "round_ms": 3.7, "duration_s": 0.3, "seed": 0},
               perturbations=({"round_ms": 0.5, "load": 0.5},),
               about="magnum_v2's leases accepted first time, and the wait from a refusal to the start"),
)
