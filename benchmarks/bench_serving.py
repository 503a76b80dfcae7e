"""The serving simulator's readable loop (``serving/serve_ref.py``): the first N requests of
Azure's 2023 conversation trace through R replicas (Llama 3 70B on 8 x H100 each), per
batching mode. Prints one JSON object.

    PYTHONPATH=src MAGNUM_SHARED_DATA=../shared/data python benchmarks/bench_serving.py [--n 2000] [--replicas 8]

``wall_s`` is CPU seconds of this process (``time.process_time``: comparable on a shared
machine); ``requests_per_s`` and ``iterations_per_s`` are simulated requests and replica
iterations per CPU second. There is no compiled loop yet (the issue's target is the whole
trace, 19,366 requests, through 8 replicas in under 1 s). The peer, Vidur
(github.com/microsoft/vidur), is recorded as not measured, with the reason.
"""
from __future__ import annotations

import argparse
import json
import time

from magnum_lib.serving import load_trace, make_replica, simulate, summarize

VIDUR = {"measured": False, "reason": (
    "not runnable here: the fetched snapshot of github.com/microsoft/vidur (commit 7d47513) lacks its "
    "attention profiles (data/profiling/compute/*/*/attention.csv, its largest files, listed but absent), "
    "from which its random-forest execution-time predictor is trained; its model shapes for Llama 3 8B "
    "and 70B (vidur/config/model_config.py) equal ours")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--replicas", type=int, default=8)
    ap.add_argument("--rate-scale", type=float, default=1.0)
    ap.add_argument("--modes", default="static,continuous,chunked")
    args = ap.parse_args()
    reqs = load_trace("azure-conv", rate_scale=args.rate_scale).head(args.n)
    spec = make_replica("llama3_70b", "h100_sxm", 8)
    out = {"bench": "serving_ref", "trace": "azure-conv", "requests": len(reqs), "replicas": args.replicas,
           "model": "llama3_70b", "device": "h100_sxm", "tp": 8, "rate_scale": args.rate_scale, "modes": {},
           "peer_vidur": VIDUR}
    for mode in args.modes.split(","):
        t0 = time.process_time()
        res = simulate(reqs, spec, replicas=args.replicas, batching=mode, router="least-outstanding")
        wall = time.process_time() - t0
        s = summarize(res)
        out["modes"][mode] = {
            "wall_s": round(wall, 3), "requests_per_s": round(len(reqs) / wall),
            "iterations_per_s": round(s["iterations"] / wall), "iterations": s["iterations"],
            "ttft_ms_p50": round(s["ttft_ms"]["p50"], 2), "ttft_ms_p99": round(s["ttft_ms"]["p99"], 2),
            "tpot_ms_p50": round(s["tpot_ms"]["p50"], 3), "tpot_ms_p99": round(s["tpot_ms"]["p99"], 3),
            "throughput_tok_s": round(s["throughput_tok_s"], 1)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
