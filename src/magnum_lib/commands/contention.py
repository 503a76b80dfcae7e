"""``faux-magnum contention``: how often do concurrent speculative leases collide?"""
from __future__ import annotations

from magnum_lib.base.validate import ParameterError
from magnum_lib.commands._common import SEED, Duration, Float, Int, float_value, int_value, json_text, print_table

#: trials x concurrent: the leases one run places (about 10^7 per second compiled).
MAX_LEASES = 10**8


def add(subparsers) -> None:
    p = subparsers.add_parser(
        "contention", help="simulate lease conflicts among concurrent schedulers",
        description="Each trial, C schedulers each place one single-slot job at the same moment "
                    "from the same (possibly stale) view of N nodes holding S jobs each; the nodes "
                    "validate the leases. Print the fraction of trials with a refused or "
                    "preempting lease, refused leases / leases, utilization and preemptions.")
    p.add_argument("--nodes", required=True, metavar="N", type=Int(1, 10**6), help="nodes")
    p.add_argument("--concurrent", required=True, metavar="C", type=Int(1, 10_000),
                   help="schedulers placing at once")
    p.add_argument("--slots", required=True, metavar="S", type=Int(1, 4096), help="jobs a node holds")
    p.add_argument("--policy", required=True, choices=["random", "least-loaded", "two-choices"],
                   help="placement policy")
    p.add_argument("--staleness", default="2ms", metavar="D", type=Duration(0, 3600 * 10**9),
                   help="view refresh period, e.g. 2ms or seconds (default: 2ms)")
    p.add_argument("--trials", required=True, metavar="T", type=Int(1, 10**6),
                   help=f"independent trials; trials x concurrent <= {MAX_LEASES:,}")
    p.add_argument("--seed", required=True, metavar="S", type=SEED, help="random seed")
    p.add_argument("--load", default="0", metavar="L", type=Float(0, 1),
                   help="fraction of slots already busy (default: 0, an empty cluster)")
    p.add_argument("--churn", default="50", metavar="R", type=Float(0, 10**6),
                   help="state changes per node per second, ages the view (default: 50)")
    p.add_argument("--priorities", default="1", metavar="K", type=Int(1, 64),
                   help="priority levels; > 1 lets a lease preempt a lower-priority job (default: 1)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=_run_contention)


def _run_contention(args) -> int:
    from magnum_lib.regional.contention import birthday_bound, simulate_contention

    if args.trials * args.concurrent > MAX_LEASES:  # checked before anything is allocated
        raise ParameterError("trials", f"x --concurrent must be <= {MAX_LEASES:,} leases, got "
                                       f"{args.trials} x {args.concurrent}")

    r = simulate_contention(
        nodes=int_value("nodes", args.nodes), concurrent=int_value("concurrent", args.concurrent),
        slots=int_value("slots", args.slots), policy=args.policy, staleness=args.staleness,
        trials=int_value("trials", args.trials), seed=int_value("seed", args.seed),
        load=float_value("load", args.load), churn=float_value("churn", args.churn),
        priorities=int_value("priorities", args.priorities))
    if args.json:
        print(json_text(r.to_dict()))
        return 0
    rows = [("nodes x slots", f"{r.nodes:,} x {r.slots}"), ("concurrent schedulers", r.concurrent),
            ("policy", r.policy), ("staleness", f"{r.staleness_s * 1e3:g} ms"),
            ("load", f"{r.load:g}"), ("trials", f"{r.trials:,}"),
            ("round conflict rate", f"{r.round_conflict_rate:.4g}")]
    if r.load == 0 and r.slots == 1:
        rows.append(("birthday bound", f"{birthday_bound(r.nodes, r.concurrent):.4g}"))
    rows += [("lease failure rate", f"{r.lease_failure_rate:.4g}"),
             ("utilization", f"{r.utilization:.4g}"), ("preemptions", f"{r.preemptions:,}"),
             ("wall time", f"{r.wall_s:.3f} s ({r.backend} backend, seed {r.seed})")]
    print_table(rows)
    return 0
