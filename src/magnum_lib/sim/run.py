"""Run a configuration: every region (serially, or in parallel on Dask), one summary."""
from __future__ import annotations

import time

from magnum_lib.sim.config import SimConfig, make_config
from magnum_lib.sim.model import build_region, run_region
from magnum_lib.sim.results import summarize

__all__ = ["simulate", "run_config", "region_summary"]


def _one_region(cfg: SimConfig, region: int, backend=None, progress=None):
    run = build_region(cfg, region, backend=backend)
    return run_region(run, progress=progress)


def region_summary(cfg: SimConfig, region: int, backend=None) -> dict:
    """Summary of region ``region`` alone (what a Dask worker sends back for the fleet)."""
    t0 = time.perf_counter()
    run = _one_region(cfg, region, backend)
    return summarize([run], time.perf_counter() - t0)


def run_config(cfg: SimConfig, backend: str | None = None, progress: bool = False, keep: bool = False):
    """Simulate every region of ``cfg`` in this process; return the summary dict.

    ``keep=True`` returns ``(summary, runs)`` with the per-region state (tests, notebooks).
    """
    t0 = time.perf_counter()
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=cfg.regions * 1000, unit="‰", desc="simulate", leave=False)
    runs = []
    for reg in range(cfg.regions):
        done = [0]

        def tick(frac, reg=reg, done=done):
            if bar is not None:
                k = int(frac * 1000)
                bar.update(k - done[0])
                done[0] = k
        run = _one_region(cfg, reg, backend, tick)
        runs.append(run)
    if bar is not None:
        bar.close()
    out = summarize(runs, time.perf_counter() - t0)
    return (out, runs) if keep else out


def simulate(preset: str | None = "magnum_v2", cluster: str = "classroom", backend: str | None = None,
             progress: bool = False, **knobs) -> dict:
    """Build a config from presets and knobs (:func:`make_config`) and run it."""
    return run_config(make_config(preset, cluster, **knobs), backend=backend, progress=progress)
