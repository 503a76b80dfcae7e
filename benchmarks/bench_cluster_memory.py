"""Memory of the article's fleet (600,000 GPUs in 15 regions): arrays vs Python objects.

Prints one JSON object:

* ``ours``: ``magnum_lib.cluster.build_cluster`` (structure of arrays): array bytes,
  bytes per device, memory traced by ``tracemalloc`` during the build, and build seconds;
* ``peer_dicts``: the same fleet as a list with one Python dict per device (what one
  writes first), and ``peer_slots``: one ``__slots__`` object per device (the frugal
  pure-Python form). Both are measured with ``tracemalloc`` on a sample of
  ``--sample`` devices and extrapolated linearly to the fleet (per-device cost times
  the fleet's device count), so the machine never has to hold the whole peer fleet.
  Their build time is measured on the same sample in a second, untraced run.

Usage: ``python benchmarks/bench_cluster_memory.py [--devices 600000] [--regions 15] [--sample 50000]``
"""
from __future__ import annotations

import argparse
import gc
import json
import time
import tracemalloc

from magnum_lib.cluster import DEFAULT_MIX, build_cluster
from magnum_lib.hardware import default_catalog


class SlotDevice:
    __slots__ = ("region", "cell", "node", "device", "type", "free_memory", "memory")

    def __init__(self, region, cell, node, device, type, free_memory, memory):
        self.region, self.cell, self.node, self.device = region, cell, node, device
        self.type, self.free_memory, self.memory = type, free_memory, memory


def plain_topology(cluster) -> dict:
    """The cluster's per-node facts as plain Python lists (prepared outside the measurement)."""
    return {
        "keys": list(cluster.type_keys),
        "mems": [int(m) for m in cluster.type_memory_bytes],
        "node_type": cluster.node_type.tolist(),
        "node_cell": cluster.node_cell.tolist(),
        "node_region": cluster.node_region.tolist(),
        "devices_per_node": int(cluster.node_device_offset[1]),
    }


def naive_fleet(plain: dict, n_devices: int, make) -> list:
    """The first ``n_devices`` devices as Python objects built by ``make`` in plain loops."""
    keys, mems, dpn = plain["keys"], plain["mems"], plain["devices_per_node"]
    out = []
    d = 0
    for node, t in enumerate(plain["node_type"]):
        region, cell = plain["node_region"][node], plain["node_cell"][node]
        for _ in range(dpn):
            # free_memory is its own int (it changes per device); memory is shared per type
            out.append(make(region=region, cell=cell, node=node, device=d, type=keys[t],
                            free_memory=mems[t] + 0, memory=mems[t]))
            d += 1
            if d == n_devices:
                return out
    return out


def traced(fn):
    """(result, bytes still allocated after fn, seconds) measured with tracemalloc."""
    gc.collect()
    tracemalloc.start()
    t0 = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - t0
    current, _peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return result, current, seconds


def measure_peer(plain: dict, sample: int, make, total: int) -> dict:
    objs, nbytes, _ = traced(lambda: naive_fleet(plain, sample, make))
    per_device = nbytes / sample
    del objs
    gc.collect()
    t0 = time.perf_counter()  # time it again without tracemalloc, which slows allocation
    objs = naive_fleet(plain, sample, make)
    seconds = time.perf_counter() - t0
    del objs
    return {
        "sample_devices": sample,
        "sample_bytes": nbytes,
        "bytes_per_device": round(per_device, 1),
        "fleet_bytes_extrapolated": round(per_device * total),
        "fleet_build_s_extrapolated": round(seconds / sample * total, 3),
        "method": "tracemalloc on a sample (time: untraced rerun), extrapolated linearly to the fleet",
    }


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", type=int, default=600_000)
    ap.add_argument("--regions", type=int, default=15)
    ap.add_argument("--sample", type=int, default=50_000)
    args = ap.parse_args(argv)

    default_catalog()  # read the YAML outside the timed build
    build = lambda: build_cluster(regions=args.regions, total_devices=args.devices, mix=DEFAULT_MIX)  # noqa: E731
    build()  # warm-up (imports, first allocation)
    t0 = time.perf_counter()
    cluster = build()
    build_s = time.perf_counter() - t0
    _, traced_bytes, _ = traced(build)

    sample = min(args.sample, cluster.n_devices)
    plain = plain_topology(cluster)
    dicts = measure_peer(plain, sample, dict, cluster.n_devices)
    slots = measure_peer(plain, sample, SlotDevice, cluster.n_devices)
    report = {
        "fleet": {"devices": cluster.n_devices, "nodes": cluster.n_nodes, "cells": cluster.n_cells,
                  "regions": cluster.n_regions, "mix": dict(DEFAULT_MIX)},
        "ours": {
            "nbytes": cluster.nbytes,
            "bytes_per_device": round(cluster.bytes_per_device, 2),
            "tracemalloc_bytes": traced_bytes,
            "build_s": round(build_s, 4),
            "under_100MB": cluster.nbytes < 100 * 10**6,
        },
        "peer_dicts": dicts,
        "peer_slots": slots,
        "ratio_dicts_over_ours": round(dicts["fleet_bytes_extrapolated"] / cluster.nbytes, 1),
        "ratio_slots_over_ours": round(slots["fleet_bytes_extrapolated"] / cluster.nbytes, 1),
    }
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
