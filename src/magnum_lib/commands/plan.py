"""``faux-magnum plan``: one planning round of the global Oracle on a generated snapshot."""
from __future__ import annotations

from magnum_lib.commands._common import SEED, Float, Int, float_value, int_value, json_text, print_table

_ALGOS = ["greedy", "article", "assignment", "flow", "lp"]


def add(subparsers) -> None:
    p = subparsers.add_parser(
        "plan", help="place pending jobs on a generated cluster snapshot (the global planner)",
        description="Generate a seeded snapshot of N nodes and J pending jobs, place the jobs with one "
                    "planner, and report the cost, the LP lower bound and the gap between them. "
                    "JSON: 'hints' is the number of hints (one per placed job), 'unplaced' the number "
                    "of jobs left out ('unplaced_reasons' counts them by reason).")
    p.add_argument("--nodes", required=True, metavar="N", type=Int(1, 200_000), help="nodes in the snapshot")
    p.add_argument("--jobs", required=True, metavar="J", type=Int(0, 100_000), help="pending jobs")
    p.add_argument("--algo", default="flow", choices=_ALGOS,
                   help="planner: article (the article's score), greedy (corrected score), assignment "
                        "(exact, <= 2000 nodes and 1000 jobs), flow (exact, equivalence classes), "
                        "lp (exact, one LP row per job); default flow")
    p.add_argument("--seed", default="0", metavar="S", type=SEED, help="random seed (default: 0)")
    p.add_argument("--weight", default="0.5", metavar="W", type=Float(0, 1),
                   help="bandwidth against packing in the cost (default: 0.5)")
    p.add_argument("--group-size", default="32", metavar="G", type=Int(1, 4096),
                   help="nodes per group / rack (default: 32)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=_run_plan)


def _run_plan(args) -> int:
    from magnum_lib.planner.plan import plan
    from magnum_lib.planner.snapshot import make_snapshot

    weight = float_value("weight", args.weight)
    snap = make_snapshot(int_value("nodes", args.nodes), int_value("jobs", args.jobs),
                         seed=int_value("seed", args.seed), group_size=int_value("group_size", args.group_size))
    result = plan(snap, args.algo, weight=weight).to_dict()
    if args.json:
        print(json_text(result))
        return 0
    gap = "undefined (bound 0)" if result["gap"] is None else f"{result['gap']:.4%}"
    rows = [("planner", args.algo), ("snapshot", f"{snap.n_nodes:,} nodes in {snap.n_groups:,} groups, "
                                                 f"{snap.n_jobs:,} jobs"),
            ("classes", f"{result['node_classes']} node classes, {result['job_classes']} job classes"),
            ("cost", f"{result['cost']:.6g}"), ("lower bound", f"{result['lower_bound']:.6g}"), ("gap", gap),
            ("hints", f"{result['hints']:,}"), ("unplaced", f"{result['unplaced']:,}"),
            ("stranded devices", f"{result['metrics']['stranded_devices']:,}"),
            ("comm time", f"{result['metrics']['comm_time_s']:.6g} s per step"),
            ("wall time", f"{result['wall_s']:.3f} s")]
    print_table(rows)
    for reason, n in result["unplaced_reasons"].items():
        print(f"  {n:,} unplaced: {reason}")
    return 0
