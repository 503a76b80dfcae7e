"""``faux-magnum bench <target>``: measure one fast path on this machine.

Targets (one function each in ``_TARGETS``; a new target is a new entry plus its flags):

- ``ring``: move ``--items`` integers from a producer thread to a consumer thread
  through the single-producer single-consumer ring buffer and check every one arrived,
  once and in order.
- ``regional``: the wall time of one regional scheduling round (place ``--requests``
  pending requests onto ``--nodes`` nodes and validate them; median of ``--repeats``)
  and the node-side validator's validations per second.
"""
from __future__ import annotations

from magnum_lib.commands._common import Int, int_value, json_text, print_table
from magnum_lib.node.ring import DEFAULT_BATCH, DEFAULT_CAPACITY, MAX_CAPACITY


def add(subparsers) -> None:
    p = subparsers.add_parser(
        "bench", help="measure a fast path (ring: ring-buffer items/s; regional: one scheduling round)",
        description="Measure one fast path on this machine and print what it moved per second.")
    p.add_argument("target", choices=sorted(_TARGETS), metavar="TARGET",
                   help="what to measure: ring (ring-buffer items/s, producer thread -> consumer "
                        "thread) or regional (one regional scheduling round and validations/s)")
    # Upper bounds keep one run within seconds to a minute on a laptop.
    p.add_argument("--items", default="10000000", metavar="N", type=Int(1, 10**9),
                   help="ring: integers to move (default: 10000000)")
    p.add_argument("--capacity", default=None, metavar="C", type=Int(1, MAX_CAPACITY),
                   help=f"ring: slots, a power of two (default: {DEFAULT_CAPACITY})")
    p.add_argument("--batch", default=None, metavar="B", type=Int(1, MAX_CAPACITY),
                   help=f"ring: items per push/pop, <= capacity (default: min({DEFAULT_BATCH}, capacity))")
    p.add_argument("--nodes", default="15000", metavar="N", type=Int(1, 200_000),
                   help="regional: nodes (default: 15000)")
    p.add_argument("--requests", default="1000", metavar="R", type=Int(1, 100_000),
                   help="regional: pending requests per round (default: 1000)")
    p.add_argument("--repeats", default="51", metavar="K", type=Int(1, 1001),
                   help="regional: rounds timed, the median is reported (default: 51)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=_run_bench)


def _bench_ring(args) -> tuple[dict, bool]:
    from magnum_lib.node.ring import transfer

    result = transfer(
        items=int_value("items", args.items),
        capacity=DEFAULT_CAPACITY if args.capacity is None else int_value("capacity", args.capacity),
        batch=None if args.batch is None else int_value("batch", args.batch))
    out = {key: getattr(result, key) for key in
           ("items_per_s", "wall_s", "items", "capacity", "batch", "backend", "verified")}
    return out, result.verified


def _bench_regional(args) -> tuple[dict, bool]:
    from magnum_lib.regional.bench import bench_regional

    out = bench_regional(nodes=int_value("nodes", args.nodes), requests=int_value("requests", args.requests),
                         repeats=int_value("repeats", args.repeats))
    return out, True


_TARGETS = {"ring": _bench_ring, "regional": _bench_regional}

_LABELS = {"items_per_s": ("items/s", "{:,.0f}"), "wall_s": ("wall time", "{:.4f} s"),
           "items": ("items", "{:,}"), "capacity": ("capacity", "{:,} slots"),
           "batch": ("batch", "{:,} items"), "backend": ("backend", "{}"),
           "verified": ("verified", "{}"), "nodes": ("nodes", "{:,}"), "requests": ("requests", "{:,}"),
           "repeats": ("rounds timed", "{:,}"), "round_ms": ("round (median)", "{:.4f} ms"),
           "round_ms_min": ("round (fastest)", "{:.4f} ms"), "validations": ("validations", "{:,}"),
           "validations_per_s": ("validations/s (core)", "{:,.0f}"),
           "validations_per_s_checked": ("validations/s (checked API)", "{:,.0f}"),
           "accepted_fraction": ("accepted fraction", "{:.4f}")}


def _run_bench(args) -> int:
    out, ok = _TARGETS[args.target](args)
    if args.json:
        print(json_text(out))
    else:
        print_table((_LABELS[key][0], _LABELS[key][1].format(value)) if key in _LABELS
                    else (key.replace("_", " "), value) for key, value in out.items())
    # A transfer that lost, duplicated or reordered an item is a failure, not a figure.
    return 0 if ok else 1
