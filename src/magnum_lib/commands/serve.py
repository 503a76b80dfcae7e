"""``faux-magnum serve``: LLM inference replicas token by token on a real trace (:mod:`magnum_lib.serving`)."""
from __future__ import annotations

import argparse
import json
import sys
import time

from magnum_lib.base.validate import ParameterError, excerpt
from magnum_lib.commands._common import NAME, SEED, Duration, FlagType, Float, InputFile, Int, Text, print_table

#: The catalog's keys and aliases (data/models.yaml; tests/test_serving_cli.py keeps them equal).
_MODELS = ("llama3_8b", "llama3-8b", "llama-3-8b", "llama3_70b", "llama3-70b", "llama-3-70b",
           "mixtral_8x7b", "mixtral-8x7b", "mixtral")
_TRACES = ("azure-code", "azure-conv", "mooncake-conv", "mooncake-synth")
_HOUR_NS = 3600 * 10**9


class Ratio(FlagType):
    """``P:D``: prefill and decode replicas, each 1 to 4096."""

    kind = "text"
    example = "1:3"
    _count = Int(1, 4096)

    def parse(self, text):
        parts = text.split(":")
        if len(parts) != 2:
            raise argparse.ArgumentTypeError(f"must be P:D (prefill:decode replicas), got {excerpt(text)}")
        try:
            return tuple(self._count.parse(x.strip()) for x in parts)
        except argparse.ArgumentTypeError as exc:
            raise argparse.ArgumentTypeError(f"must be P:D with each {self._count.describe()}: {exc}") from None

    def describe(self):
        return "P:D, each an integer 1 to 4,096"

    def bad_values(self):
        return ["0:1", "1:0", "1:2:3", "1", "4097:1"]


def add(subparsers) -> None:
    p = subparsers.add_parser(
        "serve", help="serve an LLM inference trace on replicas: batching, KV cache, routing",
        description="Replay an inference trace through replicas of a model on catalog devices, "
                    "iteration by iteration (roofline times), and print TTFT, TPOT, end-to-end "
                    "percentiles (ms), goodput under the SLOs, throughput and KV-cache use.")
    p.add_argument("--trace", default="azure-conv", choices=_TRACES, help="trace (default: azure-conv)")
    p.add_argument("--trace-file", metavar="PATH", type=InputFile("trace file", 512 * 2**20),
                   help="read the trace from this file instead of the shared data folder")
    p.add_argument("--requests", default="1000", metavar="N", type=Int(1, 10**6),
                   help="the trace's first N requests (default: 1000)")
    p.add_argument("--rate-scale", default="1", metavar="X", type=Float(1e-3, 1e3),
                   help="arrivals X times as fast (default: 1)")
    p.add_argument("--model", default="llama3_70b", choices=_MODELS, metavar="MODEL",
                   help=f"model: {', '.join(_MODELS)} (default: llama3_70b)")
    p.add_argument("--device", default="h100_sxm", metavar="NAME", type=Text(NAME, "a catalog device name",
                                                                             example="h100"),
                   help="accelerator from the hardware catalog (default: h100_sxm)")
    p.add_argument("--tp", default="8", metavar="K", type=Int(1, 64), help="tensor-parallel devices (default: 8)")
    p.add_argument("--replicas", default="4", metavar="N", type=Int(1, 4096), help="replicas (default: 4)")
    p.add_argument("--disaggregate", metavar="P:D", type=Ratio(),
                   help="P prefill and D decode replicas (replaces --replicas)")
    p.add_argument("--batching", default="continuous", choices=["static", "continuous", "chunked"],
                   help="batching (default: continuous)")
    p.add_argument("--token-budget", default="512", metavar="T", type=Int(1, 1 << 20),
                   help="new tokens per iteration with --batching chunked (default: 512)")
    p.add_argument("--max-batch", default="256", metavar="B", type=Int(1, 1 << 16),
                   help="sequences per iteration (default: 256)")
    p.add_argument("--kv-blocks", metavar="N", type=Int(1, 1 << 40),
                   help="KV pages of 16 tokens per replica (default: what memory holds after the weights)")
    p.add_argument("--preemption", default="recompute", choices=["recompute", "swap"],
                   help="what a preempted sequence does (default: recompute)")
    p.add_argument("--no-prefix-cache", action="store_true", help="turn the prefix cache off")
    p.add_argument("--router", default="round-robin",
                   choices=["round-robin", "least-outstanding", "power-of-two", "prefix-aware"],
                   help="router across replicas (default: round-robin)")
    p.add_argument("--router-file", metavar="FILE.py:NAME", type=Text(r"[^\x00-\x1f]+\.py:[A-Za-z_]\w*",
                                                                      "FILE.py:NAME", max_chars=4096,
                                                                      example="r.py:R"),
                   help="your router (a Router class or an object with route(view, request)) instead; "
                        "it runs on the readable Python loop")
    p.add_argument("--slo-ttft", default="2s", metavar="D", type=Duration(1000, _HOUR_NS),
                   help="time-to-first-token SLO (default: 2s)")
    p.add_argument("--slo-tpot", default="100ms", metavar="D", type=Duration(1000, _HOUR_NS),
                   help="time-per-output-token SLO (default: 100ms)")
    p.add_argument("--seed", default="0", metavar="S", type=SEED, help="random seed (default: 0)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=_run_serve)


def _seconds(name, value) -> float:
    from magnum_lib.units import parse_duration

    return value if isinstance(value, float) else parse_duration(value) / 1e9


def _router(args):
    if not args.router_file:
        return args.router
    from magnum_lib.commands.replay import load_policy_file

    try:
        return load_policy_file(args.router_file)
    except ParameterError as exc:
        raise ParameterError("router_file", exc.detail) from None


def _run_serve(args) -> int:
    from magnum_lib.hardware import UnknownAcceleratorError
    from magnum_lib.serving import load_trace, make_replica, simulate, summarize

    try:
        spec = make_replica(args.model, args.device, args.tp, kv_blocks=args.kv_blocks)
    except UnknownAcceleratorError as exc:
        raise ParameterError("device", str(exc)) from None
    except ValueError as exc:
        if isinstance(exc, ParameterError):
            raise
        raise ParameterError("device", str(exc)) from None
    router = _router(args)
    try:
        reqs = load_trace(args.trace, path=args.trace_file, rate_scale=args.rate_scale).head(args.requests)
    except (ValueError, FileNotFoundError) as exc:
        raise ParameterError("trace_file" if args.trace_file else "trace", str(exc)) from None
    from magnum_lib.serving.budget import estimate
    from magnum_lib.serving.loop import uses_kernel

    fast = uses_kernel(router)
    est = estimate(reqs, args.batching, args.token_budget, compiled=fast)
    if est.wall_s >= 5:  # a long run: say so before it starts
        print(f"serve: {est.describe()}", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    res = simulate(reqs, spec, replicas=args.replicas, batching=args.batching, max_batch=args.max_batch,
                   token_budget=args.token_budget, preemption=args.preemption,
                   prefix_cache=not args.no_prefix_cache, disaggregate=args.disaggregate, router=router,
                   seed=args.seed, progress=sys.stderr.isatty() and len(reqs) > 5000)
    out = summarize(res, _seconds("slo_ttft", args.slo_ttft), _seconds("slo_tpot", args.slo_tpot))
    out.update(trace=args.trace, model=spec.model.key, device=spec.device.key, tp=spec.tp,
               kv_blocks=spec.kv_blocks, wall_s=round(time.perf_counter() - t0, 3),
               loop="compiled" if fast else "python")
    if args.json:
        print(json.dumps(out))
        return 0
    pct = lambda d: "  ".join(f"{k} {v:.4g}" for k, v in d.items() if v is not None)  # noqa: E731
    d = out["config"]["disaggregate"]
    rows = [
        ("trace", f"{args.trace}: {out['requests']:,} requests ({out['finished']:,} finished, "
                  f"{out['refused']:,} refused, {out['in_flight']:,} in flight)"),
        ("replicas", f"{f'{d[0]} prefill + {d[1]} decode' if d else res.n_replicas} x {spec.model.key} on "
                     f"{spec.tp} x {spec.device.key} ({out['gpus']} GPUs, {spec.kv_blocks:,} KV pages each)"),
        ("batching", f"{args.batching}" + (f", {args.token_budget} tokens per iteration"
                                           if args.batching == "chunked" else "") + f", router {out['config']['router']}"),
        ("TTFT ms", pct(out["ttft_ms"])), ("TPOT ms", pct(out["tpot_ms"])), ("E2E ms", pct(out["e2e_ms"])),
        ("SLOs met", f"{out['slo_attainment']:.2%} (TTFT <= {out['slo_ttft_s']:g} s, TPOT <= {out['slo_tpot_s']:g} s)"),
        ("goodput", f"{out['goodput_rps_per_gpu']:.4g} requests/s per GPU"),
        ("throughput", f"{out['throughput_tok_s']:,.0f} output tokens/s"),
        ("prefix hits", f"{out['prefix_hit_rate']:.2%} of prompt tokens"),
        ("preemptions", f"{out['preemptions']['recompute']} recompute, {out['preemptions']['swap']} swap"),
        ("KV use", f"mean {out['kv_utilization']['mean']:.1%}, peak {out['kv_utilization']['peak']:.1%}"),
        ("energy", f"{out['energy_j_per_token']:.4g} J per output token (busy x TDP)"
                   if out["energy_j_per_token"] else "n/a"),
        ("wall time", f"{out['wall_s']:.3f} s ({'compiled' if fast else 'readable Python'} loop)"),
    ]
    print_table(rows)
    return 0
