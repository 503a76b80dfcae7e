"""Fragmentation-gradient-descent placement for shared GPUs (Weng et al., ATC 2023).

The fragmentation of a node for a task class m (``k`` GPUs of ``r`` milli) is the free
GPU capacity m cannot use there: everything free when m does not fit on the node at
all; else, for a shared class (r < 1000), the free milli of each GPU with less than r
free; for a whole-GPU class, the free milli of the partly used GPUs. A node's
fragmentation is the popularity-weighted sum over the classes of the workload
(popularity = share of the trace's pods in that class, top ``classes`` kept). FGD puts
each pod where that fragmentation grows least (ties: lowest GPU id). Only the GPU
dimension is modelled (CPU and memory of pods and nodes are not).

The ``fgd`` policy serves pods in submit order with skip-ahead (a pod that does not
fit anywhere waits, later ones may start), never preempts, and places with FGD (a
whole-GPU gang larger than every node's free GPUs goes to the replay's placement rule);
``fifo-skip`` with ``pooled`` placement (first fitting GPUs) is its baseline.
"""
from __future__ import annotations

import numpy as np

from magnum_lib.base.validate import check_int
from magnum_lib.replay.api import Policy

__all__ = ["FGD", "workload_classes", "fragmentation", "node_grid", "fgd_place"]


def workload_classes(jobs, classes: int = 10, counts: bool = False):
    """``(k, r, popularity)`` arrays of the ``classes`` most common (GPUs, milli) requests.

    ``counts=True``: the weights are the classes' pod counts (int64) instead of their
    shares: the same ranking of placements, in exact integer arithmetic.
    """
    keys = jobs.num_gpus * 10_000 + jobs.gpu_milli
    vals, n = np.unique(keys, return_counts=True)
    top = np.argsort(-n, kind="stable")[:classes]
    k, r = vals[top] // 10_000, vals[top] % 10_000
    w = n[top].astype(np.int64) if counts else n[top] / n[top].sum()
    return k.astype(np.int64), r.astype(np.int64), w


def fragmentation(free, k, r, p):
    """Fragmentation of each row of ``free`` (nodes x GPUs, -1 = no GPU) for the classes
    (milli-GPU times the weights ``p``; int64 when ``p`` is)."""
    f = np.where(free < 0, 0, free)                      # (nodes, G)
    total = f.sum(axis=1)
    full = (free == 1000).sum(axis=1)
    out = np.zeros(free.shape[0], dtype=np.result_type(np.asarray(p).dtype, np.int64))
    for kk, rr, pp in zip(k, r, p, strict=True):
        if rr < 1000:
            fits = (f >= rr).any(axis=1)
            frag = np.where(fits, np.where(f < rr, f, 0).sum(axis=1), total)
        else:
            fits = full >= kk
            frag = np.where(fits, np.where(f < 1000, f, 0).sum(axis=1), total)
        out += pp * frag
    return out


def node_grid(cluster):
    """``(idx, valid)``: GPU id at (node, slot) and whether that slot exists (nodes x max G)."""
    G = int(cluster.node_gpus.max())
    first = np.concatenate(([0], np.cumsum(cluster.node_gpus)[:-1]))
    slot = np.arange(G)
    valid = slot[None, :] < cluster.node_gpus[:, None]
    return np.where(valid, first[:, None] + slot[None, :], 0), valid


def fgd_place(M, idx, base, k, r, p, milli, gpus, ok_nodes):
    """``(node, [GPU ids])`` where a pod of ``gpus`` x ``milli`` grows fragmentation least.

    ``M``: free milli at (node, slot), -1 where no GPU; ``base``: each node's current
    fragmentation; ``ok_nodes``: nodes the pod may use. Ties: lowest GPU id (shared),
    lowest node (whole GPUs, the lowest free slots). None when it fits on no one node.
    """
    if milli < 1000:
        # Two GPUs of one node with the same free milli give the same fragmentation:
        # try only the first (lowest id) of each, the one the tie rule would pick.
        first = np.ones(M.shape, bool)
        for s in range(1, M.shape[1]):
            first[:, s] = ~(M[:, :s] == M[:, s:s + 1]).any(axis=1)
        cand = np.argwhere((M >= milli) & first & ok_nodes[:, None])
        if not cand.size:
            return None
        after = M[cand[:, 0]].copy()
        after[np.arange(len(cand)), cand[:, 1]] -= milli
        delta = fragmentation(after, k, r, p) - base[cand[:, 0]]
        gid = idx[cand[:, 0], cand[:, 1]]
        b = np.lexsort((gid, delta))[0]
        return int(cand[b, 0]), [int(gid[b])]
    nodes = np.flatnonzero(((M == 1000).sum(axis=1) >= gpus) & ok_nodes)
    if not nodes.size:
        return None
    after = M[nodes].copy()
    idle = after == 1000
    take = idle & (np.cumsum(idle, axis=1) <= gpus)     # the lowest idle slots of each node
    after[take] = 0
    delta = fragmentation(after, k, r, p) - base[nodes]
    b = np.lexsort((nodes, delta))[0]
    return int(nodes[b]), idx[nodes[b], take[b]].tolist()


class FGD(Policy):
    """Skip-ahead FIFO of pods placed by fragmentation gradient descent."""

    name = "fgd"

    def __init__(self, classes: int = 10):
        self.classes = check_int("classes", classes, 1, 1000)

    def reset(self, jobs, cluster):
        self.k, self.r, self.p = workload_classes(jobs, self.classes, counts=True)
        self.idx, self.valid = node_grid(cluster)
        self.jobs, self.cluster = jobs, cluster

    def _matrix(self, free):
        return np.where(self.valid, free[self.idx], -1)

    def schedule(self, view):
        plan = view.plan()
        if not view.queue:
            return plan
        M = self._matrix(plan.free)
        base = fragmentation(M, self.k, self.r, self.p)
        st = view._state
        for job in view.queue:
            ok_nodes = np.array([st.allowed(job.id, int(t)) for t in self.cluster.node_type])
            best = fgd_place(M, self.idx, base, self.k, self.r, self.p, job.gpu_milli,
                             job.num_gpus, ok_nodes)
            if best is None:
                # A gang larger than any node: the replay's placement rule spreads it.
                if job.gpu_milli == 1000 and plan.start(job):
                    M = self._matrix(plan.free)
                    base = fragmentation(M, self.k, self.r, self.p)
                continue
            node, gpus = best
            if plan.start(job, gpus=gpus):
                M[node] = np.where(self.valid[node], plan.free[self.idx[node]], -1)
                base[node] = fragmentation(M[node:node + 1], self.k, self.r, self.p)[0]
        return plan
