"""How fast do the explorers answer a slider change? Prints one JSON object.

Each explorer is driven headlessly: ``N`` slider changes, each timed from setting
``control.value`` until the model has run, the figure is redrawn and its PNG is in the
Image widget (what the browser then shows). Ours is the active (compiled) backend; the
peer figure beside it is the same run on the pure-Python reference
(``MAGNUM_PUREPYTHON=1`` in a subprocess, so the two never share a process).

Usage: ``python benchmarks/bench_widgets.py [--changes N]``; target: median <= 150 ms.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

TARGET_MS = 150.0

# (control, value) sequences that keep every setting stable and move the model each time.
QUEUE_STEPS = [("replicas", 2), ("arrival_rate", 800.0), ("decision_ms", 1.0), ("replicas", 1),
               ("arrival_rate", 500.0), ("decision_ms", 1.5)]
CATALOG_STEPS = [("device", "mi300x"), ("gflop", 1e5), ("device", "a100_sxm"), ("gbytes", 1.0),
                 ("device", "h100_sxm"), ("gflop", 1000.0), ("gbytes", 10.0)]


def _drive(explorer, steps, changes: int) -> dict:
    name, value = steps[0]
    explorer.controls[name].value = value  # warm-up (imports, font cache)
    times = []
    for k in range(changes):
        name, value = steps[(k + 1) % len(steps)]
        t0 = time.perf_counter()
        explorer.controls[name].value = value
        times.append((time.perf_counter() - t0) * 1e3)
    t = np.asarray(times)
    return {"changes": changes, "median_ms": round(float(np.median(t)), 2),
            "p90_ms": round(float(np.percentile(t, 90)), 2), "max_ms": round(float(t.max()), 2)}


def measure(changes: int) -> dict:
    """Time both explorers on the active backend."""
    import magnum_lib
    from magnum_lib.widgets import catalog_explorer, queue_explorer

    queue = queue_explorer()
    out = {"backend": magnum_lib.backend(), "queue_jobs_per_change": queue.jobs,
           "queue_explorer": _drive(queue, QUEUE_STEPS, changes),
           "catalog_explorer": _drive(catalog_explorer(), CATALOG_STEPS, changes)}
    # Where the time goes on the queue explorer: the simulation alone, same settings.
    from magnum_lib.widgets import queue_model
    sims = [queue_model.evaluate(500.0, 1.5, 1, jobs=queue.jobs, seed=k).result.wall_s * 1e3 for k in range(5)]
    out["queue_simulation_only_median_ms"] = round(float(np.median(sims)), 2)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=30, help="slider changes per explorer (default 30)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.changes < 1:
        parser.error(f"--changes must be >= 1, got {args.changes}")
    if args.worker:
        print(json.dumps(measure(args.changes)))
        return 0

    ours = measure(args.changes)
    env = dict(os.environ, MAGNUM_PUREPYTHON="1")
    proc = subprocess.run([sys.executable, __file__, "--worker", "--changes", str(args.changes)],
                          env=env, capture_output=True, text=True, check=True)
    peer = json.loads(proc.stdout)
    result = {"target_median_ms": TARGET_MS, "ours": ours, "peer_pure_python": peer}
    for name in ("queue_explorer", "catalog_explorer"):
        result[f"{name}_meets_target"] = ours[name]["median_ms"] <= TARGET_MS
        result[f"{name}_speedup_median"] = round(peer[name]["median_ms"] / ours[name]["median_ms"], 2)
    result["queue_simulation_speedup"] = round(
        peer["queue_simulation_only_median_ms"] / ours["queue_simulation_only_median_ms"], 1)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
