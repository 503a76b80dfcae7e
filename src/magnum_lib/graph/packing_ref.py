"""Time-division packing of reserved graphs on one accelerator: the readable reference.

The compiled twin is ``_packing.pyx`` (same arguments, same integer results).

Model (all times int64 nanoseconds):

* **Compute**: the device runs one layer at a time, never preempted. Each job is a chain:
  its layer k+1 is ready when layer k (and its transfer) has finished.
* **Memory**: a job is *admitted* (made resident) with its whole reservation
  ``reserve[j]`` and holds it until its last layer and transfer end; the sum of resident
  reservations never exceeds ``capacity``. At most ``max_resident`` jobs are resident
  (1 = exclusive allocation).
* **Admission** happens whenever the device is free: the first ``window`` waiting jobs
  that have arrived are examined in arrival order (ties: lower index) and each one that
  fits is admitted (first-fit backfilling within the window).
* **Interconnect**: a layer with ``xfer[k] > 0`` sends its output over link ``link[k]``
  after it computes. Each link carries one transfer at a time, first come first served in
  order of the layers' end times; other jobs' layers compute meanwhile.
* **Choice**: when the device is free it runs the resident job whose next layer has been
  ready longest (ties: lower job index), so resident jobs interleave round-robin and
  the device never idles while a resident layer is ready (work-conserving).
* **Switch overhead**: ``switch_ns`` is added before a layer whose job differs from the
  previous layer's (0 for statically compiled graphs; a context switch for dynamic GPUs).
"""
from __future__ import annotations

import numpy as np

from magnum_lib.base.kernel_args import int_array, int_scalar

#: Every time the packer computes (a start, an end, a transfer's end) stays below this
#: many ns (146 years), far inside int64: checked before the loop runs.
MAX_HORIZON_NS = 2**62
#: Largest device memory, bytes (4 EiB): sums of reservations stay inside int64.
MAX_CAPACITY_BYTES = 2**62
#: Most jobs and layers one call packs (scratch memory is about 100 bytes per entry).
MAX_JOBS = 10_000_000
MAX_LAYERS = 100_000_000


def check_kernel_inputs(arrival, reserve, layer_ptr, runtime, xfer, link, n_links, capacity,
                        max_resident, window, switch_ns) -> tuple:
    """Validate :func:`pack_kernel`'s arguments (both backends); return them normalized.

    Everything the loop trusts is checked here, once: dtypes (integers only, nothing is
    truncated), lengths (J jobs, J + 1 pointers, L layers), ``layer_ptr`` rising from 0
    to L with at least one layer per job, link indices in ``[-1, n_links)`` (-1 only
    without a transfer), every job fitting in ``capacity`` (else it could never be
    admitted), and a horizon (last arrival + all compute + all switches + all transfers)
    below :data:`MAX_HORIZON_NS`, so no time can overflow int64.
    """
    arrival = int_array("arrival", arrival, None, 0, MAX_HORIZON_NS)
    n_jobs = arrival.shape[0]
    if not 1 <= n_jobs <= MAX_JOBS:
        raise ValueError(f"arrival must hold between 1 and {MAX_JOBS} jobs, got {n_jobs}")
    capacity = int_scalar("capacity", capacity, 0, MAX_CAPACITY_BYTES)
    reserve = int_array("reserve", reserve, n_jobs, 0, capacity)
    ptr = int_array("layer_ptr", layer_ptr, n_jobs + 1, 0, MAX_LAYERS)
    n_layers = int(ptr[-1])
    if ptr[0] != 0 or (np.diff(ptr) < 1).any():
        raise ValueError("layer_ptr must start at 0 and rise by at least 1 per job")
    runtime = int_array("runtime", runtime, n_layers, 1, MAX_HORIZON_NS)
    xfer = int_array("xfer", xfer, n_layers, 0, MAX_HORIZON_NS)
    n_links = int_scalar("n_links", n_links, 0, MAX_LAYERS)
    link = int_array("link", link, n_layers, -1, n_links - 1)
    if ((xfer > 0) & (link < 0)).any():
        raise ValueError("link must name a link (>= 0) for every layer with a transfer (xfer > 0)")
    max_resident = int_scalar("max_resident", max_resident, 1, MAX_JOBS)
    window = int_scalar("window", window, 1, MAX_JOBS)
    switch_ns = int_scalar("switch_ns", switch_ns, 0, MAX_HORIZON_NS)
    # Float sums cannot overflow; their rounding (< 2^-40 relative) is far below the margin.
    horizon = (float(arrival.max()) + runtime.sum(dtype=np.float64) + xfer.sum(dtype=np.float64)
               + float(n_layers) * switch_ns)
    if horizon >= MAX_HORIZON_NS:
        raise ValueError(f"the schedule could run past {MAX_HORIZON_NS} ns (int64 clock): "
                         f"last arrival + compute + switches + transfers = {horizon:.3g} ns")
    return (arrival, reserve, ptr, runtime, xfer, link, n_links, capacity, max_resident, window,
            switch_ns)


def pack_kernel(arrival, reserve, layer_ptr, runtime, xfer, link, n_links: int, capacity: int,
                max_resident: int, window: int, switch_ns: int):
    """Schedule every layer (arguments checked by :func:`check_kernel_inputs`).

    Parameters
    ----------
    arrival, reserve : int64 arrays, shape (J,)
        When each job arrives (ns) and the bytes it reserves while resident.
    layer_ptr : int64 array, shape (J + 1,)
        Job j's layers are ``layer_ptr[j]:layer_ptr[j + 1]`` (at least one each).
    runtime, xfer, link : int64 arrays, shape (L,)
        Compute ns, transfer ns after the layer, and the link index (-1 = none).
    n_links, capacity, max_resident, window, switch_ns : int

    Returns
    -------
    start, end, xstart, xend : int64 arrays, shape (L,)
        Compute interval of each layer and its transfer interval (-1 when none).
    admit, done : int64 arrays, shape (J,)
        When each job became resident and when it released its memory.
    """
    (arrival, reserve, layer_ptr, runtime, xfer, link, n_links, capacity, max_resident, window,
     switch_ns) = check_kernel_inputs(arrival, reserve, layer_ptr, runtime, xfer, link, n_links,
                                      capacity, max_resident, window, switch_ns)
    n_jobs, n_layers = len(arrival), len(runtime)
    start = np.full(n_layers, -1, np.int64)
    end = np.full(n_layers, -1, np.int64)
    xstart = np.full(n_layers, -1, np.int64)
    xend = np.full(n_layers, -1, np.int64)
    admit = np.full(n_jobs, -1, np.int64)
    done = np.full(n_jobs, -1, np.int64)
    order = [int(j) for j in np.argsort(arrival, kind="stable")]
    taken = [False] * n_jobs
    head = 0                      # order[:head] are all admitted
    future = 0                    # order[future:] have not arrived yet (arrival > t)
    nxt = [int(p) for p in layer_ptr[:-1]]  # next layer of each job
    ready = [0] * n_jobs          # when that layer (or the job's release) can happen
    link_free = [0] * n_links
    resident: list[int] = []
    mem_used, finished, t, last_job = 0, 0, 0, -1

    while finished < n_jobs:
        # 1. Release jobs whose last layer and transfer are over.
        for j in [j for j in resident if nxt[j] == layer_ptr[j + 1] and ready[j] <= t]:
            resident.remove(j)
            mem_used -= int(reserve[j])
            done[j] = ready[j]
            finished += 1
        if finished == n_jobs:
            break
        # 2. Admit, first-fit over the first `window` arrived waiting jobs.
        while head < n_jobs and taken[order[head]]:
            head += 1
        seen, i = 0, head
        while i < n_jobs and seen < window and len(resident) < max_resident:
            j = order[i]
            i += 1
            if taken[j]:
                continue
            if arrival[j] > t:
                break
            seen += 1
            if mem_used + reserve[j] <= capacity:
                taken[j] = True
                mem_used += int(reserve[j])
                admit[j] = t
                ready[j] = t
                resident.append(j)
        # 3. The resident job whose next layer has been ready longest.
        best = -1
        for j in resident:
            if nxt[j] < layer_ptr[j + 1] and (best < 0 or (ready[j], j) < (ready[best], best)):
                best = j
        if best >= 0 and ready[best] <= t:
            k = nxt[best]
            s = t + (switch_ns if last_job >= 0 and last_job != best else 0)
            e = s + int(runtime[k])
            start[k], end[k] = s, e
            t, last_job = e, best
            ready[best] = e
            if xfer[k] > 0:
                c = int(link[k])
                xs = max(e, link_free[c])
                xstart[k], xend[k] = xs, xs + int(xfer[k])
                link_free[c] = xend[k]
                ready[best] = int(xend[k])
            nxt[best] = k + 1
            continue
        # 4. Nothing to run now: jump to the next event (a layer ready, a release, an arrival).
        nxt_t = ready[best] if best >= 0 else -1
        for j in resident:
            if nxt[j] == layer_ptr[j + 1] and (nxt_t < 0 or ready[j] < nxt_t):
                nxt_t = ready[j]
        while future < n_jobs and arrival[order[future]] <= t:
            future += 1
        if future < n_jobs and (nxt_t < 0 or arrival[order[future]] < nxt_t):
            nxt_t = int(arrival[order[future]])
        if nxt_t < 0:
            raise RuntimeError("packing stalled: a waiting job can never fit (validate inputs first)")
        t = nxt_t
    return start, end, xstart, xend, admit, done
