"""``faux-magnum contention``: how often do concurrent speculative leases collide?"""
from __future__ import annotations

import json

from magnum_lib.commands._common import float_value, int_value, print_table


def add(subparsers) -> None:
    p = subparsers.add_parser(
        "contention", help="simulate lease conflicts among concurrent schedulers",
        description="Each trial, C schedulers each place one single-slot job at the same moment "
                    "from the same (possibly stale) view of N nodes holding S jobs each; the nodes "
                    "validate the leases. Print the fraction of trials with a refused or "
                    "preempting lease, refused leases / leases, utilization and preemptions.")
    p.add_argument("--nodes", required=True, metavar="N", help="nodes (>= 1)")
    p.add_argument("--concurrent", required=True, metavar="C", help="schedulers placing at once (>= 1)")
    p.add_argument("--slots", required=True, metavar="S", help="jobs a node holds (1..4096)")
    p.add_argument("--policy", required=True, choices=["random", "least-loaded", "two-choices"],
                   help="placement policy")
    p.add_argument("--staleness", default="2ms", metavar="D",
                   help="view refresh period, e.g. 2ms or seconds (default: 2ms)")
    p.add_argument("--trials", required=True, metavar="T", help="independent trials (>= 1)")
    p.add_argument("--seed", required=True, metavar="S", help="random seed (>= 0)")
    p.add_argument("--load", default="0", metavar="L",
                   help="fraction of slots already busy, in [0, 1] (default: 0, an empty cluster)")
    p.add_argument("--churn", default="50", metavar="R",
                   help="state changes per node per second, ages the view (default: 50)")
    p.add_argument("--priorities", default="1", metavar="K",
                   help="priority levels; > 1 lets a lease preempt a lower-priority job (default: 1)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=_run_contention)


def _run_contention(args) -> int:
    from magnum_lib.regional.contention import birthday_bound, simulate_contention

    r = simulate_contention(
        nodes=int_value("nodes", args.nodes), concurrent=int_value("concurrent", args.concurrent),
        slots=int_value("slots", args.slots), policy=args.policy, staleness=args.staleness,
        trials=int_value("trials", args.trials), seed=int_value("seed", args.seed),
        load=float_value("load", args.load), churn=float_value("churn", args.churn),
        priorities=int_value("priorities", args.priorities))
    if args.json:
        print(json.dumps(r.to_dict()))
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
