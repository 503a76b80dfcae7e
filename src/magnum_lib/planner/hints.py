"""Soft placement hints: per job, node groups ranked best first, valid for a horizon.

The regional layer consumes a hint as advice, not an order: try the first group, fall
back to the next ones, and ignore the hint after ``valid_until_s`` (the next planning
round, 30 s by default, replaces it). The first group holds the node the plan chose for
the job; the others are the job's cheapest fallback groups among the nodes this plan
leaves free. Scores never decrease along a hint for an optimal or greedy plan: a cheaper
node still free at the end was free when the job was placed, so the planner would have
taken it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from magnum_lib.planner.classes import ClassCosts, Classes
from magnum_lib.planner.snapshot import Snapshot

__all__ = ["Hint", "make_hints", "DEFAULT_HORIZON_S"]

DEFAULT_HORIZON_S = 30.0


@dataclass(frozen=True)
class Hint:
    """Advice for one job.

    job_id : index of the job in the snapshot.
    groups : node groups, best first (the first holds ``node``).
    scores : the job's corrected cost in each group (best node there), same order.
    valid_until_s : snapshot time + horizon, seconds.
    node : the node the plan chose in ``groups[0]``.
    """

    job_id: int
    groups: tuple
    scores: tuple
    valid_until_s: float
    node: int = -1

    def to_dict(self) -> dict:
        return {"job_id": self.job_id, "groups": list(self.groups), "scores": list(self.scores),
                "valid_until_s": self.valid_until_s, "node": self.node}


def _group_best_costs(snap: Snapshot, cl: Classes, cost_rows: np.ndarray, taken: np.ndarray) -> np.ndarray:
    """``best[r, g]``: least cost of row ``r`` on a node of group ``g`` not ``taken``."""
    free = cl.node_class >= 0
    free[taken] = False
    usable = np.flatnonzero(free)
    nc = cl.n_node_classes
    present = np.bincount(snap.node_group[usable] * nc + cl.node_class[usable],
                          minlength=snap.n_groups * nc).reshape(snap.n_groups, nc) > 0
    best = np.full((cost_rows.shape[0], snap.n_groups), np.inf)
    for r, row in enumerate(cost_rows):
        best[r] = np.where(present, row[None, :], np.inf).min(axis=1) if nc else np.inf
    return best


def make_hints(snap: Snapshot, cl: Classes, cc: ClassCosts, job_node: np.ndarray,
               horizon_s: float = DEFAULT_HORIZON_S, top_groups: int = 3) -> tuple[Hint, ...]:
    """One hint per placed job, at most ``top_groups`` groups each."""
    placed = np.flatnonzero(job_node >= 0)
    if placed.size == 0:
        return ()
    # Cost rows repeat across priorities: rank groups once per distinct row.
    rows, row_of_class = np.unique(cc.cost, axis=0, return_inverse=True)
    row_of_class = row_of_class.reshape(-1)
    best = _group_best_costs(snap, cl, rows, job_node[placed])
    k = min(top_groups, snap.n_groups)
    # Top-k groups of each distinct row (padded with -1 where fewer are finite).
    top = np.full((best.shape[0], k), -1, dtype=np.int64)
    top_score = np.full((best.shape[0], k), np.inf)
    for r, b in enumerate(best):
        cand = np.argpartition(b, k - 1)[:k] if k < b.size else np.arange(b.size)
        cand = cand[np.lexsort((cand, b[cand]))]
        cand = cand[np.isfinite(b[cand])]
        top[r, :cand.size], top_score[r, :cand.size] = cand, b[cand]
    nodes = job_node[placed]
    g0 = snap.node_group[nodes]
    own_cost = cc.cost[cl.job_class[placed], cl.node_class[nodes]]
    rows_of_job = row_of_class[cl.job_class[placed]]
    alt, alt_score = top[rows_of_job], top_score[rows_of_job]
    keep = (alt >= 0) & (alt != g0[:, None])
    keep &= np.cumsum(keep, axis=1) <= k - 1  # the k-1 best groups other than the job's own
    until = snap.time_s + horizon_s
    hints = []
    for j, n, g, c, a, sc, m in zip(placed.tolist(), nodes.tolist(), g0.tolist(), own_cost.tolist(),
                                    alt.tolist(), alt_score.tolist(), keep.tolist(), strict=True):
        groups, scores = [g], [c]
        for ai, si, mi in zip(a, sc, m, strict=True):
            if mi:
                groups.append(ai)
                scores.append(si)
        hints.append(Hint(j, tuple(groups), tuple(scores), until, n))
    return tuple(hints)
