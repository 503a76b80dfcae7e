"""Time-division packing in plain Python: the form to read (notebook 06 shows it).

The same rules as the kernel that :func:`magnum_lib.graph.packing.pack` runs
(``packing_ref`` / ``_packing``), written for reading rather than speed, with two
simplifications: every arrived waiting job is examined for admission (the kernel looks
at a window of the first ``window`` ones) and no switch cost (statically compiled
graphs switch for free). With ``pack(jobs, window=len(jobs))`` the two give the same
schedule, integer for integer (``tests/test_graph_packing_simple.py``).

A job is ``{"arrival": ns, "reserve": bytes, "layers": [(runtime_ns, transfer_ns, link), ...]}``.
"""
from __future__ import annotations

__all__ = ["pack_simple", "jobs_as_dicts"]


def pack_simple(jobs, capacity, max_resident=None, n_links=1):
    """Schedule every layer on one device; returns ``(start, end, done)``: dicts keyed by
    ``(job, layer)`` for the compute intervals (ns) and by job for its release time."""
    max_resident = max_resident or len(jobs)
    waiting = sorted(range(len(jobs)), key=lambda j: jobs[j]["arrival"])  # ties: lower index
    resident = {}                  # job -> (its next layer, when that layer is ready)
    link_free = [0] * n_links      # when each link is done with the transfers queued on it
    start, end, done, t, used = {}, {}, {}, 0, 0
    while waiting or resident:
        for j, (k, ready) in list(resident.items()):   # 1. release jobs whose last layer is over
            if k == len(jobs[j]["layers"]) and ready <= t:
                used -= jobs[j]["reserve"]
                done[j] = ready
                del resident[j]
        for j in [j for j in waiting if jobs[j]["arrival"] <= t]:   # 2. admit whatever fits
            if len(resident) < max_resident and used + jobs[j]["reserve"] <= capacity:
                used += jobs[j]["reserve"]
                waiting.remove(j)
                resident[j] = (0, t)   # the whole reservation is held from now on
        ready = [(r, j) for j, (k, r) in resident.items() if k < len(jobs[j]["layers"]) and r <= t]
        if ready:                      # 3. run the layer that has been ready longest
            j = min(ready)[1]
            k = resident[j][0]
            runtime, transfer, link = jobs[j]["layers"][k]
            start[j, k], end[j, k] = t, t + runtime
            t += runtime
            if transfer:               # its output waits for the link, then crosses it
                link_free[link] = max(t, link_free[link]) + transfer
            resident[j] = (k + 1, link_free[link] if transfer else t)
        elif waiting or resident:      # 4. nothing ready: jump to the next layer, release or arrival
            t = min([r for _, r in resident.values()] + [jobs[j]["arrival"] for j in waiting
                                                         if jobs[j]["arrival"] > t])
    return start, end, done


def jobs_as_dicts(jobset, held=None) -> list[dict]:
    """A :class:`~magnum_lib.graph.packing.JobSet` as :func:`pack_simple`'s job dicts
    (``held``: bytes held per job, default its static reservation)."""
    held = jobset.reserve_bytes if held is None else held
    ptr = jobset.layer_ptr
    return [{"arrival": int(jobset.arrival_ns[j]), "reserve": int(held[j]),
             "layers": [(int(jobset.runtime_ns[k]), int(jobset.transfer_ns[k]), int(jobset.link[k]))
                        for k in range(ptr[j], ptr[j + 1])]} for j in range(len(jobset))]
