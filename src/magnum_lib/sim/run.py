"""Run a configuration: every region (serially, or in parallel on Dask), one summary.

Requests arrive at their region and stay there; what crosses regions is the global
planner's (layer 1) snapshot and hints. With policy "hints" (the ``magnum_v1`` and
``magnum_v2`` presets) the regions are advanced in lockstep, one planner interval at a
time (:func:`drive`): each region sends its snapshot (free devices per node, with type and
cell, and its streams' demand: :func:`~magnum_lib.sim.model.region_snapshot`), the driver
plans the union (:func:`~magnum_lib.sim.model.plan_hints`), sends each region its hints,
and every region advances to the next plan. The planner plans at t = 0 and then every
``planner_interval`` (30 s, C8): a run shorter than that exchanges once, at t = 0, from
each region's layout, and the regions then run one after the other (one region's requests
in memory at a time). The serial run (:func:`run_config`) and the Dask run
(:func:`run_fleet_dask`, each region a stateful actor on a worker) make the same calls in
the same order on the same seeded regions, so they give the same summary.
"""
from __future__ import annotations

import time

from magnum_lib.sim.budget import DEFAULT_MAX_MEMORY, DEFAULT_MAX_WALL_S, check_budget
from magnum_lib.sim.config import SimConfig, make_config
from magnum_lib.sim.model import (
    RegionLayout,
    _ns,
    advance_region,
    apply_hints,
    build_region,
    next_plan_ns,
    plan_hints,
    plan_seed,
    region_snapshot,
    run_region,
)
from magnum_lib.sim.results import digest, summarize

__all__ = ["simulate", "run_config", "region_digest", "run_fleet_dask", "RegionTask", "drive"]


def region_digest(cfg: SimConfig, region: int, backend=None) -> dict:
    """Simulate region ``region`` of ``cfg`` alone (it plans its own hints) and return its compact digest."""
    return digest(run_region(build_region(cfg, region, backend=backend)))


class RegionTask:
    """One region of a fleet run, stepped by :func:`drive` (in this process or as a Dask actor).

    Built lazily: until the first :meth:`advance` only its layout exists (cluster, training,
    graph residency), which is all the t = 0 snapshot needs.
    """

    def __init__(self, cfg: SimConfig, region: int, backend: str | None = None):
        self.cfg, self.region, self.backend = cfg, region, backend
        self.layout = RegionLayout(cfg, region)
        self.run = None

    def snapshot(self) -> dict:
        return region_snapshot(self.run if self.run is not None else self.layout)

    def set_hints(self, hints) -> None:
        apply_hints(self.run if self.run is not None else self.layout, hints)

    def _built(self):
        if self.run is None:
            self.run = build_region(self.cfg, self.region, backend=self.backend, layout=self.layout)
            self.layout = None
        return self.run

    def advance(self, t_stop: int, progress=None) -> int:
        """Advance to the first chunk boundary at or after ``t_stop`` (ns); return the time reached."""
        return advance_region(self._built(), t_stop, progress)

    def finish(self, progress=None, keep: bool = False):
        """Run to the end, return the digest (and the run with ``keep``) and drop the state."""
        run = self._built()
        advance_region(run, _ns(self.cfg.duration_s), progress)
        self.run = None
        return (digest(run), run) if keep else digest(run)


def drive(cfg: SimConfig, call) -> list:
    """Step every region of ``cfg`` through the planner exchange; return what ``finish`` returned per region.

    ``call(method, args_per_region)`` calls ``RegionTask.method`` on every region (in region
    order) and returns the results in that order: in this process or on Dask actors.
    """
    regions = list(range(cfg.regions))
    end = _ns(cfg.duration_s)
    t = 0
    while True:
        if cfg.policy == "hints":
            hints = plan_hints(call("snapshot", [()] * len(regions)), plan_seed(cfg, regions, t), t)
            call("set_hints", [(h,) for h in hints])
            stop = next_plan_ns(cfg, t)
        else:
            stop = end
        if stop >= end:
            return call("finish", [()] * len(regions))
        t = min(call("advance", [(stop,)] * len(regions)))


def run_config(cfg: SimConfig, backend: str | None = None, progress: bool = False, keep: bool = False,
               max_memory: float | None = DEFAULT_MAX_MEMORY, max_wall_s: float | None = DEFAULT_MAX_WALL_S,
               clock: list | None = None):
    """Simulate every region of ``cfg`` in this process (planner exchange: :func:`drive`); return the summary.

    Only each region's digest is kept (a few bytes per request), so the fleet fits in memory
    (a run with several planner intervals holds every region between exchanges).
    ``keep=True`` returns ``(summary, runs)`` with every region's full state (tests, notebooks).
    A run estimated (:func:`~magnum_lib.sim.budget.check_budget`) past ``max_memory`` bytes or
    ``max_wall_s`` seconds is refused before anything is built (None: no limit).
    ``clock``: a one-item list kept at the simulated seconds reached (the mean over regions:
    what an interrupted run reports).
    """
    est = check_budget(cfg, max_memory, max_wall_s, backend)
    t0 = time.perf_counter()
    bar = None
    if progress:
        from tqdm.auto import tqdm
        # A bar that can reach the end is not a bound: say up front what the run will take.
        bar = tqdm(total=cfg.regions * 1000, desc=f"simulate, {est.describe()}", leave=False, unit="‰")
    tasks = [RegionTask(cfg, reg, backend) for reg in range(cfg.regions)]
    done = [0] * cfg.regions

    def tick(reg):
        def f(frac):
            k = int(frac * 1000)
            if bar is not None:
                bar.update(k - done[reg])
            done[reg] = k
            if clock is not None:
                clock[0] = sum(done) * cfg.duration_s / (1000 * cfg.regions)
        return f

    def call(method, args):
        out = []
        for reg, (task, a) in enumerate(zip(tasks, args, strict=True)):
            if method == "finish":
                out.append(task.finish(tick(reg), keep))
                tasks[reg] = None  # its state is no longer needed: one region's requests at a time
            elif method == "advance":
                out.append(task.advance(*a, tick(reg)))
            else:
                out.append(getattr(task, method)(*a))
        return out

    try:
        res = drive(cfg, call)
    finally:  # Ctrl-C too: no half-drawn bar left on the terminal
        if bar is not None:
            bar.close()
    digests = [r[0] for r in res] if keep else res
    runs = [r[1] for r in res] if keep else []
    out = summarize(digests, time.perf_counter() - t0)
    return (out, runs) if keep else out


def run_fleet_dask(cfg: SimConfig, client=None, backend: str | None = None,
                   max_memory: float | None = DEFAULT_MAX_MEMORY, max_wall_s: float | None = DEFAULT_MAX_WALL_S) -> dict:
    """Simulate the regions of ``cfg`` in parallel on Dask workers; the same summary as serial.

    Each region is a :class:`RegionTask` actor on a worker (its state stays there); only the
    snapshots, the hints and the digests cross the network.

    ``client``: a ``distributed.Client``, a scheduler address (``"tcp://host:port"``), or
    None for a private LocalCluster (worker processes, one thread each), closed afterwards.
    ``max_memory``, ``max_wall_s``: as :func:`run_config`, checked on the whole run (the
    serial estimate) before any worker is started or any work is scattered.
    """
    check_budget(cfg, max_memory, max_wall_s, backend)
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
        actors = [client.submit(RegionTask, cfg, reg, backend, actor=True, pure=False) for reg in range(cfg.regions)]
        actors = [f.result() for f in actors]

        def call(method, args):  # every region's call in flight at once, gathered in region order
            futures = [getattr(actor, method)(*a) for actor, a in zip(actors, args, strict=True)]
            return [f.result() for f in futures]

        digests = drive(cfg, call)
    finally:
        if own_client is not None:
            own_client.close()
        if own_cluster is not None:
            own_cluster.close()
    return summarize(digests, time.perf_counter() - t0)


def simulate(preset: str | None = "magnum_v2", cluster: str = "classroom", backend: str | None = None,
             progress: bool = False, max_memory: float | None = DEFAULT_MAX_MEMORY,
             max_wall_s: float | None = DEFAULT_MAX_WALL_S, **knobs) -> dict:
    """Build a config from presets and knobs (:func:`make_config`) and run it (limits: :func:`run_config`)."""
    return run_config(make_config(preset, cluster, **knobs), backend=backend, progress=progress,
                      max_memory=max_memory, max_wall_s=max_wall_s)
