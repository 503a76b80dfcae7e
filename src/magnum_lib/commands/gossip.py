"""``faux-magnum gossip``: simulate one rumor spreading by gossip (push, pull or push-pull)."""
from __future__ import annotations

from magnum_lib.base.validate import ParameterError
from magnum_lib.commands._common import SEED, Duration, Float, Int, float_value, int_value, json_text, print_table

JSON_KEYS = ("rounds_to_all", "rounds_to_quorum", "quorum", "coverage", "bytes_per_node_per_s", "wall_s",
             "backend", "messages", "rounds", "stopped", "nodes", "fanout", "mode", "loss",
             "interval_s", "seed", "message_bytes")
#: nodes x max-rounds: the node-rounds one run may simulate (about 10^8 per second compiled).
MAX_NODE_ROUNDS = 10**9


def add(subparsers) -> None:
    p = subparsers.add_parser(
        "gossip", help="simulate one rumor spreading by gossip over N nodes",
        description="Spread one update from node 0 by gossip in synchronous rounds (one round = "
                    "one interval) and report the coverage per round, the rounds to a majority "
                    "and to every live node, and the bandwidth per node (88-byte datagrams: "
                    "IPv4+UDP 28 B, gossip header 16 B, node id 4 B, generation 8 B, "
                    "256-GPU bitmap 32 B).")
    p.add_argument("--nodes", required=True, metavar="N", type=Int(2, 10**6), help="cluster size")
    p.add_argument("--fanout", default="1", metavar="K", type=Int(1, 1000),
                   help="distinct peers each node contacts per round, K < N (default: 1)")
    p.add_argument("--mode", default="push", choices=["push", "pull", "pushpull"],
                   help="push, pull or push-pull exchanges (default: push)")
    p.add_argument("--loss", default="0", metavar="P", type=Float(0, 1, hi_open=True),
                   help="probability a datagram is lost (default: 0)")
    p.add_argument("--partition-rounds", default="0", metavar="R", type=Int(0, 100_000),
                   help="split the nodes in two halves for R rounds from --partition-start, "
                        "then heal (default: 0)")
    p.add_argument("--partition-start", default="1", metavar="T", type=Int(1, 100_000),
                   help="first partitioned round (default: 1)")
    p.add_argument("--crash-fraction", default="0", metavar="F", type=Float(0, 1, hi_open=True),
                   help="fraction of the nodes (not node 0) that crash at round 1 (default: 0)")
    p.add_argument("--churn", default="0", metavar="P", type=Float(0, 1, hi_open=True),
                   help="per-round probability a node leaves for 10 rounds (default: 0)")
    p.add_argument("--interval", default="1ms", metavar="D", type=Duration(1000, 3600 * 10**9, bare_seconds=False),
                   help="gossip interval, e.g. 1ms or 200ms (default: 1ms, the article's)")
    p.add_argument("--quorum", default=None, metavar="Q", type=Float(0.5, 1, lo_open=True),
                   help="fraction of the live nodes that makes a quorum: more than half, so two "
                        "quorums always share a node (default: a strict majority)")
    p.add_argument("--max-rounds", default="1000", metavar="M", type=Int(1, 100_000),
                   help=f"give up after M rounds; nodes x max-rounds <= {MAX_NODE_ROUNDS:,} (default: 1000)")
    p.add_argument("--seed", default="0", metavar="S", type=SEED, help="random seed (default: 0)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=_run_gossip)


def _run_gossip(args) -> int:
    from magnum_lib.gossip.dissemination import simulate

    nodes = int_value("nodes", args.nodes)
    if nodes * args.max_rounds > MAX_NODE_ROUNDS:  # checked before anything is allocated
        raise ParameterError("max_rounds", f"x --nodes must be <= {MAX_NODE_ROUNDS:,} node-rounds, got "
                                           f"{args.max_rounds} x {nodes}")
    result = simulate(
        nodes=nodes,
        fanout=int_value("fanout", args.fanout),
        mode=args.mode,
        loss=float_value("loss", args.loss),
        partition_rounds=int_value("partition_rounds", args.partition_rounds),
        partition_start=int_value("partition_start", args.partition_start),
        crash_fraction=float_value("crash_fraction", args.crash_fraction),
        churn=float_value("churn", args.churn),
        interval=args.interval,
        max_rounds=int_value("max_rounds", args.max_rounds),
        quorum=None if args.quorum is None else float_value("quorum", args.quorum),
        seed=int_value("seed", args.seed),
    )
    note = None
    if result.rounds_to_all is None:
        note = (f"the rumor did not reach every live node ({result.stopped} after "
                f"{result.rounds} rounds, coverage {result.coverage[-1]:.4f}): rounds_to_all is null")
    if args.json:
        out = {key: value for key, value in result.to_dict().items() if key in JSON_KEYS}
        if note:
            out["note"] = note
        print(json_text(out))
        return 0
    ms = result.interval_s * 1e3

    def rounds(r):
        return "never" if r is None else f"{r} ({r * ms:g} ms)"

    rows = [
        ("nodes / fanout / mode", f"{result.nodes:,} / {result.fanout} / {result.mode}"),
        ("loss", f"{result.loss:g}"),
        ("interval", f"{ms:g} ms"),
        ("rounds to quorum" if result.quorum else "rounds to majority",
         rounds(result.rounds_to_quorum)),
        ("rounds to all", rounds(result.rounds_to_all)),
        ("messages", f"{result.messages:,} x {result.message_bytes} B"),
        ("bytes per node", f"{result.bytes_per_node_per_s:,.0f} B/s "
                           f"({result.bytes_per_node_per_s * 8 / 1e6:.3g} Mbit/s)"),
        ("wall time", f"{result.wall_s:.4f} s ({result.backend} backend, seed {result.seed})"),
    ]
    print_table(rows)
    if note:
        print(f"note: {note}")
    return 0
