#!/usr/bin/env python3
"""Generate data/sample_workload.csv: a small job stream calibrated to the Philly trace.

Run from the repository root::

    python scripts/make_sample_workload.py            # writes data/sample_workload.csv and .md
    python scripts/make_sample_workload.py --check    # exit 1 if the shipped files differ

The output is deterministic (one seeded ``numpy.random.Generator``, fixed decimal
formatting), so the test suite regenerates it in memory and demands the shipped
bytes. Columns: ``job_id,submit_s,duration_s,num_gpus`` (seconds; run times whole
seconds, >= 1 s, as in the trace).

Calibration targets and their sources
-------------------------------------
Published figures (the headline numbers the sample must agree with):

* Jeon et al., "Analysis of Large-Scale Multi-Tenant GPU Clusters for DNN Training
  Workloads", USENIX ATC 2019, https://www.usenix.org/system/files/atc19-jeon.pdf:
  "Our analysis spans across two months and uses around 100,000 jobs run by
  hundreds of users" (p. 947, section 1), i.e. about 1,600 jobs/day. Figure 2 plots
  run-time CDFs by job size in the buckets 1, 2-4, 5-8 and >8 GPUs (as reproduced in
  the trace's own analysis notebook, msr-fiddle/philly-traces "Philly Trace
  Analysis.ipynb"); the sample keeps a separate run-time distribution per bucket.
  "Around 30% of jobs are killed or finish unsuccessfully" (p. 948): the public job
  list has no status column, so this sample does not model it.
* Later comparisons of the same trace: more than 82% of Philly jobs use one GPU, and
  the median run time is about 26 minutes (Weng et al., "MLaaS in the Wild", USENIX
  NSDI 2022, comparing Alibaba PAI with Philly; quoted from a secondary summary,
  which also gives a Philly P90 of 25 hours that the public job list does not show:
  its P90 is 3.1 hours).

Shape details (the published job list itself): the Philly job list released with
Pollux (petuum/adaptdl@c793c7089bd3 simulator/traces/philly.csv; 82,247 jobs; CC-BY-4.0,
cite Jeon et al.). Measured once from that file with magnum_lib.workload.load_philly:
the GPU-count mix (``GPU_MIX``), the run-time quantiles per size bucket
(``DURATION_KNOTS``) and the mean submit rate (755 jobs/day over its 109-day span).
Run times there span 1 s to 53 days; jobs of 5 or more GPUs have medians about 20
times the 1-GPU median (23,683 s and 21,137 s against 1,117 s), while 2-4 GPU jobs
have a shorter median (367 s) but a heavier upper half.
Submissions in that file are very bursty (daily counts from under 200 to over
3,600), so arrivals here are a two-state Markov-modulated Poisson process (``ARRIVALS``)
whose long-run rate is the measured 755 jobs/day; the burst parameters are our
choice, not measured.

Model: each job draws its GPU count from ``GPU_MIX``, then a run time from its
bucket's distribution: the inverse CDF through the quantile knots, interpolated
linearly in log(seconds), so every listed quantile is matched by construction; between
knots the model differs from the job list's CDF by at most 0.019 (Kolmogorov-Smirnov
distance, 1-GPU jobs).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from magnum_lib.workload import Workload, bursty_arrivals, bursty_mean_rate  # noqa: E402

SEED = 20190710  # USENIX ATC 2019 opened on 10 July 2019
N_JOBS = 3000
DAY = 86400.0
OUT_CSV = ROOT / "src" / "magnum_lib" / "data" / "sample_workload.csv"
OUT_MD = ROOT / "src" / "magnum_lib" / "data" / "sample_workload.md"

#: GPUs per job -> share of jobs (public Philly job list; 12 and 24 folded into 16 and
#: 32, 128 into 64, each under 0.01% of jobs).
GPU_MIX = {1: 0.93167, 2: 0.02210, 4: 0.02274, 8: 0.01998, 16: 0.00251, 32: 0.00090, 64: 0.00010}

#: Size buckets of Jeon et al. Figure 2: bucket index by GPU count.
BUCKETS = ("1", "2-4", "5-8", ">8")


def bucket_of(num_gpus) -> np.ndarray:
    """Figure 2 bucket (0: 1 GPU, 1: 2-4, 2: 5-8, 3: >8) of each GPU count."""
    return np.digitize(np.asarray(num_gpus), [2, 5, 9])


#: Run-time quantiles in seconds per bucket, at probabilities ``KNOT_P`` (public
#: Philly job list, durations of 0 s counted as 1 s).
KNOT_P = (0.0, 0.01, 0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.40, 0.45, 0.50, 0.55, 0.60,
          0.65, 0.70, 0.75, 0.80, 0.85, 0.90, 0.95, 0.975, 0.99, 0.995, 0.999, 1.0)
DURATION_KNOTS = {
    0: (1, 30, 52, 62, 69, 76, 122, 215, 385, 600, 855, 1117, 1446, 1728, 2054, 2464, 2716, 3754,
        5342, 8512, 19137, 55518, 135399, 266914, 865709, 3256045),
    1: (2, 6, 11, 15, 17, 19, 21, 25, 33, 85, 149, 367, 1208, 5583, 14305, 25424, 45388, 79258,
        99994, 166120, 233082, 422072, 747317, 1122855, 2171244, 2750674),
    2: (1, 33, 125, 216, 464, 785, 1876, 4011, 7266, 12382, 16651, 23683, 36595, 65014, 105941,
        140721, 173248, 203050, 242252, 351982, 525618, 743403, 1060498, 2000448, 2656479, 4628226),
    3: (1, 4, 35, 72, 220, 345, 566, 890, 1532, 3167, 8522, 21137, 45315, 53750, 58976, 73311,
        104218, 158991, 181582, 247972, 443240, 532107, 922629, 1274181, 1612502, 1710643),
}

#: MMPP-2 arrivals: rates in jobs/s, dwell means in s. Long-run rate 755 jobs/day.
ARRIVALS = dict(base_rate=380 / DAY, burst_rate=1880 / DAY, mean_base_s=9 * 3600.0, mean_burst_s=3 * 3600.0)

#: The figures the tests check the sample against.
TARGETS = {
    "jobs_per_day": bursty_mean_rate(**ARRIVALS) * DAY,  # 755, public job list
    "single_gpu_share": GPU_MIX[1],  # published: > 0.82
    "published_single_gpu_share_min": 0.82,
    "published_median_runtime_s": 26 * 60.0,
}


def target_cdf(x, bucket: int) -> np.ndarray:
    """The calibrated run-time CDF of one bucket at ``x`` seconds."""
    logk = np.log(np.asarray(DURATION_KNOTS[bucket], dtype=np.float64))
    return np.interp(np.log(np.maximum(np.asarray(x, dtype=np.float64), 1e-300)), logk, KNOT_P)


def mixture_cdf(x) -> np.ndarray:
    """Run-time CDF of the whole stream: the buckets weighted by ``GPU_MIX``."""
    shares = np.zeros(4)
    for g, w in GPU_MIX.items():
        shares[int(bucket_of(g))] += w
    return sum(shares[b] * target_cdf(x, b) for b in range(4)) / shares.sum()


def _quantile(u: np.ndarray, bucket: int) -> np.ndarray:
    logk = np.log(np.asarray(DURATION_KNOTS[bucket], dtype=np.float64))
    return np.exp(np.interp(u, KNOT_P, logk))


def generate(seed: int = SEED, n_jobs: int = N_JOBS) -> Workload:
    """The sample: ``n_jobs`` jobs from one seeded Generator."""
    rng = np.random.default_rng(seed)
    horizon = 2.0 * n_jobs / bursty_mean_rate(**ARRIVALS)
    submit = np.zeros(0)
    while submit.size < n_jobs:  # a long enough window; almost always once
        submit = bursty_arrivals(**ARRIVALS, horizon=horizon, start="stationary", seed=rng)
        horizon *= 2.0
    submit = submit[:n_jobs]
    counts = np.array(list(GPU_MIX), dtype=np.int64)
    p = np.array(list(GPU_MIX.values()))
    gpus = counts[rng.choice(counts.size, size=n_jobs, p=p / p.sum())]
    u = rng.random(n_jobs)
    duration = np.empty(n_jobs)
    b = bucket_of(gpus)
    for k in range(4):
        duration[b == k] = _quantile(u[b == k], k)
    duration = np.maximum(np.rint(duration), 1.0)  # whole seconds, as in the trace
    submit = np.round(submit - submit[0], 3)  # the first job at t = 0, millisecond resolution
    return Workload(submit, duration, gpus, name="sample")


def csv_text(w: Workload) -> str:
    return w.to_csv(submit_decimals=3, duration_decimals=0)


def summary(w: Workload) -> dict:
    """The statistics the .md reports and the tests check."""
    d = w.duration_s
    return {
        "jobs": len(w),
        "span_days": float(w.submit_s[-1] / DAY),
        "jobs_per_day": float(len(w) / (w.submit_s[-1] / DAY)),
        "single_gpu_share": float(np.mean(w.num_gpus == 1)),
        "median_runtime_s": float(np.median(d)),
        "p90_runtime_s": float(np.quantile(d, 0.9)),
        "p99_runtime_s": float(np.quantile(d, 0.99)),
        "mean_runtime_s": float(d.mean()),
        "gpu_time_share_multi_gpu": float(w.gpu_time_s[w.num_gpus > 1].sum() / w.gpu_time_s.sum()),
    }


def markdown(w: Workload) -> str:
    s = summary(w)
    mix = ", ".join(f"{g} GPU: {p:.2%}" for g, p in GPU_MIX.items())
    return f"""# data/sample_workload.csv

Generated by `python scripts/make_sample_workload.py` (seed {SEED}); do not edit by hand.
Columns: `job_id,submit_s,duration_s,num_gpus` (seconds; run times whole seconds).
Load it with `magnum_lib.workload.load_sample_workload()`.

Calibrated to the Microsoft Philly trace: Jeon et al., "Analysis of Large-Scale
Multi-Tenant GPU Clusters for DNN Training Workloads", USENIX ATC 2019 (trace
CC-BY-4.0), using the public job list released with Pollux
(petuum/adaptdl@c793c7089bd3 simulator/traces/philly.csv). Sources and reasoning
are in the script's docstring.

| statistic | this sample | calibration target | source |
|---|---|---|---|
| jobs | {s['jobs']} | a few thousand | size chosen for a small file |
| submit rate (jobs/day) | {s['jobs_per_day']:.0f} | {TARGETS['jobs_per_day']:.0f} | public job list (Jeon: ~100,000 jobs in two months) |
| single-GPU share | {s['single_gpu_share']:.3f} | {GPU_MIX[1]:.3f} | public job list (published: > 0.82) |
| median run time (s) | {s['median_runtime_s']:.0f} | {_mixture_median():.0f} | public job list (published: ~26 min = 1560 s) |
| P90 run time (s) | {s['p90_runtime_s']:.0f} | {_mixture_quantile(0.9):.0f} | public job list |
| P99 run time (s) | {s['p99_runtime_s']:.0f} | {_mixture_quantile(0.99):.0f} | public job list |
| GPU-time share of multi-GPU jobs | {s['gpu_time_share_multi_gpu']:.2f} | 0.82 | public job list |

GPU mix: {mix}. Arrivals: two-state Markov-modulated Poisson, base
{ARRIVALS['base_rate'] * DAY:.0f} jobs/day for a mean {ARRIVALS['mean_base_s'] / 3600:.0f} h,
bursts of {ARRIVALS['burst_rate'] * DAY:.0f} jobs/day for a mean {ARRIVALS['mean_burst_s'] / 3600:.0f} h.
Not modelled: job failures (about 30% of Philly jobs are killed or fail), virtual
clusters, users.
"""


def _mixture_quantile(q: float) -> float:
    grid = np.exp(np.linspace(0.0, np.log(5e6), 20001))
    return float(np.interp(q, mixture_cdf(grid), grid))


def _mixture_median() -> float:
    return _mixture_quantile(0.5)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="compare with the shipped files instead of writing")
    args = ap.parse_args(argv)
    w = generate()
    outputs = {OUT_CSV: csv_text(w), OUT_MD: markdown(w)}
    if args.check:
        stale = [str(p) for p, text in outputs.items()
                 if not p.is_file() or p.read_text(encoding="utf-8") != text]
        for p in stale:
            print(f"out of date: {p}")
        return 1 if stale else 0
    for p, text in outputs.items():
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8", newline="\n")
        print(f"wrote {p} ({p.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
