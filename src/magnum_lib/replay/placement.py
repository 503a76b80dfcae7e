"""Where a gang's GPUs go: ``pooled``, ``consolidated``, ``spread``, ``random``.

Each function gets the free milli-GPU of every GPU (1000 = idle), the node of every
GPU, the candidate GPU ids (already restricted to one GPU type) and the request, and
returns sorted GPU ids or None when the request does not fit. None of them changes
its inputs. Whole-GPU jobs need GPUs with all 1000 milli free; a shared request
(``milli < 1000``, one GPU) needs one GPU with at least ``milli`` free.
"""
from __future__ import annotations

import numpy as np

PLACEMENTS = ("pooled", "consolidated", "spread", "random")


def _usable(free, cand, milli):
    f = free[cand]
    return cand[f >= milli] if milli < 1000 else cand[f == 1000]


def pooled(free, gpu_node, cand, gpus, milli, rng=None):
    """GPU count only (as Tiresias' ``count`` and Gavel's simulators): the lowest free ids."""
    ok = _usable(free, cand, milli)
    return ok[:gpus].tolist() if ok.size >= gpus else None


def consolidated(free, gpu_node, cand, gpus, milli, rng=None):
    """As few nodes as possible; refuses a placement needing more nodes than the minimum.

    One node fits: the fullest node that still fits (best fit, lowest id on ties). Else
    the nodes with the most free GPUs, in that order, and only if they are exactly the
    ``ceil(gpus / largest node)`` nodes the gang needs at least.
    """
    ok = _usable(free, cand, milli)
    if ok.size < gpus:
        return None
    nodes, counts = np.unique(gpu_node[ok], return_counts=True)
    fit = np.flatnonzero(counts >= gpus)
    if fit.size:
        best = fit[np.lexsort((nodes[fit], counts[fit]))[0]]
        return ok[gpu_node[ok] == nodes[best]][:gpus].tolist()
    largest = int(np.bincount(gpu_node[cand]).max())
    need = -(-gpus // largest)
    order = np.lexsort((nodes, -counts))
    if counts[order[:need]].sum() < gpus:
        return None
    out, left = [], gpus
    for k in order[:need]:
        take = ok[gpu_node[ok] == nodes[k]][:left]
        out += take.tolist()
        left -= take.size
    return sorted(out)


def spread(free, gpu_node, cand, gpus, milli, rng=None):
    """One GPU per node per round, nodes with the most free GPUs first (ties: lowest id)."""
    ok = _usable(free, cand, milli)
    if ok.size < gpus:
        return None
    nodes, counts = np.unique(gpu_node[ok], return_counts=True)
    order = nodes[np.lexsort((nodes, -counts))]
    per_node = {int(n): ok[gpu_node[ok] == n].tolist() for n in order}
    out = []
    while len(out) < gpus:
        for n in order:
            if per_node[int(n)] and len(out) < gpus:
                out.append(per_node[int(n)].pop(0))
    return sorted(out)


def random(free, gpu_node, cand, gpus, milli, rng=None):
    """Uniformly random usable GPUs (from the replay's seeded generator)."""
    ok = _usable(free, cand, milli)
    if ok.size < gpus:
        return None
    return sorted(rng.choice(ok, size=gpus, replace=False).tolist())


FUNCTIONS = {"pooled": pooled, "consolidated": consolidated, "spread": spread, "random": random}


def reserve(free, gpus, milli) -> None:
    """``free[gpus] -= milli`` for a list of distinct GPU ids, one GPU at a time: a gang is a
    few GPUs, and NumPy's indexing by a short list costs several times a loop over it."""
    for g in gpus:
        free[g] -= milli


def release(free, gpus, milli) -> None:
    """``free[gpus] += milli``: the GPUs of :func:`reserve` given back."""
    for g in gpus:
        free[g] += milli
