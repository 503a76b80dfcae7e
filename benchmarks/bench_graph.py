"""Graph benchmark: time-division packing (compiled kernel vs Python reference) and
manifest validation, measured in one run; prints one JSON object.

* packing: ``make_inference_graphs(jobs)`` once (generation is not timed), then
  ``pack(..., policy)`` with each kernel; jobs per second = jobs / median wall time. The
  reference is timed on ``--ref-jobs`` graphs (it is ~100x slower) and reported per job.
* validation: ``parse_manifest`` on the article's manifest, parsed once to a document
  (validation only) and also from YAML text (``yaml.safe_load`` + validation); both
  backends share this pure-Python path, so it is reported once.

Usage: .venv/bin/python benchmarks/bench_graph.py [--jobs 10000] [--ref-jobs 2000] [--repeats 3]
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import time

import numpy as np
import yaml

from magnum_lib._resources import data_path
from magnum_lib.graph import packing_ref
from magnum_lib.graph.manifest import parse_manifest
from magnum_lib.graph.packing import make_inference_graphs, pack

ARTICLE = data_path("manifests", "article.yaml")


def timed(fn, repeats: int):
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def rate(fn, repeats: int, min_s: float = 0.3) -> float:
    """Calls per second of ``fn``, looping until ``min_s`` has passed (median of repeats)."""
    rates = []
    for _ in range(repeats):
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < min_s:
            fn()
            n += 1
        rates.append(n / (time.perf_counter() - start))
    return statistics.median(rates)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=10_000)
    ap.add_argument("--ref-jobs", type=int, default=2_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    from magnum_lib.graph import _packing  # the compiled kernel; build it first (make build)

    out = {"benchmark": "graph", "python": platform.python_version(), "machine": platform.machine(),
           "jobs": args.jobs, "ref_jobs": args.ref_jobs, "packing": {}}
    big = make_inference_graphs(args.jobs, args.seed)
    small = make_inference_graphs(args.ref_jobs, args.seed)
    for policy in ("packed", "exclusive", "dynamic"):
        t_c, r_c = timed(lambda: pack(big, policy, kernel=_packing), args.repeats)  # noqa: B023
        t_cs, r_cs = timed(lambda: pack(small, policy, kernel=_packing), args.repeats)  # noqa: B023
        t_r, r_r = timed(lambda: pack(small, policy, kernel=packing_ref), max(1, args.repeats - 2))  # noqa: B023
        same = all(np.array_equal(getattr(r_cs, k), getattr(r_r, k)) for k in ("start_ns", "done_ns"))
        out["packing"][policy] = {
            "compiled_jobs_per_s": args.jobs / t_c, "compiled_wall_s": t_c,
            "layers": int(big.runtime_ns.size), "utilization": r_c.utilization,
            "reference_jobs_per_s": args.ref_jobs / t_r, "reference_wall_s_on_ref_jobs": t_r,
            "speedup_same_input": t_r / t_cs, "same_schedule": bool(same),
        }
    text = ARTICLE.read_text()
    doc = yaml.safe_load(text)
    out["validation"] = {
        "manifest": ARTICLE.name,
        "validations_per_s_document": rate(lambda: parse_manifest(doc), args.repeats),
        "validations_per_s_yaml_text": rate(lambda: parse_manifest(text), args.repeats),
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
