"""Gossip benchmark: push dissemination at 50,000 and 600,000 nodes, compiled vs Python, merges/s.

Prints one JSON object, every figure measured in this run:

* ``push_50k``: one rumor, push, one peer per round, to full coverage on 50,000 nodes,
  compiled kernel on one core (target: under 50 ms). ``seconds`` is the median over
  ``--repeats`` seeds of the run's ``wall_s`` (kernel plus summary, arrays allocated
  inside); ``end_to_end_s`` adds validation and the call; ``cpu_seconds`` is the process
  CPU time of the whole call, which is what one core spends when the machine is shared
  (wall time then includes waiting for a core).
* ``fleet_600k``: the same at the article's 600,000 nodes (target: under 1 s).
* ``python_50k`` and ``compiled_over_python``: the pure-Python reference on the same
  50,000-node run (same seed, so the same rounds and messages), and the speed ratio.
* ``staleness_2000``: the steady-state view-age simulation at 2,000 nodes (compiled),
  with its element-wise last-writer-wins merges per second (one node entry = one merge).
* ``merges``: the STATE helper's ``magnum_lib.gossip.merge.merges_per_second`` for each
  merge rule (pure-Python node-state merges), or a note when it is not available.

The machine is shared (its load average is reported): compare figures from one run.
Usage: .venv/bin/python benchmarks/bench_gossip.py [--repeats 5] [--skip-python]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time

from magnum_lib.gossip.dissemination import simulate, staleness


def push_run(nodes: int, seeds, backend: str, target_s: float | None = None) -> dict:
    walls, ends, cpus, runs = [], [], [], []
    for seed in seeds:
        start, cpu = time.perf_counter(), time.process_time()
        r = simulate(nodes, 1, "push", seed=seed, backend=backend)
        cpus.append(time.process_time() - cpu)
        ends.append(time.perf_counter() - start)
        walls.append(r.wall_s)
        runs.append(r)
    out = {"nodes": nodes, "backend": backend, "repeats": len(runs),
           "seconds": statistics.median(walls), "end_to_end_s": statistics.median(ends),
           "cpu_seconds": statistics.median(cpus),
           "rounds_to_all": [r.rounds_to_all for r in runs],
           "messages": [r.messages for r in runs],
           "messages_per_s": statistics.median(r.messages / r.wall_s for r in runs)}
    if target_s is not None:
        out["target_s"] = target_s
        out["meets_target_wall"] = out["seconds"] < target_s
        out["meets_target_cpu"] = out["cpu_seconds"] < target_s
    return out


def merge_rates() -> dict:
    try:
        from magnum_lib.gossip.merge import merges_per_second
    except ImportError as exc:
        return {"note": f"magnum_lib.gossip.merge.merges_per_second not available ({exc})"}
    out = {"unit": "node-state merges per second, pure Python (STATE helper's merge.py)"}
    for rule in ("article", "lww", "vc"):
        try:
            out[rule] = merges_per_second(rule)
        except Exception as exc:  # report, do not hide, a peer's failure
            out[rule] = f"failed: {type(exc).__name__}: {exc}"
    return out


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="compiled runs (median)")
    parser.add_argument("--skip-python", action="store_true", help="skip the slow Python run")
    args = parser.parse_args(argv)
    seeds = range(args.repeats)
    simulate(1000, backend="compiled")  # warm up: imports, first allocations

    result = {
        "machine": {"python": platform.python_version(), "cpu_count": os.cpu_count(),
                    "load_average_1min": os.getloadavg()[0]},
        "push_50k": push_run(50_000, seeds, "compiled", 0.050),
        "fleet_600k": push_run(600_000, range(min(args.repeats, 3)), "compiled", 1.0),
    }
    if not args.skip_python:
        py = push_run(50_000, [0], "python")
        result["python_50k"] = py
        same = push_run(50_000, [0], "compiled")  # the same run as python_50k
        assert same["messages"] == py["messages"] and same["rounds_to_all"] == py["rounds_to_all"]
        result["compiled_over_python"] = py["seconds"] / same["seconds"]
        result["compiled_over_python_cpu"] = py["cpu_seconds"] / same["cpu_seconds"]
    s = staleness(2000, 1, "push", seed=0, measure=20, backend="compiled")
    entry_merges = s.messages * s.nodes
    result["staleness_2000"] = {
        "nodes": s.nodes, "warmup": s.warmup, "measure": s.measure, "seconds": s.wall_s,
        "age_rounds": s.quantiles()["rounds"],
        "entry_merges_per_s": entry_merges / s.wall_s,
        "note": "element-wise max of int32 generations, compiled; includes view copies and "
                "the age histogram"}
    result["merges"] = merge_rates()
    print(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
