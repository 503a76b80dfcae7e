"""Compiled form of :class:`~magnum_lib.replay.gavel_rounds.GavelRounds` under the replay loop.

One nogil loop runs both halves of what the Python form splits in two: the replay loop of
:func:`magnum_lib.replay.event_loop.run` (pooled GPUs counted per type, event instants,
progress at ``speed`` truncated to whole ns at each instant as the engine does) and the
policy's ``schedule`` (Gavel's round clock in float seconds, allocation resets, priorities,
deficits, whole steps, pauses). Every arithmetic step is the Python form's, in the same
order and in IEEE doubles, so the numbers are the same to the ns; tests/test_replay_gavel_fast.py
checks it. The allocation at resets (``allocate``: the max-min LP, or Gavel's FIFO on
several GPU types, which draws from its own ``random.Random``) and the blind policy's
``random.Random(5)`` type orders on several types (``permute``, in batches) are Python
callables reached with the GIL; FIFO and the max-min allocation by progressive filling
(``waterfill_thr``: ``fairness.maxmin_waterfill``, same float steps) on one GPU type are
computed here. Each round ranks every type's list by merging the last ranking (kept while
still in order, checked; an entry with the inputs of the kept one before it copies its
priority unchecked, see :func:`rank_list`) with the jobs that ran or arrived since (sorted by
a natural merge sort, as they come nearly in order): the ranking is a strict total order, so
this is the sort's result at a fraction of its cost.

Entry point: :func:`run_gavel_rounds` (validated here; :func:`magnum_lib.replay.replay`
calls it through ``gavel_rounds.run_compiled``).
"""
from cpython.ref cimport PyObject
from libc.math cimport ceil, rint, isfinite
from libc.stdint cimport int64_t, int8_t, uint8_t
from libc.stdlib cimport free, malloc

from magnum_lib.base._growth cimport grow_array, no_memory

import numpy as np

# The codes, constants and RoundsState (every field with its C type) with the functions that
# fill it by name: generated from replay/contract.py by scripts/gen_replay_contract.py.
include "_gavel_rounds_contract.pxi"


def _true_div(int64_t now):
    return now / 1000000000


cdef double to_s(RoundsState* s, int64_t now) noexcept nogil:
    """Python's ``now / NS`` (correctly rounded; exact in doubles below 2^53)."""
    if now < EXACT:
        return <double>now / 1e9
    with gil:
        return _true_div(now)


cdef int call_allocate(RoundsState* s) noexcept with gil:
    """Gavel's max-min allocation of the active jobs: ``allocate(ids) -> X`` (active x T)."""
    cdef Py_ssize_t r, t, j
    cdef const double[:, ::1] X
    try:
        ids = np.array(<int64_t[:s.na]> s.active, dtype=np.int64) if s.na else np.zeros(0, np.int64)
        out = (<object>s.allocate)(ids)
        arr = np.ascontiguousarray(out, dtype=np.float64)
        if arr.shape != (s.na, s.T) or not np.all(np.isfinite(arr)):
            raise ValueError(f"the allocation must be finite numbers of shape {(s.na, s.T)}, "
                             f"got shape {arr.shape}")
        X = arr
        for r in range(s.na):
            j = s.active[r]
            for t in range(s.T):
                s.alloc[j * s.T + t] = X[r, t]
            s.in_alloc[j] = 1
        return 0
    except BaseException as e:
        (<object>s.errbox).append(e)
        return -1


cdef int call_permute(RoundsState* s) noexcept with gil:
    """The next batch of the blind policy's type orders (``permute(k) -> k x T``)."""
    cdef const int64_t[:, ::1] P
    cdef Py_ssize_t m = 256
    try:
        arr = np.ascontiguousarray((<object>s.permute)(m), dtype=np.int64)
        if arr.shape != (m, s.T) or np.any(np.sort(arr, axis=1) != np.arange(s.T)):
            raise ValueError(f"permute(k) must return k orders of the {s.T} GPU types")
        P = arr
        (<object>s.holder)[0] = arr
        s.perms = <int64_t*> &P[0, 0]
        s.nperm = m
        s.perm_at = 0
        return 0
    except BaseException as e:
        (<object>s.errbox).append(e)
        return -1


# ------------------------------------------------------------------ engine helpers
cdef inline void run_add(RoundsState* s, int64_t j) noexcept nogil:
    s.run_pos[j] = s.nrun
    s.running[s.nrun] = j
    s.nrun += 1


cdef inline void run_remove(RoundsState* s, int64_t j) noexcept nogil:
    cdef Py_ssize_t p = s.run_pos[j]
    cdef int64_t last = s.running[s.nrun - 1]
    s.running[p] = last
    s.run_pos[last] = p
    s.nrun -= 1
    s.run_pos[j] = -1


cdef inline int64_t finish_time(RoundsState* s, int64_t j) noexcept nogil:
    cdef int64_t r = s.rem[j] if s.rem[j] > 0 else 0
    cdef int64_t run = r if s.erate[j] == 1.0 else <int64_t> ceil(<double>r / s.erate[j])
    if run < 0:
        run = 0
    return s.now + s.overhead[j] + run


cdef void advance(RoundsState* s, int64_t t) noexcept nogil:
    cdef int64_t dt = t - s.now, o, prog, j
    cdef Py_ssize_t k
    if dt > 0:
        for k in range(s.nrun):
            j = s.running[k]
            o = s.overhead[j] if s.overhead[j] < dt else dt
            s.overhead[j] -= o
            s.held[j] += dt
            prog = dt - o
            if s.erate[j] == 1.0:
                s.rem[j] -= prog
            else:
                s.rem[j] -= <int64_t> (<double>prog * s.erate[j])
    s.now = t


# ------------------------------------------------------------------ the policy
cdef void fifo_allocation(RoundsState* s) noexcept nogil:
    """``FIFOPolicy.get_allocation`` (base mode, one type) on the active jobs."""
    cdef Py_ssize_t k, q = 0, nq = 0, nf = s.nfifo, a, b
    cdef int64_t n_free = s.N[0], x, h, j
    for k in range(s.na):                          # the queue: active, not in the allocation
        if not s.fifo_in[s.active[k]]:
            s.queue_tmp[nq] = s.active[k]
            nq += 1
    for k in range(nf):                            # sorted snapshot of the allocation
        s.fifo_tmp[k] = s.fifo_ids[k]
    for a in range(1, nf):
        x = s.fifo_tmp[a]
        b = a - 1
        while b >= 0 and s.fifo_tmp[b] > x:
            s.fifo_tmp[b + 1] = s.fifo_tmp[b]
            b -= 1
        s.fifo_tmp[b + 1] = x
    for k in range(nf):
        j = s.fifo_tmp[k]
        if not s.act_flag[j]:                      # finished: its slot goes to the head
            if q < nq and s.gpus[s.queue_tmp[q]] <= n_free and s.thr[s.queue_tmp[q]] > 0.0:
                h = s.queue_tmp[q]
                q += 1
                s.fifo_in[h] = 1
                n_free -= s.gpus[h]
            s.fifo_in[j] = 0
        else:
            n_free -= s.gpus[j]
    while q < nq and n_free > 0:
        h = s.queue_tmp[q]
        if s.gpus[h] > n_free:
            break
        q += 1
        if s.thr[h] > 0.0:                         # (Gavel allocates only a job that runs there)
            s.fifo_in[h] = 1
            n_free -= s.gpus[h]
    s.nfifo = 0                                    # members, rebuilt from the flags
    for k in range(nf):
        if s.fifo_in[s.fifo_tmp[k]]:
            s.fifo_ids[s.nfifo] = s.fifo_tmp[k]
            s.nfifo += 1
    for k in range(q):
        if s.fifo_in[s.queue_tmp[k]]:
            s.fifo_ids[s.nfifo] = s.queue_tmp[k]
            s.nfifo += 1
    for k in range(s.na):
        j = s.active[k]
        s.alloc[j] = 1.0 if s.fifo_in[j] else 0.0
        s.in_alloc[j] = 1


cdef void waterfill(RoundsState* s) noexcept nogil:
    """``fairness.maxmin_waterfill`` on the active jobs (one type), the same float steps in
    the same order (so the same bits): progressive filling of the levels a_j x_j."""
    cdef Py_ssize_t k, na = s.na
    cdef int64_t j
    cdef double N = <double> s.N[0], level = 0.0, left, per_level, v
    cdef bint grew
    for k in range(na):
        s.wf_frozen[k] = 0
    while N > 0.0:
        left = N
        per_level = 0.0
        for k in range(na):
            j = s.active[k]
            if s.wf_frozen[k]:
                left -= <double> s.gpus[j]
            elif s.wf_thr[j] > 0.0:
                per_level += <double> s.gpus[j] / s.wf_a[j]
        if per_level == 0.0:
            break
        level = left / per_level
        grew = False
        for k in range(na):
            j = s.active[k]
            if not s.wf_frozen[k] and s.wf_thr[j] > 0.0 and s.wf_a[j] <= level:
                s.wf_frozen[k] = 1
                grew = True
        if not grew:
            break
    for k in range(na):
        j = s.active[k]
        v = 0.0
        if N > 0.0 and s.wf_thr[j] > 0.0:
            v = level / s.wf_a[j]
            v = 1.0 if s.wf_frozen[k] else (v if v > 0.0 else 0.0)
        s.alloc[j] = v
        s.in_alloc[j] = 1


cdef inline bint before(RoundsState* s, int64_t x, int64_t y) noexcept nogil:
    """Entry x ranks before entry y: (priority, deficit, allocation) larger; ties: earlier."""
    if s.ent_p[x] != s.ent_p[y]:
        return s.ent_p[x] > s.ent_p[y]
    if s.ent_d[x] != s.ent_d[y]:
        return s.ent_d[x] > s.ent_d[y]
    if s.ent_a[x] != s.ent_a[y]:
        return s.ent_a[x] > s.ent_a[y]
    return s.ent_j[x] < s.ent_j[y]


cdef void sort_entries(RoundsState* s, Py_ssize_t base, Py_ssize_t m) noexcept nogil:
    """Sort entry positions base..base+m-1 into s.idx[base..] by :func:`before` (a strict
    total order: Python's stable sort, reverse=True, of entries in arrival order).

    A natural merge sort: the runs already in order are found, then merged pairwise. The
    entries come mostly in order (the jobs that ran, in their last ranking's order, then
    the arrivals, in arrival order), so this is nearly one pass."""
    cdef Py_ssize_t k, r, nr, out, lo, mid, hi, a, b, o
    cdef int64_t* src = s.idx + base
    cdef int64_t* dst = s.idx2 + base
    cdef int64_t* tmp
    cdef Py_ssize_t* run = s.runs
    for k in range(m):
        src[k] = base + k
    if m < 2:
        return
    run[0] = 0
    nr = 1
    for k in range(1, m):                          # run starts: entries out of order
        if before(s, base + k, base + k - 1):
            run[nr] = k
            nr += 1
    run[nr] = m
    while nr > 1:
        r = 0
        out = 0
        while r < nr:
            lo = run[r]
            mid = run[r + 1]
            hi = run[r + 2] if r + 1 < nr else mid
            a, b, o = lo, mid, lo
            while a < mid and b < hi:
                if before(s, src[b], src[a]):
                    dst[o] = src[b]
                    b += 1
                else:
                    dst[o] = src[a]
                    a += 1
                o += 1
            while a < mid:
                dst[o] = src[a]
                a += 1
                o += 1
            while b < hi:
                dst[o] = src[b]
                b += 1
                o += 1
            run[out] = lo
            out += 1
            r += 2
        run[out] = m
        nr = out
        tmp = src
        src = dst
        dst = tmp
    if src != s.idx + base:
        for k in range(m):
            s.idx[base + k] = src[k]


cdef inline void put_entry(RoundsState* s, Py_ssize_t pos, int64_t j, Py_ssize_t t) noexcept nogil:
    """Entry ``pos``: job j on type t with Gavel's priority, deficit and allocation."""
    cdef int64_t TT = s.T
    cdef bint has = s.in_alloc[j]
    cdef double a = s.alloc[j * TT + t] if has else 0.0, frac, p
    if not has or a == 0.0:
        p = 0.0
    else:
        frac = 0.0 if s.ran_all[t] == 0.0 else s.ran[j * TT + t] / s.ran_all[t]
        p = a / frac if frac > 0.0 else a * 1e9
    s.ent_j[pos] = j
    s.ent_p[pos] = p
    s.ent_d[pos] = s.deficit[j * TT + t]
    s.ent_a[pos] = a


cdef inline void _rank_kept(RoundsState* s, Py_ssize_t t, Py_ssize_t base, Py_ssize_t* nk_out,
                            Py_ssize_t* no_out) noexcept nogil:
    """Rank step 1: the last ranking's entries kept in order (``nk``), the rest from ``base`` on (``no``)."""
    cdef Py_ssize_t i, nk = 0, no = 0
    cdef int64_t j, TT = s.T
    cdef int64_t* last = s.ord + t * s.n
    cdef double aj, rj, pa = -1.0, pr = -1.0
    for i in range(s.nord[t]):                     # the last ranking, in order while it stays so
        j = last[i]
        if not s.act_flag[j]:
            continue
        if s.moved[j]:
            put_entry(s, base + no, j, t)
            no += 1
            continue
        aj = s.alloc[j * TT + t] if s.in_alloc[j] else 0.0
        rj = s.ran[j * TT + t]
        if nk and aj == pa and rj == pr:           # the kept entry before's priority, in order
            s.ent_j[nk] = j
            s.ent_p[nk] = s.ent_p[nk - 1]
            s.ent_d[nk] = s.deficit[j * TT + t]
            s.ent_a[nk] = aj
            nk += 1
            continue
        put_entry(s, nk, j, t)
        if nk and before(s, nk, nk - 1):           # out of order: with the rest
            s.ent_j[base + no] = s.ent_j[nk]
            s.ent_p[base + no] = s.ent_p[nk]
            s.ent_d[base + no] = s.ent_d[nk]
            s.ent_a[base + no] = s.ent_a[nk]
            no += 1
        else:
            nk += 1
            pa = aj
            pr = rj
    nk_out[0] = nk
    no_out[0] = no


cdef inline Py_ssize_t _rank_arrivals(RoundsState* s, Py_ssize_t t, Py_ssize_t base, Py_ssize_t no) noexcept nogil:
    """Rank step 2: the jobs that arrived since the last ranking join the rest; its new length."""
    cdef Py_ssize_t i, k = s.na
    cdef int64_t j
    while k > 0 and s.active[k - 1] >= s.ord_upto[t]:
        k -= 1
    for i in range(k, s.na):                       # arrivals since: with the rest
        j = s.active[i]
        if s.thr[j * s.T + t] <= 0 or s.gpus[j] > s.N[t]:
            continue                               # never taken on this type
        put_entry(s, base + no, j, t)
        if s.fifo and s.ent_p[base + no] <= 0.0:
            continue                               # FIFO takes only jobs with priority > 0
        no += 1                                    # (both fixed from one reset to the next)
    return no


cdef inline Py_ssize_t _rank_merge(RoundsState* s, Py_ssize_t t, Py_ssize_t base, Py_ssize_t nk,
                                   Py_ssize_t no) noexcept nogil:
    """Rank step 3: sort the rest, merge it with the kept entries into s.idx2, store the ranking."""
    cdef Py_ssize_t a = 0, b = base, o = 0, k     # merge: positions into s.idx2
    cdef int64_t* last = s.ord + t * s.n
    sort_entries(s, base, no)
    while a < nk and b < base + no:
        if before(s, s.idx[b], a):
            s.idx2[o] = s.idx[b]
            b += 1
        else:
            s.idx2[o] = a
            a += 1
        o += 1
    while a < nk:
        s.idx2[o] = a
        a += 1
        o += 1
    while b < base + no:
        s.idx2[o] = s.idx[b]
        b += 1
        o += 1
    for k in range(o):
        last[k] = s.ent_j[s.idx2[k]]
    s.nord[t] = o
    s.ord_upto[t] = s.known_upto
    return o


cdef Py_ssize_t rank_list(RoundsState* s, Py_ssize_t t) noexcept nogil:
    """Type t's list of (job, t) entries ranked (Gavel's sort), as positions in s.idx2[0..].

    Ranks by a merge: between resets a job's priority changes relative to the others only
    when it ran (all share the factor ``ran_all``), so the last ranking, minus the jobs that
    ran or arrived since, is nearly in order. Entries are taken in that order while they
    stay in order (checked with :func:`before`: whatever rounding does, an entry out of
    order goes with the rest), the rest are sorted, and the two are merged. ``before`` is
    a strict total order, so the result is the sort's whatever the start. Returns its length.

    Most kept entries (97% on Philly under max-min) have the allocation and time run of the
    kept entry before them: the same inputs give the same priority, and the other keys
    (deficit, allocation, job) have not changed since the last ranking put the two in
    order, so such an entry copies the priority and needs no check."""
    cdef Py_ssize_t nk, no
    if s.rerank:                                   # after a reset: every job anew
        s.nord[t] = 0
        s.ord_upto[t] = 0
    _rank_kept(s, t, s.n, &nk, &no)
    no = _rank_arrivals(s, t, s.n, no)
    return _rank_merge(s, t, s.n, nk, no)


cdef int choose(RoundsState* s, double T) noexcept nogil:
    """One call of Gavel's ``_schedule_jobs_on_workers``: fills s.cj/ct/cr (s.nchosen)."""
    cdef double elapsed = T - s.last_reset, a
    cdef Py_ssize_t t, k, m, o
    cdef int64_t j, TT = s.T
    if s.need_update and (elapsed >= s.reset_s or s.last_reset == 0):
        for t in range(TT):                        # _reset_time_run_so_far
            s.ran_all[t] = 0.0
            for k in range(s.na):
                j = s.active[k]
                a = s.alloc[j * TT + t] if s.in_alloc[j] else 0.0
                s.deficit[j * TT + t] += a * elapsed - (s.ran[j * TT + t] - s.half)
                s.ran[j * TT + t] = s.half
                s.ran_all[t] += s.half
        s.last_reset = T
        if s.fifo and s.allocate == NULL:
            fifo_allocation(s)
        elif s.wf_thr != NULL:
            waterfill(s)
        elif s.na:
            if call_allocate(s) < 0:
                s.err = E_PY
                return -1
        s.need_update = False
        s.rerank = True                            # deficits and allocations changed
    if s.permute != NULL:
        if s.perm_at == s.nperm and call_permute(s) < 0:
            s.err = E_PY
            return -1
        for t in range(TT):
            s.order[t] = s.perms[s.perm_at * TT + t]
        s.perm_at += 1
    else:
        for t in range(TT):
            s.order[t] = s.type_order[t]
    for t in range(TT):
        s.left[t] = s.N[t]
    s.nchosen = 0
    for o in range(TT):                            # _update_priorities, one ranked list per type
        t = s.order[o]
        m = rank_list(s, t)
        for k in range(m):                         # its scan (types one after the other)
            if s.left[t] == 0:
                break                              # (the rest of this list is skipped)
            j = s.ent_j[s.idx2[k]]
            if s.taken[j] or s.gpus[j] > s.left[t]:
                continue
            s.left[t] -= s.gpus[j]
            s.taken[j] = 1
            s.cj[s.nchosen] = j
            s.ct[s.nchosen] = t
            s.cr[s.nchosen] = s.in_alloc[j]
            s.nchosen += 1
    for k in range(s.nmv):
        s.moved[s.mv[k]] = 0
    s.nmv = 0
    s.rerank = False
    for k in range(s.nchosen):
        s.taken[s.cj[k]] = 0
    return 0


cdef inline void _pause_done_tasks(RoundsState* s) noexcept nogil:
    """Mid-round: a job whose micro-task is over (not its work) pauses until the round ends."""
    cdef Py_ssize_t k
    cdef int64_t j
    for k in range(s.nrun):
        j = s.running[k]
        if s.in_round[j] and s.rj_end[j] <= s.now and not s.is_last[j]:
            s.dpre[s.ndpre] = j
            s.ndpre += 1


cdef inline int64_t _lag_left(RoundsState* s) noexcept nogil:
    """The most work left (ns) on a job done in Gavel's steps but still running; -1 if none."""
    cdef Py_ssize_t k
    cdef int64_t j, rem, worst = -1
    for k in range(s.nround):
        j = s.rlist[k]
        if s.is_last[j] and s.status[j] == JOB_RUN:
            rem = s.rem[j] if s.rem[j] > 0 else 0
            if rem > worst:
                worst = rem
    return worst


cdef inline double _close_round(RoundsState* s, double T) noexcept nogil:
    """Schedule step 1: Gavel's accounting of the round that ends now; the scheduling time (s)."""
    cdef Py_ssize_t k, nr
    cdef int64_t j, t, TT = s.T
    cdef double run
    if s.nround:
        T = s.rs_end[s.rlist[0]]
        for k in range(1, s.nround):
            if s.rs_end[s.rlist[k]] > T:
                T = s.rs_end[s.rlist[k]]
        if s.stop_set:
            s.round_start = s.round_stop
        s.round_stop = T
        s.stop_set = True
        for k in range(s.nround):
            j = s.rlist[k]
            t = s.rs_type[j]
            run = s.rs_end[j] - s.round_start
            s.ran[j * TT + t] += run
            s.ran_all[t] += run
            if not s.moved[j]:
                s.moved[j] = 1
                s.mv[s.nmv] = j
                s.nmv += 1
            s.steps_left[j] -= s.rs_steps[j]
        nr = 0
        for k in range(s.nround):
            if s.status[s.rlist[k]] == JOB_DONE:          # finished in this round
                s.act_flag[s.rlist[k]] = 0
                nr += 1
        if nr:
            nr = 0
            for k in range(s.na):
                if s.act_flag[s.active[k]]:
                    s.active[nr] = s.active[k]
                    nr += 1
            s.na = nr
            s.need_update = True
    for k in range(s.nround):
        j = s.rlist[k]
        s.in_round[j] = 0
        s.is_last[j] = 0
    s.nround = 0
    s.round_set = False
    return T


cdef inline void _admit_known(RoundsState* s) noexcept nogil:
    """Schedule step 2: the jobs submitted up to now become active, with fresh accounting."""
    cdef int64_t j, t, TT = s.T
    while s.known_upto < s.n and s.status[s.known_upto] != JOB_NEW:   # arrivals up to now
        j = s.known_upto
        s.active[s.na] = j
        s.na += 1
        s.act_flag[j] = 1
        for t in range(TT):
            s.ran[j * TT + t] = s.half
            s.deficit[j * TT + t] = 0.0
        s.need_update = True
        s.known_upto += 1


cdef inline int _choose_round(RoundsState* s, double T) noexcept nogil:
    """Schedule step 3: Gavel's choice of jobs, again after a forced reset if nothing runs."""
    cdef Py_ssize_t k
    cdef bint any_runs = False
    if choose(s, T) < 0:
        return -1
    for k in range(s.nchosen):
        if s.cr[k]:
            any_runs = True
    if not any_runs and s.na and s.now >= s.last_submit:
        s.last_reset = 0.0                         # Gavel forces a reset on an idle, drained queue
        if choose(s, T) < 0:
            return -1
    return 0


cdef inline void _plan_preempts(RoundsState* s) noexcept nogil:
    """Schedule step 4: preempt every running job not chosen on its current type."""
    cdef Py_ssize_t k
    cdef int64_t j
    for k in range(s.nchosen):
        if s.cr[k]:
            s.run_type[s.cj[k]] = s.ct[k]
    for k in range(s.nrun):
        j = s.running[k]
        if s.run_type[j] < 0 or s.run_type[j] != s.jtype[j]:
            s.dpre[s.ndpre] = j
            s.ndpre += 1
            s.free_t[s.jtype[j]] += s.gpus[j]      # (the plan's free GPUs; apply redoes it)


cdef inline int _plan_starts(RoundsState* s, double T) noexcept nogil:
    """Schedule step 5: start the chosen jobs not running there; each one's steps and end this round."""
    cdef Py_ssize_t k
    cdef int64_t j, t, length, rem, restore, now = s.now, TT = s.T
    cdef double r, full, steps, sp
    for k in range(s.nchosen):
        if not s.cr[k]:
            continue
        j = s.cj[k]
        t = s.ct[k]
        # The restore time ahead of its work (as gavel_rounds.py): a start pays it when the
        # job ran before; a running job what is left of it.
        restore = s.overhead[j]
        if s.status[j] != JOB_RUN or s.jtype[j] != t:
            restore = s.restore_ns if s.first[j] >= 0 else 0
            if s.free_t[t] < s.gpus[j] or not s.speed[j * TT + t] > 0:
                s.err = E_NOFIT
                s.err_job = j
                return -1
            s.free_t[t] -= s.gpus[j]
            s.dstart[s.ndstart] = j
            s.dstype[s.ndstart] = t
            s.ndstart += 1
        sp = s.speed[j * TT + t]
        r = s.thr[j * TT + t]
        full = <double> (<int64_t> (r * s.iteration_s))
        steps = full if full <= s.steps_left[j] else s.steps_left[j]
        if steps == s.steps_left[j]:               # its last: ends with its work on our clock
            rem = s.rem[j] if s.rem[j] > 0 else 0
            length = restore + (rem if sp == 1.0 else <int64_t> ceil(<double>rem / sp))
            s.is_last[j] = 1
        else:
            length = <int64_t> rint(full / r * 1e9)
        s.rs_type[j] = t
        s.rs_steps[j] = steps
        s.rs_end[j] = T + steps / r
        s.rj_end[j] = now + length
        s.in_round[j] = 1
        s.rlist[s.nround] = j
        s.nround += 1
    return 0


cdef inline void _plan_end(RoundsState* s) noexcept nogil:
    """Schedule step 6: undo the plan's GPU bookkeeping (apply redoes it); set the round's end."""
    cdef Py_ssize_t k
    cdef int64_t r_end
    for k in range(s.ndpre):
        s.free_t[s.jtype[s.dpre[k]]] -= s.gpus[s.dpre[k]]
    for k in range(s.ndstart):
        s.free_t[s.dstype[k]] += s.gpus[s.dstart[k]]
    for k in range(s.nchosen):
        s.run_type[s.cj[k]] = -1
    if s.nround:
        r_end = s.rj_end[s.rlist[0]]
        for k in range(1, s.nround):
            if s.rj_end[s.rlist[k]] > r_end:
                r_end = s.rj_end[s.rlist[k]]
        s.round_end = r_end
        s.round_set = True
        wake_round(s)


cdef int schedule(RoundsState* s) noexcept nogil:
    """The policy's ``schedule`` at ``s.now``: fills the decision (dpre, dstart, wake)."""
    cdef int64_t worst
    cdef double T
    s.ndpre = 0
    s.ndstart = 0
    s.wake = -1
    if s.round_set and s.now < s.round_end:
        _pause_done_tasks(s)
        wake_round(s)
        return 0
    worst = _lag_left(s)
    if worst >= 0:
        # Done in Gavel's steps with a few ns left on our clock: its finish ends the round.
        if worst > LAG_NS:
            s.err = E_LAG
            return -1
        s.round_end = s.now
        s.round_set = True
        return 0
    T = _close_round(s, to_s(s, s.now))
    _admit_known(s)
    if _choose_round(s, T) < 0:
        return -1
    _plan_preempts(s)
    if _plan_starts(s, T) < 0:
        return -1
    _plan_end(s)
    return 0


cdef inline void wake_round(RoundsState* s) noexcept nogil:
    """Wake at the round's end and at each micro-task end before it (the earliest ahead)."""
    cdef Py_ssize_t k
    cdef int64_t end
    for k in range(s.nround):
        end = s.rj_end[s.rlist[k]]
        if end > s.now and (s.wake < 0 or end < s.wake):
            s.wake = end


cdef void apply(RoundsState* s) noexcept nogil:
    cdef Py_ssize_t k
    cdef int64_t j, t
    for k in range(s.ndpre):
        j = s.dpre[k]
        s.free_t[s.jtype[j]] += s.gpus[j]
        s.status[j] = JOB_WAIT
        s.pre[j] += 1
        run_remove(s, j)
        s.jtype[j] = -1
    for k in range(s.ndstart):
        j = s.dstart[k]
        t = s.dstype[k]
        s.free_t[t] -= s.gpus[j]
        s.status[j] = JOB_RUN
        s.jtype[j] = t
        s.erate[j] = s.speed[j * s.T + t]
        if s.first[j] < 0:
            s.first[j] = s.now
        elif s.restore_ns:
            s.overhead[j] = s.restore_ns
        run_add(s, j)


cdef int core(RoundsState* s, int64_t** util_t, double** util_b, Py_ssize_t* cap, Py_ssize_t* nutil) noexcept nogil:
    """:func:`event_loop.run`'s loop with the policy inlined (see the module docstring)."""
    cdef Py_ssize_t i = 0, done = 0, k, nu = 0
    cdef int64_t t, ft, j, wake = -1, used
    cdef double busy
    while done < s.n:
        t = NEVER
        if i < s.n:
            t = s.submit[i]
        for k in range(s.nrun):
            ft = finish_time(s, s.running[k])
            if ft < t:
                t = ft
        if wake >= 0 and wake < t:
            t = wake
        if t == NEVER:
            s.err = E_STUCK
            return -1
        if wake >= 0 and wake <= t:
            wake = -1
        advance(s, t)
        k = 0
        while k < s.nrun:                          # finishes (order does not matter: counts)
            j = s.running[k]
            if s.rem[j] <= 0:
                s.free_t[s.jtype[j]] += s.gpus[j]
                s.status[j] = JOB_DONE
                s.fin[j] = t
                run_remove(s, j)
                done += 1
            else:
                k += 1
        while i < s.n and s.submit[i] == t:
            s.status[i] = JOB_WAIT
            i += 1
        if schedule(s) < 0:
            return -1
        apply(s)
        wake = s.wake if s.wake > t else -1
        used = 0
        for k in range(s.T):
            used += s.N[k] - s.free_t[k]
        busy = <double> used
        if nu == 0 or util_b[0][nu - 1] != busy:     # the step function's change points
            if nu == cap[0] and grow(util_t, util_b, cap) < 0:
                s.err = E_MEM
                return -1
            util_t[0][nu] = t
            util_b[0][nu] = busy
            nu += 1
            nutil[0] = nu
    return 0


cdef int grow(int64_t** a, double** b, Py_ssize_t* cap) noexcept nogil:
    cdef Py_ssize_t c = 2 * cap[0]
    if grow_array(<void**> a, c, sizeof(int64_t)) < 0 or grow_array(<void**> b, c, sizeof(double)) < 0:
        return -1
    cap[0] = c
    return 0


def _checked(submit_ns, work_ns, num_gpus, speed, thr, steps_left, type_gpus, type_order, bint fifo,
             double iteration_s, double reset_s, restore_ns, allocate, permute, waterfill_thr):
    """Setup step 1: refuse bad input (ValueError); the inputs as contiguous arrays (a dict)."""
    sub = np.ascontiguousarray(submit_ns, dtype=np.int64)
    wrk = np.ascontiguousarray(work_ns, dtype=np.int64)
    gp = np.ascontiguousarray(num_gpus, dtype=np.int64)
    ng = np.ascontiguousarray(type_gpus, dtype=np.int64)
    if any(a.ndim != 1 for a in (sub, wrk, gp, ng)):
        raise ValueError("submit_ns, work_ns, num_gpus and type_gpus must be 1-d arrays")
    n, T = sub.shape[0], ng.shape[0]
    if T < 1 or T > 64:
        raise ValueError("type_gpus: 1 to 64 GPU types")
    if np.any(np.asarray(ng) < 0) or int(np.sum(np.asarray(ng))) > (1 << 40):
        raise ValueError("type_gpus must be counts >= 0")
    if wrk.shape[0] != n or gp.shape[0] != n:
        raise ValueError("submit_ns, work_ns and num_gpus must have the same length")
    if n and (np.min(gp) < 1 or np.max(gp) > np.max(ng)):
        raise ValueError("every job needs 1 .. (largest type's GPUs) GPUs")
    if n and (np.min(sub) < 0 or (n > 1 and np.any(np.diff(np.asarray(sub)) < 0))):
        raise ValueError("submit_ns must be sorted times >= 0")
    if n and (np.min(wrk) < 1 or np.max(wrk) > (1 << 60) or np.max(sub) > (1 << 60)):
        raise ValueError("work_ns must be >= 1 and times < 2^60 ns")
    sp_np = np.ascontiguousarray(speed, dtype=np.float64)
    thr_np = np.ascontiguousarray(thr, dtype=np.float64)
    if sp_np.shape != (n, T) or thr_np.shape != (n, T):
        raise ValueError(f"speed and thr must be jobs x types {(n, T)}")
    if not (np.all(np.isfinite(sp_np)) and np.all(sp_np >= 0) and np.all(sp_np <= 1e6)):
        raise ValueError("speed must be finite numbers in [0, 1e6]")
    if not (np.all(np.isfinite(thr_np)) and np.all(thr_np >= 0) and np.all(thr_np * iteration_s < 2.0 ** 62)):
        raise ValueError("thr must be finite steps/s >= 0 (x iteration_s < 2^62)")
    sl_np = np.array(steps_left, dtype=np.float64)
    if sl_np.shape != (n,) or not np.all(np.isfinite(sl_np)):
        raise ValueError("steps_left must be finite numbers, one per job")
    tord = np.ascontiguousarray(type_order, dtype=np.int64)
    if tord.shape != (T,) or np.any(np.sort(tord) != np.arange(T)):
        raise ValueError("type_order must be a permutation of the GPU types")
    if not (isfinite(iteration_s) and iteration_s > 0 and isfinite(reset_s) and reset_s > 0):
        raise ValueError("iteration_s and reset_s must be seconds > 0")
    rns = int(restore_ns)
    if rns < 0 or rns > (1 << 50):
        raise ValueError("restore_ns must be >= 0")
    if fifo and T != 1 and not callable(allocate):
        raise ValueError("the kernel's own FIFO allocation is for one GPU type (give allocate)")
    wf_np = None
    if waterfill_thr is not None:
        wf_np = np.ascontiguousarray(waterfill_thr, dtype=np.float64)
        if fifo or T != 1 or allocate is not None:
            raise ValueError("waterfill_thr is the max-min allocation on one GPU type (no allocate)")
        if wf_np.shape != (n,) or not (np.all(np.isfinite(wf_np)) and np.all(wf_np >= 0) and np.all(wf_np <= 1e12)):
            raise ValueError("waterfill_thr must be finite throughputs in [0, 1e12], one per job")
    elif not fifo and not callable(allocate):
        raise ValueError("the max-min allocation needs allocate(ids) -> X (or waterfill_thr)")
    if allocate is not None and not callable(allocate):
        raise ValueError("allocate must be a function allocate(ids) -> X, or None")
    if permute is not None and not callable(permute):
        raise ValueError("permute must be a function permute(k) -> k orders, or None")
    return dict(sub=sub, wrk=wrk, gp=gp, ng=ng, sp=sp_np, thr=thr_np, sl=sl_np, tord=tord, wf=wf_np, rns=rns)


def _given(dict x, dict out, Py_ssize_t n, Py_ssize_t T):
    """Setup step 2: the arrays the state is given, by name: the inputs and ``out``'s
    (placeholders of one item when there are no jobs); the contract makes the others."""
    return dict(
        submit=x["sub"] if n else np.zeros(1, np.int64), gpus=x["gp"] if n else np.ones(1, np.int64),
        speed=x["sp"] if n else np.ones((1, T)), thr=x["thr"] if n else np.ones((1, T)),
        N=x["ng"], type_order=x["tord"],
        wf_thr=None if x["wf"] is None else (x["wf"] if n else np.zeros(1)),
        rem=np.array(x["wrk"], dtype=np.int64) if n else np.zeros(1, np.int64),
        free_t=np.array(x["ng"], dtype=np.int64), steps_left=x["sl"] if n else np.zeros(1),
        status=out["status"], first=out["first_start"], fin=out["finish"], pre=out["preemptions"],
        held=out["held"])


cdef void _waterfill_coefficients(RoundsState* s) noexcept nogil:
    """Setup step 4: the LP's coefficient of each job, as ``maxmin_waterfill``'s (with ``wf_thr``)."""
    cdef Py_ssize_t q
    cdef double tq
    if s.wf_thr == NULL:
        return
    for q in range(s.n):
        tq = s.wf_thr[q]
        s.wf_a[q] = ((1.0 / tq) * <double> s.gpus[q]) * tq if tq > 0.0 else 0.0


def _raise_for(int err, int64_t err_job, errbox, status, Py_ssize_t n):
    """Teardown: the exception the kernel's error code ``err`` stands for."""
    if err == E_PY:
        raise errbox[0]
    if err == E_STUCK:
        waiting = np.flatnonzero(np.asarray(status)[:n] == JOB_WAIT)
        raise Stuck(int(waiting.size), int(waiting[0]) if waiting.size else -1)
    if err == E_NOFIT:
        raise RuntimeError(f"GavelRounds: job {err_job} does not fit (internal error)")
    if err == E_LAG:
        raise RuntimeError("GavelRounds: a job outlived its last micro-task (internal error)")
    no_memory("run_gavel_rounds")


def run_gavel_rounds(submit_ns, work_ns, num_gpus, speed, thr, steps_left, type_gpus, type_order,
                     bint fifo, double iteration_s, double reset_s, restore_ns, allocate=None,
                     permute=None, waterfill_thr=None):
    """Replay under Gavel's round mechanism on GPUs pooled per type (see the module docstring).

    ``speed``, ``thr``: jobs x types (engine speed, Gavel's steps/s); ``steps_left``: each
    job's steps; ``type_gpus``: GPUs per type; ``type_order``: Gavel's type order (a
    permutation); ``fifo``: FIFO (only jobs with priority > 0 run; allocated here on one
    type when ``allocate`` is None) or max-min; ``allocate(ids) -> X`` (active x types) at
    allocation resets; ``permute(k)``: k type orders (the blind policy) or None;
    ``waterfill_thr`` (one type, max-min): the LP's thr per job, allocated here by progressive
    filling (``fairness.maxmin_waterfill``) instead of calling ``allocate``.
    Returns the dict of :func:`magnum_lib.replay.event_loop.run`. Raises ValueError on bad
    input, PolicyStuck / RuntimeError as the Python form does.
    """
    x = _checked(submit_ns, work_ns, num_gpus, speed, thr, steps_left, type_gpus, type_order, fifo,
                 iteration_s, reset_s, restore_ns, allocate, permute, waterfill_thr)
    cdef Py_ssize_t n = x["sub"].shape[0], T = x["ng"].shape[0], m = n if n > 0 else 1
    out = dict(first_start=np.full(m, -1, np.int64), finish=np.full(m, -1, np.int64),
               preemptions=np.zeros(m, np.int64), held=np.zeros(m, np.int64), status=np.zeros(m, np.int8))
    errbox, holder = [], [None]
    cdef RoundsState s
    keep = _bind_arrays(&s, _given(x, out, n, T), dict(n=n, m=m, T=T))
    _set_options(&s, dict(n=n, T=T, fifo=fifo, iteration_s=iteration_s, reset_s=reset_s, half=iteration_s / 2.0,
                          restore_ns=x["rns"], last_submit=x["sub"][n - 1] if n else 0,   # (step 3)
                          allocate=allocate, permute=permute, errbox=errbox, holder=holder))
    _init_state(&s)
    _waterfill_coefficients(&s)
    cdef Py_ssize_t cap = 1024, nutil = 0
    cdef int64_t* ut = <int64_t*> malloc(cap * sizeof(int64_t))
    cdef double* ub = <double*> malloc(cap * sizeof(double))
    cdef int rc = -1
    try:
        if ut != NULL and ub != NULL:
            with nogil:
                rc = core(&s, &ut, &ub, &cap, &nutil)
        else:
            s.err = E_MEM
        util_t = np.array(<int64_t[:nutil]> ut, dtype=np.int64) if nutil else np.zeros(0, np.int64)
        util_b = np.array(<double[:nutil]> ub, dtype=np.float64) if nutil else np.zeros(0)
    finally:
        free(ut)
        free(ub)
    del keep
    if rc < 0:
        _raise_for(s.err, s.err_job, errbox, out["status"], n)
    return dict(first_start=out["first_start"][:n].copy(), finish=out["finish"][:n].copy(),
                preemptions=out["preemptions"][:n].copy(), held=out["held"][:n].copy(),
                util_t=util_t, util_busy=util_b)


class Stuck(Exception):
    """Waiting jobs on an idle cluster with nothing to come (the wrapper names the policy)."""

    def __init__(self, waiting, first):
        super().__init__(waiting, first)
        self.waiting, self.first = waiting, first
