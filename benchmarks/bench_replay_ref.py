"""The readable replay loop (``event_loop.py``, the one user policies run in): jobs/s on one
Philly VC, beside the compiled loop on the same jobs in the same run. Prints one JSON object.

    PYTHONPATH=src MAGNUM_SHARED_DATA=../shared/data python benchmarks/bench_replay_ref.py [--vc 0e4a51]

The VC is replayed as in the issue's CLI example (min duration 60 s, GPU counts 1,2,4,8,
on 9 nodes x 4 GPUs: a loaded cluster with a long queue). ``las-tight`` is LAS with tight
thresholds and starvation promotion (``TiresiasLAS((60, 600), promote_knob=2)``): its jobs
bounce between the queues (28,000 decisions and 20,000 preemptions for 75 jobs), so it runs
on the VC's first 75 jobs only. ``same_avg_jct``: both loops gave the same average JCT.
Times are CPU seconds of this process (``time.process_time``: the figures stay comparable
on a shared machine).
"""
from __future__ import annotations

import argparse
import json
import time

from magnum_lib.replay import ReplayCluster, replay, traces
from magnum_lib.replay.policies import TiresiasLAS

POLICIES = {"fifo-strict": "fifo-strict", "fifo-skip": "fifo-skip", "sjf": "sjf", "srtf": "srtf",
            "las": "las", "las-tight": lambda: TiresiasLAS((60.0, 600.0), promote_knob=2.0)}
FIRST_JOBS = {"las-tight": 75}   # policies replayed on the VC's first jobs only


def timed(jobs, cluster, pol, backend, repeats):
    best, res = float("inf"), None
    for _ in range(repeats):
        p = pol() if callable(pol) else pol
        t0 = time.process_time()
        res = replay(jobs, cluster, p, backend=backend, progress=False)
        best = min(best, time.process_time() - t0)
    return best, res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vc", default="0e4a51")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--policies", default=",".join(POLICIES))
    args = ap.parse_args()
    jobs = traces.philly_jobs(args.vc, min_duration_s=60, gpu_counts=[1, 2, 4, 8])
    cluster = ReplayCluster.uniform(9, 4)
    out = {"bench": "replay_ref", "vc": args.vc, "jobs": len(jobs), "cluster": "9x4", "policies": {}}
    for name in args.policies.split(","):
        pol = POLICIES[name]
        sub = jobs.subset(slice(0, FIRST_JOBS[name])) if name in FIRST_JOBS else jobs
        py_s, py = timed(sub, cluster, pol, "python", args.repeats)
        c_s, comp = timed(sub, cluster, pol, "compiled", max(args.repeats, 3))
        out["policies"][name] = {
            "jobs": len(sub), "python_jobs_per_s": round(len(sub) / py_s), "python_cpu_s": round(py_s, 3),
            "compiled_jobs_per_s": round(len(sub) / max(c_s, 1e-9)), "compiled_backend": comp.backend,
            "same_avg_jct": py.summary()["avg_jct_s"] == comp.summary()["avg_jct_s"],
            "preemptions": int(py.summary()["preemptions"])}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
