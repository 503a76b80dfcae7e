"""A sweep of router x batching x replica count on a real inference trace, on
:func:`magnum_lib.sweep.sweep`. Prints one JSON object (one row per grid point).

    PYTHONPATH=src MAGNUM_SHARED_DATA=../shared/data python benchmarks/bench_serving_sweep.py \
        [--trace mooncake-conv] [--n 400] [--model llama3_8b] [--tp 1] [--client serial]

Each row: TTFT and TPOT p50/p99 (ms), SLO attainment and goodput per GPU under
``--slo-ttft`` / ``--slo-tpot`` (seconds), prefix hit rate, preemptions, and the CPU
seconds of the run (the readable loop).
"""
from __future__ import annotations

import argparse
import json
import time

from magnum_lib.serving import ROUTERS, load_trace, make_replica, simulate, summarize
from magnum_lib.sweep import sweep


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace", default="mooncake-conv")
    ap.add_argument("--n", type=int, default=400)
    ap.add_argument("--rate-scale", type=float, default=1.0)
    ap.add_argument("--model", default="llama3_8b")
    ap.add_argument("--tp", type=int, default=1)
    ap.add_argument("--replicas", default="2,4")
    ap.add_argument("--slo-ttft", type=float, default=2.0)
    ap.add_argument("--slo-tpot", type=float, default=0.1)
    ap.add_argument("--client", default="serial", help="sweep client: serial, local or a scheduler address")
    args = ap.parse_args()
    reqs = load_trace(args.trace, rate_scale=args.rate_scale).head(args.n)
    spec = make_replica(args.model, "h100_sxm", args.tp)

    def point(router, batching, replicas):
        t0 = time.process_time()
        s = summarize(simulate(reqs, spec, replicas=replicas, batching=batching, router=router),
                      args.slo_ttft, args.slo_tpot)
        return {"ttft_p50_ms": s["ttft_ms"]["p50"], "ttft_p99_ms": s["ttft_ms"]["p99"],
                "tpot_p50_ms": s["tpot_ms"]["p50"], "tpot_p99_ms": s["tpot_ms"]["p99"],
                "slo_attainment": s["slo_attainment"], "goodput_rps_per_gpu": s["goodput_rps_per_gpu"],
                "prefix_hit_rate": s["prefix_hit_rate"],
                "preemptions": s["preemptions"]["recompute"] + s["preemptions"]["swap"],
                "cpu_s": time.process_time() - t0}

    grid = {"router": list(ROUTERS), "batching": ["static", "continuous", "chunked"],
            "replicas": [int(x) for x in args.replicas.split(",")]}
    res = sweep(point, grid, client=args.client, progress=False)
    rows = [{k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()} for row in res.rows]
    print(json.dumps({"bench": "serving_sweep", "trace": args.trace, "requests": len(reqs), "model": args.model,
                      "tp": args.tp, "slo_ttft_s": args.slo_ttft, "slo_tpot_s": args.slo_tpot, "rows": rows}))


if __name__ == "__main__":
    main()
