"""Bloom filter benchmark: our filter (compiled and numpy backends) vs a Python set vs the
pure-Python Bloom loop, inserts/s, queries/s and bytes, measured in one run.

* ``ours_compiled`` / ``ours_numpy``: :class:`magnum_lib.gossip.bloom.BloomFilter`
  ``add_many`` / ``contains_many`` on an int64 array of node ids (the numpy backend is
  the one ``MAGNUM_PUREPYTHON=1`` selects), sized by ``optimal_params(n, fp_rate)``;
  queries are half members, half non-members (non-members stop at the first clear bit).
  Hashing is included in the timings.
* ``ours_one_at_a_time``: ``f.add(key)`` / ``key in f`` in a Python loop (``--sample`` keys).
* ``python_set``: ``set.update(list)`` and ``sum(x in s for x in list)`` on the same ids as
  Python ints (converted before timing); exact, but ~60 bytes per id.
* ``pure_python_bloom``: :class:`magnum_lib.gossip.bloom_ref.BloomRef`, one key at a time
  (``--sample`` keys, same m and k).
* ``digest_fleet``: :func:`magnum_lib.gossip.digest.build_digest` for ``--fleet-nodes``
  node ids of which a third are free, split over three device types (wall ms per build,
  against the article's 10 ms period).

Usage: .venv/bin/python benchmarks/bench_bloom.py [--n 1000000] [--fp-rate 0.01] [--sample 100000]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

import numpy as np

from magnum_lib.gossip.bloom import BloomFilter, _kernels, optimal_params
from magnum_lib.gossip.bloom_ref import BloomRef
from magnum_lib.gossip.digest import NODE_ID_BYTES, build_digest


def timed(fn, repeats: int) -> float:
    """Median wall seconds of ``repeats`` calls of ``fn``."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def rates(n_insert: int, t_insert: float, n_query: int, t_query: float) -> dict:
    return {"inserts_per_s": n_insert / t_insert, "queries_per_s": n_query / t_query}


def bench_ours(keys, queries, m, k, repeats) -> dict:
    def build():
        f = BloomFilter(m, k)
        f.add_many(keys)
        return f

    f = build()
    out = rates(keys.size, timed(build, repeats), queries.size, timed(lambda: f.contains_many(queries), repeats))
    out["measured_fp_rate"] = float(f.contains_many(queries[keys.size // 2:]).mean())
    out["nbytes"] = f.nbytes
    out["wire_nbytes"] = f.wire_nbytes
    out["kernel_module"] = _kernels().__name__  # proves which backend ran
    return out


def bench_backend(pure: bool, *args) -> dict:
    """Run :func:`bench_ours` with ``MAGNUM_PUREPYTHON`` set or unset (looked up per call)."""
    old = os.environ.get("MAGNUM_PUREPYTHON")
    os.environ["MAGNUM_PUREPYTHON"] = "1" if pure else "0"
    try:
        return bench_ours(*args)
    finally:
        if old is None:
            del os.environ["MAGNUM_PUREPYTHON"]
        else:
            os.environ["MAGNUM_PUREPYTHON"] = old


def bench_loop(make, keys: list, queries: list) -> dict:
    """One key at a time: ``make()`` gives an object with ``add`` and ``in``."""
    f = make()
    start = time.perf_counter()
    for x in keys:
        f.add(x)
    t_insert = time.perf_counter() - start
    start = time.perf_counter()
    sum(x in f for x in queries)
    return rates(len(keys), t_insert, len(queries), time.perf_counter() - start)


def bench_set(keys: list, queries: list, repeats: int) -> dict:
    s = set(keys)
    out = rates(len(keys), timed(lambda: set().update(keys), repeats),
                len(queries), timed(lambda: sum(x in s for x in queries), repeats))
    # the set's table plus one int object per id (ids above 256 are not cached)
    out["nbytes"] = sys.getsizeof(s) + sum(sys.getsizeof(x) for x in keys)
    return out


def bench_digest(fleet_nodes: int, fp_rate: float, repeats: int) -> dict:
    rng = np.random.default_rng(1)
    node_type = rng.integers(0, 3, fleet_nodes)
    free = rng.random(fleet_nodes) < 1 / 3
    by_type = {key: np.flatnonzero(free & (node_type == c)) for c, key in enumerate(("h100", "mi300x", "mtia"))}
    d = build_digest(by_type, fp_rate=fp_rate)
    return {"nodes": fleet_nodes, "free_nodes": int(free.sum()),
            "build_ms": 1e3 * timed(lambda: build_digest(by_type, fp_rate=fp_rate), repeats),
            "digest_nbytes": d.nbytes, "raw_list_nbytes": d.raw_list_nbytes,
            "bitmap_nbytes": sum((int(np.sum(node_type == c)) + 7) // 8 for c in range(3))}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="keys inserted")
    ap.add_argument("--fp-rate", type=float, default=0.01)
    ap.add_argument("--sample", type=int, default=100_000, help="keys for the one-at-a-time loops")
    ap.add_argument("--fleet-nodes", type=int, default=600_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)

    rng = np.random.default_rng(0)
    ids = rng.choice(2**40, 2 * args.n, replace=False).astype(np.int64)
    keys, absent = ids[: args.n], ids[args.n:]
    queries = np.concatenate([keys[: args.n // 2], absent[: args.n - args.n // 2]])
    m, k = optimal_params(args.n, args.fp_rate)
    sample_keys, sample_queries = keys[: args.sample].tolist(), queries[: args.sample].tolist()
    sample_queries = sample_queries[: args.sample // 2] + absent[: args.sample - args.sample // 2].tolist()

    result = {
        "n": args.n, "fp_rate_target": args.fp_rate, "m": m, "k": k,
        "ours_compiled": bench_backend(False, keys, queries, m, k, args.repeats),
        "ours_numpy": bench_backend(True, keys, queries, m, k, args.repeats),
        "ours_one_at_a_time": bench_loop(lambda: BloomFilter(m, k), sample_keys, sample_queries),
        "python_set": bench_set(keys.tolist(), queries.tolist(), args.repeats),
        "pure_python_bloom": bench_loop(lambda: BloomRef(m, k), sample_keys, sample_queries),
        "raw_id_list_nbytes": NODE_ID_BYTES * args.n,
        "digest_fleet": bench_digest(args.fleet_nodes, args.fp_rate, args.repeats),
        "python": platform.python_version(), "machine": platform.machine(),
    }
    ours, ref = result["ours_compiled"], result["pure_python_bloom"]
    result["speedup_compiled_vs_pure_python"] = {
        "inserts": ours["inserts_per_s"] / ref["inserts_per_s"],
        "queries": ours["queries_per_s"] / ref["queries_per_s"]}
    result["speedup_compiled_vs_numpy"] = {
        "inserts": ours["inserts_per_s"] / result["ours_numpy"]["inserts_per_s"],
        "queries": ours["queries_per_s"] / result["ours_numpy"]["queries_per_s"]}
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
