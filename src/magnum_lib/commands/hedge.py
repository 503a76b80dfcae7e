"""``faux-magnum hedge``: hedged requests (The Tail at Scale).

Default: the independent-latency model (:mod:`magnum_lib.node.hedging`). With ``--load``:
a pool of ``--servers`` FIFO servers where the copies add load
(:mod:`magnum_lib.node.hedging_queue`).
"""
from __future__ import annotations

import argparse

from magnum_lib.base.validate import ParameterError, excerpt
from magnum_lib.commands._common import (
    SEED,
    Duration,
    FlagType,
    Float,
    Int,
    float_value,
    int_value,
    json_text,
    print_table,
)

_HOUR_NS = 3600 * 10**9


class HedgeAt(FlagType):
    """``pX`` (a percentile, 0 < X < 100) or a delay (a duration, or seconds) up to an hour."""

    kind = "duration"
    example = "p95"
    _percentile = Float(0, 100, lo_open=True, hi_open=True)
    _delay = Duration(0, _HOUR_NS)

    def parse(self, text):
        if text.strip().lower().startswith("p"):
            try:
                self._percentile.parse(text.strip()[1:])
            except argparse.ArgumentTypeError:
                raise argparse.ArgumentTypeError(f"percentile must be pX with X in (0, 100), got "
                                                 f"{excerpt(text)}") from None
            return text
        return self._delay.parse(text)

    def describe(self):
        return f"pX with X in (0, 100), or a {self._delay.describe()}"

    def bad_values(self):
        return ["p0", "p100", "p1e-320", "pnan"] + self._delay.bad_values()

_POOL_ONLY = ("servers", "cancel")
_INDEPENDENT_ONLY = ("quantile_from", "warmup", "cancel_delay")


def add(subparsers) -> None:
    p = subparsers.add_parser(
        "hedge", help="simulate hedged requests: extra load against tail latency",
        description="Send each request once; if it has not answered after the hedge delay, send a "
                    "copy (independent latency, same distribution), keep the first answer and "
                    "cancel the other. Print extra load and p50/p99/p99.9 with and without hedging "
                    "(seconds).")
    p.add_argument("--dist", required=True, choices=["exp", "lognormal", "pareto"],
                   help="latency distribution")
    p.add_argument("--mean", default="10ms", metavar="D", type=Duration(1000, _HOUR_NS),
                   help="mean latency, a duration such as 10ms or seconds (default: 10ms)")
    p.add_argument("--sigma", default="1.0", metavar="S", type=Float(0.01, 10),
                   help="lognormal shape (default: 1)")
    p.add_argument("--alpha", default="2.0", metavar="A", type=Float(1, 1000, lo_open=True),
                   help="Pareto tail index; > 1 so that the mean is finite (default: 2)")
    p.add_argument("--hedge-at", required=True, metavar="WHEN", type=HedgeAt(),
                   help="a percentile such as p95 or a delay such as 10ms")
    p.add_argument("--quantile-from", choices=["true", "warmup"],
                   help="percentile from the true distribution or from --warmup unhedged draws "
                        "(default: true)")
    p.add_argument("--warmup", metavar="N", type=Int(1, 10**6), help="warm-up sample size (default: 1000)")
    p.add_argument("--cancel-delay", metavar="D", type=Duration(0, _HOUR_NS),
                   help="time for a cancellation to reach the loser, e.g. 1ms (default: 0)")
    pool = p.add_argument_group("pool model (copies add load; percentiles of the unhedged "
                                "response time)")
    pool.add_argument("--load", metavar="L", type=Float(1e-3, 1, hi_open=True),
                      help="offered load per server: turns it on")
    pool.add_argument("--servers", metavar="N", type=Int(2, 10_000), help="servers in the pool (default: 10)")
    pool.add_argument("--cancel", choices=["all", "queued", "none"],
                      help="what happens to the loser: stopped even if running, removed only "
                           "while queued, or left to run (default: all)")
    p.add_argument("--requests", default="100000", metavar="N", type=Int(1, 10**7),
                   help="requests (default: 100000; at most 1,000,000 with --load)")
    p.add_argument("--seed", default="0", metavar="S", type=SEED, help="random seed (default: 0)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=_run_hedge)


def _run_hedge(args) -> int:
    pool = args.load is not None
    for name in _INDEPENDENT_ONLY if pool else _POOL_ONLY:
        if getattr(args, name) is not None:
            where = "without --load" if pool else "with --load"
            raise ParameterError(name, f"applies only {where} (got {excerpt(getattr(args, name))})")
    common = dict(requests=int_value("requests", args.requests), hedge_at=_duration_arg(args.hedge_at),
                  seed=int_value("seed", args.seed), mean=_duration_arg(args.mean),
                  sigma=float_value("sigma", args.sigma), alpha=float_value("alpha", args.alpha))
    if pool:
        from magnum_lib.node.hedging_queue import simulate_hedging_queue

        result = simulate_hedging_queue(
            args.dist, servers=10 if args.servers is None else args.servers,
            load=float_value("load", args.load), cancel=args.cancel or "all", **common)
        cost = ("utilization", f"{result.utilization:.4f} (unhedged {result.utilization_unhedged:.4f})")
        model = f"pool of {result.servers} servers at load {result.load:g}, cancel {result.cancel}"
    else:
        from magnum_lib.node.hedging import simulate_hedging

        result = simulate_hedging(
            args.dist, quantile_from=args.quantile_from or "true",
            warmup=1000 if args.warmup is None else args.warmup,
            cancel_delay=0.0 if args.cancel_delay is None else _duration_arg(args.cancel_delay), **common)
        cost = ("extra busy time", busy_text(result.extra_busy, result.copy_busy))
        model = f"independent latencies, t_h from {result.quantile_from}"
    if args.json:
        print(json_text(result.to_dict()))
        return 0
    ms = lambda s: f"{s * 1e3:.4g} ms"  # noqa: E731
    rows = [
        ("model", model),
        ("distribution", ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                                   for k, v in result.dist.to_dict().items())),
        ("hedge delay", f"{ms(result.hedge_delay_s)} ({result.hedge_at})"),
        ("requests", f"{result.requests:,}"),
        ("extra load", f"{result.extra_load:.4%} (copies sent / requests)"),
        cost,
        ("p50", f"{ms(result.p50)} (unhedged {ms(result.p50_unhedged)})"),
        ("p99", f"{ms(result.p99)} (unhedged {ms(result.p99_unhedged)})"),
        ("p99.9", f"{ms(result.p999)} (unhedged {ms(result.p999_unhedged)})"),
        ("wall time", f"{result.wall_s:.3f} s ({result.backend} backend, seed {result.seed})"),
    ]
    print_table(rows)
    return 0


def _duration_arg(text):
    """A bare number on the command line is seconds (the API's unit); else keep the text."""
    try:
        return float(text)
    except ValueError:
        return text


def busy_text(extra: float, copies: float) -> str:
    """The extra busy time, explained: the copies' work less the primaries' work cut short
    when a copy finished first (so it can be negative: hedging saved more than it cost)."""
    why = (" (< 0: cancelling the primaries whose copy won saved more than the copies cost)"
           if extra < 0 else "")
    return (f"{extra:+.4%} of the unhedged work = copies' work {copies:.4%} - primaries' work cut "
            f"short{why}")
