"""Plan quality, computed from the snapshot and the concrete placement alone.

Nothing here uses the equivalence classes or the solvers, so the tests can check every
planner's own claims against it.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from magnum_lib.planner.scoring import placement_cost
from magnum_lib.planner.snapshot import Snapshot

__all__ = ["Metrics", "evaluate", "violations", "gap", "group_placements", "GAP_TOL"]

GAP_TOL = 1e-9


def gap(cost: float, lower_bound: float) -> float:
    """Relative gap ``cost / lower_bound - 1`` (0 means proven optimal).

    Round-off below ``GAP_TOL`` (relative, or absolute near 0) counts as 0. When the bound
    is 0 the ratio is undefined: the gap is 0 if the cost is 0 as well, else ``inf``
    (serialised as ``null``). Costs are >= 0, so the bound is never negative.
    """
    if not (math.isfinite(cost) and math.isfinite(lower_bound)):
        return math.inf
    if abs(cost - lower_bound) <= GAP_TOL * max(1.0, abs(lower_bound)):
        return 0.0
    if lower_bound <= 0.0:
        return math.inf
    return cost / lower_bound - 1.0


@dataclass(frozen=True)
class Metrics:
    """Quality of one plan.

    cost : corrected placement cost of the placed jobs + penalty x priority of the unplaced.
    placement_cost : the first part alone.
    stranded_devices : free devices left on partly used nodes after the plan (fragmentation).
    stranded_share : ``stranded_devices`` / all free devices left (0 when none are left).
    cross_group_traffic_gb : GB per step the placed jobs send out of their group (in this
        model every job's traffic goes to peers outside its node, through its group's uplink).
    comm_time_s : sum over placed jobs of traffic / bandwidth, seconds per step.
    """

    cost: float
    placement_cost: float
    placed: int
    unplaced: int
    stranded_devices: int
    stranded_share: float
    cross_group_traffic_gb: float
    comm_time_s: float

    def to_dict(self) -> dict:
        return asdict(self)


def violations(snap: Snapshot, job_node: np.ndarray, weight: float) -> list[str]:
    """What makes ``job_node`` infeasible (empty list: feasible)."""
    out = []
    job_node = np.asarray(job_node)
    if job_node.shape != (snap.n_jobs,):
        return [f"job_node has shape {job_node.shape}, expected ({snap.n_jobs},)"]
    placed = np.flatnonzero(job_node >= 0)
    nodes = job_node[placed]
    if np.any(nodes >= snap.n_nodes):
        return ["job_node names a node that does not exist"]
    if np.unique(nodes).size != nodes.size:
        out.append("a node received more than one job")
    short = snap.job_demand[placed] > snap.node_free[nodes]
    if short.any():
        out.append(f"{int(short.sum())} jobs placed on nodes with too few free devices")
    jt = snap.job_type[placed]
    wrong = (jt >= 0) & (jt != snap.node_type[nodes])
    if wrong.any():
        out.append(f"{int(wrong.sum())} jobs placed on nodes of the wrong type")
    cost = _pair_cost(snap, placed, nodes, weight)
    if not np.all(np.isfinite(cost)):
        out.append(f"{int((~np.isfinite(cost)).sum())} placements have a non-finite cost")
    return out


def _pair_cost(snap: Snapshot, jobs: np.ndarray, nodes: np.ndarray, weight: float) -> np.ndarray:
    return placement_cost(snap.job_demand[jobs], snap.node_free[nodes], snap.job_comm[jobs],
                          snap.group_bandwidth[snap.node_group[nodes]], weight)


def evaluate(snap: Snapshot, job_node: np.ndarray, weight: float, unplaced_penalty: float) -> Metrics:
    """Metrics of a feasible placement ``job_node`` (node of each job, -1: unplaced)."""
    placed = np.flatnonzero(job_node >= 0)
    nodes = job_node[placed]
    pc = float(_pair_cost(snap, placed, nodes, weight).sum())
    left = np.flatnonzero(job_node < 0)
    penalty = float(unplaced_penalty * snap.job_priority[left].sum())
    free_after = snap.node_free.copy()
    np.subtract.at(free_after, nodes, snap.job_demand[placed])
    partly = (free_after > 0) & (free_after < snap.node_capacity)
    stranded = int(free_after[partly].sum())
    total_free = int(free_after.sum())
    comm = snap.job_comm[placed]
    with np.errstate(divide="ignore", invalid="ignore"):
        comm_time = float(np.sum(comm / snap.group_bandwidth[snap.node_group[nodes]]))
    return Metrics(cost=pc + penalty, placement_cost=pc, placed=int(placed.size), unplaced=int(left.size),
                   stranded_devices=stranded, stranded_share=stranded / total_free if total_free else 0.0,
                   cross_group_traffic_gb=float(comm.sum()), comm_time_s=comm_time)


def group_placements(snap: Snapshot, job_node: np.ndarray) -> np.ndarray:
    """Devices the plan puts in each group, shape ``(n_groups,)`` (for a heatmap over the racks)."""
    placed = np.flatnonzero(np.asarray(job_node) >= 0)
    return np.bincount(snap.node_group[job_node[placed]], weights=snap.job_demand[placed],
                       minlength=snap.n_groups).astype(np.int64)
