"""``faux-magnum pack``: time-division packing of generated inference graphs on one device."""
from __future__ import annotations

from magnum_lib.base.validate import ParameterError
from magnum_lib.commands._common import NAME, SEED, Float, Int, Text, float_value, int_value, json_text

# Python parameter -> flag, where they differ.
_FLAGS = {"n": "jobs"}


def add(subparsers) -> None:
    p = subparsers.add_parser(
        "pack", help="pack N generated inference graphs on one accelerator (time-division)",
        description="Generate N seeded inference graphs, pack their layers back to back on one "
                    "device (static reservations, several jobs resident), and compare with exclusive "
                    "allocation (one job at a time) and dynamic elastic scheduling (H100-like).")
    p.add_argument("--jobs", required=True, metavar="N", type=Int(1, 100_000), help="number of graphs")
    p.add_argument("--device", default="mtia_v2", metavar="TYPE",
                   type=Text(NAME, "a device type such as mtia_v2 or h100", example="h100"),
                   help="device type (default: mtia_v2)")
    p.add_argument("--seed", default="0", metavar="S", type=SEED, help="random seed (default: 0)")
    p.add_argument("--runtime-spread", default="0.5", metavar="X", type=Float(0, 3),
                   help="lognormal sigma of layer runtimes, median 500us (default: 0.5)")
    p.add_argument("--memory-pressure", default="0.1", metavar="F", type=Float(0, 1, lo_open=True),
                   help="mean reservation per job as a fraction of device memory (default: 0.1)")
    p.add_argument("--load", default=None, metavar="RHO", type=Float(1e-3, 10),
                   help="Poisson arrivals offering this compute load (default: all jobs at t=0)")
    p.add_argument("--window", default="8", metavar="W", type=Int(1, 1000),
                   help="waiting jobs examined per admission (default: 8)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=_run_pack)


def _run_pack(args) -> int:
    from magnum_lib.graph.packing import compare_policies, make_inference_graphs
    from magnum_lib.hardware import UnknownAcceleratorError

    try:
        jobs = make_inference_graphs(
            int_value("jobs", args.jobs), seed=int_value("seed", args.seed),
            runtime_spread=float_value("runtime_spread", args.runtime_spread),
            memory_pressure=float_value("memory_pressure", args.memory_pressure), device=args.device,
            load=None if args.load is None else float_value("load", args.load))
        results = compare_policies(jobs, window=int_value("window", args.window))
    except ParameterError as exc:
        raise ParameterError(_FLAGS.get(exc.name, exc.name), exc.detail) from None
    except UnknownAcceleratorError as exc:
        raise ParameterError("device", str(exc)) from None
    packed = results["packed"].to_dict()
    out = {**packed, **{f"{k}_{p}": results[p].to_dict()[k] for p in ("exclusive", "dynamic")
                        for k in ("utilization", "makespan_s", "p50_latency_s", "p99_latency_s")}}
    if args.json:
        print(json_text(out))
        return 0
    print(f"{out['jobs']} graphs ({out['layers']} layers) on {out['device']}, seed {args.seed}")
    print(f"{'policy':<10} {'utilization':>11} {'makespan':>12} {'p50 latency':>12} {'p99 latency':>12}")
    for name, r in results.items():
        d = r.to_dict()
        print(f"{name:<10} {d['utilization']:>11.3f} {d['makespan_s']:>11.4f}s {d['p50_latency_s']:>11.4f}s "
              f"{d['p99_latency_s']:>11.4f}s")
    return 0
