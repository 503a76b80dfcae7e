"""The serving loop, compiled (``serving/_serve.pyx``) against the readable reference
(``serving/serve_ref.py``) in the same run: the first N requests of Azure's 2023
conversation trace (default: all 19,366) through R replicas (Llama 3 70B on 8 x H100 each),
per batching mode. Prints one JSON object.

    PYTHONPATH=src MAGNUM_SHARED_DATA=../shared/data python benchmarks/bench_serving.py \\
        [--n 19366] [--replicas 8] [--modes continuous] [--repeat 5] [--ref-repeat 1]

Per mode: ``cpu_s`` (``time.process_time``, comparable on a shared machine) and ``wall_s``
(``time.perf_counter``) medians over the repeats of each form, ``ratio_cpu`` = reference /
compiled CPU medians, and ``parity``: every per-request array, counter and the run's end
equal between the two forms. The issue's target: the whole trace through 8 replicas with
continuous batching in under 1 s wall on one core, and >= 100x the reference. The peer,
Vidur (github.com/microsoft/vidur), is recorded as not measured, with the reason.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from magnum_lib.serving import _serve, load_trace, make_replica, serve_ref, summarize

VIDUR = {"measured": False, "reason": (
    "not runnable here: the fetched snapshot of github.com/microsoft/vidur (commit 7d47513) lacks its "
    "attention profiles (data/profiling/compute/*/*/attention.csv, its largest files, listed but absent), "
    "from which its random-forest execution-time predictor is trained; its model shapes for Llama 3 8B "
    "and 70B (vidur/config/model_config.py) equal ours")}
ARRAYS = ("status", "first_token_ns", "finish_ns", "routed", "decode_replica", "prefix_hit_tokens", "preempted",
          "busy_ns", "kv_t_ns", "kv_replica", "kv_used")


def timed(form, args, repeat):
    cpu, wall, res = [], [], None
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        res = form.run_checked(args)
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return res, {"cpu_s": round(statistics.median(cpu), 4), "wall_s": round(statistics.median(wall), 4),
                 "cpu_s_all": [round(x, 4) for x in cpu], "repeat": repeat}


def equal(a, b) -> bool:
    return (all(np.array_equal(getattr(a, f), getattr(b, f)) for f in ARRAYS) and a.counters == b.counters
            and a.end_ns == b.end_ns and a.in_system_area_ns == b.in_system_area_ns)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=19366)
    ap.add_argument("--replicas", type=int, default=8)
    ap.add_argument("--rate-scale", type=float, default=1.0)
    ap.add_argument("--modes", default="continuous")
    ap.add_argument("--router", default="least-outstanding")
    ap.add_argument("--repeat", type=int, default=5, help="runs of the compiled loop (median)")
    ap.add_argument("--ref-repeat", type=int, default=1, help="runs of the reference loop (median)")
    args = ap.parse_args()
    reqs = load_trace("azure-conv", rate_scale=args.rate_scale).head(args.n)
    spec = make_replica("llama3_70b", "h100_sxm", 8)
    out = {"bench": "serving", "trace": "azure-conv", "requests": len(reqs), "replicas": args.replicas,
           "model": "llama3_70b", "device": "h100_sxm", "tp": 8, "rate_scale": args.rate_scale,
           "router": args.router, "modes": {}, "peer_vidur": VIDUR}
    for mode in args.modes.split(","):
        run = serve_ref.check_args(reqs, spec, replicas=args.replicas, batching=mode, router=args.router)
        fast, t_fast = timed(_serve, run, args.repeat)
        ref, t_ref = timed(serve_ref, run, args.ref_repeat)
        s = summarize(fast)
        out["modes"][mode] = {
            "compiled": t_fast, "reference": t_ref, "ratio_cpu": round(t_ref["cpu_s"] / t_fast["cpu_s"], 1),
            "parity": equal(fast, ref), "iterations": s["iterations"],
            "iterations_per_cpu_s_compiled": round(s["iterations"] / t_fast["cpu_s"]),
            "ttft_ms_p50": round(s["ttft_ms"]["p50"], 2), "ttft_ms_p99": round(s["ttft_ms"]["p99"], 2),
            "tpot_ms_p50": round(s["tpot_ms"]["p50"], 3), "tpot_ms_p99": round(s["tpot_ms"]["p99"], 3),
            "throughput_tok_s": round(s["throughput_tok_s"], 1)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
