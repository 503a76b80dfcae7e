"""Model behind the Oracle explorer (notebook 02): one planning round on a small generated fleet.

The explorer's knobs are the cluster size (racks of :data:`RACK_NODES` nodes), the number
of pending jobs, the weight ``w`` of bandwidth against packing in the corrected cost
(:func:`magnum_lib.planner.scoring.placement_cost`) and the algorithm. Each setting runs
:func:`magnum_lib.planner.plan.plan` once on a seeded snapshot and returns a frozen
:class:`OracleScenario`: the plan, its cost against the LP lower bound, the planning time,
and the devices it places in each rack arranged by the rack's uplink bandwidth (the
heatmap). No widget code here: the explorer, the notebook and the tests all call
:func:`evaluate`.

Two planners are capped in the explorer (not in the library) so a slider change answers in
well under 150 ms: ``assignment`` solves a dense ``jobs x (nodes + jobs)`` matrix over
concrete nodes and ``lp`` has one row per job (no job classes). Above the caps the scenario
carries a message instead of a plan; ``flow`` solves the same optimum at any size.
"""
from __future__ import annotations

import functools
import math
import numbers
from dataclasses import dataclass

import numpy as np

from magnum_lib.base.validate import ParameterError, check_int
from magnum_lib.planner.metrics import group_placements
from magnum_lib.planner.plan import ALGORITHMS, Plan, plan
from magnum_lib.planner.snapshot import BANDWIDTH_TIERS_GBPS, Snapshot, make_snapshot

__all__ = ["OracleScenario", "evaluate", "snapshot", "rack_grid", "reference_points", "RACK_NODES",
           "RACKS_RANGE", "JOBS_RANGE", "CAPS", "ALGORITHMS"]

RACK_NODES = 32
"""Nodes per rack (the snapshot's node group), 8 devices each."""
RACKS_RANGE = (2, 48)
JOBS_RANGE = (8, 384)
CAPS = {"assignment": {"nodes": 1024, "jobs": 256}, "lp": {"nodes": 1024, "jobs": 64}}
"""Explorer-only size caps per algorithm (nodes, jobs): above them the scenario is a message."""


def _int_or_message(name: str, value, lo: int, hi: int) -> int | str:
    """``value`` as an int in [lo, hi], or the message the explorer shows instead."""
    try:
        return check_int(name, value, lo, hi)
    except ParameterError as err:
        return str(err)


@functools.lru_cache(maxsize=64)
def snapshot(racks: int, jobs: int, seed: int = 0) -> Snapshot:
    """The seeded snapshot of ``racks`` racks and ``jobs`` pending jobs (cached: moving the
    weight or the algorithm re-plans the same fleet)."""
    return make_snapshot(racks * RACK_NODES, jobs, seed=seed, group_size=RACK_NODES)


def rack_grid(snap: Snapshot, job_node: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Devices the plan places in each rack, one row per bandwidth tier (slowest first).

    Returns ``(grid, racks)``: ``grid[t, k]`` is the devices placed in the k-th rack of
    tier ``t`` (NaN pads short rows) and ``racks[t, k]`` that rack's id (-1 for padding).
    """
    placed = group_placements(snap, job_node)
    tiers = [np.flatnonzero(snap.group_bandwidth == bw) for bw in BANDWIDTH_TIERS_GBPS]
    width = max(1, max(t.size for t in tiers))
    grid = np.full((len(tiers), width), np.nan)
    ids = np.full((len(tiers), width), -1, dtype=np.int64)
    for row, members in enumerate(tiers):
        grid[row, :members.size] = placed[members]
        ids[row, :members.size] = members
    return grid, ids


@dataclass(frozen=True, eq=False)
class OracleScenario:
    """One evaluated explorer setting.

    ``ok`` is False when the setting is refused (a cap or a bad value): then ``message``
    says why and ``plan`` / ``snap`` are None and every number is NaN.

    planning_ms : classes + solve + unroll (hints, metrics): the plan's wall time without
        the lower-bound LP, which only the report needs.
    ratio : ``cost / lower_bound`` (1 = optimal), the y axis of cost against time.
    heavy_fast_share : share of the placed jobs' traffic (GB per step) that runs in racks of
        the fastest tier (400 GB/s).
    """

    racks: int
    jobs: int
    weight: float
    algo: str
    ok: bool
    message: str
    snap: Snapshot | None
    plan: Plan | None
    grid: np.ndarray
    cost: float
    lower_bound: float
    gap: float
    ratio: float
    planning_ms: float
    heavy_fast_share: float
    mean_bandwidth_heavy: float

    @property
    def nodes(self) -> int:
        return self.racks * RACK_NODES


def _refused(racks, jobs, weight, algo, message) -> OracleScenario:
    nan = math.nan
    return OracleScenario(racks, jobs, weight, algo, False, message, None, None, np.full((1, 1), np.nan),
                          nan, nan, nan, nan, nan, nan, nan)


def evaluate(racks: int, jobs: int, weight: float, algo: str, *, seed: int = 0,
             capped: bool = True) -> OracleScenario:
    """Plan one round with ``algo`` on ``racks`` racks and ``jobs`` pending jobs.

    Parameters
    ----------
    racks : int
        Racks of 32 nodes (8 devices each), in :data:`RACKS_RANGE`.
    jobs : int
        Pending jobs, in :data:`JOBS_RANGE`.
    weight : float
        ``w`` in [0, 1]: 0 packs only (best fit), 1 minimises communication time only.
    algo : str
        One of :data:`magnum_lib.planner.plan.ALGORITHMS`.
    seed : int
        Snapshot seed (same seed, same fleet and jobs).
    capped : bool
        Apply the explorer's :data:`CAPS` (default); False runs any size (slowly).

    Bad values and the explorer's caps give a scenario with ``ok=False`` and a message.
    """
    r = _int_or_message("racks", racks, *RACKS_RANGE)
    j = _int_or_message("jobs", jobs, *JOBS_RANGE)
    for v in (r, j):
        if isinstance(v, str):
            return _refused(racks, jobs, weight, algo, v)
    if isinstance(weight, bool) or not isinstance(weight, numbers.Real) or not 0.0 <= float(weight) <= 1.0:
        return _refused(r, j, weight, algo, f"weight must be a number in [0, 1], got {weight!r}")
    if algo not in ALGORITHMS:
        return _refused(r, j, weight, algo, f"algo must be one of {', '.join(ALGORITHMS)}, got {algo!r}")
    cap = CAPS.get(algo) if capped else None
    if cap and (r * RACK_NODES > cap["nodes"] or j > cap["jobs"]):
        why = ("a dense jobs x (nodes + jobs) matrix" if algo == "assignment" else "one LP row per job")
        return _refused(r, j, float(weight), algo,
                        f"{algo} is capped at {cap['nodes']:,} nodes and {cap['jobs']} jobs in the explorer "
                        f"({why}); flow finds the same optimum at any size")
    snap = snapshot(r, j, seed)
    p = plan(snap, algo, weight=float(weight))
    grid, _ = rack_grid(snap, p.job_node)
    placed = np.flatnonzero(p.job_node >= 0)
    comm = snap.job_comm[placed]
    bw = snap.group_bandwidth[snap.node_group[p.job_node[placed]]]
    fastest = max(BANDWIDTH_TIERS_GBPS)
    heavy = comm > 0
    return OracleScenario(
        racks=r, jobs=j, weight=float(weight), algo=algo, ok=True, message="", snap=snap, plan=p, grid=grid,
        cost=p.cost, lower_bound=p.lower_bound, gap=p.gap,
        ratio=1.0 + p.gap,
        planning_ms=(p.timings["wall_s"] - p.timings["bound_s"]) * 1e3,
        heavy_fast_share=float(comm[bw == fastest].sum() / comm.sum()) if comm.sum() > 0 else math.nan,
        mean_bandwidth_heavy=float(bw[heavy].mean()) if heavy.any() else math.nan,
    )


def reference_points(racks: int, jobs: int, weight: float, *, seed: int = 0,
                     algos=ALGORITHMS) -> dict:
    """``{algo: (planning_ms, cost / bound)}`` for every algorithm on one setting.

    The explorer computes these once, at construction, as the backdrop of its cost-vs-time
    plot (the caps do not apply: it runs once); each later slider change runs only the
    selected algorithm.
    """
    out = {}
    for algo in algos:
        sc = evaluate(racks, jobs, weight, algo, seed=seed, capped=False)
        if sc.ok:
            out[algo] = (sc.planning_ms, sc.ratio)
    return out
