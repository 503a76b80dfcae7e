"""``faux-magnum gossip-live``: real UDP gossip endpoints on 127.0.0.1 for a bounded time."""
from __future__ import annotations

from magnum_lib.commands._common import SEED, Duration, Float, Int, float_value, int_value, json_text, print_table

JSON_KEYS = ("endpoints", "converged", "convergence_time_s", "datagrams_sent", "datagrams_received",
             "dropped_loss", "dropped_malformed", "bytes_sent", "wall_s")


def add(subparsers) -> None:
    p = subparsers.add_parser(
        "gossip-live", help="run real UDP gossip endpoints on 127.0.0.1 and time convergence",
        description="Start E gossip endpoints (asyncio, UDP on 127.0.0.1) in this process; each sends "
                    "its view to K random peers every interval. Endpoint e0 updates its state; print "
                    "how long until every endpoint has the update, and the datagram counters.")
    p.add_argument("--endpoints", required=True, metavar="E", type=Int(2, 64), help="endpoints")
    p.add_argument("--interval", default="10ms", metavar="T", type=Duration(10**6, 10**9, bare_seconds=False),
                   help="gossip interval (default: 10ms)")
    p.add_argument("--duration", default="2s", metavar="T", type=Duration(10**6, 600 * 10**9, bare_seconds=False),
                   help="longest run time; the run stops once all endpoints converged (default: 2s)")
    p.add_argument("--loss", default="0", metavar="P", type=Float(0, 1, hi_open=True),
                   help="datagram drop probability (default: 0)")
    p.add_argument("--fanout", default="3", metavar="K", type=Int(1, 63), help="peers per interval, < E (default: 3)")
    p.add_argument("--merge", default="lww", choices=["lww", "article", "vc"],
                   help="merge rule: last-writer-wins, the article's, vector clocks (default: lww)")
    p.add_argument("--seed", default="0", metavar="S", type=SEED, help="random seed (default: 0)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=_run_gossip_live)


def _run_gossip_live(args) -> int:
    from magnum_lib.gossip.live import run_live

    result = run_live(
        endpoints=int_value("endpoints", args.endpoints),
        interval=args.interval,
        duration=args.duration,
        loss=float_value("loss", args.loss),
        fanout=int_value("fanout", args.fanout),
        seed=int_value("seed", args.seed),
        merge=args.merge,
    )
    d = result.to_dict()
    if args.json:
        out = {k: d[k] for k in JSON_KEYS}
        out.update(interval_s=d["interval_s"], loss=d["loss"], fanout=d["fanout"], merge=d["merge"],
                   seed=d["seed"], malformed_by_reason=d["malformed_by_reason"],
                   dropped_refused=d["dropped_refused"], refused_by_reason=d["refused_by_reason"],
                   max_view_entries=d["max_view_entries"])
        print(json_text(out))
        return 0
    conv = (f"{result.convergence_time_s * 1e3:.2f} ms" if result.converged
            else f"not converged within {result.duration_s - result.update_at_s:g} s")
    rows = [
        ("endpoints", f"{result.endpoints} (fanout {result.fanout}, merge {result.merge})"),
        ("interval", f"{result.interval_s * 1e3:g} ms"),
        ("loss", f"{result.loss:g}"),
        ("convergence time", conv),
        ("datagrams sent", f"{result.datagrams_sent:,} ({result.bytes_sent:,} bytes)"),
        ("datagrams received", f"{result.datagrams_received:,}"),
        ("dropped by loss", f"{result.dropped_loss:,}"),
        ("dropped malformed", f"{result.dropped_malformed:,}"),
        ("refused (untrusted)", f"{result.dropped_refused:,}"),
        ("largest view", f"{result.max_view_entries} entries"),
        ("wall time", f"{result.wall_s:.3f} s (seed {result.seed})"),
    ]
    print_table(rows)
    return 0
