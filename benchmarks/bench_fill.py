"""The FGD paper's fill experiment on the whole openb cluster: compiled vs reference loop.

    PYTHONPATH=src MAGNUM_SHARED_DATA=../shared/data python benchmarks/bench_fill.py [--seed 42]

The Alibaba pods inflated to 130 % of the 6,212 GPUs (``alibaba_pods(inflate=1.3)``) are
placed one by one, none leaving (:func:`magnum_lib.replay.fill.fill`), by ``fgd``,
``best-fit`` and ``first-fit`` in the compiled ``_fill`` and in ``fill_ref`` (same pods,
same run), plus ``random`` (reference only). Prints one JSON object: CPU seconds of each,
pods per second, whether both loops placed every pod on the same node, and the share of
the GPUs allocated at 130 % requested. The paper's own simulator (Go, Kubernetes
scheduler framework; about 10 minutes per experiment on 2 vCPU by its README) is not run.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

from magnum_lib.replay import ReplayCluster, fill_ref
from magnum_lib.replay.fill import _fill_args
from magnum_lib.replay.traces import alibaba_pods


def timed(mod, args, code, seed):
    a = [x.copy() for x in args]
    t0 = time.process_time()
    node, _ = mod.fill_core(*a, code, seed)
    return time.process_time() - t0, node


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args()
    from magnum_lib.replay import _fill

    cl = ReplayCluster.alibaba()
    jobs = alibaba_pods(cl, inflate=1.3, seed=args.seed)
    core_args = _fill_args(jobs, cl)
    req = jobs.num_gpus * jobs.gpu_milli
    out = {"bench": "fill", "pods": len(jobs), "gpus": cl.total_gpus, "seed": args.seed, "placements": {}}
    for code, name in enumerate(("fgd", "best-fit", "first-fit", "random")):
        ref_s, ref_node = timed(fill_ref, core_args, code, args.seed)
        row = {"python_cpu_s": round(ref_s, 3), "python_pods_per_s": round(len(jobs) / ref_s),
               "allocated_at_130": round(float(req[ref_node >= 0].sum()) / (cl.total_gpus * 1000), 4)}
        if name != "random":
            c_s, c_node = timed(_fill, core_args, code, args.seed)
            row.update(compiled_cpu_s=round(c_s, 4), compiled_pods_per_s=round(len(jobs) / max(c_s, 1e-9)),
                       speedup=round(ref_s / max(c_s, 1e-9), 1), same_nodes=bool(np.array_equal(ref_node, c_node)))
        out["placements"][name] = row
    print(json.dumps(out))


if __name__ == "__main__":
    main()
