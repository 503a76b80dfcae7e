"""Model behind the packing explorer (notebook 06): time-division packing of static graphs.

Every number comes from :mod:`magnum_lib.graph.packing` (``make_inference_graphs``, ``pack``,
``compare_policies``); this module only chooses the workload, adds the closed forms the
notebook compares with, and builds the utilization-against-load curve quickly. No widget
code here: the explorer (``packing_explorer.py``), the notebook and the tests call
:func:`evaluate`.

Two choices differ from the library's own knobs, both computed from its public API:

* **Memory pressure in GB.** ``make_inference_graphs`` takes the mean reservation as a
  *fraction* of device memory, so every device would pack the same. The explorer asks for
  the mean reservation per job in GB and converts it per device, so the device dropdown
  changes how many graphs fit at once (capped at the whole device).
* **Offered load with the graphs held fixed.** ``utilization_vs_load`` draws new graphs
  for each load. Here one set of graphs gets arrivals spread over exactly
  ``total compute / load`` (exponential gaps, rescaled), so the curve is smooth, costs one
  generation, and obeys the exact bound ``utilization < min(load, 1)``.
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import numpy as np

from magnum_lib.graph import packing
from magnum_lib.hardware import Catalog, default_catalog
from magnum_lib.units import parse_size

TARGET = 0.95
"""The article's utilization figure for time-division packing on MTIA."""

ARTICLE_MTIA = "mtia_v2_article"
"""MTIA v2 with the article's memory (32 GB HBM2e) instead of Meta's 128 GB LPDDR5."""

DEVICES = (
    ("MTIA v2, public spec (128 GB)", "mtia_v2"),
    ("MTIA v2 as the article states (32 GB)", ARTICLE_MTIA),
    ("H100 SXM (80 GB)", "h100_sxm"),
    ("MI300X (192 GB)", "mi300x"),
)
CURVE_LOADS = (0.3, 0.6, 0.8, 0.9, 0.95, 1.0, 1.2, 1.5)
CURVE_JOBS = 60
BATCH = None
"""``load=None``: every job arrives at t = 0 (what the article's packing picture shows)."""


@functools.lru_cache(maxsize=1)
def device_catalog() -> Catalog:
    """The shipped catalog plus :data:`ARTICLE_MTIA` (the article's 32 GB HBM2e MTIA)."""
    base = default_catalog()
    accs = {key: base[key] for key in base}
    mtia = base["mtia_v2"]
    claim = mtia.article_claim or {}
    accs[ARTICLE_MTIA] = dataclasses.replace(
        mtia, key=ARTICLE_MTIA, name=f"{mtia.name}, memory as the article states",
        memory_bytes=parse_size(claim.get("memory", "32GB")), memory_type=claim.get("memory_type", "HBM2e"),
        aliases=())
    return Catalog(accs)


def memory_fraction(mean_gb: float, device: str) -> float:
    """Mean reservation per job as a fraction of ``device``'s memory, capped at 1."""
    cap = device_catalog()[device].memory_bytes
    return min(1.0, float(mean_gb) * 1e9 / cap)


def with_load(jobs: packing.JobSet, load: float | None, seed: int = 0) -> packing.JobSet:
    """The same graphs, arriving so that they offer exactly ``load`` (None: all at t = 0).

    Gaps are exponential (seeded) and rescaled so the first-to-last arrival span is
    ``sum of runtimes / load``; the makespan is longer than that span, hence
    ``utilization < load`` exactly.
    """
    n = len(jobs)
    if load is None or n == 1:
        arrival = np.zeros(n, np.int64)
    else:
        if not load > 0:
            raise ValueError(f"load must be > 0 or None (batch), got {load!r}")
        gaps = np.random.default_rng(seed).exponential(1.0, n - 1)
        span = jobs.runtime_ns.sum() / load
        arrival = np.rint(np.concatenate(([0.0], np.cumsum(gaps))) / gaps.sum() * span).astype(np.int64)
    return dataclasses.replace(jobs, arrival_ns=arrival)


def graphs(n: int, runtime_spread: float, mean_gb: float, device: str, seed: int = 0) -> packing.JobSet:
    """``n`` seeded inference graphs for ``device`` with a mean reservation of ``mean_gb``."""
    return packing.make_inference_graphs(n, seed, float(runtime_spread), memory_fraction(mean_gb, device),
                                         device, catalog=device_catalog())


def exclusive_theory(jobs: packing.JobSet) -> float:
    """Exclusive policy, batch: one job at a time, never idle between jobs, so the
    makespan is compute + transfers and utilization = R / (R + X) exactly (an upper bound
    under any arrivals)."""
    r = float(jobs.runtime_ns.sum())
    return r / (r + float(jobs.transfer_ns.sum()))


def idle_intervals(result: packing.PackResult) -> np.ndarray:
    """``(k, 2)`` ns intervals where no layer computes, between the first arrival and the end."""
    order = np.argsort(result.start_ns, kind="stable")
    s, e = result.start_ns[order], result.end_ns[order]
    reach = np.maximum.accumulate(e)
    t0, t1 = int(result.jobs.arrival_ns.min()), int(result.done_ns.max())
    lo = np.concatenate(([t0], reach))
    hi = np.concatenate((s, [t1]))
    keep = hi > lo
    return np.column_stack((lo[keep], hi[keep]))


def max_resident(result: packing.PackResult) -> int:
    """Most jobs holding memory at once (releases before admissions at an instant)."""
    t = np.concatenate((result.done_ns, result.admit_ns))
    d = np.concatenate((-np.ones(len(result.done_ns)), np.ones(len(result.admit_ns))))
    return int(np.cumsum(d[np.lexsort((d, t))]).max())


@dataclass(frozen=True, eq=False)
class LoadCurve:
    """Utilization of each policy at each offered load, plus the batch (all at t = 0)."""

    loads: np.ndarray
    utilization: dict
    batch_utilization: dict


@functools.lru_cache(maxsize=64)
def load_curve(runtime_spread: float, mean_gb: float, device: str, n: int = CURVE_JOBS, seed: int = 0,
               loads: tuple = CURVE_LOADS) -> LoadCurve:
    """The curve for one workload (cached: moving the jobs, load or policy controls reuses it)."""
    base = graphs(n, runtime_spread, mean_gb, device, seed)
    util = {p: np.empty(len(loads)) for p in packing.POLICIES}
    for i, load in enumerate(loads):
        for p, r in packing.compare_policies(with_load(base, load, seed)).items():
            util[p][i] = r.utilization
    batch = {p: r.utilization for p, r in packing.compare_policies(base).items()}
    return LoadCurve(np.asarray(loads, float), util, batch)


@dataclass(frozen=True, eq=False)
class PackingScenario:
    """One evaluated explorer setting.

    ``results`` maps each policy to its :class:`~magnum_lib.graph.packing.PackResult` for
    the ``jobs`` graphs; ``curve`` is the utilization-against-load curve of the same
    workload (``CURVE_JOBS`` graphs); ``message`` is non-empty when the setting degenerates.
    """

    jobs: int
    runtime_spread: float
    mean_gb: float
    load: float | None
    device: str
    device_name: str
    capacity_bytes: int
    memory_fraction: float
    results: dict
    exclusive_theory: float
    max_resident: int
    curve: LoadCurve
    message: str = ""

    @property
    def utilization(self) -> dict:
        return {p: r.utilization for p, r in self.results.items()}

    @property
    def meets_target(self) -> bool:
        """The article's figure: packed utilization >= 95%."""
        return self.results["packed"].utilization >= TARGET


def evaluate(jobs: int = 12, runtime_spread: float = 0.5, mean_gb: float = 8.0, load: float | None = BATCH,
             device: str = "mtia_v2", *, seed: int = 0, curve_jobs: int = CURVE_JOBS) -> PackingScenario:
    """Pack ``jobs`` graphs on ``device`` under all three policies and build the load curve.

    Parameters
    ----------
    jobs : int >= 1
    runtime_spread : float in [0, 3]
        Sigma of the lognormal layer runtimes (median 500 us).
    mean_gb : float > 0
        Mean static reservation per job, GB (capped at the device's memory).
    load : float > 0 or None
        Offered load (see :func:`with_load`); None is a batch, all at t = 0.
    device : str
        A key of :func:`device_catalog` (``DEVICES`` lists the explorer's choices).
    """
    if isinstance(mean_gb, bool) or not isinstance(mean_gb, (int, float)) or not mean_gb > 0:
        raise ValueError(f"mean_gb must be a number > 0 (GB per job), got {mean_gb!r}")
    acc = device_catalog()[device]
    frac = memory_fraction(mean_gb, acc.key)
    base = graphs(jobs, runtime_spread, mean_gb, acc.key, seed)
    results = packing.compare_policies(with_load(base, load, seed))
    message = ""
    if frac >= 1.0:
        message = (f"a mean job of {mean_gb:g} GB fills the {acc.memory_bytes / 1e9:g} GB device: "
                   "only one graph fits at a time, so packing cannot overlap anything")
    elif results["packed"].jobs.reserve_bytes.max() * 2 > acc.memory_bytes:
        message = "the largest graphs need over half the device: they run alone"
    return PackingScenario(
        jobs=len(base), runtime_spread=float(runtime_spread), mean_gb=float(mean_gb), load=load,
        device=acc.key, device_name=acc.name, capacity_bytes=acc.memory_bytes, memory_fraction=frac,
        results=results, exclusive_theory=exclusive_theory(base), max_resident=max_resident(results["packed"]),
        curve=load_curve(float(runtime_spread), float(mean_gb), acc.key, curve_jobs, seed), message=message)
