"""Compiled replay loop for the built-in event-driven policies on a pooled cluster.

Same signature and numbers as :mod:`magnum_lib.replay.fastloop_adapter` (the policy
classes run by the readable loop). Policies: ``fifo-strict``, ``fifo-skip``,
``sjf``, ``srtf``, ``las``. Semantics: see :mod:`magnum_lib.replay`.

Data structures (why it is fast): waiting jobs sit in one binary heap per distinct
GPU count, keyed by the policy's rank (id for FIFO, work, GPUs or work x GPUs for SJF, remaining work for
SRTF, (queue, order) for LAS), ties by id. A pass then starts "the best-ranked
waiting job that fits" by looking only at the heads of the buckets small enough, which
is exactly a skip-ahead scan of the ranked list (GPUs only decrease during a pass, so a
job skipped once never fits later in the same pass). Running jobs (at most one per
GPU) are a small array kept in rank order. Stale heap entries (LAS promotions) are
dropped lazily by comparing with the job's current key.
"""
from libc.math cimport ceil
from libc.stdint cimport int8_t, int64_t
from libc.stdlib cimport free, malloc

from magnum_lib.base._growth cimport grow_array, no_memory
from magnum_lib.base._heap cimport Heap, heap_drop, heap_init, heap_push_keyed

import numpy as np

from magnum_lib.replay.contract import BY, KINDS

# The codes, constants and Ctx (every field with its C type) with the functions that fill it
# by name: generated from replay/contract.py by scripts/gen_replay_contract.py.
include "_fastloop_contract.pxi"


cdef inline bint _less(int64_t ka, int64_t ja, int64_t kb, int64_t jb) noexcept nogil:
    return ka < kb or (ka == kb and ja < jb)


cdef inline int64_t las_key(Ctx* c, int64_t j) noexcept nogil:
    return (c.q[j] << 44) + (c.seq[j] + LAS_OFF)


cdef inline int64_t rank_key(Ctx* c, int64_t j) noexcept nogil:
    if c.kind == K_SJF:
        if c.by == BY_GPUS:
            return c.gpus[j]
        if c.by == BY_GPU_TIME:
            return c.work[j] * c.gpus[j]
        return c.work[j]
    if c.kind == K_SRTF:
        if c.by == BY_GPU_TIME:
            return (c.rem[j] if c.rem[j] > 0 else 0) * c.gpus[j]
        return c.rem[j] if c.rem[j] > 0 else 0
    if c.kind == K_LAS:
        return las_key(c, j)
    return j


cdef inline int push_waiting(Ctx* c, int64_t j) noexcept nogil:
    c.key[j] = rank_key(c, j)
    return heap_push_keyed(&c.heaps[c.bucket_of[j]], c.key[j], j, j)


cdef inline int64_t ceil_mul(double knob, int64_t ns) noexcept nogil:
    return <int64_t> ceil(knob * <double> ns)


cdef void sort_running(Ctx* c) noexcept nogil:
    # Insertion sort by (key, id): the array is nearly sorted between passes.
    cdef Py_ssize_t a, b
    cdef int64_t j, kj
    if c.kind == K_SRTF:  # remaining work changed; LAS keys are kept current as they change
        for a in range(c.nrun):
            c.key[c.run[a]] = rank_key(c, c.run[a])
    for a in range(1, c.nrun):
        j = c.run[a]
        kj = c.key[j]
        b = a - 1
        while b >= 0 and _less(kj, j, c.key[c.run[b]], c.run[b]):
            c.run[b + 1] = c.run[b]
            b -= 1
        c.run[b + 1] = j


cdef int64_t best_waiting(Ctx* c, int64_t budget, Py_ssize_t* which) noexcept nogil:
    # The best-ranked waiting job with gpus <= budget (-1 if none); drops stale heads.
    cdef Py_ssize_t b
    cdef int64_t bj = -1, bk = 0, j
    cdef Heap* h
    for b in range(c.nb):
        if c.bsize[b] > budget:
            break
        h = &c.heaps[b]
        while h.size > 0:
            j = h.data[0].payload
            if c.status[j] == JOB_WAIT and c.key[j] == h.data[0].time:
                break
            heap_drop(h)
        if h.size > 0 and (bj < 0 or _less(h.data[0].time, h.data[0].payload, bk, bj)):
            bj = h.data[0].payload
            bk = h.data[0].time
            which[0] = b
    return bj


cdef inline void start_job(Ctx* c, int64_t j, int64_t t) noexcept nogil:
    c.status[j] = JOB_RUN
    if c.start[j] < 0:
        c.start[j] = t
    elif c.restore > 0:
        c.ovh[j] = c.restore


cdef int pass_nonpreemptive(Ctx* c, int64_t t, int64_t* free_gpus, Py_ssize_t* head) noexcept nogil:
    cdef int64_t j
    cdef Py_ssize_t which = 0
    if c.kind == K_STRICT:
        while head[0] < c.n and c.status[head[0]] == JOB_WAIT and c.gpus[head[0]] <= free_gpus[0]:
            j = head[0]
            start_job(c, j, t)
            free_gpus[0] -= c.gpus[j]
            c.run[c.nrun] = j
            c.nrun += 1
            head[0] += 1
        return 0
    while free_gpus[0] > 0:
        j = best_waiting(c, free_gpus[0], &which)
        if j < 0:
            break
        heap_drop(&c.heaps[which])
        start_job(c, j, t)
        free_gpus[0] -= c.gpus[j]
        c.run[c.nrun] = j
        c.nrun += 1
    return 0


cdef bint pass_is_noop(Ctx* c, int64_t free_gpus) noexcept nogil:
    # True when the pass provably changes nothing: every waiting job ranks after every
    # running one and none fits in the free GPUs. (Then the LAS renumbering would keep
    # the same order too, unless a demotion or promotion just happened: c.reordered.)
    cdef Py_ssize_t b
    cdef int64_t j, lk = 0, lj = -1
    cdef Heap* h
    if c.nrun > 0:
        lj = c.run[c.nrun - 1]
        lk = c.key[lj]
    for b in range(c.nb):
        h = &c.heaps[b]
        while h.size > 0:
            j = h.data[0].payload
            if c.status[j] == JOB_WAIT and c.key[j] == h.data[0].time:
                break
            heap_drop(h)
        if h.size == 0:
            continue
        if c.bsize[b] <= free_gpus:
            return False
        if lj >= 0 and _less(h.data[0].time, h.data[0].payload, lk, lj):
            return False
    return True


cdef int pass_preemptive(Ctx* c, int64_t t, int64_t* free_gpus) noexcept nogil:
    # Rank running and waiting jobs together; give GPUs in rank order while they fit.
    cdef int64_t budget = c.total, j = -1, r = 0
    cdef Py_ssize_t ri = 0, nchosen = 0, npre = 0, which = 0, k
    cdef int64_t* chosen = c.tmp
    cdef int64_t* pre = c.tmp2
    cdef bint take_running
    sort_running(c)
    if not c.reordered and pass_is_noop(c, free_gpus[0]):
        return 0
    while True:
        while ri < c.nrun and c.gpus[c.run[ri]] > budget:
            pre[npre] = c.run[ri]
            npre += 1
            ri += 1
        # The best waiting job that fits stays the best while it still fits (the budget
        # only shrinks), so look it up again only after it started or stopped fitting.
        if j < 0 or c.gpus[j] > budget:
            j = best_waiting(c, budget, &which) if budget > 0 else -1
        if ri < c.nrun:
            r = c.run[ri]
            take_running = j < 0 or _less(c.key[r], r, c.key[j], j)
        elif j >= 0:
            take_running = False
        else:
            break
        if take_running:
            chosen[nchosen] = r
            ri += 1
            budget -= c.gpus[r]
        else:
            heap_drop(&c.heaps[which])
            start_job(c, j, t)
            chosen[nchosen] = j
            budget -= c.gpus[j]
            j = -1
        nchosen += 1
    # Running jobs not chosen are preempted, in rank order: those skipped above, then the tail.
    while ri < c.nrun:
        pre[npre] = c.run[ri]
        npre += 1
        ri += 1
    if c.kind == K_LAS:  # running-after-pass to the front of their queues, in scan order
        c.front -= nchosen
        for k in range(nchosen):
            c.seq[chosen[k]] = c.front + k
    for k in range(npre):
        r = pre[k]
        c.status[r] = JOB_WAIT
        c.preempts[r] += 1
        if push_waiting(c, r) != 0:
            return -2
        if c.kind == K_LAS and c.knob > 0 and not c.in_starv[r] and c.att[r] - c.base[r] > 0:
            c.in_starv[r] = 1
            c.starv[c.nstarv] = r
            c.nstarv += 1
    for k in range(nchosen):
        r = chosen[k]
        c.run[k] = r
        c.key[r] = rank_key(c, r)
        if c.kind == K_LAS and c.q[r] < c.nlim and not c.tjump:
            j = t + (c.lim[c.q[r]] - (c.att[r] - c.base[r]) * c.gpus[r] + c.gpus[r] - 1) // c.gpus[r]
            if j != c.dem_t[r]:
                c.dem_t[r] = j
                if heap_push_keyed(&c.dem, j, r, r) != 0:
                    return -2
    for k in range(npre):
        c.dem_t[pre[k]] = -1
    c.nrun = nchosen
    free_gpus[0] = budget
    return 0


cdef int record_util(Ctx* c, int64_t t, double busy) noexcept nogil:
    if c.nu > 0 and (c.ut[c.nu - 1] == t or c.ub[c.nu - 1] == busy):
        if c.ut[c.nu - 1] == t:
            c.ub[c.nu - 1] = busy
        return 0
    if c.nu == c.ucap:
        if (grow_array(<void**> &c.ut, 2 * c.ucap, sizeof(int64_t)) < 0
                or grow_array(<void**> &c.ub, 2 * c.ucap, sizeof(double)) < 0):
            return -2
        c.ucap *= 2
    c.ut[c.nu] = t
    c.ub[c.nu] = busy
    c.nu += 1
    return 0


cdef int las_updates(Ctx* c, int64_t t, int64_t dt) noexcept nogil:
    # Demotions of running jobs and promotions of starving ones, in id order.
    cdef Py_ssize_t k, m = 0, a, b
    cdef int64_t j, x
    cdef int64_t* ids = c.tmp
    if c.tjump:   # demotions are checked for every running job at every event, as Tiresias
        for k in range(c.nrun):
            j = c.run[k]
            if c.q[j] < c.nlim and (c.att[j] - c.base[j]) * c.gpus[j] >= c.lim[c.q[j]]:
                ids[m] = j
                m += 1
    while c.dem.size > 0 and c.dem.data[0].time <= t:
        j = c.dem.data[0].payload
        if c.status[j] == JOB_RUN and c.dem_t[j] == c.dem.data[0].time and c.q[j] < c.nlim \
                and (c.att[j] - c.base[j]) * c.gpus[j] >= c.lim[c.q[j]]:
            ids[m] = j
            m += 1
            c.dem_t[j] = -1
        heap_drop(&c.dem)
    if c.knob > 0:
        k = 0
        while k < c.nstarv:
            j = c.starv[k]
            if c.status[j] != JOB_WAIT or c.att[j] - c.base[j] <= 0:
                c.in_starv[j] = 0
                c.starv[k] = c.starv[c.nstarv - 1]
                c.nstarv -= 1
                continue
            c.starve[j] += dt
            if c.q[j] > 0 and c.starve[j] >= ceil_mul(c.knob, c.att[j] - c.base[j]):
                ids[m] = j
                m += 1
            k += 1
    c.reordered = m > 0
    for a in range(1, m):
        x = ids[a]
        b = a - 1
        while b >= 0 and ids[b] > x:
            ids[b + 1] = ids[b]
            b -= 1
        ids[b + 1] = x
    for k in range(m):
        j = ids[k]
        if c.status[j] == JOB_RUN:
            c.q[j] += 1
            c.seq[j] = c.counter
            c.counter += 1
            c.key[j] = las_key(c, j)
            continue
        else:
            c.starve[j] = 0
            c.base[j] = c.att[j]
            c.q[j] = 0
        c.seq[j] = c.counter
        c.counter += 1
        if c.status[j] == JOB_WAIT and push_waiting(c, j) != 0:
            return -2
    return 0


cdef int64_t next_wake(Ctx* c, int64_t t) noexcept nogil:
    cdef int64_t w = -1, j, left, x
    cdef Py_ssize_t k
    while c.dem.size > 0:
        j = c.dem.data[0].payload
        if c.status[j] == JOB_RUN and c.dem_t[j] == c.dem.data[0].time:
            break
        heap_drop(&c.dem)
    if c.dem.size > 0 and c.dem.data[0].time > t:
        w = c.dem.data[0].time
    if c.tjump:
        for k in range(c.nrun):
            j = c.run[k]
            if c.q[j] < c.nlim:
                # Tiresias' wake-up under Python 2.7 (policies._tiresias_jump_s): an
                # integer limit floors (Cython's // floors as Python's), a float one is
                # divided truly and rounded up.
                left = c.lim[c.q[j]] - (c.att[j] - c.base[j])
                if c.lim[c.q[j]] % NS_S == 0:
                    x = t + left // (c.gpus[j] * NS_S) * NS_S
                else:
                    x = t + (left + c.gpus[j] * NS_S - 1) // (c.gpus[j] * NS_S) * NS_S
                if x > t and (w < 0 or x < w):
                    w = x
    if c.knob > 0:
        for k in range(c.nstarv):
            j = c.starv[k]
            if c.status[j] == JOB_WAIT and c.q[j] > 0 and c.att[j] - c.base[j] > 0:
                x = ceil_mul(c.knob, c.att[j] - c.base[j]) - c.starve[j]
                x = t + (x if x > 1 else 1)
                if w < 0 or x < w:
                    w = x
    return w


cdef int loop(Ctx* c) noexcept nogil:
    cdef Py_ssize_t i = 0, head = 0, k, m
    cdef int64_t t = 0, now = 0, tn, dt, o, j, free_gpus = c.total, wake = -1
    cdef Py_ssize_t done = 0
    while done < c.n:
        tn = -1
        if i < c.n:
            tn = c.submit[i]
        for k in range(c.nrun):
            j = c.run[k]
            o = now + c.ovh[j] + (c.rem[j] if c.rem[j] > 0 else 0)
            if tn < 0 or o < tn:
                tn = o
        if wake >= 0 and (tn < 0 or wake < tn):
            tn = wake
        if tn < 0:
            return -1
        t = tn
        dt = t - now
        if dt > 0:
            for k in range(c.nrun):
                j = c.run[k]
                o = c.ovh[j] if c.ovh[j] < dt else dt
                c.ovh[j] -= o
                c.rem[j] -= dt - o
                c.att[j] += dt
        now = t
        # (1) finishes: compact the running array, keeping its order
        m = 0
        for k in range(c.nrun):
            j = c.run[k]
            if c.rem[j] <= 0:
                c.status[j] = JOB_DONE
                c.finish[j] = t
                free_gpus += c.gpus[j]
                done += 1
            else:
                c.run[m] = j
                m += 1
        c.nrun = m
        # (2) arrivals
        while i < c.n and c.submit[i] == t:
            c.status[i] = JOB_WAIT
            if c.kind == K_LAS:
                c.q[i] = 0
                c.seq[i] = c.counter
                c.counter += 1
            if c.kind != K_STRICT and push_waiting(c, i) != 0:
                return -2
            i += 1
        # (3) the pass
        if c.kind == K_LAS:
            if las_updates(c, t, dt) != 0:
                return -2
        if c.kind == K_SRTF or c.kind == K_LAS or c.sjf_pre:
            if pass_preemptive(c, t, &free_gpus) != 0:
                return -2
        else:
            pass_nonpreemptive(c, t, &free_gpus, &head)
        wake = next_wake(c, t) if c.kind == K_LAS else -1
        if record_util(c, t, <double> (c.total - free_gpus)) != 0:
            return -2
    return 0


def _spec_codes(spec, wrk, gp):
    """Setup step 1: the policy ``spec`` as the loop's codes (kind, by, sjf_pre, LAS limits, knob, tjump)."""
    by = BY.get(spec[1], -1) if spec[0] in ("sjf", "srtf") and len(spec) > 1 else BY_WORK
    if by < 0 or (spec[0] == "srtf" and by == BY_GPUS):
        raise ValueError(f"no fast path for {spec[0]} by {spec[1]!r}")
    if by == BY_GPU_TIME and wrk.shape[0] and int(np.max(wrk)) * int(np.max(gp)) >= (1 << 62):
        raise ValueError("work_ns x num_gpus overflows the compiled loop's int64 keys; "
                         "use backend='python' (exact integers)")
    lim_np = np.asarray(spec[1] if spec[0] == "las" else (), dtype=np.int64)
    return dict(kind=KINDS[spec[0]], by=by, sjf_pre=spec[0] == "sjf" and len(spec) > 2 and bool(spec[2]),
                lim=lim_np, knob=float(spec[2]) if spec[0] == "las" else 0.0,
                tjump=bool(spec[3]) if spec[0] == "las" and len(spec) > 3 else False)


def _check_jobs(sub, wrk, gp, int64_t total):
    """Setup step 2: refuse job arrays the loop cannot replay (lengths, GPU counts, order, work)."""
    if sub.ndim != 1 or wrk.ndim != 1 or gp.ndim != 1:
        raise ValueError("submit_ns, work_ns and num_gpus must be 1-d arrays")
    cdef Py_ssize_t n = sub.shape[0]
    if wrk.shape[0] != n or gp.shape[0] != n:
        raise ValueError("submit_ns, work_ns and num_gpus must have the same length")
    if n and (np.min(gp) < 1 or np.max(gp) > total):
        raise ValueError("every job needs 1..total_gpus GPUs")
    if n > 1 and np.any(np.diff(np.asarray(sub)) < 0):
        raise ValueError("submit_ns must be sorted")
    if n and np.min(wrk) < 1:
        raise ValueError("work_ns must be >= 1")


def _given(sub, wrk, gp, lim, dict out, int64_t total):
    """Setup step 3: the arrays the loop's state is given, by name (the jobs, the LAS limits,
    the GPU-count buckets, ``out``'s; the contract makes the others), and the sizes."""
    bsize, bucket_of = np.unique(gp, return_inverse=True)
    sizes = dict(n=sub.shape[0], total=total, nb=bsize.size, nlim=lim.size)
    given = dict(submit=sub, work=wrk, gpus=gp, lim=np.ascontiguousarray(lim) if lim.size else np.zeros(1, np.int64),
                 bucket_of=np.ascontiguousarray(bucket_of, dtype=np.int64),
                 bsize=np.ascontiguousarray(bsize, dtype=np.int64), rem=np.array(wrk, dtype=np.int64),
                 start=out["first_start"], finish=out["finish"], preempts=out["preemptions"], att=out["held"])
    return given, sizes


cdef bint _ctx_alloc(Ctx* c) noexcept nogil:
    """Setup step 4: the heaps and the utilization timeline (malloc); False if memory ran out."""
    cdef Py_ssize_t b
    cdef bint ok
    heap_init(&c.dem, 64)
    c.ucap = 1024
    c.ut = <int64_t*> malloc(c.ucap * sizeof(int64_t))
    c.ub = <double*> malloc(c.ucap * sizeof(double))
    c.heaps = <Heap*> malloc(c.nb * sizeof(Heap))
    ok = c.ut != NULL and c.ub != NULL and c.heaps != NULL and c.dem.data != NULL
    if c.heaps != NULL:
        for b in range(c.nb):
            heap_init(&c.heaps[b], 64)
            ok = ok and c.heaps[b].data != NULL
    return ok


cdef void _ctx_free(Ctx* c) noexcept nogil:
    """Teardown: free what :func:`_ctx_alloc` took."""
    cdef Py_ssize_t b
    if c.heaps != NULL:
        for b in range(c.nb):
            free(c.heaps[b].data)
    free(c.heaps)
    free(c.dem.data)
    free(c.ut)
    free(c.ub)


def run_fast(submit_ns, work_ns, num_gpus, total_gpus, spec, restore_ns):
    """Replay on ``total_gpus`` pooled GPUs under the built-in policy ``spec``.

    ``spec``: ``("fifo-strict",)``, ``("fifo-skip",)``, ``("sjf",)``, ``("sjf", by,
    preemptive)`` (by: "duration", "gpus", "gpu_time"), ``("srtf",)``, ``("srtf", by)`` (by:
    "time", "gpu_time") or ``("las", thresholds_ns, promote_knob)``. Returns the dict of
    :func:`magnum_lib.replay.event_loop.run`.
    """
    sub = np.ascontiguousarray(submit_ns, dtype=np.int64)
    wrk = np.ascontiguousarray(work_ns, dtype=np.int64)
    gp = np.ascontiguousarray(num_gpus, dtype=np.int64)
    cdef Py_ssize_t n = sub.shape[0]
    cdef int64_t total = int(total_gpus)
    if spec[0] not in KINDS:
        raise ValueError(f"no fast path for policy {spec[0]!r}")
    _check_jobs(sub, wrk, gp, total)
    codes = _spec_codes(spec, wrk, gp)
    out = dict(first_start=np.full(n, -1, np.int64), finish=np.full(n, -1, np.int64),
               preemptions=np.zeros(n, np.int64), held=np.zeros(n, np.int64))
    if n == 0:
        return dict(out, util_t=np.zeros(0, np.int64), util_busy=np.zeros(0))
    given, sizes = _given(sub, wrk, gp, codes["lim"], out, total)
    cdef Ctx c
    cdef int rc
    keep = _bind_arrays(&c, given, sizes)
    _set_options(&c, dict(n=n, kind=codes["kind"], by=codes["by"], sjf_pre=codes["sjf_pre"], total=total,
                          restore=int(restore_ns), nlim=sizes["nlim"], knob=codes["knob"], tjump=codes["tjump"],
                          nb=sizes["nb"]))
    _init_state(&c)
    try:
        if not _ctx_alloc(&c):
            no_memory("replay")
        with nogil:
            rc = loop(&c)
        if rc == -2:
            no_memory("replay")
        if rc == -1:
            raise RuntimeError("replay stalled: jobs wait on an idle cluster")
        ut = np.array(<int64_t[:c.nu]> c.ut, dtype=np.int64) if c.nu else np.zeros(0, np.int64)
        ub = np.array(<double[:c.nu]> c.ub, dtype=np.float64) if c.nu else np.zeros(0)
    finally:
        _ctx_free(&c)
    del keep
    # held: ns each job held its GPUs (run time plus restores; ``att``, kept for every policy)
    return dict(out, util_t=ut, util_busy=ub)
