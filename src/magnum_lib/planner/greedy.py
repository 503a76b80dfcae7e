"""Greedy placement, one job at a time: the article's score and the corrected cost.

Jobs go in priority order (highest first, then by index); each takes the allowed node with
the lowest score among those still free this round. Scores depend on a node only through
its equivalence class (:mod:`magnum_lib.planner.classes`), so the argmin runs over a few
dozen classes with remaining counts instead of 50,000 nodes: same choices, ties broken
towards the lower class id.
"""
from __future__ import annotations

import numpy as np

from magnum_lib.planner.classes import Classes

__all__ = ["greedy_node_classes", "priority_order"]


def priority_order(priority: np.ndarray) -> np.ndarray:
    """Job indices by priority, highest first, ties by index."""
    return np.lexsort((np.arange(priority.shape[0]), -priority))


def greedy_node_classes(cl: Classes, scores: np.ndarray, priority: np.ndarray) -> np.ndarray:
    """Greedy argmin placement at class level.

    Parameters
    ----------
    cl : Classes
    scores : ndarray, shape (n_job_classes, n_node_classes)
        Lower is better; +inf where the placement is not allowed.
    priority : ndarray of int, shape (n_jobs,)

    Returns
    -------
    ndarray of int64, shape (n_jobs,)
        Node class of each job, -1 when nothing allowed was left when its turn came.
    """
    remaining = cl.nc_count.astype(np.int64).copy()
    job_nc = np.full(cl.job_class.shape[0], -1, dtype=np.int64)
    # Allowed classes of each job class, best first: each job then scans its own list
    # and stops at the first class with a node left (amortised O(1) per job).
    prefs = []
    for row in scores:
        ok = np.flatnonzero(np.isfinite(row))
        prefs.append(ok[np.argsort(row[ok], kind="stable")].tolist())
    start = [0] * len(prefs)  # classes before start[jc] are known to be exhausted
    rem = remaining.tolist()
    job_class = cl.job_class.tolist()
    for j in priority_order(priority).tolist():
        jc = job_class[j]
        pref = prefs[jc]
        k = start[jc]
        while k < len(pref) and rem[pref[k]] == 0:
            k += 1
        start[jc] = k
        if k < len(pref):
            c = pref[k]
            rem[c] -= 1
            job_nc[j] = c
    return job_nc
