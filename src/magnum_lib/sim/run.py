"""Run a configuration: every region (serially, or in parallel on Dask), one summary.

Regions of the fleet exchange nothing during a run in this model (each region's
scheduler, views and nodes are its own; requests arrive at their region and stay
there), so a region is one independent task seeded by ``(seed, region)``: the parallel
run on Dask workers returns the same digests as the serial run, hence the same summary.
"""
from __future__ import annotations

import time

from magnum_lib.sim.config import SimConfig, make_config
from magnum_lib.sim.model import build_region, run_region
from magnum_lib.sim.results import digest, summarize

__all__ = ["simulate", "run_config", "region_digest", "run_fleet_dask"]


def region_digest(cfg: SimConfig, region: int, backend=None) -> dict:
    """Simulate region ``region`` of ``cfg`` alone and return its compact digest."""
    return digest(run_region(build_region(cfg, region, backend=backend)))


def run_config(cfg: SimConfig, backend: str | None = None, progress: bool = False, keep: bool = False):
    """Simulate every region of ``cfg`` in this process, one after the other; return the summary.

    Only each region's digest is kept (a few bytes per request), so the fleet fits in memory.
    ``keep=True`` returns ``(summary, runs)`` with every region's full state (tests, notebooks).
    """
    t0 = time.perf_counter()
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=cfg.regions * 1000, desc="simulate", leave=False, unit="‰")
    digests, runs = [], []
    for reg in range(cfg.regions):
        done = [0]

        def tick(frac, done=done):
            if bar is not None:
                k = int(frac * 1000)
                bar.update(k - done[0])
                done[0] = k
        run = run_region(build_region(cfg, reg, backend=backend), progress=tick)
        digests.append(digest(run))
        if keep:
            runs.append(run)
        del run
    if bar is not None:
        bar.close()
    out = summarize(digests, time.perf_counter() - t0)
    return (out, runs) if keep else out


def run_fleet_dask(cfg: SimConfig, client=None, backend: str | None = None) -> dict:
    """Simulate the regions of ``cfg`` in parallel on Dask workers; the same summary as serial.

    ``client``: a ``distributed.Client``, a scheduler address (``"tcp://host:port"``), or
    None for a private LocalCluster (worker processes, one thread each), closed afterwards.
    """
    from distributed import Client, LocalCluster

    t0 = time.perf_counter()
    own_cluster = own_client = None
    if client is None:
        own_cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                   host="127.0.0.1")
        client = own_client = Client(own_cluster)
    elif isinstance(client, str):
        client = own_client = Client(client)
    try:
        futures = [client.submit(region_digest, cfg, reg, backend, pure=False) for reg in range(cfg.regions)]
        digests = client.gather(futures)
    finally:
        if own_client is not None:
            own_client.close()
        if own_cluster is not None:
            own_cluster.close()
    return summarize(digests, time.perf_counter() - t0)


def simulate(preset: str | None = "magnum_v2", cluster: str = "classroom", backend: str | None = None,
             progress: bool = False, **knobs) -> dict:
    """Build a config from presets and knobs (:func:`make_config`) and run it."""
    return run_config(make_config(preset, cluster, **knobs), backend=backend, progress=progress)
