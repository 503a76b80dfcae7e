"""Engine benchmark: our compiled queue kernel vs its pure-Python reference vs SimPy.

All three run the same M/M/c model (default M/M/10, lambda = 8/s, mu = 1/s) on the
same arrival and service draws, measured in this run, and the script prints one JSON
object. The timed region is the simulation only: the draws are made once beforehand
(from one seeded numpy Generator) and shared, so random-number generation is excluded
for all three. ``end_to_end`` separately times ``simulate_queue`` (draws + kernel +
percentiles) on the compiled backend. Events are counted the same way for all three:
one arrival plus one departure per job.

Usage: .venv/bin/python benchmarks/bench_engine.py [--jobs 1000000] [--repeats 3]
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import time

import numpy as np

from magnum_lib.engine import distributions, queue_ref, simulate_queue


def simpy_mmc(interarrival_s, service_s, servers: int) -> float:
    """The standard SimPy M/M/c model (one process per job, simpy.Resource); mean wait."""
    import simpy

    env = simpy.Environment()
    desk = simpy.Resource(env, capacity=servers)
    waits = []

    def job(service):
        arrived = env.now
        with desk.request() as turn:
            yield turn
            waits.append(env.now - arrived)
            yield env.timeout(service)

    def source():
        for gap, service in zip(interarrival_s, service_s, strict=True):
            yield env.timeout(gap)
            env.process(job(service))

    env.process(source())
    env.run()
    return float(np.mean(waits))


def timed(fn, repeats: int) -> tuple[float, object]:
    """Median wall time of ``repeats`` calls of ``fn`` and the last result."""
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def entry(seconds: float, repeats: int, jobs: int, wait_mean: float) -> dict:
    return {"seconds": seconds, "repeats": repeats, "jobs_per_s": jobs / seconds,
            "events_per_s": 2 * jobs / seconds, "wait_mean": wait_mean}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3, help="compiled runs (median)")
    parser.add_argument("--reference-repeats", type=int, default=1,
                        help="pure-Python and SimPy runs (median); 1 by default as they are slow")
    parser.add_argument("--servers", type=int, default=10)
    parser.add_argument("--arrival-rate", type=float, default=8.0)
    parser.add_argument("--service-rate", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-slow", action="store_true", help="compiled only (smoke test)")
    args = parser.parse_args(argv)
    c, n = args.servers, args.jobs

    rng = np.random.default_rng(args.seed)
    interarrival_s = distributions.exponential(rng, args.arrival_rate, n)
    service_s = distributions.exponential(rng, args.service_rate, n)
    interarrival_ns, service_ns = distributions.to_ns(interarrival_s), distributions.to_ns(service_s)

    results = {}
    try:
        from magnum_lib.engine import _queue
    except ImportError:
        _queue = None
    if _queue is not None:
        sec, out = timed(lambda: _queue.simulate_fifo(interarrival_ns, service_ns, c), args.repeats)
        results["compiled"] = entry(sec, args.repeats, n, float(out["wait"].mean()) / 1e9)
        sec, res = timed(lambda: simulate_queue(c, args.arrival_rate, args.service_rate, jobs=n,
                                                seed=args.seed, backend="compiled"), args.repeats)
        results["end_to_end"] = entry(sec, args.repeats, n, res.wait_mean)
        results["end_to_end"]["note"] = "simulate_queue(): draws + compiled kernel + summary"
    if not args.skip_slow:
        r = args.reference_repeats
        sec, out = timed(lambda: queue_ref.simulate_fifo(interarrival_ns, service_ns, c), r)
        results["python"] = entry(sec, r, n, float(out["wait"].mean()) / 1e9)
        interarrival_list, service_list = interarrival_s.tolist(), service_s.tolist()
        sec, wait = timed(lambda: simpy_mmc(interarrival_list, service_list, c), r)
        results["simpy"] = entry(sec, r, n, wait)

    report = {
        "benchmark": "engine",
        "model": f"M/M/{c} lambda={args.arrival_rate:g}/s mu={args.service_rate:g}/s",
        "jobs": n,
        "events_per_run": 2 * n,
        "events_definition": "arrivals + departures (2 per job), same for all backends",
        "rng_included": False,
        "timed_region": f"simulation only, on shared pre-drawn arrays (seed {args.seed})",
        "machine": {"python": platform.python_version(), "cpu": platform.processor() or platform.machine()},
        "results": results,
    }
    if "compiled" in results:
        for peer in ("simpy", "python"):
            if peer in results:
                report[f"compiled_over_{peer}"] = results["compiled"]["jobs_per_s"] / results[peer]["jobs_per_s"]
        if "simpy" in results:
            report["target_compiled_over_simpy"] = 100
            report["target_met"] = report["compiled_over_simpy"] >= 100
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
