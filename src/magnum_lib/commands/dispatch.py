"""``faux-magnum dispatch``: the supermarket model, each job joins the shortest of D sampled queues."""
from __future__ import annotations

from magnum_lib.commands._common import SEED, Float, Int, float_value, int_value, json_text, print_table


def add(subparsers) -> None:
    p = subparsers.add_parser(
        "dispatch", help="load balancing across servers: random, power-of-d, stale least-loaded",
        description="Simulate Mitzenmacher's supermarket model: Poisson arrivals at rate L*N, "
                    "N FIFO servers with exponential service of mean 1 s, and each job joins "
                    "the shortest of D randomly sampled queues (or another --policy).")
    p.add_argument("--servers", required=True, metavar="N", type=Int(1, 10**6), help="number of servers")
    p.add_argument("--choices", required=True, metavar="D", type=Int(1, 10**6),
                   help="queues sampled per job (per task with --tasks), D <= N; "
                        "D = 1 is random placement")
    p.add_argument("--load", required=True, metavar="L", type=Float(1e-3, 1, hi_open=True),
                   help="arrival rate per server (a lower load leaves the servers idle)")
    p.add_argument("--jobs", default="200000", metavar="J", type=Int(1, 10**7),
                   help="jobs to simulate (default: 200000)")
    p.add_argument("--seed", default="0", metavar="S", type=SEED, help="random seed (default: 0)")
    p.add_argument("--policy", default="power_of_d",
                   choices=["power_of_d", "random", "least_loaded_stale", "batch"],
                   help="placement policy (default: power_of_d); batch = Sparrow's batch "
                        "sampling of D x M servers for a job of M tasks")
    p.add_argument("--tasks", default="1", metavar="M", type=Int(1, 1000),
                   help="tasks per job, each served separately (default: 1)")
    p.add_argument("--refresh", default="1.0", metavar="T", type=Float(1e-6, 3600, unit="s"),
                   help="seconds between refreshes of the stale view (least_loaded_stale; default: 1)")
    p.add_argument("--warmup", default="0.2", metavar="F", type=Float(0, 1, hi_open=True),
                   help="fraction of the first jobs discarded as warm-up (default: 0.2)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=_run_dispatch)


def _run_dispatch(args) -> int:
    from magnum_lib.node.balance import supermarket

    result = supermarket(
        servers=int_value("servers", args.servers),
        load=float_value("load", args.load),
        choices=int_value("choices", args.choices),
        policy=args.policy,
        jobs=int_value("jobs", args.jobs),
        seed=int_value("seed", args.seed),
        refresh=float_value("refresh", args.refresh),
        warmup=float_value("warmup", args.warmup),
        tasks=int_value("tasks", args.tasks),
    )
    if args.json:
        print(json_text(result.to_dict()))
        return 0
    policy = result.policy
    if policy == "power_of_d":
        policy = f"power of d = {result.choices}"
    elif policy == "least_loaded_stale":
        policy = f"least loaded, view refreshed every {result.refresh:g} s"
    elif policy == "batch":
        policy = f"batch sampling, {result.choices} x {result.tasks} probes per job"
    if result.tasks > 1:
        policy += f" ({result.tasks} tasks per job)"
    rows = [
        ("model", f"supermarket, {result.servers} servers, load {result.load:g}"),
        ("policy", policy),
        ("jobs", f"{result.jobs:,} ({result.measured_jobs:,} measured after warm-up)"),
        ("events", f"{result.events:,}"),
        ("mean time in system", f"{result.time_in_system_mean:.6g} s"),
        ("p50 time in system", f"{result.p50:.6g} s"),
        ("p99 time in system", f"{result.p99:.6g} s"),
        ("zero-wait jobs", f"{result.zero_wait:.4f}"),
        ("longest queue", f"{result.max_queue}"),
    ]
    if result.tasks > 1:
        rows.insert(7, ("mean job time", f"{result.job_time_mean:.6g} s (until its last task ends)"))
    rows += [(f"servers with >= {i} jobs", f"{share:.4f}")
             for i, share in enumerate(result.queue_tail, start=1) if i <= 4 or share > 0]
    if result.tasks == 1 and result.policy in ("random", "power_of_d"):
        theory = result.theory()["time_in_system_mean"]
        rows.insert(5, ("theory (N -> inf)", f"{theory:.6g} s"))
    rows.append(("wall time", f"{result.wall_s:.3f} s ({result.backend} backend, seed {result.seed})"))
    print_table(rows)
    return 0
