"""The whole-system explorer answers a slider change within 150 ms (median), measured here.

Usage: .venv/bin/python benchmarks/bench_sim_widgets.py [--changes 21]
Prints one JSON object: the median, p90 and max seconds per change (evaluate + redraw).
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

from magnum_lib.widgets.system_explorer import system_explorer


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--changes", type=int, default=21)
    a = ap.parse_args(argv)
    e = system_explorer(seed=0)
    times = []
    for k in range(a.changes):
        t = time.perf_counter()
        e.controls["load"].value = 0.4 + 0.5 * (k % 10) / 10 + (0.01 if k >= 10 else 0.0)
        times.append(time.perf_counter() - t)
    times.sort()
    print(json.dumps({"explorer": "system_explorer", "changes": a.changes, "median_s": statistics.median(times),
                      "p90_s": times[int(0.9 * (len(times) - 1))], "max_s": times[-1], "target_median_s": 0.15}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
