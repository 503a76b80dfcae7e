"""The run estimates' error on real runs (issue 22): simulate and replay, one child process each.

For each configuration a child process estimates the run (``sim.budget.estimate`` /
``replay.budget.estimate``), runs it, and reports wall time and peak RSS; this prints one
JSON object with the estimate / measured ratios. An estimate is for refusing runs a
laptop cannot do: a factor of two either way is its design accuracy.

    python benchmarks/bench_estimate.py            # ten runs, about a minute
"""
from __future__ import annotations

import json
import subprocess
import sys

SIM = [dict(duration_s=1.0), dict(duration_s=5.0), dict(cluster="region", duration_s=0.5),
       dict(duration_s=1.0, gossip_interval_s=1e-5), dict(cluster="region", duration_s=0.1, digest_interval_s=1e-4),
       dict(duration_s=0.5, load=10.0, round_s=1e-6), dict(cells_per_region=2, nodes_per_cell=20_000, duration_s=0.01)]
REPLAY = [("tiresias", "gavel", 10.0), ("tiresias", "ftf", 1.0), ("tiresias", "las", None)]

CHILD_SIM = """
import json, resource, sys, time
from magnum_lib.sim import make_config
from magnum_lib.sim.budget import estimate
from magnum_lib.sim.run import run_config
kw = json.loads(sys.argv[1]); cluster = kw.pop("cluster", "classroom")
cfg = make_config("magnum_v2", cluster, **kw)
e = estimate(cfg)
t = time.perf_counter(); out = run_config(cfg, max_memory=None, max_wall_s=None); w = time.perf_counter() - t
print(json.dumps(dict(est_wall_s=e.wall_s, est_bytes=e.memory_bytes, wall_s=w, requests=out["requests"]["total"],
                      est_requests=e.requests, rss_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)))
"""

CHILD_REPLAY = """
import json, resource, sys, time
from magnum_lib.replay import ReplayCluster, make_policy, replay
from magnum_lib.replay import traces as T
from magnum_lib.replay.budget import estimate
trace, policy, rnd = json.loads(sys.argv[1])
jobs = T.tiresias_jobs(); cluster = ReplayCluster.uniform(4, 4)
pol = make_policy(policy, round_s=rnd) if rnd else make_policy(policy)
e = estimate(jobs, cluster, rnd, fast=rnd is None, lp=policy.startswith("gavel"))
t = time.perf_counter(); replay(jobs, cluster, pol, max_memory=None, max_wall_s=None); w = time.perf_counter() - t
print(json.dumps(dict(est_wall_s=e.wall_s, est_bytes=e.memory_bytes, wall_s=w,
                      rss_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)))
"""


def child(code: str, arg) -> dict:
    proc = subprocess.run([sys.executable, "-c", code, json.dumps(arg)], capture_output=True, text=True, timeout=600)
    if proc.returncode:
        return {"error": proc.stderr.strip().splitlines()[-1][:200]}
    return json.loads(proc.stdout)


def main() -> None:
    runs = []
    for kw in SIM:
        r = child(CHILD_SIM, dict(kw))
        runs.append({"what": f"simulate {kw}", **r})
    for spec in REPLAY:
        r = child(CHILD_REPLAY, list(spec))
        runs.append({"what": f"replay {spec}", **r})
    for r in runs:
        if "error" not in r:
            # the run's own wall time (the estimate's start-up second is the child's imports)
            r["wall_ratio"] = r["est_wall_s"] / max(r["wall_s"], 1e-3)
            r["memory_ratio"] = r["est_bytes"] / r["rss_bytes"]
    ok = [r for r in runs if "error" not in r]
    print(json.dumps({"runs": runs,
                      "wall_ratio_range": [min(r["wall_ratio"] for r in ok), max(r["wall_ratio"] for r in ok)],
                      "memory_ratio_range": [min(r["memory_ratio"] for r in ok), max(r["memory_ratio"] for r in ok)]},
                     indent=1))


if __name__ == "__main__":
    main()
