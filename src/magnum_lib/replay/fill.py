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
cannot use, summed over nodes (weighted by pod counts in exact integers, then scaled).
Backends: the loop is :func:`.fill_ref.fill_core` (NumPy, readable) or the compiled
``_fill.pyx`` (same signature, same numbers) for ``fgd``, ``best-fit`` and ``first-fit``;
``random`` always runs the reference (it draws from NumPy's generator).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from magnum_lib.base.validate import ParameterError, check_choice, check_int
from magnum_lib.replay import fill_ref as _fill_ref
from magnum_lib.replay.cluster import ReplayCluster, check_replay_inputs
from magnum_lib.replay.fgd import node_grid, workload_classes
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
    backend: str = "python"

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


def _fill_args(jobs, cluster, classes=10):
    """The arrays ``fill_core`` takes: ``M, milli, gpus, mask, node_type, k, r, w``."""
    k, r, w = workload_classes(jobs, classes, counts=True)    # exact integer weights
    _, valid = node_grid(cluster)
    M = np.ascontiguousarray(np.where(valid, 1000, -1), dtype=np.int64)
    mask = np.zeros(len(jobs), np.int64) if jobs.type_mask is None else jobs.type_mask.astype(np.int64)
    return [M, jobs.gpu_milli.astype(np.int64), jobs.num_gpus.astype(np.int64), mask,
            cluster.node_type.astype(np.int64), k, r, w]


def fill(jobs: ReplayJobs, cluster: ReplayCluster, placement: str = "fgd", seed: int = 0,
         classes: int = 10) -> FillResult:
    """Submit ``jobs`` in order onto ``cluster``, none leaving; see the module docstring.

    ``classes``: typical pod classes for the fragmentation measure and FGD (the most
    common ``(num_gpus, gpu_milli)`` requests of ``jobs``).
    """
    check_replay_inputs(jobs, cluster)
    check_choice("placement", placement, FILL_PLACEMENTS)
    seed = check_int("seed", seed, 0, 2**63 - 1)
    classes = check_int("classes", classes, 1, 1000)
    if len(jobs) == 0:
        raise ParameterError("jobs", "must hold at least one pod")
    args = _fill_args(jobs, cluster, classes)
    core = _fill_ref
    if placement != "random":      # (random draws from NumPy's generator: reference only)
        from magnum_lib import _backend

        core = _backend.pick("magnum_lib.replay._fill", "magnum_lib.replay.fill_ref")
    node, frag_w = core.fill_core(*args, FILL_PLACEMENTS.index(placement), seed)
    w = args[-1]
    cap = cluster.total_gpus * 1000
    req = jobs.num_gpus * jobs.gpu_milli
    held = np.cumsum(np.where(node >= 0, req, 0))
    frag = frag_w / int(w.sum()) / cap
    return FillResult(placement, seed, cluster.total_gpus, np.cumsum(req) / cap, held / cap,
                      frag, 1.0 - held / cap, node >= 0, node,
                      "compiled" if core.__name__.endswith("._fill") else "python")
