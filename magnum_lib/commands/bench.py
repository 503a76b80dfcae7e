"""``faux-magnum bench <target>``: measure one fast path on this machine.

Targets (one function each in ``_TARGETS``; a new target is a new entry plus its flags):

- ``ring``: move ``--items`` integers from a producer thread to a consumer thread
  through the single-producer single-consumer ring buffer and check every one arrived,
  once and in order.
"""
from __future__ import annotations

import json

from magnum_lib.commands._common import int_value
from magnum_lib.node.ring import DEFAULT_BATCH, DEFAULT_CAPACITY


def add(subparsers) -> None:
    p = subparsers.add_parser(
        "bench", help="measure a fast path (ring: ring-buffer items/s across two threads)",
        description="Measure one fast path on this machine and print what it moved per second.")
    p.add_argument("target", choices=sorted(_TARGETS), metavar="TARGET",
                   help="what to measure: ring (ring-buffer items/s, producer thread -> consumer thread)")
    p.add_argument("--items", default="10000000", metavar="N",
                   help="ring: integers to move (default: 10000000)")
    p.add_argument("--capacity", default=None, metavar="C",
                   help=f"ring: slots, a power of two (default: {DEFAULT_CAPACITY})")
    p.add_argument("--batch", default=None, metavar="B",
                   help=f"ring: items per push/pop, <= capacity (default: min({DEFAULT_BATCH}, capacity))")
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


_TARGETS = {"ring": _bench_ring}

_LABELS = {"items_per_s": ("items/s", "{:,.0f}"), "wall_s": ("wall time", "{:.4f} s"),
           "items": ("items", "{:,}"), "capacity": ("capacity", "{:,} slots"),
           "batch": ("batch", "{:,} items"), "backend": ("backend", "{}"),
           "verified": ("verified", "{}")}


def _run_bench(args) -> int:
    out, ok = _TARGETS[args.target](args)
    if args.json:
        print(json.dumps(out))
    else:
        width = max(len(label) for label, _ in _LABELS.values())
        for key, value in out.items():
            label, fmt = _LABELS[key]
            print(f"{label:<{width}}  {fmt.format(value)}")
    # A transfer that lost, duplicated or reordered an item is a failure, not a figure.
    return 0 if ok else 1
