"""Exact placement as a linear sum assignment (jobs x node slots), for small snapshots.

Rows are jobs; columns are the nodes with a free device (one slot each: one pending job
per node per round) plus one "unplaced" column per job, which only its own job may take,
at the job's unplaced penalty. ``magnum_lib.planner.assignment.linear_sum_assignment``
(SciPy's Jonker-Volgenant) then finds the optimum directly over concrete nodes, with no
equivalence classes: an independent check of the flow solver, which must reach the same
cost. The matrix is dense, ``jobs x (nodes + jobs)``, hence the size limits.
"""
from __future__ import annotations

import numpy as np

from magnum_lib.planner.assignment import linear_sum_assignment
from magnum_lib.planner.classes import ClassCosts, Classes
from magnum_lib.planner.flow import class_penalty

__all__ = ["assignment_nodes", "MAX_NODES", "MAX_JOBS"]

MAX_NODES = 2000
MAX_JOBS = 1000


def assignment_nodes(cl: Classes, cc: ClassCosts, unplaced_penalty: float) -> np.ndarray:
    """Optimal ``job_node`` (-1: unplaced) by linear sum assignment over concrete nodes."""
    n_jobs = cl.job_class.shape[0]
    job_node = np.full(n_jobs, -1, dtype=np.int64)
    if n_jobs == 0:
        return job_node
    nodes = np.flatnonzero(cl.node_class >= 0)
    dummy = np.full((n_jobs, n_jobs), np.inf)
    np.fill_diagonal(dummy, class_penalty(cl, unplaced_penalty)[cl.job_class])
    real = cc.cost[cl.job_class[:, None], cl.node_class[nodes][None, :]]
    rows, cols = linear_sum_assignment(np.hstack([real, dummy]))
    placed = cols < nodes.size
    job_node[rows[placed]] = nodes[cols[placed]]
    return job_node
