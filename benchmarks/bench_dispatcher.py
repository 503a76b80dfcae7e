"""Dispatcher benchmark: decisions per second of wall time, compiled loop vs Python reference.

The article: the per-node Bouncer decides every 250 us, "4,000 decisions per second per
node". Here one node (8 devices, 250 us quantum, micro-preemption on, 20 us pause and
resume) runs a busy mixed workload (Poisson inference at 1 ms mean work plus 50 ms batch
jobs, about 85% load), so most visited quantum boundaries make a decision. Both loops run
the same seeded workload; the timed region is the loop alone (draws made beforehand).

``decisions_per_s`` counts boundaries that assigned or paused something, per second of
wall time; ``boundaries_per_s`` counts every boundary the loop looked at (it skips the
ones where nothing can change). ``realtime_factor`` is simulated seconds per wall
second; ``nodes_per_core`` is how many nodes deciding 4,000 times a second one core could
serve at this speed. The placement figure (requests/s) is the numpy heterogeneity-aware
choice, for scale.

Usage: .venv/bin/python benchmarks/bench_dispatcher.py [--duration 20] [--repeats 5]
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import time

from magnum_lib.node.dispatcher import dispatch, mixed_workload
from magnum_lib.node.placement import place, request_stream

ARTICLE_DECISIONS_PER_S = 4000  # one decision every 250 us


def run(workload, backend: str, repeats: int) -> dict:
    walls, result = [], None
    for _ in range(repeats):
        result = dispatch(workload, devices=8, quantum="250us", backend=backend)
        walls.append(result.wall_s)
    wall = statistics.median(walls)
    assert result.accounting.ok
    return {
        "wall_s": wall,
        "decisions": result.decisions,
        "boundaries_visited": result.visited,
        "events": result.events,
        "preemptions": result.preemptions,
        "decisions_per_s": result.decisions / wall,
        "boundaries_per_s": result.visited / wall,
        "events_per_s": result.events / wall,
        "realtime_factor": result.end_s / wall,
        "nodes_per_core": result.decisions / wall / ARTICLE_DECISIONS_PER_S,
        "inference_p99_s": result.per_class[0].latency_p99_s,
    }


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=20.0, help="simulated seconds of arrivals")
    ap.add_argument("--repeats", type=int, default=5, help="compiled runs (median); the reference runs once")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    w = mixed_workload(args.duration, inference_rate=5000, inference_work="1ms",
                       batch_rate=40, batch_work="50ms", seed=args.seed)
    compiled = run(w, "compiled", args.repeats)
    reference = run(w, "python", 1)
    devices = {"h100": 2, "mtia_v2": 4}
    stream = request_stream(devices, requests=20_000, load=0.6, seed=args.seed)
    start = time.perf_counter()
    place(stream, devices)
    placement_wall = time.perf_counter() - start
    out = {
        "benchmark": "dispatcher",
        "node": {"devices": 8, "quantum_us": 250, "requests": len(w),
                 "offered_load": w.offered_work_s() / (8 * args.duration)},
        "compiled": compiled,
        "python_reference": reference,
        "speedup": reference["wall_s"] / compiled["wall_s"],
        "article_decisions_per_s": ARTICLE_DECISIONS_PER_S,
        "compiled_vs_article": compiled["decisions_per_s"] / ARTICLE_DECISIONS_PER_S,
        "placement_cheapest_meeting_sla_requests_per_s": len(stream) / placement_wall,
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
    print(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
