"""Whole-system simulator benchmark: ours beside a SimPy model of the same request path.

1. ``simpy``: a SimPy model of the request path (arrivals batched into regional rounds,
   two-choices placement on a fresh view, the scheduler's per-decision cost, a speculative
   lease over RTT/2, validation at the node - accept or refuse and retry in a later round -,
   dispatch at the next decision quantum, service, release) and our simulator configured
   the same way (``view="fresh"``, no preemption, no hedging, no digest), both on the SAME
   inputs: the arrival times, classes, service times, nodes and training of one built region
   (the ``classroom`` cluster, load 0.5). Timed: the simulation only (inputs built
   beforehand), both up to the same horizon; best of 5 runs for ours, of 2 for SimPy (wall
   and CPU seconds; ``speedup`` is the wall ratio, ``speedup_cpu`` the CPU one).
   The mean decision latencies are printed beside each other (they agree statistically;
   the random node draws differ).
2. ``region``: the ``region`` preset (5,000 nodes, 40,000 GPUs) with magnum_v2 at load 0.8
   (about 800 k requests/s) for ``--region-seconds`` simulated seconds, end to end (inputs,
   gossip, digest, every layer, summary), in a fresh subprocess: wall, CPU and peak memory.
3. ``fleet``: the ``fleet`` preset (15 regions, 600,000 GPUs) for ``--fleet-seconds``, the
   regions serially in one process, in a fresh subprocess: wall, CPU, peak memory.

The machine may be shared: CPU seconds (``cpu_s``) are reported beside wall seconds, and
``requests_per_cpu_s`` is the one-core rate.

Usage: .venv/bin/python benchmarks/bench_sim.py [--simpy-seconds 20] [--region-seconds 10]
       [--fleet-seconds 1] [--skip-region] [--skip-fleet]
"""
from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time

import numpy as np


def simpy_request_path(run, horizon_ns: int) -> dict:
    """The same request path in SimPy on ``run``'s inputs; mean decision latency, timings."""
    import simpy

    arrays, params = run.arrays, run.core.params  # by name
    rng = np.random.default_rng(1)
    arr, cls = arrays["arr"], arrays["cls"]
    n_req, S = len(arr), params["n_sched"]
    dev, train = arrays["node_dev"], arrays["train"].copy()
    busy = np.zeros_like(dev)
    inflight = np.zeros_like(dev)
    pool_nodes, pool_off = arrays["pool_nodes"], arrays["pool_off"]
    cpool, cpool_off = arrays["cpool"], arrays["cpool_off"]
    service = arrays["service"].reshape(params["n_cls"], params["n_types"])
    node_type = arrays["node_type"]
    rnd, half, q = params["round_ns"], params["rtt_half_ns"], params["quantum_ns"]
    cdec, cval = params["c_dec_ns"], params["c_val_ns"]
    start = np.full(n_req, -1, dtype=np.int64)
    env = simpy.Environment()
    pending: list = []

    def avail(i):
        return dev[i] - busy[i] - inflight[i] - train[i]

    def pick(lo, n, left):  # as the core: up to `draws` random draws, then a bounded scan
        last = 0
        while left[0] > 0:
            left[0] -= 1
            last = int(rng.integers(n))
            if avail(pool_nodes[lo + last]) > 0:
                return pool_nodes[lo + last]
        for j in range(min(n, params["scan_limit"])):
            i = pool_nodes[lo + (last + j) % n]
            if avail(i) > 0:
                return i
        return -1

    def place(r, s):
        k = s * params["n_cls"] + cls[r]
        for p in cpool[cpool_off[k]:cpool_off[k + 1]]:
            lo, n = pool_off[p], pool_off[p + 1] - pool_off[p]
            left = [params["draws"]]
            a = pick(lo, n, left)
            if a < 0:
                continue
            b = pick(lo, n, left)
            return b if b >= 0 and avail(b) > avail(a) else a
        return -1

    def lease(r, i, delay):
        yield env.timeout(delay + half)
        inflight[i] -= 1
        yield env.timeout(cval)
        if dev[i] - busy[i] - train[i] <= 0:  # refused: the answer goes back, retry next round
            yield env.timeout(half)
            pending.append(r)
            return
        busy[i] += 1
        t = env.now
        t0 = t if q <= 0 else -(-t // q) * q
        yield env.timeout(t0 - t)
        start[r] = env.now
        yield env.timeout(int(service[cls[r], node_type[i]] * arrays["noise"][r]) + 1)
        busy[i] -= 1

    def rounds():
        nxt = 0
        while nxt < n_req or pending:
            t = env.now
            batch = pending[:]
            pending.clear()
            while nxt < n_req and arr[nxt] <= t:
                batch.append(nxt)
                nxt += 1
            work = [params["c_round_ns"]] * S
            for k, r in enumerate(batch):
                s = k % S
                work[s] += cdec
                i = place(r, s)
                if i < 0:
                    pending.append(r)
                    continue
                inflight[i] += 1
                env.process(lease(r, i, work[s]))
            yield env.timeout(max(rnd, max(work)) if batch else rnd)

    env.process(rounds())
    t0, c0 = time.perf_counter(), time.process_time()
    env.run(until=horizon_ns)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    ok = start >= 0
    return {"wall_s": wall, "cpu_s": cpu, "requests": int(n_req), "started": int(ok.sum()),
            "decision_latency_mean_ms": float(((start - arr)[ok]).mean() / 1e6)}


def ours_and_simpy(seconds: float, repeats: int = 5, simpy_repeats: int = 2) -> dict:
    from magnum_lib.sim import make_config
    from magnum_lib.sim.model import build_region, run_region

    cfg = make_config("magnum_v2", "classroom", duration_s=seconds, load=0.5, view="fresh", preempt="none", policy="two-choices",
                      hedge_factor=0.0, digest_interval_s=0.0, pre_reserve=True, seed=0)
    # Best of several runs for each side (fresh inputs each time, not timed): on a shared
    # machine a short run's wall time is mostly who else had the core.
    walls, cpus = [], []
    for _ in range(repeats):
        run = build_region(cfg)
        t0, c0 = time.perf_counter(), time.process_time()
        run_region(run)
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    arrays = run.arrays
    ok = arrays["start"] >= 0
    latency_ns = (arrays["start"] - arrays["arr"])[ok]
    ours = {"wall_s": min(walls), "cpu_s": min(cpus), "repeats": repeats, "requests": int(len(arrays["arr"])),
            "started": int(ok.sum()), "decision_latency_mean_ms": float(latency_ns.mean() / 1e6),
            "events": int(arrays["cnt"][0])}
    try:
        runs = [simpy_request_path(build_region(cfg), int(round(seconds * 1e9))) for _ in range(simpy_repeats)]
        sp = {**runs[0], "wall_s": min(r["wall_s"] for r in runs), "cpu_s": min(r["cpu_s"] for r in runs),
              "repeats": simpy_repeats, "measured": True}
    except ImportError as exc:
        sp = {"measured": False, "reason": str(exc)}
    out = {"cluster": "classroom", "simulated_s": seconds, "ours": ours, "simpy": sp}
    if sp.get("measured"):
        out["speedup"] = sp["wall_s"] / ours["wall_s"]
        out["speedup_cpu"] = sp["cpu_s"] / ours["cpu_s"]
    return out


_CHILD = r"""
import json, resource, sys, time
from magnum_lib.sim import make_config
from magnum_lib.sim.run import run_config
cluster, seconds = sys.argv[1], float(sys.argv[2])
c0, w0 = time.process_time(), time.perf_counter()
out = run_config(make_config("magnum_v2", cluster, duration_s=seconds, load=0.8, seed=0), max_memory=None, max_wall_s=None)
cpu, wall = time.process_time() - c0, time.perf_counter() - w0
n = out["requests"]["total"]
print(json.dumps({"cluster": cluster, "simulated_s": seconds, "requests": n, "events": out["events"],
                  "wall_s": wall, "cpu_s": cpu, "requests_per_wall_s": n / wall, "requests_per_cpu_s": n / cpu,
                  "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  "decision_latency_ms": {k: out["decision_latency_ms"][k] for k in ("p50", "p95", "p99", "p999")},
                  "lease_failure_rate": out["lease_failure_rate"], "backend": out["backend"]}))
"""


def child(cluster: str, seconds: float) -> dict:
    res = subprocess.run([sys.executable, "-c", _CHILD, cluster, str(seconds)], capture_output=True, text=True,
                         check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--simpy-seconds", type=float, default=20.0)
    ap.add_argument("--region-seconds", type=float, default=10.0)
    ap.add_argument("--fleet-seconds", type=float, default=1.0)
    ap.add_argument("--skip-region", action="store_true")
    ap.add_argument("--skip-fleet", action="store_true")
    a = ap.parse_args(argv)
    from magnum_lib import backend
    out = {"benchmark": "sim", "backend": backend(), "python": platform.python_version(),
           "machine": platform.machine(), "vs_simpy": ours_and_simpy(a.simpy_seconds)}
    if not a.skip_region:
        r = child("region", a.region_seconds)
        r["target_requests_per_s"] = 1e6
        out["region"] = r
    if not a.skip_fleet:
        f = child("fleet", a.fleet_seconds)
        f["target_wall_s"], f["target_peak_rss_bytes"] = 20.0, 2 * 10**9
        out["fleet"] = f
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
