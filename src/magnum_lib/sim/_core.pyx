# The compiled request-path core: a line-by-line translation of core_ref.py (read that for
# the model and the array layout). Same events, same heap order (time, then insertion),
# same xorshift draws, so both backends give identical arrays.
from libc.stdint cimport int8_t, int32_t, int64_t, uint64_t
from libc.stdlib cimport malloc, calloc, free
from libc.string cimport memcpy

import numpy as np

from magnum_lib._typedefs cimport intp_t
from magnum_lib.base._growth cimport grow_array, no_memory
from magnum_lib.base._heap cimport Heap, HeapEntry, heap_before, heap_pop, heap_push
from magnum_lib.base._rng cimport below64, xorshift64_seed, xorshift64star
from magnum_lib.node._dispatcher cimport most_urgent, next_boundary, pause_victim, start_after
from magnum_lib.node._hedge_rule cimport HEDGE_PROBES, hedge_delay_ns, sends_copy, takes_copy
from magnum_lib.regional._place_rule cimport better_of_two, ring_first
from magnum_lib.regional._lease_rule cimport (LR_ACCEPT, LR_PREEMPT, VictimSlots, cover_victims, lease_expired,
                                              lease_verdict, lost_work_ns)

# The codes (EV_*, POL_*, ..., TRACE_ROWS) and CoreState (every parameter and array of the
# core, bound by name), generated from sim/contract.py by scripts/gen_core_contract.py.
include "_core_contract.pxi"


# Event lanes. Leases of one scheduler and lease refusals are scheduled in time order, so
# each goes to a FIFO lane instead of the heap; the loop takes the earliest (time, then
# insertion number) of the heap top and the lane heads: exactly the order of one heap (the
# reference's), with ~60% fewer heap operations. A push that would break a lane's order
# goes to the heap instead, so the order stays exact whatever the inputs.
cdef struct Lane:
    HeapEntry* data
    intp_t head, size, cap


cdef inline int lane_push(Lane* q, HeapEntry e) noexcept nogil:
    cdef HeapEntry* bigger
    cdef intp_t k, n1
    if q.size == q.cap:  # grow: unroll the ring into a buffer twice as large
        bigger = <HeapEntry*> malloc(2 * q.cap * sizeof(HeapEntry))
        if bigger == NULL:
            return -1
        n1 = q.cap - q.head
        memcpy(bigger, q.data + q.head, n1 * sizeof(HeapEntry))
        memcpy(bigger + n1, q.data, q.head * sizeof(HeapEntry))
        free(q.data)
        q.data = bigger
        q.head = 0
        q.cap *= 2
    k = q.head + q.size
    if k >= q.cap:
        k -= q.cap
    q.data[k] = e
    q.size += 1
    return 0


cdef inline HeapEntry* lane_tail(Lane* q) noexcept nogil:
    cdef intp_t k = q.head + q.size - 1
    if k >= q.cap:
        k -= q.cap
    return &q.data[k]


# The calendar: every other event a little ahead (finishes, hedges, rounds, gossip) is
# appended to the bucket of its time (CAL_W ns wide, CAL_N buckets ahead); a bucket is
# sorted by (time, insertion) when the loop reaches it and then read in order. An event
# for the bucket being read, or beyond the calendar, goes to the heap, which stays small;
# the loop merges heap, calendar and lanes by (time, insertion): the reference's order.
DEF CAL_SHIFT = 20          # bucket width 2^20 ns ~ 1.05 ms
DEF CAL_N = 1024            # buckets ahead ~ 1.07 s
DEF CAL_MASK = CAL_N - 1


cdef inline void sort_entries(HeapEntry* a, intp_t n) noexcept nogil:
    """Sort by (time, insertion): quicksort, insertion sort below 16 entries."""
    cdef intp_t i, j, lo = 0, hi = n - 1, m
    cdef HeapEntry x, pv
    while hi - lo >= 16:
        m = lo + (hi - lo) // 2  # median of three as the pivot
        if heap_before(&a[m], &a[lo]):
            x = a[m]
            a[m] = a[lo]
            a[lo] = x
        if heap_before(&a[hi], &a[lo]):
            x = a[hi]
            a[hi] = a[lo]
            a[lo] = x
        if heap_before(&a[hi], &a[m]):
            x = a[hi]
            a[hi] = a[m]
            a[m] = x
        pv = a[m]
        i = lo
        j = hi
        while i <= j:
            while heap_before(&a[i], &pv):
                i += 1
            while heap_before(&pv, &a[j]):
                j -= 1
            if i <= j:
                x = a[i]
                a[i] = a[j]
                a[j] = x
                i += 1
                j -= 1
        if j - lo < hi - i:  # recurse into the smaller side, loop on the larger
            sort_entries(a + lo, j - lo + 1)
            lo = i
        else:
            sort_entries(a + i, hi - i + 1)
            hi = j
    for i in range(lo + 1, hi + 1):
        x = a[i]
        j = i - 1
        while j >= lo and heap_before(&x, &a[j]):
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = x


cdef class Core(CoreState):
    """The request-path simulation of one region (see ``core_ref.Core``)."""

    cdef uint64_t rng
    cdef Heap heap
    cdef Lane* lanes          # n_sched lease lanes, then the refusal lane
    cdef Lane* cal            # CAL_N buckets (head unused: read position is cal_pos)
    cdef int64_t cal_cur, cal_pos, cal_count
    cdef int64_t n_lanes
    cdef int64_t now, next_arr, next_round, busy_until, tick, ntrace
    cdef bint in_round
    cdef int64_t* pend        # ring of request ids waiting for a round
    cdef int64_t pend_head, pend_len, pend_cap
    cdef int64_t* batch
    cdef int64_t* work

    def __cinit__(self):
        self.heap.data = NULL
        self.lanes = NULL
        self.cal = NULL
        self.n_lanes = 0
        self.pend = NULL
        self.batch = NULL
        self.work = NULL

    def __dealloc__(self):
        cdef int64_t q
        free(self.heap.data)
        if self.lanes != NULL:
            for q in range(self.n_lanes):
                free(self.lanes[q].data)
            free(self.lanes)
        if self.cal != NULL:
            for q in range(CAL_N):
                free(self.cal[q].data)
            free(self.cal)
        free(self.pend)
        free(self.batch)
        free(self.work)

    def __init__(self, arrays, params):
        self._bind(arrays, params)
        self.rng = xorshift64_seed(<uint64_t> self.seed)
        self.heap.capacity = 1024
        self.heap.size = 0
        self.heap.next_seq = 0
        self.heap.data = <HeapEntry*> malloc(self.heap.capacity * sizeof(HeapEntry))
        self.pend_cap = self.n_req + 1
        self.pend = <int64_t*> malloc(self.pend_cap * sizeof(int64_t))
        self.batch = <int64_t*> malloc(self.pend_cap * sizeof(int64_t))
        self.work = <int64_t*> malloc(max(self.n_sched, 1) * sizeof(int64_t))
        if self.heap.data == NULL or self.pend == NULL or self.batch == NULL or self.work == NULL:
            no_memory("sim core")
        self.lanes = <Lane*> malloc((self.n_sched + 1) * sizeof(Lane))
        if self.lanes == NULL:
            no_memory("sim core")
        for q in range(self.n_sched + 1):
            self.lanes[q].data = <HeapEntry*> malloc(256 * sizeof(HeapEntry))
            if self.lanes[q].data == NULL:
                no_memory("sim core")
            self.n_lanes = q + 1
            self.lanes[q].head = 0
            self.lanes[q].size = 0
            self.lanes[q].cap = 256
        self.cal = <Lane*> calloc(CAL_N, sizeof(Lane))
        if self.cal == NULL:
            no_memory("sim core")
        self.cal_cur = 0
        self.cal_pos = 0
        self.cal_count = 0
        self.pend_head = 0
        self.pend_len = 0
        self.now = 0
        self.next_arr = 0
        self.next_round = -1
        self.busy_until = 0
        self.in_round = False
        self.tick = 0
        self.ntrace = 0
        if self.n_req > 0:
            self._schedule_round(self.arr[0])
        if self.view_mode == VIEW_GOSSIP and self.gossip_ns > 0:
            self._push(self.gossip_ns, 0, EV_GOSSIP)

    # -- plumbing ------------------------------------------------------------------
    cdef inline void _push(self, int64_t t, int64_t ident, int64_t kind) noexcept nogil:
        cdef int64_t b = t >> CAL_SHIFT
        cdef Lane* bk
        cdef intp_t cap
        if b <= self.cal_cur or b - self.cal_cur >= CAL_N:
            heap_push(&self.heap, t, ident * 8 + kind)
            return
        bk = &self.cal[b & CAL_MASK]
        if bk.size == bk.cap:
            cap = 64 if bk.cap == 0 else 2 * bk.cap
            if grow_array(<void**> &bk.data, cap, sizeof(HeapEntry)) < 0:
                heap_push(&self.heap, t, ident * 8 + kind)  # out of memory: the heap keeps the order too
                return
            bk.cap = cap
        bk.data[bk.size].time = t
        bk.data[bk.size].seq = self.heap.next_seq
        bk.data[bk.size].payload = ident * 8 + kind
        bk.size += 1
        self.heap.next_seq += 1
        self.cal_count += 1

    cdef inline HeapEntry* _cal_head(self) noexcept nogil:
        """The calendar's earliest event (NULL: none); moves on to the next filled bucket."""
        cdef Lane* bk = &self.cal[self.cal_cur & CAL_MASK]
        if self.cal_pos < bk.size:
            return &bk.data[self.cal_pos]
        if self.cal_count == 0:
            return NULL
        bk.size = 0
        self.cal_pos = 0
        while True:
            self.cal_cur += 1
            bk = &self.cal[self.cal_cur & CAL_MASK]
            if bk.size > 0:
                break
        sort_entries(bk.data, bk.size)
        return &bk.data[0]

    cdef inline void _push_lane(self, int64_t q, int64_t t, int64_t ident, int64_t kind) noexcept nogil:
        """As _push (same insertion number), into lane q if that keeps the lane in time order."""
        cdef Lane* ln = &self.lanes[q]
        cdef HeapEntry e
        if ln.size > 0 and lane_tail(ln).time > t:
            heap_push(&self.heap, t, ident * 8 + kind)
            return
        e.time = t
        e.seq = self.heap.next_seq
        e.payload = ident * 8 + kind
        if lane_push(ln, e) != 0:  # out of memory: the heap keeps the order as well
            heap_push(&self.heap, t, ident * 8 + kind)
            return
        self.heap.next_seq += 1

    cdef inline bint _pop_next(self, int64_t t_end, int64_t* t, int64_t* payload) noexcept nogil:
        """Take the earliest event (heap top or a lane head) if it is before t_end."""
        cdef HeapEntry* best = NULL
        cdef HeapEntry* e
        cdef int64_t q, bq = -1
        cdef Lane* ln
        if self.heap.size > 0:
            best = &self.heap.data[0]
        e = self._cal_head()
        if e != NULL and (best == NULL or heap_before(e, best)):
            best = e
            bq = -2
        for q in range(self.n_lanes):
            ln = &self.lanes[q]
            if ln.size > 0:
                e = &ln.data[ln.head]
                if best == NULL or heap_before(e, best):
                    best = e
                    bq = q
        if best == NULL or best.time >= t_end:
            return False
        if bq == -1:
            return heap_pop(&self.heap, t, payload)
        t[0] = best.time
        payload[0] = best.payload
        if bq == -2:
            self.cal_pos += 1
            self.cal_count -= 1
            return True
        ln = &self.lanes[bq]
        ln.head += 1
        if ln.head == ln.cap:
            ln.head = 0
        ln.size -= 1
        return True

    cdef inline uint64_t _rand(self, uint64_t n) noexcept nogil:
        # uniform in [0, n): the high 64 bits of draw x n (Lemire 2019; no division)
        return below64(xorshift64star(&self.rng), n)

    cdef inline void _trace(self, int64_t r, int64_t t, int64_t code, int64_t nd) noexcept nogil:
        if r == self.trace_id and self.ntrace < TRACE_ROWS:
            self.trace[self.ntrace, 0] = t
            self.trace[self.ntrace, 1] = code
            self.trace[self.ntrace, 2] = nd
            self.ntrace += 1

    cdef inline int64_t _align(self, int64_t t) noexcept nogil:
        return next_boundary(t, self.quantum_ns)  # the dispatcher's decision quantum

    cdef void _schedule_round(self, int64_t t) noexcept nogil:
        if self.in_round:
            return
        if t < self.busy_until:
            t = self.busy_until
        t = (t + self.round_ns - 1) // self.round_ns * self.round_ns
        if self.next_round < 0 or t < self.next_round:
            self.next_round = t
            self._push(t, 0, EV_ROUND)

    cdef inline int64_t _free(self, intp_t i) noexcept nogil:
        return self.node_dev[i] - self.run[i] - self.train[i] - self.hold[i]

    cdef inline int64_t _busy(self, intp_t i) noexcept nogil:
        return self.run[i] + self.qlen[i] + self.hold[i]

    cdef inline int64_t _avail(self, int64_t s, intp_t i, bint cp) noexcept nogil:
        cdef int64_t b, tr, j
        if self.view_mode == VIEW_FRESH:
            b = self._busy(i) + self.inflight[i]
            tr = self.train[i]
        else:
            j = s * self.n_nodes + i
            b = self.view_busy[i]
            if self.own_tick[j] == self.tick:
                b += self.own[j]
            tr = self.view_train[i]
        if cp:
            return self.node_dev[i] + self.node_queue - b
        return self.node_dev[i] + self.node_queue - b - tr

    cdef inline void _note_placed(self, int64_t s, intp_t i) noexcept nogil:
        cdef int64_t j
        if self.view_mode == VIEW_FRESH:
            self.inflight[i] += 1
            return
        j = s * self.n_nodes + i
        if self.own_tick[j] != self.tick:
            self.own_tick[j] = self.tick
            self.own[j] = 0
        self.own[j] += 1

    # -- placement -----------------------------------------------------------------
    cdef int64_t _pick_random(self, int64_t s, int64_t lo, int64_t n, bint cp, int64_t* t_left) noexcept nogil:
        cdef int64_t last = 0, k, i, _j, lim = n if n < self.scan_limit else self.scan_limit, ex = 0
        cdef int64_t found = -1
        while t_left[0] > 0:
            t_left[0] -= 1
            k = <int64_t> self._rand(n)
            last = k
            ex += 1
            i = self.pool_nodes[lo + k]
            if self._avail(s, i, cp) > 0:
                found = i
                break
        if found < 0:
            k = last
            for _j in range(lim):  # k = (last + j) % n without a division
                ex += 1
                i = self.pool_nodes[lo + k]
                k += 1
                if k == n:
                    k = 0
                if self._avail(s, i, cp) > 0:
                    found = i
                    break
        self.cnt[K_EXAMINED] += ex  # counted locally: one store per pick
        return found

    cdef int64_t _place_pool(self, int64_t s, int64_t r, int64_t pool, bint cp) noexcept nogil:
        cdef int64_t lo = self.pool_off[pool], hi = self.pool_off[pool + 1], n, pol, best, best_av, k, i, av
        cdef int64_t rlo, rhi, a, m, j, key, left, bb
        n = hi - lo
        if n == 0:
            return -1
        pol = POL_TWO if self.policy == POL_HINTS else self.policy
        if pol == POL_SCAN:
            best = -1
            best_av = 0
            for k in range(n):
                i = self.pool_nodes[lo + k]
                av = self._avail(s, i, cp)
                if better_of_two(best, best_av, i, av) == i:  # the most room, the first on ties
                    best = i
                    best_av = av
            self.cnt[K_EXAMINED] += n
            return best
        if pol == POL_HASH:
            rlo = self.ring_off[pool]
            rhi = self.ring_off[pool + 1]
            key = <int64_t> self._rand((<uint64_t> 1) << 62)
            a = ring_first(&self.ring_key[0], rlo, rhi, key)  # regional/_place_rule.pxd
            m = rhi - rlo
            for j in range(m):
                i = self.ring_node[rlo + (a - rlo + j) % m]
                self.cnt[K_EXAMINED] += 1
                if self._avail(s, i, cp) > 0:
                    return i
            return -1
        left = self.draws
        a = self._pick_random(s, lo, n, cp, &left)
        if pol == POL_RANDOM or a < 0:
            return a
        bb = self._pick_random(s, lo, n, cp, &left)
        if bb < 0:
            return a
        return better_of_two(a, self._avail(s, a, cp), bb, self._avail(s, bb, cp))  # regional/_place_rule.pxd

    cdef int64_t _place(self, int64_t s, int64_t r) noexcept nogil:
        cdef int64_t c = self.cls[r], _h, i, k, q, npass, ps, lo, nh, best
        cdef bint may_preempt = self.preempt != PRE_NONE and self.cls_prio[c] > self.train_prio
        cdef bint cp
        npass = 2 if may_preempt else 1
        for ps in range(npass):  # free devices first, preemption second
            cp = ps == 1
            if self.policy == POL_HINTS:  # the planner's hinted nodes first: the better of two
                lo = self.hint_off[c]
                nh = self.hint_off[c + 1] - lo
                best = -1
                for _h in range(2 if nh > 0 else 0):
                    i = self.hint_nodes[lo + <int64_t> self._rand(nh)]
                    self.cnt[K_EXAMINED] += 1
                    if i >= 0 and self._avail(s, i, cp) > 0 and (
                            best < 0 or self._avail(s, i, cp) > self._avail(s, best, cp)):
                        best = i
                if best >= 0:
                    return best
            k = s * self.n_cls + c
            for q in range(self.cpool_off[k], self.cpool_off[k + 1]):
                i = self._place_pool(s, r, self.cpool[q], cp)
                if i >= 0:
                    return i
        return -1

    # -- events --------------------------------------------------------------------
    cdef void _pend_push(self, int64_t r) noexcept nogil:
        cdef int64_t k = self.pend_head + self.pend_len
        if k >= self.pend_cap:
            k -= self.pend_cap
        self.pend[k] = r
        self.pend_len += 1

    cdef void _round(self, int64_t t) noexcept nogil:
        cdef int64_t nb = 0, k, r, s, ex0, i, done, mx, j, rnd, sc
        self.next_round = -1
        self.in_round = True
        self.cnt[K_ROUNDS] += 1
        if self.view_mode == VIEW_ROUND:
            for i in range(self.n_nodes):
                self.view_busy[i] = self._busy(i)
                self.view_train[i] = self.train[i]
            self.tick += 1
        while self.pend_len > 0:
            self.batch[nb] = self.pend[self.pend_head]
            nb += 1
            self.pend_head += 1
            if self.pend_head == self.pend_cap:
                self.pend_head = 0
            self.pend_len -= 1
        while self.next_arr < self.n_req and self.arr[self.next_arr] <= t:
            self.batch[nb] = self.next_arr
            nb += 1
            self._trace(self.next_arr, self.arr[self.next_arr], TR_ARRIVE, -1)
            self.ready[self.next_arr] = self.arr[self.next_arr]
            self.next_arr += 1
        for s in range(self.n_sched):
            self.work[s] = self.c_round_ns
        rnd = self.cnt[K_ROUNDS]
        for k in range(nb):
            r = self.batch[k]
            s = k % self.n_sched
            sc = s * self.n_cls + self.cls[r]
            if self.skip[sc] == rnd:  # no room for this class in this round: keep waiting
                self._pend_push(r)
                continue
            ex0 = self.cnt[K_EXAMINED]
            i = self._place(s, r)
            self.work[s] += self.c_dec_ns + self.c_node_ns * (self.cnt[K_EXAMINED] - ex0)
            done = t + self.work[s]
            self.comp[r, C_ROUND] += t - self.ready[r]
            self.comp[r, C_SCHED] += done - t
            self._trace(r, t, TR_ROUND, -1)
            if i < 0:
                self.skip[sc] = rnd
                self.cnt[K_NOFIT] += 1
                self._trace(r, done, TR_NOFIT, -1)
                self._fail_attempt(r, done)
                continue
            self._note_placed(s, i)
            self.cnt[K_LEASES] += 1
            self.node[r] = i
            self.expiry[r] = done + self.lease_ns
            self.comp[r, C_RTT] += self.rtt_half_ns
            self._trace(r, done, TR_PLACED, i)
            self._push_lane(s, done + self.rtt_half_ns, r, EV_LEASE)
        mx = self.work[0]
        for s in range(1, self.n_sched):
            if self.work[s] > mx:
                mx = self.work[s]
        self.busy_until = t + mx
        self.in_round = False
        if self.pend_len > 0:
            self._schedule_round(t + self.round_ns)
        elif self.next_arr < self.n_req:
            j = self.arr[self.next_arr]
            self._schedule_round(t + self.round_ns if t + self.round_ns > j else j)

    cdef void _fail_attempt(self, int64_t r, int64_t t_back) noexcept nogil:
        self.comp[r, C_RETRY] += t_back - self.ready[r]
        self.comp[r, C_ROUND] = 0
        self.comp[r, C_SCHED] = 0
        self.comp[r, C_RTT] = 0
        self.comp[r, C_VALID] = 0
        self.attempts[r] += 1
        if self.attempts[r] >= self.max_attempts:
            self.status[r] = ST_DROP
            self.finish[r] = t_back
            self.cnt[K_DROPPED] += 1
            self._trace(r, t_back, TR_DROP, -1)
            return
        self.ready[r] = t_back
        self._pend_push(r)
        self._schedule_round(t_back)

    # -- the node's class queues and devices (the dispatcher's rules, node/_dispatcher.pxd) --
    cdef void _q_push(self, int64_t i, int64_t c, bint front) noexcept nogil:
        cdef int64_t k = i * self.n_rank + self.cls_rank[self.cls[c >> 1]]
        if self.nq_len[k] == 0:
            self.nq_head[k] = c
            self.nq_tail[k] = c
            self.cq_next[c] = -1
        elif front:
            self.cq_next[c] = <int32_t> self.nq_head[k]
            self.nq_head[k] = c
        else:
            self.cq_next[self.nq_tail[k]] = <int32_t> c
            self.cq_next[c] = -1
            self.nq_tail[k] = c
        self.nq_len[k] += 1
        self.qlen[i] += 1

    cdef int64_t _q_pop(self, int64_t i) noexcept nogil:
        cdef int64_t lo = i * self.n_rank, k, c
        k = lo + most_urgent(&self.nq_len[lo], self.n_rank)  # the node layer's rule
        c = self.nq_head[k]
        self.nq_head[k] = self.cq_next[c]
        self.nq_len[k] -= 1
        self.qlen[i] -= 1
        return c

    cdef void _q_remove(self, int64_t i, int64_t c) noexcept nogil:
        cdef int64_t k = i * self.n_rank + self.cls_rank[self.cls[c >> 1]]
        cdef int64_t prev = -1, x = self.nq_head[k]
        while x != c:
            prev = x
            x = self.cq_next[x]
        if prev < 0:
            self.nq_head[k] = self.cq_next[c]
        else:
            self.cq_next[prev] = self.cq_next[c]
        if self.nq_tail[k] == c:
            self.nq_tail[k] = prev
        self.nq_len[k] -= 1
        self.qlen[i] -= 1

    cdef inline void _take_slot(self, int64_t i, int64_t c, int64_t slot) noexcept nogil:
        cdef int64_t off = self.slot_off[i]
        if slot < 0:
            slot = 0
            while self.slot_copy[off + slot] >= 0:
                slot += 1
        self.slot_copy[off + slot] = <int32_t> c
        self.slot_rank[off + slot] = self.cls_rank[self.cls[c >> 1]]
        self.cslot[c] = <int8_t> slot

    cdef inline int64_t _free_slot(self, int64_t c) noexcept nogil:
        cdef int64_t slot = self.cslot[c], off = self.slot_off[self.cnode[c]] + slot
        self.slot_copy[off] = -1
        self.slot_rank[off] = -1
        return slot

    cdef int64_t _pause(self, int64_t c, int64_t tb) noexcept nogil:
        # Pause running copy c at boundary tb; return its device slot (see core_ref._pause).
        cdef int64_t i = self.cnode[c], done = tb - self.cstart[c], slot
        if done < 0:
            done = 0
        self.busy_type[self.node_type[i]] += done
        if self.cborrow[c]:
            self.cnt[K_MICRO_NS] += done
        if c & 1:
            self.cnt[K_HEDGE_NS] += done
        self.cend[c] -= tb if tb > self.cstart[c] else self.cstart[c]  # paused: the work still needed
        self.cstate[c] = CS_PAUSED
        self.run[i] -= 1
        slot = self._free_slot(c)
        self._q_push(i, c, True)
        self.cnt[K_PAUSED] += 1
        self._trace(c >> 1, tb, TR_PAUSE, i)
        return slot

    cdef void _serve_queue(self, int64_t i, int64_t t, int64_t borrowed, int64_t slot) noexcept nogil:
        cdef int64_t c = self._q_pop(i), r, t0
        if self.cstate[c] == CS_PAUSED:  # a paused copy pays the resume, then runs what it still needs
            t0 = start_after(t, self.resume_ns, self.quantum_ns)
            self.cstate[c] = CS_RUN
            self.cstart[c] = t0
            self.cborrow[c] = <int8_t> borrowed
            self.cend[c] += t0
            self.run[i] += 1
            self._take_slot(i, c, slot)
            self._push(self.cend[c], c, EV_FINISH)
            self.cnt[K_UNPAUSED] += 1
            self._trace(c >> 1, t0, TR_RESUME, i)
            return
        r = c >> 1
        t0 = self._align(t)
        self.comp[r, C_DISPATCH] += t0 - self.ready[r]
        self._start_copy(c, i, t0, borrowed, slot)

    cdef void _start_copy(self, int64_t c, int64_t i, int64_t t, int64_t borrowed, int64_t slot) noexcept nogil:
        cdef int64_t r = c >> 1, cl, base, dur, thr
        cdef double mult
        cl = self.cls[r]
        base = self.service[cl * self.n_types + self.node_type[i]]
        mult = self.hnoise[r] if c & 1 else self.noise[r]
        dur = <int64_t> (base * mult) + self.cls_setup[cl] + 1
        self.cstate[c] = CS_RUN
        self.cnode[c] = i
        self.cstart[c] = t
        self.cend[c] = t + dur
        self.cborrow[c] = borrowed
        self.run[i] += 1
        self._take_slot(i, c, slot)
        self._push(t + dur, c, EV_FINISH)
        if c & 1 == 0:
            self.status[r] = ST_RUN
            self.start[r] = t
            self._trace(r, t, TR_START, i)
            thr = hedge_delay_ns(base, self.hedge_milli)  # the node layer's rule (_hedge_rule.pxd)
            if sends_copy(dur, thr, self.hedge_milli > 0):
                self._push(t + thr, r, EV_HEDGE)

    cdef void _accept_start(self, int64_t r, int64_t i, int64_t tv, int64_t ready, int64_t pause,
                            int64_t borrowed, int64_t slot) noexcept nogil:
        # The dispatcher's rule (node/_dispatcher.pxd): the next boundary after `ready`, then `pause`.
        cdef int64_t t = start_after(ready, pause, self.quantum_ns)
        self.comp[r, C_DISPATCH] += t - tv
        self._start_copy(2 * r, i, t, borrowed, slot)

    cdef void _lease(self, int64_t r, int64_t ta) noexcept nogil:
        cdef int64_t i = self.node[r], t_back
        if self.part_leases and self.part_start_ns <= ta < self.part_end_ns and self.part[i]:
            # a true partition: the lease is lost; its scheduler retries when it expires
            if self.view_mode == VIEW_FRESH:
                self.inflight[i] -= 1
            self.cnt[K_EXPIRED] += 1
            t_back = self.expiry[r] if self.expiry[r] > ta else ta
            self._trace(r, t_back, TR_REFUSED, i)
            self._push(t_back, r, EV_RETRY)
            return
        self._lease_decide(r, ta)
        if self.piggyback and self.view_mode != VIEW_FRESH:
            i = self.node[r]
            self.view_busy[i] = self._busy(i)
            self.view_train[i] = self.train[i]
            self.view_time[i] = ta
            self.view_ver[i] = ta

    cdef void _lease_decide(self, int64_t r, int64_t ta) noexcept nogil:
        # Split like core_ref's twin; the steps are `cdef inline` so that Cython calls them
        # directly (no vtable) and the C compiler can inline them: the split costs nothing.
        cdef int64_t i = self.node[r], tv, c, prio, n_free, v_prio
        cdef int64_t v
        cdef int verdict
        if self.view_mode == VIEW_FRESH:
            self.inflight[i] -= 1
        tv = ta + self.c_val_ns
        self.comp[r, C_VALID] += self.c_val_ns
        self._trace(r, ta, TR_LEASE, i)
        if lease_expired(self.expiry[r], ta):
            self.cnt[K_EXPIRED] += 1
            self._refuse(r, tv, i)
            return
        c = self.cls[r]
        prio = self.cls_prio[c]
        n_free = self._free(i)
        v = self._lease_victim(i, c, n_free, &v_prio)
        # The validator's rule (regional/_lease_rule.pxd): one device, the victim's priority.
        verdict = lease_verdict(n_free, 1, self.preempt != PRE_NONE, v_prio, prio)
        if verdict == LR_ACCEPT:
            self.cnt[K_ACCEPT] += 1
            self._accept_start(r, i, tv, tv, 0, 0, -1)
        elif verdict == LR_PREEMPT and self.preempt == PRE_MICRO:
            self._lease_micro(r, i, tv, v)
        elif verdict == LR_PREEMPT:
            self._lease_evict(r, i, tv, prio)
        else:
            self._lease_queue(r, i, tv)

    cdef inline int64_t _lease_victim(self, int64_t i, int64_t c, int64_t n_free,
                                      int64_t* v_prio) noexcept nogil:
        """The victim's slot on node i (-1: training) for class c; its priority in ``v_prio``."""
        # The dispatcher's pause rule over the running inference copies
        # (node/_dispatcher.pxd pause_victim); training first when no more urgent.
        cdef int64_t v = -1, off = self.slot_off[i]
        v_prio[0] = self.cls_prio[c]
        if n_free == 0 and self.preempt == PRE_MICRO and self.run[i] > 0:
            v = pause_victim(&self.slot_rank[off], self.node_dev[i], self.cls_rank[c])
            if v >= 0:
                v_prio[0] = self.cls_prio[self.cls[self.slot_copy[off + v] >> 1]]
        if self.train[i] > 0 and (v < 0 or self.train_prio <= v_prio[0]):
            v = -1
            v_prio[0] = self.train_prio
        return v

    cdef inline void _lease_micro(self, int64_t r, int64_t i, int64_t tv, int64_t v) noexcept nogil:
        """Micro-preemption at ``tv`` (ns): borrow a training device, or pause slot v's copy at the next boundary."""
        cdef int64_t cp, tb, slot, borrowed
        self.cnt[K_ACCEPT_MICRO] += 1
        if v < 0:  # a training kernel is paused: its device is borrowed
            self.train[i] -= 1
            self._accept_start(r, i, tv, tv, self.micro_ns, 1, -1)  # paused at a boundary (C20)
            return
        cp = self.slot_copy[self.slot_off[i] + v]
        tb = next_boundary(tv, self.quantum_ns)
        if self.cend[cp] <= tb:  # the victim ends by the boundary: its device serves the queue there
            self.ready[r] = tv
            self._q_push(i, 2 * r, False)
            self._trace(r, tv, TR_QUEUED, i)
            return
        borrowed = self.cborrow[cp]
        slot = self._pause(cp, tb)
        self._accept_start(r, i, tv, tv, self.micro_ns, borrowed, slot)

    cdef inline void _lease_evict(self, int64_t r, int64_t i, int64_t tv, int64_t prio) noexcept nogil:
        """Checkpoint preemption at ``tv`` (ns): evict the validator's victim shard, start once checkpointed."""
        cdef int64_t lo = self.node_shard_off[i], hi = self.node_shard_off[i + 1], sh, d, ck, last_p
        cdef VictimSlots vs
        vs.prio = &self.train_prio  # every shard has the training priority
        vs.prio_step = 0
        vs.count = &self.shard_dev[0]
        vs.count_step = 1
        vs.state = &self.shard_state[0]  # running shards (state 0) can be evicted
        vs.state_step = 1
        vs.live_lo = 0
        vs.live_hi = 0
        # No device is free and one is needed, so the first victim is the only one.
        sh = cover_victims(&vs, lo, hi, 0, 1, prio, &last_p)
        if sh < 0:
            sh = hi - 1
        d = self.shard_dev[sh]
        ck = self.node_ckpt_ns[i]
        self.shard_state[sh] = 1
        self.train[i] -= d
        self.hold[i] += d - 1
        if d > 1:
            self._push(tv + ck, sh, EV_CKPT)
        self.cnt[K_EVICT] += 1
        self.cnt[K_LOST_NS] += d * lost_work_ns(tv, self.shard_start[sh], self.ckpt_interval_ns)
        self.cnt[K_CKPT_NS] += d * ck
        self.cnt[K_ACCEPT_CKPT] += 1
        self._accept_start(r, i, tv, tv + ck, 0, 0, -1)  # the device is free once checkpointed

    cdef inline void _lease_queue(self, int64_t r, int64_t i, int64_t tv) noexcept nogil:
        """No device now: queue at ``tv`` (ns) if the node's queue has room and a device will free, else refuse."""
        if self.qlen[i] < self.node_queue and self.run[i] + self.hold[i] > 0:
            self.cnt[K_ACCEPT] += 1
            self.cnt[K_QUEUED] += 1
            self.ready[r] = tv
            self._q_push(i, 2 * r, False)
            self._trace(r, tv, TR_QUEUED, i)
            return
        self.cnt[K_REFUSED] += 1
        self._refuse(r, tv, i)

    cdef inline void _refuse(self, int64_t r, int64_t tv, int64_t i) noexcept nogil:
        self._trace(r, tv, TR_REFUSED, i)
        self._push_lane(self.n_sched, tv + self.rtt_half_ns, r, EV_RETRY)

    cdef void _release(self, int64_t i, int64_t borrowed, int64_t t, int64_t slot) noexcept nogil:
        self.run[i] -= 1
        if self.qlen[i] > 0 and (borrowed or self._free(i) > 0):
            self._serve_queue(i, t, borrowed, slot)  # the next queued copy (a borrowed device stays borrowed)
            return
        if borrowed:
            self.train[i] += 1
        self._resume_shards(i)

    cdef void _resume_shards(self, int64_t i) noexcept nogil:
        cdef int64_t sh, d
        for sh in range(self.node_shard_off[i], self.node_shard_off[i + 1]):
            if self.shard_state[sh] == 1 and self.qlen[i] == 0:
                d = self.shard_dev[sh]
                if self._free(i) >= d:
                    self.shard_state[sh] = 0
                    self.train[i] += d
                    self.cnt[K_RESUMED] += 1

    cdef void _finish(self, int64_t c, int64_t t) noexcept nogil:
        cdef int64_t r, i, o, j
        if self.cstate[c] != CS_RUN or self.cend[c] != t:
            return  # killed (the other copy won), or the end of a run since paused
        r = c >> 1
        self.cstate[c] = CS_ENDED
        i = self.cnode[c]
        self.busy_type[self.node_type[i]] += t - self.cstart[c]
        if self.cborrow[c]:
            self.cnt[K_MICRO_NS] += t - self.cstart[c]
        if c & 1:
            self.cnt[K_HEDGE_NS] += t - self.cstart[c]
            self.cnt[K_HEDGE_WON] += 1
        self._release(i, self.cborrow[c], t, self._free_slot(c))
        o = c ^ 1
        if self.cstate[o] == CS_PAUSED:  # the slower copy waits paused: withdraw it from its queue
            self.cstate[o] = CS_ENDED
            j = self.cnode[o]
            self._q_remove(j, o)
            self._resume_shards(j)
        elif self.cstate[o] == CS_RUN:
            self.cstate[o] = CS_ENDED
            j = self.cnode[o]
            self.busy_type[self.node_type[j]] += t - self.cstart[o]
            if o & 1:
                self.cnt[K_HEDGE_NS] += t - self.cstart[o]
            if self.cborrow[o]:
                self.cnt[K_MICRO_NS] += t - self.cstart[o]
            self._release(j, self.cborrow[o], t, self._free_slot(o))
        self.status[r] = ST_DONE
        self.finish[r] = t
        self.cnt[K_DONE] += 1
        self._trace(r, t, TR_FINISH, i)

    cdef void _hedge(self, int64_t r, int64_t t) noexcept nogil:
        cdef int64_t i0, ct, lo, hi, best = -1, _k, j
        if self.status[r] != ST_RUN:
            return
        i0 = self.cnode[2 * r]
        ct = self.cls[r] * self.n_types + self.node_type[i0]  # same type, able to serve the class
        lo = self.type_off[ct]
        hi = self.type_off[ct + 1]
        for _k in range(HEDGE_PROBES):  # node/_hedge_rule.pxd
            j = self.type_nodes[lo + <int64_t> self._rand(hi - lo)]
            if takes_copy(j, i0, self._free(j)):
                best = j
                break
        if best < 0:
            self.cnt[K_HEDGE_NONE] += 1
            return
        self.cnt[K_HEDGES] += 1
        self._trace(r, t, TR_HEDGE, best)
        self._start_copy(2 * r + 1, best, self._align(t + 2 * self.rtt_half_ns), 0, -1)

    cdef void _gossip(self, int64_t t) noexcept nogil:
        cdef int64_t m = self.ring_m, k = self.tick + 1, slot, i, lg, src, ts, age = 0
        cdef bint in_part = self.part_start_ns <= t < self.part_end_ns
        slot = k % m
        for i in range(self.n_nodes):
            age += t - self.view_time[i]  # before and after the update: the mean over the interval
            self.snap_busy[slot * self.n_nodes + i] = self._busy(i)
            self.snap_train[slot * self.n_nodes + i] = self.train[i]
            lg = self.lag[i]
            if lg > k:
                lg = k
            if lg > m - 1:
                lg = m - 1
            ts = t - lg * self.gossip_ns  # when the gossiped state was taken at the node
            # cut off by the partition, or older than the entry the scheduler holds (a lease
            # reply): the scheduler's entry for i stays as it was
            if not (in_part and self.part[i]) and ts >= self.view_ver[i]:
                src = ((k - lg) % m) * self.n_nodes + i  # slot-major: one slot's nodes are contiguous
                self.view_busy[i] = self.snap_busy[src]
                self.view_train[i] = self.snap_train[src]
                self.view_time[i] = ts
                self.view_ver[i] = ts
            age += t - self.view_time[i]
        self.cnt[K_VIEW_AGE_NS] += age
        self.cnt[K_VIEW_SAMPLES] += 2 * self.n_nodes
        self.tick = k
        self.cnt[K_GOSSIP] += 1
        self._push(t + self.gossip_ns, 0, EV_GOSSIP)

    cdef void _ckpt_done(self, int64_t sh) noexcept nogil:
        cdef int64_t i = self.shard_node[sh]
        self.hold[i] -= self.shard_dev[sh] - 1
        while self.qlen[i] > 0 and self._free(i) > 0:
            self._serve_queue(i, self.now, 0, -1)
        self._resume_shards(i)

    cdef int64_t _advance(self, int64_t t_end) noexcept nogil:
        cdef int64_t handled = 0, t, payload, kind, ident
        while self._pop_next(t_end, &t, &payload):
            self.now = t
            kind = payload & 7
            ident = payload >> 3
            handled += 1
            if kind == EV_ROUND:
                if t == self.next_round:
                    self._round(t)
            elif kind == EV_LEASE:
                self._lease(ident, t)
            elif kind == EV_FINISH:
                self._finish(ident, t)
            elif kind == EV_HEDGE:
                self._hedge(ident, t)
            elif kind == EV_GOSSIP:
                self._gossip(t)
            elif kind == EV_RETRY:
                self._fail_attempt(ident, t)
            else:
                self._ckpt_done(ident)
        self.cnt[K_EVENTS] += handled
        return handled

    def advance(self, t_end):
        """Handle every event before ``t_end`` (ns); return the number handled."""
        cdef int64_t te = t_end, h
        with nogil:
            h = self._advance(te)
        return h

    @property
    def tick_count(self):
        return self.tick

    def pending(self):
        return self.pend_len
