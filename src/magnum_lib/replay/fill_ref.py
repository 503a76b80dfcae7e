"""Reference for ``_fill.pyx``: the fill loop of :func:`magnum_lib.replay.fill.fill`.

``fill_core(M, milli, gpus, mask, node_type, k, r, w, code, seed)`` places the pods in
order on the free-milli matrix ``M`` (nodes x slots, -1 = no GPU; changed in place) with
placement ``FILL_PLACEMENTS[code]`` and returns ``(node, frag)``: each pod's node (-1 =
failed) and the cluster's weighted fragmentation after it (int64: milli x pod counts ``w``
of the classes ``k``, ``r``). ``mask``: the pod's allowed GPU types as bits (0 = any).
"""
from __future__ import annotations

import numpy as np

from magnum_lib.replay.fgd import fgd_place, fragmentation

__all__ = ["fill_core"]


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


def fill_core(M, milli, gpus, mask, node_type, k, r, w, code, seed):
    how = ("fgd", "best-fit", "first-fit", "random")[code]
    rng = np.random.default_rng(seed)
    G = M.shape[1]
    cell = np.arange(M.size).reshape(M.shape)     # node * G + slot: ids in GPU order for the ties
    base = fragmentation(M, k, r, w)
    n = milli.size
    node = np.full(n, -1, np.int64)
    frag = np.empty(n, np.int64)
    for j in range(n):
        m, g, bits = int(milli[j]), int(gpus[j]), int(mask[j])
        ok = np.ones(M.shape[0], bool) if bits == 0 else ((bits >> node_type) & 1) == 1
        if how == "fgd":
            got = fgd_place(M, cell, base, k, r, w, m, g, ok)
            got = got and (got[0], [c % G for c in got[1]])
        else:
            got = _simple_place(M, m, g, ok, how, rng)
        if got is not None:
            nd, slots = got
            M[nd, slots] -= m
            base[nd] = fragmentation(M[nd:nd + 1], k, r, w)[0]
            node[j] = nd
        frag[j] = base.sum()
    return node, frag
