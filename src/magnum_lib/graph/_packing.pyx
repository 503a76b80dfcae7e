"""Compiled time-division packer: the nogil twin of ``packing_ref.py``.

Same arguments and the same int64 results as
:func:`magnum_lib.graph.packing_ref.pack_kernel`; read that file for the model.
"""
import numpy as np

from magnum_lib.graph.packing_ref import check_kernel_inputs

from magnum_lib._typedefs cimport time_ns, intp_t


cdef struct _Clock:
    # The packer's scalars between steps (see packing_ref._Packer).
    intp_t head, future, n_res, finished, last_job
    time_ns t, mem_used


cdef inline void _release(_Clock* p, const time_ns[::1] reserve, const time_ns[::1] layer_ptr,
                          time_ns[::1] done, time_ns[::1] nxt, time_ns[::1] ready,
                          intp_t[::1] resident) noexcept nogil:
    """1. Release jobs whose last layer and transfer are over by ``t`` (swap-remove: order is irrelevant)."""
    cdef intp_t r = 0, j
    while r < p.n_res:
        j = resident[r]
        if nxt[j] == layer_ptr[j + 1] and ready[j] <= p.t:
            p.mem_used -= reserve[j]
            done[j] = ready[j]
            p.finished += 1
            p.n_res -= 1
            resident[r] = resident[p.n_res]
        else:
            r += 1


cdef inline void _admit(_Clock* p, const time_ns[::1] arrival, const time_ns[::1] reserve,
                        time_ns capacity, intp_t max_resident, intp_t window, const intp_t[::1] order,
                        time_ns[::1] admit, time_ns[::1] ready, intp_t[::1] resident,
                        unsigned char[::1] taken) noexcept nogil:
    """2. Admit at ``t``, first-fit over the first ``window`` arrived waiting jobs (bytes <= capacity)."""
    cdef intp_t n_jobs = arrival.shape[0], seen = 0, i, j
    while p.head < n_jobs and taken[order[p.head]]:
        p.head += 1
    i = p.head
    while i < n_jobs and seen < window and p.n_res < max_resident:
        j = order[i]
        i += 1
        if taken[j]:
            continue
        if arrival[j] > p.t:
            break
        seen += 1
        if p.mem_used + reserve[j] <= capacity:
            taken[j] = 1
            p.mem_used += reserve[j]
            admit[j] = p.t
            ready[j] = p.t
            resident[p.n_res] = j
            p.n_res += 1


cdef inline intp_t _longest_ready(const _Clock* p, const time_ns[::1] layer_ptr, time_ns[::1] nxt,
                                  time_ns[::1] ready, intp_t[::1] resident) noexcept nogil:
    """3. The resident job whose next layer has been ready longest (ties: lower index); -1 if none."""
    cdef intp_t best = -1, r, j
    for r in range(p.n_res):
        j = resident[r]
        if nxt[j] < layer_ptr[j + 1] and (best < 0 or ready[j] < ready[best]
                                          or (ready[j] == ready[best] and j < best)):
            best = j
    return best


cdef inline void _run_layer(_Clock* p, intp_t best, time_ns switch_ns, const time_ns[::1] runtime,
                            const time_ns[::1] xfer, const time_ns[::1] link, time_ns[::1] start,
                            time_ns[::1] end, time_ns[::1] xstart, time_ns[::1] xend, time_ns[::1] nxt,
                            time_ns[::1] ready, time_ns[::1] link_free) noexcept nogil:
    """Run job ``best``'s next layer from ``t`` (plus ``switch_ns`` ns after another job), then its transfer."""
    cdef intp_t k = nxt[best], c
    cdef time_ns s = p.t + (switch_ns if p.last_job >= 0 and p.last_job != best else 0)
    cdef time_ns e = s + runtime[k], xs
    start[k] = s
    end[k] = e
    p.t = e
    p.last_job = best
    ready[best] = e
    if xfer[k] > 0:
        c = link[k]
        xs = e if e > link_free[c] else link_free[c]
        xstart[k] = xs
        xend[k] = xs + xfer[k]
        link_free[c] = xend[k]
        ready[best] = xend[k]
    nxt[best] = k + 1


cdef inline time_ns _next_event(_Clock* p, intp_t best, const time_ns[::1] arrival,
                                const time_ns[::1] layer_ptr, const intp_t[::1] order, time_ns[::1] nxt,
                                time_ns[::1] ready, intp_t[::1] resident) noexcept nogil:
    """4. Nothing to run now: the time (ns) of the next event (a layer ready, a release, an arrival); -1 if none."""
    cdef intp_t n_jobs = arrival.shape[0], r, j
    cdef time_ns nxt_t = ready[best] if best >= 0 else -1
    for r in range(p.n_res):
        j = resident[r]
        if nxt[j] == layer_ptr[j + 1] and (nxt_t < 0 or ready[j] < nxt_t):
            nxt_t = ready[j]
    while p.future < n_jobs and arrival[order[p.future]] <= p.t:
        p.future += 1
    if p.future < n_jobs and (nxt_t < 0 or arrival[order[p.future]] < nxt_t):
        nxt_t = arrival[order[p.future]]
    return nxt_t


cdef int pack_core(const time_ns[::1] arrival, const time_ns[::1] reserve, const time_ns[::1] layer_ptr,
                   const time_ns[::1] runtime, const time_ns[::1] xfer, const time_ns[::1] link,
                   time_ns capacity, intp_t max_resident, intp_t window, time_ns switch_ns,
                   const intp_t[::1] order, time_ns[::1] start, time_ns[::1] end,
                   time_ns[::1] xstart, time_ns[::1] xend, time_ns[::1] admit, time_ns[::1] done,
                   time_ns[::1] nxt, time_ns[::1] ready, time_ns[::1] link_free,
                   intp_t[::1] resident, unsigned char[::1] taken) noexcept nogil:
    """Fill start/end/xstart/xend/admit/done; return 0, or -1 if a waiting job can never fit.

    ``order`` is the jobs in arrival order (stable); ``nxt`` starts as ``layer_ptr[:-1]``,
    ``ready`` and ``link_free`` as 0, ``taken`` as 0; ``resident`` is scratch of size J.
    """
    cdef intp_t n_jobs = arrival.shape[0], best
    cdef _Clock p
    p.head = p.future = p.n_res = p.finished = 0
    p.last_job = -1
    p.t = p.mem_used = 0
    while p.finished < n_jobs:
        _release(&p, reserve, layer_ptr, done, nxt, ready, resident)
        if p.finished == n_jobs:
            break
        _admit(&p, arrival, reserve, capacity, max_resident, window, order, admit, ready, resident, taken)
        best = _longest_ready(&p, layer_ptr, nxt, ready, resident)
        if best >= 0 and ready[best] <= p.t:
            _run_layer(&p, best, switch_ns, runtime, xfer, link, start, end, xstart, xend, nxt, ready, link_free)
            continue
        p.t = _next_event(&p, best, arrival, layer_ptr, order, nxt, ready, resident)
        if p.t < 0:
            return -1
    return 0


def pack_kernel(arrival, reserve, layer_ptr, runtime, xfer, link, n_links, capacity,
                max_resident, window, switch_ns):
    """Schedule every layer (same contract as ``packing_ref.pack_kernel``).

    Every argument is checked by ``packing_ref.check_kernel_inputs`` first: the nogil
    loop indexes by ``layer_ptr`` and ``link`` without bounds checks.
    """
    (arrival, reserve, layer_ptr, runtime, xfer, link, n_links, capacity, max_resident, window,
     switch_ns) = check_kernel_inputs(arrival, reserve, layer_ptr, runtime, xfer, link, n_links,
                                      capacity, max_resident, window, switch_ns)
    cdef const time_ns[::1] arr = arrival
    cdef const time_ns[::1] ptr = layer_ptr
    n_jobs, n_layers = arr.shape[0], np.asarray(runtime).shape[0]
    order = np.argsort(np.asarray(arr), kind="stable").astype(np.intp)
    start = np.full(n_layers, -1, np.int64)
    end = np.full(n_layers, -1, np.int64)
    xstart = np.full(n_layers, -1, np.int64)
    xend = np.full(n_layers, -1, np.int64)
    admit = np.full(n_jobs, -1, np.int64)
    done = np.full(n_jobs, -1, np.int64)
    nxt = np.array(np.asarray(ptr)[:n_jobs], dtype=np.int64)
    ready = np.zeros(n_jobs, np.int64)
    link_free = np.zeros(max(int(n_links), 1), np.int64)
    resident = np.zeros(max(n_jobs, 1), np.intp)
    taken = np.zeros(n_jobs, np.uint8)
    cdef int status
    cdef const time_ns[::1] res_v = reserve
    cdef const time_ns[::1] rt_v = runtime
    cdef const time_ns[::1] x_v = xfer
    cdef const time_ns[::1] l_v = link
    cdef const intp_t[::1] o_v = order
    cdef time_ns[::1] s_v = start, e_v = end, xs_v = xstart, xe_v = xend, a_v = admit, d_v = done
    cdef time_ns[::1] n_v = nxt, rd_v = ready, lf_v = link_free
    cdef intp_t[::1] rs_v = resident
    cdef unsigned char[::1] tk_v = taken
    cdef time_ns cap = capacity, sw = switch_ns
    cdef intp_t mr = max_resident, win = window
    with nogil:
        status = pack_core(arr, res_v, ptr, rt_v, x_v, l_v, cap, mr, win, sw, o_v,
                           s_v, e_v, xs_v, xe_v, a_v, d_v, n_v, rd_v, lf_v, rs_v, tk_v)
    if status != 0:
        raise RuntimeError("packing stalled: a waiting job can never fit (validate inputs first)")
    return start, end, xstart, xend, admit, done
