"""Load-balancing benchmark: power-of-two decisions/s and supermarket jobs/s, compiled vs Python.

Measured in one run, printed as one JSON object:

- ``decisions``: power-of-d placement decisions per second over ``--servers`` servers
  (default 10,000, d = 2): each decision samples d distinct servers (SplitMix64 in the
  kernel), compares their loads and increments the least loaded. Target (issue 3): at least
  30 million decisions/s on one core, compiled.
- ``supermarket``: simulated jobs per second in the full supermarket run
  (``--sm-servers`` = 1000 servers, load 0.9, d = 2; every job is an arrival and a
  departure event, the random numbers are drawn inside the timed kernel).

The reference runs fewer decisions / jobs (it is about 100x slower); rates are per second
so the two are comparable. Rates use the fastest of ``--repeats`` runs (as ``timeit``
advises: slower runs measure interference from other processes on a shared machine);
the median time is reported beside it. The reference runs once.

Usage: .venv/bin/python benchmarks/bench_balance.py [--decisions 20000000] [--jobs 2000000]
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import time

import numpy as np

from magnum_lib.node import balance_ref
from magnum_lib.node.balance import POLICIES, kernel

DECISIONS_TARGET = 30e6


def timed(fn, repeats: int) -> tuple[float, float]:
    """Fastest and median wall time of ``repeats`` calls of ``fn``, seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


def decisions_rate(module, servers: int, decisions: int, choices: int, repeats: int) -> dict:
    loads = np.zeros(servers, dtype=np.int64)

    def run():
        loads[:] = 0
        module.place_power_of_d(loads, decisions, choices, 12345)

    sec, median = timed(run, repeats)
    return {"decisions": decisions, "seconds": sec, "median_seconds": median, "repeats": repeats,
            "decisions_per_s": decisions / sec, "ns_per_decision": sec / decisions * 1e9}


def supermarket_rate(module, servers: int, load: float, choices: int, jobs: int, repeats: int) -> dict:
    def run():
        return module.simulate_supermarket(servers, load, POLICIES["power_of_d"], choices, 1, 0,
                                           jobs, jobs // 5, 12345)

    sec, median = timed(run, repeats)
    out = run()
    tis = out["time_in_system"][jobs // 5:]
    return {"jobs": jobs, "seconds": sec, "median_seconds": median, "repeats": repeats,
            "jobs_per_s": jobs / sec,
            "events_per_s": out["events"] / sec, "time_in_system_mean": float(tis.mean()) / 1e9}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=10_000, help="servers for decisions")
    parser.add_argument("--choices", type=int, default=2)
    parser.add_argument("--decisions", type=int, default=20_000_000)
    parser.add_argument("--python-decisions", type=int, default=200_000)
    parser.add_argument("--sm-servers", type=int, default=1000)
    parser.add_argument("--load", type=float, default=0.9)
    parser.add_argument("--jobs", type=int, default=2_000_000)
    parser.add_argument("--python-jobs", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-slow", action="store_true", help="compiled only (smoke test)")
    args = parser.parse_args(argv)

    try:
        fast = kernel("compiled")
    except ImportError:
        fast = None
    results = {"decisions": {}, "supermarket": {}}
    if fast is not None:
        results["decisions"]["compiled"] = decisions_rate(fast, args.servers, args.decisions,
                                                          args.choices, args.repeats)
        results["supermarket"]["compiled"] = supermarket_rate(fast, args.sm_servers, args.load,
                                                              args.choices, args.jobs, args.repeats)
    if not args.skip_slow:
        results["decisions"]["python"] = decisions_rate(balance_ref, args.servers,
                                                        args.python_decisions, args.choices, 1)
        results["supermarket"]["python"] = supermarket_rate(balance_ref, args.sm_servers, args.load,
                                                            args.choices, args.python_jobs, 1)
    report = {
        "benchmark": "balance",
        "decisions_model": f"power-of-{args.choices} placement over {args.servers} servers "
                           "(sample distinct servers, pick the least loaded, increment it)",
        "supermarket_model": f"supermarket N={args.sm_servers} load={args.load:g} d={args.choices}, "
                             "2 events per job, warm-up 20%",
        "rng_included": True,
        "machine": {"python": platform.python_version(),
                    "cpu": platform.processor() or platform.machine()},
        "results": results,
        "target_decisions_per_s": DECISIONS_TARGET,
    }
    dec, sm = results["decisions"], results["supermarket"]
    if "compiled" in dec:
        report["target_met"] = dec["compiled"]["decisions_per_s"] >= DECISIONS_TARGET
        if "python" in dec:
            report["decisions_compiled_over_python"] = (dec["compiled"]["decisions_per_s"]
                                                        / dec["python"]["decisions_per_s"])
            report["supermarket_compiled_over_python"] = (sm["compiled"]["jobs_per_s"]
                                                          / sm["python"]["jobs_per_s"])
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
