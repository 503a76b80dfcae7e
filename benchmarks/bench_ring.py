"""Ring-buffer benchmark: items/s from one producer thread to one consumer thread.

Four queues move the integers 0 .. N-1 from a producer thread to a consumer thread under
the same harness (``magnum_lib.node.ring.time_two_threads``: both threads start at a
barrier; the clock runs from the first start to the consumer's last item), and every
consumer checks that item i is i:

- ``ring``: our compiled ring (``transfer``: batched push/pop, both loops without the GIL);
- ``simple_queue``: ``queue.SimpleQueue``, a plain ``put(i)`` / ``get()`` loop;
- ``deque``: ``collections.deque``, ``append(i)`` / ``popleft()`` retried while empty;
- ``reference``: our pure-Python ring (batched, as ours), on fewer items since it is slow.

The peers move one item per call, which is how they are used: they have no batch API,
and a list per put would be a different queue. All figures are medians of runs in this
process (5 of ours, 3 of each peer by default). The machine is shared, so the load
average is printed alongside.

Usage: .venv/bin/python benchmarks/bench_ring.py [--items 10000000] [--repeats 5] [--peer-repeats 3]
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import queue
import statistics

from magnum_lib.node.ring import DEFAULT_BATCH, DEFAULT_CAPACITY, time_two_threads, transfer

TARGET_RATIO = 40  # the issue: at least 40x queue.SimpleQueue


def simple_queue_pair(n: int):
    q = queue.SimpleQueue()

    def producer():
        put = q.put
        for i in range(n):
            put(i)

    def consumer():
        get, in_order = q.get, True
        for i in range(n):
            in_order &= get() == i
        return in_order

    return producer, consumer


def deque_pair(n: int):
    d = collections.deque()

    def producer():
        append = d.append
        for i in range(n):
            append(i)

    def consumer():
        popleft, in_order, i = d.popleft, True, 0
        while i < n:
            try:
                item = popleft()
            except IndexError:  # empty: try again (the GIL lets the producer in)
                continue
            in_order &= item == i
            i += 1
        return in_order

    return producer, consumer


def measure_peer(make_pair, n: int, repeats: int) -> dict:
    walls, ok = [], True
    for _ in range(repeats):
        wall, _, in_order = time_two_threads(*make_pair(n))
        walls.append(wall)
        ok &= in_order
    wall = statistics.median(walls)
    return {"items": n, "repeats": repeats, "wall_s": wall, "items_per_s": n / wall, "verified": ok}


def measure_ring(n: int, repeats: int, capacity: int, batch: int, backend: str) -> dict:
    runs = [transfer(n, capacity=capacity, batch=batch, backend=backend) for _ in range(repeats)]
    wall = statistics.median(r.wall_s for r in runs)
    return {"items": n, "repeats": repeats, "capacity": capacity, "batch": batch,
            "backend": runs[0].backend, "wall_s": wall, "items_per_s": n / wall,
            "items_per_s_runs": [r.items_per_s for r in runs],
            "verified": all(r.verified for r in runs)}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000_000, help="items for ours and the peers")
    parser.add_argument("--repeats", type=int, default=5, help="runs of our ring (median)")
    parser.add_argument("--peer-repeats", type=int, default=3,
                        help="runs of SimpleQueue and deque (median; each takes seconds)")
    parser.add_argument("--capacity", type=int, default=DEFAULT_CAPACITY)
    parser.add_argument("--batch", type=int, default=DEFAULT_BATCH)
    parser.add_argument("--reference-items", type=int, default=1_000_000,
                        help="items for the pure-Python ring (about 1 M items/s)")
    parser.add_argument("--reference-repeats", type=int, default=1)
    args = parser.parse_args(argv)
    load_before = os.getloadavg()

    ours = measure_ring(args.items, args.repeats, args.capacity, args.batch, "compiled")
    simple = measure_peer(simple_queue_pair, args.items, args.peer_repeats)
    deque = measure_peer(deque_pair, args.items, args.peer_repeats)
    reference = measure_ring(args.reference_items, args.reference_repeats, args.capacity,
                             args.batch, "python")
    ratio = ours["items_per_s"] / simple["items_per_s"]
    return {
        "benchmark": "spsc ring buffer, one producer thread -> one consumer thread",
        "ring": ours,
        "simple_queue": simple,
        "deque": deque,
        "reference": reference,
        "ratios": {
            "ring_vs_simple_queue": ratio,
            "ring_vs_deque": ours["items_per_s"] / deque["items_per_s"],
            "ring_vs_reference": ours["items_per_s"] / reference["items_per_s"],
        },
        "target": {"ring_vs_simple_queue_at_least": TARGET_RATIO, "met": ratio >= TARGET_RATIO},
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "processor": platform.processor() or platform.machine(),
                    "loadavg_1min_before_after": [load_before[0], os.getloadavg()[0]]},
    }


if __name__ == "__main__":
    print(json.dumps(main()))
