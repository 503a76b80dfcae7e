"""Compiled gossip dissemination: the nogil twin of ``dissemination_ref.py``.

Same arguments, same results (bit for bit) as :func:`dissemination_ref.run_rumor` and
:func:`dissemination_ref.run_staleness`; read that file for the model. The random stream,
peer choice and exchange steps are the inline functions of ``_dissemination.pxd``.
Each ``def`` wrapper first runs the reference's argument check (sizes, array lengths,
index ranges); the nogil loops then trust their arguments and are compiled without bounds
checks even in a debug build.
"""
import numpy as np

from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.string cimport memcpy

from magnum_lib._typedefs cimport intp_t

from magnum_lib.gossip.dissemination_ref import check_rumor_args, check_staleness_args


cdef int64_t _rumor(intp_t n, intp_t fanout, int mode, uint64_t loss_threshold,
                    uint64_t churn_threshold, int64_t churn_downtime,
                    const int64_t[::1] crash_round, int64_t partition_start,
                    int64_t partition_end, intp_t source, int64_t max_rounds,
                    bint stop_when_all, uint64_t* rng, int32_t[::1] infection_round,
                    int64_t[::1] informed, int64_t[::1] live, uint8_t[::1] up,
                    int64_t[::1] back, intp_t* peers, int64_t* messages) noexcept nogil:
    cdef intp_t half = n // 2, u, v, j
    cdef int64_t t = 0, n_live = 0, n_informed
    cdef int arrived
    cdef bint split, reachable, events = churn_threshold != 0
    for u in range(n):
        events = events or crash_round[u] <= max_rounds
        up[u] = crash_round[u] > 0
        back[u] = 0
        infection_round[u] = NEVER
        n_live += up[u]
    if up[source]:
        infection_round[source] = 0
    live[0] = n_live
    informed[0] = up[source]
    while t < max_rounds:
        t += 1
        for u in range(n if events else 0):  # 1. crashes and churn
            if crash_round[u] <= t:
                up[u] = 0
            elif back[u] != 0:
                if back[u] == t:
                    up[u] = 1
                    back[u] = 0
                    infection_round[u] = NEVER
            elif churn_threshold != 0 and sm_chance(rng, churn_threshold):
                up[u] = 0
                back[u] = t + churn_downtime
        split = partition_start <= t < partition_end
        for u in range(n):  # 2. every live node gossips
            if up[u] == 0:
                continue
            if mode == PUSH:
                messages[0] += fanout
                if not 0 <= infection_round[u] < t:
                    continue  # sent without the rumor: not drawn
                # Same draws and outcome as the general path below, but a push only
                # matters to an uninformed peer, so look at up[v] (another cache miss
                # at fleet scale) only then.
                pick_peers(rng, u, n, fanout, peers)
                for j in range(fanout):
                    v = peers[j]
                    if loss_threshold != 0 and sm_chance(rng, loss_threshold):
                        continue
                    if (infection_round[v] == NEVER and up[v] != 0
                            and not (split and ((u < half) != (v < half)))):
                        infection_round[v] = <int32_t> t
                continue
            pick_peers(rng, u, n, fanout, peers)
            for j in range(fanout):
                v = peers[j]
                reachable = up[v] != 0 and not (split and ((u < half) != (v < half)))
                arrived = contact(rng, mode, loss_threshold, reachable)
                messages[0] += sent(mode, arrived)
                if (arrived >= 1 and mode != PULL and 0 <= infection_round[u] < t
                        and infection_round[v] == NEVER):
                    infection_round[v] = <int32_t> t
                if arrived == 2 and 0 <= infection_round[v] < t and infection_round[u] == NEVER:
                    infection_round[u] = <int32_t> t
        n_live = 0  # 3. count
        n_informed = 0
        for u in range(n):
            n_live += up[u]
            if up[u] != 0 and infection_round[u] != NEVER:
                n_informed += 1
        live[t] = n_live
        informed[t] = n_informed
        if stop_when_all and (n_informed == n_live or n_informed == 0):
            break
    return t


def run_rumor(intp_t n, intp_t fanout, int mode, uint64_t loss_threshold,
              uint64_t churn_threshold, int64_t churn_downtime,
              const int64_t[::1] crash_round, int64_t partition_start, int64_t partition_end,
              intp_t source, int64_t max_rounds, bint stop_when_all, uint64_t seed,
              int32_t[::1] infection_round, int64_t[::1] informed, int64_t[::1] live):
    """Spread one rumor from ``source``; see :func:`dissemination_ref.run_rumor`.

    Returns
    -------
    (rounds, messages) : tuple of int
    """
    check_rumor_args(n, fanout, mode, loss_threshold, churn_threshold, churn_downtime, crash_round,
                     partition_start, partition_end, source, max_rounds, infection_round, informed, live)
    cdef uint8_t[::1] up = np.empty(n, dtype=np.uint8)
    cdef int64_t[::1] back = np.empty(n, dtype=np.int64)
    cdef intp_t[::1] peers = np.empty(fanout, dtype=np.intp)
    cdef intp_t* peer_buf = &peers[0]  # fanout >= 1: checked above
    cdef uint64_t rng = seed
    cdef int64_t messages = 0, rounds
    with nogil:
        rounds = _rumor(n, fanout, mode, loss_threshold, churn_threshold, churn_downtime,
                        crash_round, partition_start, partition_end, source, max_rounds,
                        stop_when_all, &rng, infection_round, informed, live, up, back,
                        peer_buf, &messages)
    return rounds, messages


cdef inline void _merge_row(int32_t* into, const int32_t* row, intp_t n) noexcept nogil:
    # Last writer wins by generation, entry by entry (a loop the C compiler vectorizes).
    cdef intp_t j
    for j in range(n):
        if row[j] > into[j]:
            into[j] = row[j]


cdef int64_t _staleness(intp_t n, intp_t fanout, int mode, uint64_t loss_threshold,
                        int64_t partition_start, int64_t partition_end, int64_t warmup,
                        int64_t measure, uint64_t* rng, int32_t[:, ::1] view,
                        int32_t[:, ::1] old, int64_t[::1] histogram,
                        intp_t* peers) noexcept nogil:
    cdef intp_t half = n // 2, u, v, i, j
    cdef int64_t t, messages = 0
    cdef int arrived
    cdef bint split, reachable
    for t in range(1, warmup + measure + 1):
        for i in range(n):
            view[i, i] = <int32_t> t
        memcpy(&old[0, 0], &view[0, 0], n * n * sizeof(int32_t))
        split = partition_start <= t < partition_end
        for u in range(n):
            pick_peers(rng, u, n, fanout, peers)
            for j in range(fanout):
                v = peers[j]
                reachable = not (split and ((u < half) != (v < half)))
                arrived = contact(rng, mode, loss_threshold, reachable)
                messages += sent(mode, arrived)
                if arrived >= 1 and mode != PULL:
                    _merge_row(&view[v, 0], &old[u, 0], n)
                if arrived == 2:
                    _merge_row(&view[u, 0], &old[v, 0], n)
        if t > warmup:
            for i in range(n):
                for j in range(n):
                    if i != j:
                        histogram[t + 1 - view[i, j]] += 1
    return messages


def run_staleness(intp_t n, intp_t fanout, int mode, uint64_t loss_threshold,
                  int64_t partition_start, int64_t partition_end, int64_t warmup,
                  int64_t measure, uint64_t seed, int64_t[::1] histogram):
    """Ages of every node's view of the others; see :func:`dissemination_ref.run_staleness`.

    Uses two n x n int32 matrices (8 n^2 bytes: 32 MB at n = 2,000).

    Returns
    -------
    messages : int
    """
    check_staleness_args(n, fanout, mode, loss_threshold, partition_start, partition_end, warmup,
                         measure, histogram)
    cdef int32_t[:, ::1] view = np.zeros((n, n), dtype=np.int32)
    cdef int32_t[:, ::1] old = np.empty((n, n), dtype=np.int32)
    cdef intp_t[::1] peers = np.empty(fanout, dtype=np.intp)
    cdef intp_t* peer_buf = &peers[0]  # fanout >= 1: checked above
    cdef uint64_t rng = seed
    cdef int64_t messages
    with nogil:
        messages = _staleness(n, fanout, mode, loss_threshold, partition_start, partition_end,
                              warmup, measure, &rng, view, old, histogram, peer_buf)
    return messages
