"""Equivalence classes: why 50,000 nodes and 5,000 jobs become a graph of a few hundred arcs.

Quincy (Isard et al., SOSP 2009) and Firmament (Gog et al., OSDI 2016) keep scheduling
flow networks small by aggregating: machines that look the same to the cost model are one
node of the graph with a capacity, tasks that look the same are one supply. Here the cost
of a job on a node (:mod:`magnum_lib.planner.scoring`) depends on the node only through
(its group's bandwidth, device type, capacity, free devices) and on the job only through
(demand, type preference, communication volume); priority enters through the unplaced
penalty. So:

* node class = (bandwidth tier, device type, capacity, free > 0): a few dozen classes;
* job class = (demand, type preference, comm volume, priority): a few hundred at most.

The aggregation is **exact**, not a heuristic: every node of a class costs the same for
every job, so any class-level solution unrolls into concrete nodes with the same cost,
and the class-level LP has the same optimum as the job-by-node one. Nodes are grouped by
bandwidth rather than by group (the brief's "same group" key) because that is all of the
group the cost sees; the unroll step puts the concrete nodes, and so the groups, back.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from magnum_lib.planner.scoring import article_score, placement_cost
from magnum_lib.planner.snapshot import Snapshot

__all__ = ["Classes", "build_classes", "ClassCosts", "class_costs", "article_class_scores"]


def _group_rows(columns) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Class id of each row of ``columns`` (equal rows share one), first row and size of each.

    Columns are rank-encoded one at a time (NaN counts as one value), so the combined key
    never overflows however large the values are.
    """
    n = len(columns[0])
    key = np.zeros(n, dtype=np.int64)
    for col in columns:
        _, inv = np.unique(col, return_inverse=True)
        key = key * (int(inv.max()) + 1 if n else 1) + inv.reshape(-1)
        _, key = np.unique(key, return_inverse=True)
        key = key.reshape(-1)
    _, first, inv, counts = np.unique(key, return_index=True, return_inverse=True, return_counts=True)
    return inv.reshape(-1).astype(np.int64), first, counts.astype(np.int64)


def _csr(labels: np.ndarray, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Members of each class, CSR style: ``order[offset[c]:offset[c+1]]`` ascending."""
    order = np.argsort(labels, kind="stable")
    offset = np.zeros(n_classes + 1, dtype=np.int64)
    np.cumsum(np.bincount(labels, minlength=n_classes), out=offset[1:])
    return order, offset


@dataclass(frozen=True, eq=False)
class Classes:
    """Node and job equivalence classes of one snapshot.

    ``node_class[n]`` is -1 for a node with no free device (it can take no job).
    ``nc_*`` and ``jc_*`` hold each class's attributes and ``*_count`` its size;
    ``node_order[node_offset[c]:node_offset[c+1]]`` lists the nodes of class ``c``
    (ascending), and likewise ``job_order`` / ``job_offset``.
    """

    node_class: np.ndarray
    node_order: np.ndarray
    node_offset: np.ndarray
    nc_type: np.ndarray
    nc_capacity: np.ndarray
    nc_free: np.ndarray
    nc_bandwidth: np.ndarray
    nc_count: np.ndarray
    job_class: np.ndarray
    job_order: np.ndarray
    job_offset: np.ndarray
    jc_demand: np.ndarray
    jc_type: np.ndarray
    jc_comm: np.ndarray
    jc_priority: np.ndarray
    jc_count: np.ndarray

    @property
    def n_node_classes(self) -> int:
        return int(self.nc_count.shape[0])

    @property
    def n_job_classes(self) -> int:
        return int(self.jc_count.shape[0])


def build_classes(snap: Snapshot) -> Classes:
    """Collapse ``snap``'s nodes and jobs into equivalence classes (see the module docstring)."""
    usable = np.flatnonzero(snap.node_free > 0)
    bw = snap.group_bandwidth[snap.node_group[usable]]
    cols = [bw, snap.node_type[usable], snap.node_capacity[usable], snap.node_free[usable]]
    if usable.size:
        label, first, count = _group_rows(cols)
    else:
        label, first, count = (np.zeros(0, dtype=np.int64),) * 3
    node_class = np.full(snap.n_nodes, -1, dtype=np.int64)
    node_class[usable] = label
    order, offset = _csr(label, count.shape[0])
    rep = usable[first]

    if snap.n_jobs:
        jlabel, jfirst, jcount = _group_rows([snap.job_demand, snap.job_type, snap.job_comm, snap.job_priority])
    else:
        jlabel, jfirst, jcount = (np.zeros(0, dtype=np.int64),) * 3
    jorder, joffset = _csr(jlabel, jcount.shape[0])
    return Classes(
        node_class=node_class, node_order=usable[order], node_offset=offset,
        nc_type=snap.node_type[rep], nc_capacity=snap.node_capacity[rep], nc_free=snap.node_free[rep],
        nc_bandwidth=snap.group_bandwidth[snap.node_group[rep]], nc_count=count,
        job_class=jlabel, job_order=jorder, job_offset=joffset,
        jc_demand=snap.job_demand[jfirst], jc_type=snap.job_type[jfirst], jc_comm=snap.job_comm[jfirst],
        jc_priority=snap.job_priority[jfirst], jc_count=jcount)


@dataclass(frozen=True, eq=False)
class ClassCosts:
    """Job-class x node-class matrices (shape ``(n_job_classes, n_node_classes)``).

    ``allowed``: the job fits (type and free devices) and the cost is finite.
    ``cost``: the corrected placement cost, +inf where not allowed.
    ``fits``: type and free devices match, whatever the cost.
    """

    fits: np.ndarray
    allowed: np.ndarray
    cost: np.ndarray


def _fits(cl: Classes) -> np.ndarray:
    d = cl.jc_demand[:, None]
    return (d <= cl.nc_free[None, :]) & ((cl.jc_type[:, None] < 0) | (cl.jc_type[:, None] == cl.nc_type[None, :]))


def class_costs(cl: Classes, weight: float) -> ClassCosts:
    """Corrected costs between every job class and node class."""
    d = cl.jc_demand[:, None]
    fits = _fits(cl)
    raw = placement_cost(d, cl.nc_free[None, :], cl.jc_comm[:, None], cl.nc_bandwidth[None, :], weight)
    allowed = fits & np.isfinite(raw)
    return ClassCosts(fits=fits, allowed=allowed, cost=np.where(allowed, raw, np.inf))


def article_class_scores(cl: Classes, costs: ClassCosts) -> np.ndarray:
    """The article's score per (job class, node class), +inf where the placement is not allowed.

    Only the placements the corrected model allows are scored (the job fits, the cost is
    finite), so both greedy variants choose from the same set and differ only in taste.
    """
    util = 1.0 - cl.nc_free / cl.nc_capacity
    raw = article_score(cl.jc_demand[:, None], util[None, :], cl.nc_bandwidth[None, :], cl.jc_comm[:, None])
    return np.where(costs.allowed & np.isfinite(raw), raw, np.inf)


def unroll(cl: Classes, job_node_class: np.ndarray) -> np.ndarray:
    """Concrete nodes for a class-level placement.

    ``job_node_class[j]`` is the node class job ``j`` goes to (-1: unplaced). Within a class
    the jobs, in index order, take the class's nodes in index order: all of them cost the
    same, so which one is a free choice. Returns ``job_node`` (int64, -1: unplaced).
    Raises ValueError if a class receives more jobs than it has nodes.
    """
    job_node = np.full(job_node_class.shape[0], -1, dtype=np.int64)
    placed = np.flatnonzero(job_node_class >= 0)
    if placed.size == 0:
        return job_node
    nc = job_node_class[placed]
    used = np.bincount(nc, minlength=cl.n_node_classes)
    if np.any(used > cl.nc_count):
        c = int(np.flatnonzero(used > cl.nc_count)[0])
        raise ValueError(f"node class {c} receives {used[c]} jobs but has {cl.nc_count[c]} nodes")
    order = np.lexsort((placed, nc))  # by class, then job index
    nc_sorted = nc[order]
    starts = np.zeros(cl.n_node_classes + 1, dtype=np.int64)
    np.cumsum(used, out=starts[1:])
    rank = np.arange(placed.size) - starts[nc_sorted]
    job_node[placed[order]] = cl.node_order[cl.node_offset[nc_sorted] + rank]
    return job_node
