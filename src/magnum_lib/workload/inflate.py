"""Workload inflation for the Alibaba pods: fill a cluster past its GPU capacity.

The FGD paper (Weng et al., ATC 2023, section 5.1; its simulator's
``TunePodsByNodeTotalResource``, github.com/hkust-adsl/kubernetes-scheduler-simulator)
does not replay the trace's times: it submits pods one after another, none ever
leaves, until the GPUs requested reach ``target`` x the cluster's GPU capacity (1.3 in
its figures). The pod list is tuned to that total first:

* below the target: the trace's pods, then pods drawn uniformly **with replacement**
  from the trace, appended while the next draw still fits under the target (the first
  draw that would cross it stops the inflation);
* above it (e.g. a sample of the nodes): pods removed uniformly at random until the
  total is at or under the target;

then the order is shuffled (the paper's ``--shuffle-pod=true``). GPU requests count
``num_gpu * gpu_milli`` milli-GPU; CPU and memory are not modelled. One seed fixes
the draws and the order.
"""
from __future__ import annotations

import numpy as np

from magnum_lib.base.validate import ParameterError, check_int

__all__ = ["inflate_index", "inflate"]


def _requests(num_gpu, gpu_milli):
    num_gpu = np.asarray(num_gpu, dtype=np.int64)
    gpu_milli = np.asarray(gpu_milli, dtype=np.int64)
    if num_gpu.ndim != 1 or gpu_milli.shape != num_gpu.shape:
        raise ParameterError("pods", "num_gpu and gpu_milli must be 1-D arrays of one length")
    if num_gpu.size == 0 or num_gpu.min() < 0 or gpu_milli.min() < 0 or gpu_milli.max() > 1000:
        raise ParameterError("pods", "must be at least one pod, num_gpu >= 0, gpu_milli in [0, 1000]")
    req = num_gpu * gpu_milli
    if req.sum() <= 0:
        raise ParameterError("pods", "request no GPU at all; nothing to inflate")
    return req


def inflate_index(num_gpu, gpu_milli, capacity_gpus, target: float = 1.3, seed: int = 0):
    """Indices into the pod list (with repeats, in submission order) of the inflated workload.

    ``capacity_gpus``: the cluster's GPUs (each 1000 milli). ``target``: requested GPUs /
    capacity to reach, in (0, 10]. The requested total ends at or just under
    ``target * capacity`` (within one pod's request).
    """
    req = _requests(num_gpu, gpu_milli)
    cap = check_int("capacity_gpus", capacity_gpus, 1, 10**8)
    if isinstance(target, bool) or not isinstance(target, (int, float)) or not 0 < target <= 10:
        raise ParameterError("target", f"must be a ratio in (0, 10], got {target!r}")
    seed = check_int("seed", seed, 0, 2**63 - 1)
    rng = np.random.default_rng(seed)
    goal = target * cap * 1000
    n = req.size
    idx = np.arange(n)
    total = int(req.sum())
    if total > goal:
        # Remove random pods until at or under the goal (all at once: a random order,
        # dropping its longest prefix whose removal is needed).
        order = rng.permutation(n)
        removed = np.cumsum(req[order])
        k = int(np.searchsorted(removed, total - goal, side="left")) + 1
        idx = np.sort(order[k:])
    else:
        extra = []
        while True:
            # Draw in batches; the first draw that would cross the goal ends the inflation.
            draws = rng.integers(0, n, size=max(64, n // 4))
            run = total + np.cumsum(req[draws])
            over = np.flatnonzero(run > goal)
            if over.size:
                extra.append(draws[:over[0]])
                break
            extra.append(draws)
            total = int(run[-1])
        idx = np.concatenate([idx] + extra)
    return idx[rng.permutation(idx.size)]


def inflate(pods, capacity_gpus, target: float = 1.3, seed: int = 0):
    """The :class:`~magnum_lib.workload.traces.AlibabaPods` of the inflated workload.

    Repeated pods keep their row (name, times, requests); a copy's name gets
    ``"-tuned-<k>"`` as in the paper's simulator. Rows are in submission order.
    """
    idx = inflate_index(pods.num_gpu, pods.gpu_milli, capacity_gpus, target, seed)
    return pods.take(idx)
