"""``faux-magnum hetero``: heterogeneity-aware (LP) against blind allocation across device types."""
from __future__ import annotations

import sys

from magnum_lib.base.validate import ParameterError
from magnum_lib.commands._common import EXIT_USAGE, PROG, SEED, InputFile, Int, Text, int_value, json_text, one_line

_DEFAULT_CLUSTER = {"gavel": "v100:16,p100:16,k80:16", "roofline": "h100:8,mi300x:8,mtia_v2:32"}
MAX_DEVICES = 100_000  # per device type: a region, not a fleet of fleets


def add(subparsers) -> None:
    p = subparsers.add_parser(
        "hetero", help="heterogeneity-aware vs blind allocation of jobs across device types",
        description="Allocate jobs across device types to maximise total normalised throughput "
                    "(an LP solved with HiGHS, as Gavel does) and compare with a heterogeneity-blind "
                    "equal share. --trace gavel uses Gavel's measured throughputs (shared data); "
                    "--trace roofline derives them from the hardware catalog (H100, MI300X, MTIA).")
    p.add_argument("--trace", default="gavel", choices=["gavel", "roofline"], help="throughput source")
    p.add_argument("--cluster", default=None, metavar="TYPE:N,...",
                   type=Text(r"[A-Za-z0-9_.+:, -]+", "TYPE:COUNT,... such as v100:16,k80:8", max_chars=200,
                             example="v100:16"),
                   help="device counts (default: v100:16,p100:16,k80:16 for gavel, "
                        f"h100:8,mi300x:8,mtia_v2:32 for roofline; each count 1 to {MAX_DEVICES:,})")
    p.add_argument("--trace-file", default=None, metavar="PATH",
                   type=InputFile("Gavel throughput file (JSON)", 64 * 2**20),
                   help="Gavel's simulation_throughputs.json (default: found in the shared data folder)")
    p.add_argument("--jobs", default="64", metavar="N", type=Int(1, 10_000),
                   help="jobs drawn from the models (default: 64)")
    p.add_argument("--seed", default="0", metavar="S", type=SEED, help="random seed of the draw (default: 0)")
    p.add_argument("--objective", default="throughput", choices=["throughput", "maxmin"],
                   help="total normalised throughput, or max-min speed-up over the blind share")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=_run_hetero)


def _run_hetero(args) -> int:
    from magnum_lib.graph.hetero import GAVEL_TYPES, compare, gavel_matrix, parse_cluster, roofline_matrix
    from magnum_lib.workload.traces import load_gavel_throughputs

    counts = parse_cluster(_DEFAULT_CLUSTER[args.trace] if args.cluster is None else args.cluster)
    big = [f"{t}:{n}" for t, n in counts.items() if n > MAX_DEVICES]
    if big:
        raise ParameterError("cluster", f"counts must be <= {MAX_DEVICES:,} per device type, got {', '.join(big)[:80]}")
    jobs, seed = int_value("jobs", args.jobs), int_value("seed", args.seed)
    if args.trace == "gavel":
        unmeasured = [t for t in counts if t not in GAVEL_TYPES]
        if unmeasured:
            raise ParameterError("cluster", f"Gavel measured only {', '.join(GAVEL_TYPES)}, not "
                                            f"{', '.join(unmeasured)} (use --trace roofline for those)")
        try:
            gavel = load_gavel_throughputs(args.trace_file)
            tm = gavel_matrix(jobs, seed, types=tuple(counts), gavel=gavel)
        except (FileNotFoundError, ValueError) as exc:
            if args.trace_file is not None:  # the file the user named is bad input
                raise ParameterError("trace_file", str(exc)) from None
            print(one_line(f"{PROG} hetero: error: {exc}"), file=sys.stderr)
            return EXIT_USAGE  # one line naming the missing trace and where to get it
    else:
        tm = roofline_matrix(jobs, seed, types=tuple(counts))
    result = compare(tm, counts, args.objective)
    if args.json:
        print(json_text(result))
        return 0
    cluster = ", ".join(f"{n} x {t}" for t, n in result["cluster"].items())
    what = "total normalised throughput" if args.objective == "throughput" else "least speed-up over blind"
    print(f"{result['jobs']} jobs ({args.trace}) on {cluster}; objective: {what}")
    print(f"  heterogeneity-aware (LP, HiGHS): {result['throughput_aware']:.3f}")
    print(f"  heterogeneity-blind (equal share): {result['throughput_blind']:.3f}")
    print(f"  speed-up: {result['speedup']:.3f}x")
    return 0
