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
    p = _Packer(arrival, reserve, layer_ptr, runtime, xfer, link, n_links)
    while p.finished < p.n_jobs:
        p.release()
        if p.finished == p.n_jobs:
            break
        p.admit(capacity, max_resident, window)
        best = p.longest_ready()
        if best >= 0 and p.ready[best] <= p.t:
            p.run_layer(best, switch_ns)
            continue
        p.t = p.next_event(best)
    return p.start, p.end, p.xstart, p.xend, p.admit_t, p.done


class _Packer:
    """The packer's state between steps: the clock ``t`` (ns), resident jobs, next layers."""

    def __init__(self, arrival, reserve, layer_ptr, runtime, xfer, link, n_links):
        self.arrival, self.reserve, self.layer_ptr = arrival, reserve, layer_ptr
        self.runtime, self.xfer, self.link = runtime, xfer, link
        self.n_jobs = n_jobs = len(arrival)
        n_layers = len(runtime)
        self.start = np.full(n_layers, -1, np.int64)
        self.end = np.full(n_layers, -1, np.int64)
        self.xstart = np.full(n_layers, -1, np.int64)
        self.xend = np.full(n_layers, -1, np.int64)
        self.admit_t = np.full(n_jobs, -1, np.int64)
        self.done = np.full(n_jobs, -1, np.int64)
        self.order = [int(j) for j in np.argsort(arrival, kind="stable")]
        self.taken = [False] * n_jobs
        self.head = 0                      # order[:head] are all admitted
        self.future = 0                    # order[future:] have not arrived yet (arrival > t)
        self.nxt = [int(p) for p in layer_ptr[:-1]]  # next layer of each job
        self.ready = [0] * n_jobs          # when that layer (or the job's release) can happen
        self.link_free = [0] * n_links
        self.resident: list[int] = []
        self.mem_used, self.finished, self.t, self.last_job = 0, 0, 0, -1

    def release(self) -> None:
        """1. Release jobs whose last layer and transfer are over by ``t`` (their bytes free)."""
        for j in [j for j in self.resident if self.nxt[j] == self.layer_ptr[j + 1] and self.ready[j] <= self.t]:
            self.resident.remove(j)
            self.mem_used -= int(self.reserve[j])
            self.done[j] = self.ready[j]
            self.finished += 1

    def admit(self, capacity, max_resident, window) -> None:
        """2. Admit at ``t``, first-fit over the first ``window`` arrived waiting jobs (bytes <= capacity)."""
        order, taken = self.order, self.taken
        while self.head < self.n_jobs and taken[order[self.head]]:
            self.head += 1
        seen, i = 0, self.head
        while i < self.n_jobs and seen < window and len(self.resident) < max_resident:
            j = order[i]
            i += 1
            if taken[j]:
                continue
            if self.arrival[j] > self.t:
                break
            seen += 1
            if self.mem_used + self.reserve[j] <= capacity:
                taken[j] = True
                self.mem_used += int(self.reserve[j])
                self.admit_t[j] = self.t
                self.ready[j] = self.t
                self.resident.append(j)

    def longest_ready(self) -> int:
        """3. The resident job whose next layer has been ready longest (ties: lower index); -1 if none."""
        best = -1
        for j in self.resident:
            if self.nxt[j] < self.layer_ptr[j + 1] and (best < 0 or (self.ready[j], j) < (self.ready[best], best)):
                best = j
        return best

    def run_layer(self, best, switch_ns) -> None:
        """Run job ``best``'s next layer from ``t`` (plus ``switch_ns`` ns after another job), then its transfer."""
        k = self.nxt[best]
        s = self.t + (switch_ns if self.last_job >= 0 and self.last_job != best else 0)
        e = s + int(self.runtime[k])
        self.start[k], self.end[k] = s, e
        self.t, self.last_job = e, best
        self.ready[best] = e
        if self.xfer[k] > 0:
            c = int(self.link[k])
            xs = max(e, self.link_free[c])
            self.xstart[k], self.xend[k] = xs, xs + int(self.xfer[k])
            self.link_free[c] = self.xend[k]
            self.ready[best] = int(self.xend[k])
        self.nxt[best] = k + 1

    def next_event(self, best) -> int:
        """4. Nothing to run now: the time (ns) of the next event (a layer ready, a release, an arrival)."""
        nxt_t = self.ready[best] if best >= 0 else -1
        for j in self.resident:
            if self.nxt[j] == self.layer_ptr[j + 1] and (nxt_t < 0 or self.ready[j] < nxt_t):
                nxt_t = self.ready[j]
        order = self.order
        while self.future < self.n_jobs and self.arrival[order[self.future]] <= self.t:
            self.future += 1
        if self.future < self.n_jobs and (nxt_t < 0 or self.arrival[order[self.future]] < nxt_t):
            nxt_t = int(self.arrival[order[self.future]])
        if nxt_t < 0:
            raise RuntimeError("packing stalled: a waiting job can never fit (validate inputs first)")
        return nxt_t
