"""Fill a cluster with pods that never leave: the FGD paper's fragmentation experiment.

Weng et al. (ATC 2023, section 5) evaluate placement by submitting pods one after
another (an inflated, shuffled pod list: :mod:`magnum_lib.workload.inflate`) until
the GPUs requested reach 130 % of the cluster's, no pod ever finishing; a pod that
fits on no node fails and stays unallocated. After each pod they read the GPU
allocation ratio and the fragmentation (Fig. 7 and 9). :func:`fill` does the same on
a :class:`~magnum_lib.replay.cluster.ReplayCluster`.

Model: a pod goes on **one** node (Kubernetes' rule): a shared pod (``gpu_milli <
1000``) on one GPU with that much free, a whole-GPU pod on ``num_gpus`` idle GPUs of
that node; only the GPU dimension is modelled (CPU and memory are not), and a pod's
``type_mask`` (its ``gpu_spec``) restricts its nodes. Placements:

* ``fgd``: the node and GPU where the fragmentation grows least (:func:`.fgd.fgd_place`).
* ``best-fit``: the fitting node with the least free GPU capacity (ties: lowest id);
  on it the fitting GPU with the least free milli (whole GPUs: the lowest idle ids).
* ``first-fit``: the lowest fitting node, its lowest fitting GPU ids.
* ``random``: a uniformly random fitting node, random fitting GPUs on it (the paper's
  ``Random``; seeded).

Fragmentation is the paper's: the free milli-GPU that the workload's typical pods
(the ``classes`` most common requests, weighted by popularity; :func:`.fgd.fragmentation`)
cannot use, summed over nodes. Pure NumPy, one backend (there is no compiled path).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from magnum_lib.engine.errors import ParameterError, check_choice, check_int
from magnum_lib.replay.cluster import ReplayCluster
from magnum_lib.replay.fgd import fgd_place, fragmentation, node_grid, workload_classes
from magnum_lib.replay.jobs import ReplayJobs

__all__ = ["FILL_PLACEMENTS", "FillResult", "fill"]

FILL_PLACEMENTS = ("fgd", "best-fit", "first-fit", "random")


@dataclass(eq=False)
class FillResult:
    """After each pod ``i`` (in submission order), GPUs as fractions of the capacity.

    ``arrived[i]``: requested by pods 0..i; ``allocated[i]``: held by the placed ones;
    ``frag[i]``: fragmented free capacity; ``idle[i]``: all free capacity;
    ``placed[i]``: whether pod i found a node; ``node[i]``: which (-1 = failed).
    """

    placement: str
    seed: int
    capacity_gpus: int
    arrived: np.ndarray
    allocated: np.ndarray
    frag: np.ndarray
    idle: np.ndarray
    placed: np.ndarray
    node: np.ndarray

    @property
    def unallocated(self) -> np.ndarray:
        """Requested by the arrived pods but not allocated (share of the capacity)."""
        return self.arrived - self.allocated

    @property
    def frag_ratio(self) -> np.ndarray:
        """Fragmented share of the free capacity (0 when nothing is free)."""
        return np.divide(self.frag, self.idle, out=np.zeros_like(self.frag), where=self.idle > 0)

    def at(self, arrived: float) -> dict:
        """The state after the last pod with ``self.arrived <= arrived`` (empty cluster before)."""
        i = int(np.searchsorted(self.arrived, arrived, side="right")) - 1
        if i < 0:
            return dict(arrived=0.0, allocated=0.0, unallocated=0.0, frag=0.0, frag_ratio=0.0)
        return dict(arrived=float(self.arrived[i]), allocated=float(self.allocated[i]),
                    unallocated=float(self.unallocated[i]), frag=float(self.frag[i]),
                    frag_ratio=float(self.frag_ratio[i]))


def _simple_place(M, milli, gpus, ok_nodes, how, rng):
    """``(node, [slots])`` for the best-fit / first-fit / random rules, or None."""
    if milli < 1000:
        usable = (M >= milli) & ok_nodes[:, None]
        nodes = np.flatnonzero(usable.any(axis=1))
    else:
        usable = (M == 1000) & ok_nodes[:, None]
        nodes = np.flatnonzero(usable.sum(axis=1) >= gpus)
    if not nodes.size:
        return None
    if how == "first-fit":
        n = int(nodes[0])
    elif how == "best-fit":
        n = int(nodes[np.argmin(np.where(M[nodes] > 0, M[nodes], 0).sum(axis=1))])
    else:
        n = int(rng.choice(nodes))
    slots = np.flatnonzero(usable[n])
    if how == "random":
        return n, np.sort(rng.choice(slots, size=gpus, replace=False)).tolist()
    if how == "best-fit" and milli < 1000:
        return n, [int(slots[np.argmin(M[n, slots])])]
    return n, slots[:gpus].tolist()


def _ok_nodes(jobs, cluster):
    """``ok[j]``: bool mask of the nodes pod ``j`` may use, from its type mask (or None)."""
    if jobs.type_mask is None:
        return None
    return (jobs.type_mask[:, None] == 0) | (((jobs.type_mask[:, None] >> cluster.node_type[None, :]) & 1) == 1)


def fill(jobs: ReplayJobs, cluster: ReplayCluster, placement: str = "fgd", seed: int = 0,
         classes: int = 10) -> FillResult:
    """Submit ``jobs`` in order onto ``cluster``, none leaving; see the module docstring.

    ``classes``: typical pod classes for the fragmentation measure and FGD (the most
    common ``(num_gpus, gpu_milli)`` requests of ``jobs``).
    """
    if not isinstance(jobs, ReplayJobs):
        raise ParameterError("jobs", f"must be ReplayJobs, got {type(jobs).__name__}")
    if not isinstance(cluster, ReplayCluster):
        raise ParameterError("cluster", f"must be a ReplayCluster, got {type(cluster).__name__}")
    check_choice("placement", placement, FILL_PLACEMENTS)
    seed = check_int("seed", seed, 0, 2**63 - 1)
    classes = check_int("classes", classes, 1, 1000)
    if len(jobs) == 0:
        raise ParameterError("jobs", "must hold at least one pod")
    rng = np.random.default_rng(seed)
    k, r, p = workload_classes(jobs, classes)
    idx, valid = node_grid(cluster)
    M = np.where(valid, 1000, -1)
    base = fragmentation(M, k, r, p)
    ok_all = _ok_nodes(jobs, cluster)
    everywhere = np.ones(cluster.nodes, bool)
    cap = cluster.total_gpus * 1000
    n = len(jobs)
    req = jobs.num_gpus * jobs.gpu_milli
    where = np.full(n, -1, np.int64)
    frag = np.empty(n)
    held = 0
    allocated = np.empty(n)
    for j in range(n):
        milli, gpus = int(jobs.gpu_milli[j]), int(jobs.num_gpus[j])
        ok = everywhere if ok_all is None else ok_all[j]
        if placement == "fgd":
            got = fgd_place(M, idx, base, k, r, p, milli, gpus, ok)
            if got is not None:
                node, gids = got
                got = node, [g - int(idx[node, 0]) for g in gids]
        else:
            got = _simple_place(M, milli, gpus, ok, placement, rng)
        if got is not None:
            node, slots = got
            M[node, slots] -= milli
            base[node] = fragmentation(M[node:node + 1], k, r, p)[0]
            where[j] = node
            held += int(req[j])
        allocated[j] = held
        frag[j] = base.sum()
    return FillResult(placement, seed, cluster.total_gpus, np.cumsum(req) / cap, allocated / cap,
                      frag / cap, 1.0 - allocated / cap, where >= 0, where)
