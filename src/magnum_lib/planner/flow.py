"""Min-cost flow placement over equivalence classes (Quincy / Firmament style).

The graph: one supply per job class (its job count), one sink per node class (its node
count, one job per node per round), an arc wherever the job class fits the node class at
finite cost, and an overflow arc per job class at the unplaced penalty (scaled by
priority). At 50,000 nodes and 5,000 jobs that is a few hundred supplies, a few dozen
sinks and a few thousand arcs, solved exactly by HiGHS (see :mod:`magnum_lib.planner.lp`
for the formulation and why the answer is integral). The class-level flow is then
unrolled into jobs and concrete nodes.

``lp_node_classes`` is the same program without job classes (one supply per job): the
same optimum, slower; it shows what aggregation buys.
"""
from __future__ import annotations

import numpy as np

from magnum_lib.planner.classes import ClassCosts, Classes
from magnum_lib.planner.lp import TransportSolution, transport_lp

__all__ = ["flow_node_classes", "lp_node_classes", "class_penalty"]


def class_penalty(cl: Classes, unplaced_penalty: float) -> np.ndarray:
    """Cost of leaving one job of each class unplaced: ``unplaced_penalty * priority``."""
    return unplaced_penalty * cl.jc_priority.astype(np.float64)


def flow_node_classes(cl: Classes, cc: ClassCosts, unplaced_penalty: float) -> tuple[np.ndarray, TransportSolution]:
    """Solve the class-level min-cost flow; return each job's node class (-1 unplaced) and the solution."""
    sol = transport_lp(cc.cost, cl.jc_count, cl.nc_count, class_penalty(cl, unplaced_penalty))
    job_nc = np.full(cl.job_class.shape[0], -1, dtype=np.int64)
    if sol.arc_flow.size == 0:
        return job_nc, sol
    o = np.argsort(sol.arc_source, kind="stable")
    s, t, f = sol.arc_source[o], sol.arc_sink[o], sol.arc_flow[o]
    start = np.cumsum(f) - f                      # first job of each arc, over all arcs
    first_arc = np.searchsorted(s, s, side="left")  # first arc of the same job class
    within = start - start[first_arc]             # first job of each arc within its class
    total = int(f.sum())
    pos = np.repeat(within, f) + (np.arange(total) - np.repeat(start, f))
    jobs = cl.job_order[cl.job_offset[np.repeat(s, f)] + pos]
    job_nc[jobs] = np.repeat(t, f)
    return job_nc, sol


def lp_node_classes(cl: Classes, cc: ClassCosts, unplaced_penalty: float) -> tuple[np.ndarray, TransportSolution]:
    """The same LP with one supply per job (no job classes); the vertex is integral."""
    n = cl.job_class.shape[0]
    penalty = class_penalty(cl, unplaced_penalty)[cl.job_class]
    sol = transport_lp(cc.cost[cl.job_class], np.ones(n, dtype=np.int64), cl.nc_count, penalty)
    job_nc = np.full(n, -1, dtype=np.int64)
    job_nc[sol.arc_source] = sol.arc_sink  # flows are 0/1 per job
    return job_nc, sol
