"""Compiled per-node dispatcher: the nogil twin of ``dispatcher_ref.py``.

Same arguments, same results (bit for bit) as
:func:`magnum_lib.node.dispatcher_ref.run_dispatch`; read that file for the model.
The per-class FIFO queues are rings in one flat array: class ``k`` owns
``qbuf[k*n : (k+1)*n]`` (an item sits in at most one queue, so ``n`` slots suffice),
with its head at ``qhead[k]`` and length ``qlen[k]``; a paused item goes back in front.
The class served and the item paused are the rules ``most_urgent`` and ``pause_victim`` of
``_dispatcher.pxd`` (``run_cls[d]``: the class device ``d`` runs, -1 when free).
"""
import numpy as np

from libc.stdint cimport int64_t

from magnum_lib._typedefs cimport intp_t, time_ns
from magnum_lib.node.dispatcher_ref import NO_HORIZON, _rule_args, check_kernel_inputs


cdef inline int64_t _pop_front(int64_t[::1] qbuf, int64_t[::1] qhead, int64_t[::1] qlen,
                               intp_t k, intp_t cap) noexcept nogil:
    cdef int64_t i = qbuf[k * cap + qhead[k]]
    qhead[k] += 1
    if qhead[k] == cap:
        qhead[k] = 0
    qlen[k] -= 1
    return i


cdef inline void _push(int64_t[::1] qbuf, int64_t[::1] qhead, int64_t[::1] qlen,
                       intp_t k, intp_t cap, int64_t i, bint front) noexcept nogil:
    cdef int64_t slot
    if front:
        qhead[k] = qhead[k] - 1 if qhead[k] > 0 else cap - 1
        slot = qhead[k]
    else:
        slot = qhead[k] + qlen[k]
        if slot >= cap:
            slot -= cap
    qbuf[k * cap + slot] = i
    qlen[k] += 1


cdef inline int64_t _done_by(int64_t rem, time_ns run_from, time_ns t) noexcept nogil:
    # Useful work done between run_from and t, at most what the item still needed.
    cdef int64_t done = t - run_from
    if done < 0:
        return 0
    return rem if done > rem else done


cdef inline void _give(intp_t d, int64_t i, intp_t k, time_ns t, time_ns quantum, time_ns overhead,
                       time_ns resume_ns, int64_t[::1] pauses, int64_t[::1] start, int64_t[::1] item,
                       int64_t[::1] run_cls, int64_t[::1] given, int64_t[::1] run_from, Counters* c) noexcept nogil:
    # Device d takes item i of class k at boundary t; its useful work begins after `overhead`.
    run_cls[d] = k
    if pauses[i] > 0:  # restarting a paused item costs a resume
        overhead += resume_ns
        c.resume_overhead_ns += resume_ns
    item[d] = i
    given[d] = t
    run_from[d] = start_after(t, overhead, quantum)  # t is a boundary: t + overhead
    if start[i] < 0:
        start[i] = run_from[d]
    c.events += 1


cdef inline void _retire(intp_t devices, time_ns t, int64_t[::1] remaining, int64_t[::1] finish,
                         int64_t[::1] busy, int64_t[::1] item, int64_t[::1] run_cls, int64_t[::1] given,
                         int64_t[::1] run_from, Counters* c) noexcept nogil:
    """1. Every device whose item has ended by ``t`` (ns) finishes it and goes free."""
    cdef intp_t d
    cdef int64_t i
    for d in range(devices):
        i = item[d]
        if i >= 0 and run_from[d] + remaining[i] <= t:
            finish[i] = run_from[d] + remaining[i]
            busy[d] += finish[i] - given[d]
            c.work_done_ns += remaining[i]
            remaining[i] = 0
            item[d] = -1
            run_cls[d] = -1
            c.events += 1


cdef inline void _audit(intp_t devices, intp_t n_classes, intp_t cap, time_ns t, int64_t[::1] remaining,
                        int64_t[::1] qbuf, int64_t[::1] qhead, int64_t[::1] qlen, int64_t[::1] item,
                        int64_t[::1] run_from, Counters* c) noexcept nogil:
    """Recount at ``t``: work in = work done (credited + in progress) + work owed (ns); count a violation."""
    cdef int64_t owed = 0, in_progress = 0, done, j
    cdef intp_t k, d
    for k in range(n_classes):
        for j in range(qlen[k]):
            owed += remaining[qbuf[k * cap + (qhead[k] + j) % cap]]
    for d in range(devices):
        if item[d] >= 0:
            done = _done_by(remaining[item[d]], run_from[d], t)
            in_progress += done
            owed += remaining[item[d]] - done
    c.audited += 1
    c.violations += c.work_in_ns != c.work_done_ns + in_progress + owed


cdef inline time_ns _soonest(time_ns next_arrival, intp_t devices, int64_t[::1] remaining,
                             int64_t[::1] item, int64_t[::1] run_from) noexcept nogil:
    """The next time (ns) at which something can change: an arrival or an end; -1 if none."""
    cdef time_ns soonest = next_arrival, end
    cdef intp_t d
    for d in range(devices):
        if item[d] >= 0:
            end = run_from[d] + remaining[item[d]]
            if soonest < 0 or end < soonest:
                soonest = end
    return soonest


cdef void dispatch_loop(const int64_t[::1] arrival, const int64_t[::1] work,
                        const int64_t[::1] prio, intp_t devices, time_ns quantum,
                        time_ns pause_ns, time_ns resume_ns, bint preempt, intp_t n_classes,
                        time_ns last_tick, bint audit,
                        int64_t[::1] remaining, int64_t[::1] start, int64_t[::1] finish,
                        int64_t[::1] pauses, int64_t[::1] busy,
                        int64_t[::1] qbuf, int64_t[::1] qhead, int64_t[::1] qlen,
                        int64_t[::1] item, int64_t[::1] run_cls, int64_t[::1] given, int64_t[::1] run_from,
                        Counters* c) noexcept nogil:
    cdef intp_t n = arrival.shape[0], cap = n, d, k, victim, nxt = 0
    cdef int64_t i, done
    cdef time_ns t = 0, soonest
    cdef bint decided
    while True:
        decided = False
        _retire(devices, t, remaining, finish, busy, item, run_cls, given, run_from, c)  # 1. retire
        while nxt < n and arrival[nxt] <= t:  # 2. admit
            _push(qbuf, qhead, qlen, prio[nxt], cap, nxt, False)
            c.work_in_ns += work[nxt]
            c.events += 1
            nxt += 1
        for d in range(devices):  # 3. assign free devices
            if item[d] < 0:
                k = most_urgent(&qlen[0], n_classes)
                if k < 0:
                    break
                _give(d, _pop_front(qbuf, qhead, qlen, k, cap), k, t, quantum, 0, resume_ns,
                      pauses, start, item, run_cls, given, run_from, c)
                decided = True
        while preempt:  # 4. micro-preemption
            k = most_urgent(&qlen[0], n_classes)
            if k < 0:
                break
            victim = pause_victim(&run_cls[0], devices, k)  # least urgent below k, lowest index
            if victim < 0:
                break
            i = item[victim]
            done = _done_by(remaining[i], run_from[victim], t)
            remaining[i] -= done
            c.work_done_ns += done
            busy[victim] += t - given[victim]
            pauses[i] += 1
            _push(qbuf, qhead, qlen, prio[i], cap, i, True)
            c.preemptions += 1
            c.pause_overhead_ns += pause_ns
            c.events += 1
            _give(victim, _pop_front(qbuf, qhead, qlen, k, cap), k, t, quantum, pause_ns, resume_ns,
                  pauses, start, item, run_cls, given, run_from, c)
            decided = True
        if audit:
            _audit(devices, n_classes, cap, t, remaining, qbuf, qhead, qlen, item, run_from, c)
        c.visited += 1
        c.decisions += decided
        soonest = _soonest(arrival[nxt] if nxt < n else -1, devices, remaining, item, run_from)
        if soonest < 0 or t >= last_tick:
            break
        t = next_boundary(soonest, quantum)
        if t > last_tick:
            t = last_tick
    for d in range(devices):  # snapshot the items still running at the end
        if item[d] >= 0:
            done = _done_by(remaining[item[d]], run_from[d], t)
            remaining[item[d]] -= done
            c.work_done_ns += done
            busy[d] += t - given[d]
    c.end_ns = t
    c.admitted = nxt


def run_dispatch(arrival_ns, work_ns, priority, devices, quantum_ns, pause_ns, resume_ns,
                 preempt, n_classes, horizon_ns=-1, audit=False) -> dict:
    """Compiled :func:`magnum_lib.node.dispatcher_ref.run_dispatch` (same arguments, results).

    Every argument is checked by ``dispatcher_ref.check_kernel_inputs`` first (classes
    index the queues, times must not overflow); the nogil loop then trusts its input.
    """
    (arrival_ns, work_ns, priority, devices, quantum_ns, pause_ns, resume_ns, preempt, n_classes,
     horizon_ns, audit) = check_kernel_inputs(arrival_ns, work_ns, priority, devices, quantum_ns, pause_ns,
                                              resume_ns, preempt, n_classes, horizon_ns, audit)
    cdef const int64_t[::1] arrival = arrival_ns
    cdef const int64_t[::1] work = work_ns
    cdef const int64_t[::1] prio = priority
    cdef intp_t n = arrival.shape[0], g = devices, nc = n_classes
    cdef time_ns q = quantum_ns
    cdef time_ns last_tick = (NO_HORIZON if horizon_ns < 0 else horizon_ns) // q * q
    remaining = np.array(work, dtype=np.int64)
    start, finish = np.full(n, -1, np.int64), np.full(n, -1, np.int64)
    pauses, busy = np.zeros(n, np.int64), np.zeros(g, np.int64)
    qbuf = np.zeros(max(n, 1) * nc, np.int64)
    qhead, qlen = np.zeros(nc, np.int64), np.zeros(nc, np.int64)
    item, given, run_from = np.full(g, -1, np.int64), np.zeros(g, np.int64), np.zeros(g, np.int64)
    run_cls = np.full(g, -1, np.int64)
    cdef Counters c
    c.work_in_ns = c.work_done_ns = c.preemptions = c.pause_overhead_ns = 0
    c.resume_overhead_ns = c.visited = c.decisions = c.events = c.audited = c.violations = 0
    c.admitted = c.end_ns = 0
    cdef time_ns p_ns = pause_ns, r_ns = resume_ns
    cdef bint pre = preempt, aud = audit
    cdef int64_t[::1] rem_v = remaining, start_v = start, fin_v = finish, pa_v = pauses
    cdef int64_t[::1] busy_v = busy, qb_v = qbuf, qh_v = qhead, ql_v = qlen
    cdef int64_t[::1] it_v = item, rc_v = run_cls, gv_v = given, rf_v = run_from
    with nogil:
        dispatch_loop(arrival, work, prio, g, q, p_ns, r_ns, pre, nc, last_tick, aud,
                      rem_v, start_v, fin_v, pa_v, busy_v, qb_v, qh_v, ql_v, it_v, rc_v, gv_v, rf_v, &c)
    out = dict(c)  # the struct's fields, by name
    out.update(start_ns=start, finish_ns=finish, remaining_ns=remaining, pauses=pauses, busy_ns=busy)
    return out


def serve_class(qlen) -> int:
    """Compiled :func:`magnum_lib.node.dispatcher_ref.serve_class`: the ``.pxd`` rule ``most_urgent``."""
    (q,) = _rule_args(qlen=qlen)
    cdef const int64_t[::1] qv = q
    return most_urgent(&qv[0], qv.shape[0])


def pause_choice(rank, waiting) -> int:
    """Compiled :func:`magnum_lib.node.dispatcher_ref.pause_choice`: the ``.pxd`` rule ``pause_victim``."""
    rk, w = _rule_args(rank=rank, waiting=waiting)
    if rk.shape[0] == 0:
        return -1
    cdef const int64_t[::1] rv = rk
    return pause_victim(&rv[0], rv.shape[0], w)
