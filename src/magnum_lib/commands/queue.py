"""``faux-magnum queue``: simulate a FIFO multi-server queue (M/M/c, M/D/c, M/G/c)."""
from __future__ import annotations

from magnum_lib.commands._common import SEED, Float, Int, float_value, int_value, json_text, print_table

_KENDALL = {"exp": "M", "det": "D", "lognormal": "G"}


def add(subparsers) -> None:
    p = subparsers.add_parser(
        "queue", help="simulate a FIFO multi-server queue (M/M/c, M/D/c, M/G/c)",
        description="Simulate a first-come-first-served queue with Poisson arrivals and "
                    "C identical servers; print waiting and response-time statistics.")
    p.add_argument("--servers", required=True, metavar="C", type=Int(1, 100_000), help="number of servers")
    p.add_argument("--arrival-rate", required=True, metavar="L", type=Float(1e-6, 1e8, unit="/s"),
                   help="arrivals per second")
    p.add_argument("--service-rate", required=True, metavar="MU", type=Float(1e-6, 1e8, unit="/s"),
                   help="services per second per server (load L/(C*MU) must be < 1)")
    p.add_argument("--service", default="exp", choices=["exp", "det", "lognormal"],
                   help="service-time distribution (default: exp)")
    p.add_argument("--cv", default="1.0", metavar="X", type=Float(0, 100, lo_open=True),
                   help="coefficient of variation of lognormal service times (default: 1)")
    p.add_argument("--jobs", default="100000", metavar="N", type=Int(1, 10**7),
                   help="jobs to simulate (default: 100000)")
    p.add_argument("--seed", default="0", metavar="S", type=SEED, help="random seed (default: 0)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=_run_queue)


def _run_queue(args) -> int:
    from magnum_lib.engine import simulate_queue

    result = simulate_queue(
        servers=int_value("servers", args.servers),
        arrival_rate=float_value("arrival_rate", args.arrival_rate),
        service_rate=float_value("service_rate", args.service_rate),
        service=args.service,
        cv=float_value("cv", args.cv),
        jobs=int_value("jobs", args.jobs),
        seed=int_value("seed", args.seed),
    )
    if args.json:
        print(json_text(result.to_dict()))
        return 0
    model = f"M/{_KENDALL[result.service]}/{result.servers}"
    if result.service == "lognormal":
        model += f" (lognormal cv={result.cv:g})"
    rows = [
        ("model", model),
        ("arrival rate", f"{result.arrival_rate:g} /s"),
        ("service rate", f"{result.service_rate:g} /s per server"),
        ("load", f"{result.load:.4f}"),
        ("jobs", f"{result.jobs:,}"),
        ("events", f"{result.events:,}"),
        ("mean wait", f"{result.wait_mean:.6g} s"),
        ("mean time in system", f"{result.time_in_system_mean:.6g} s"),
        ("P(wait > 0)", f"{result.p_wait:.4f}"),
        ("utilization", f"{result.utilization:.4f}"),
        ("p50 time in system", f"{result.p50:.6g} s"),
        ("p95 time in system", f"{result.p95:.6g} s"),
        ("p99 time in system", f"{result.p99:.6g} s"),
        ("Little's law error", f"{result.littles_law_error:.2e}"),
        ("wall time", f"{result.wall_s:.3f} s ({result.backend} backend, seed {result.seed})"),
    ]
    print_table(rows)
    return 0
