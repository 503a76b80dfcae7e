"""The serving simulator, compiled: the loop of :mod:`magnum_lib.serving.serve_ref`, in C.

Same semantics, event for event (read serve_ref's module docstring: this file follows it
and keeps its names). ``run_checked(args, bar)`` has the reference's signature and gives
the same :class:`~magnum_lib.serving.serve_ref.ServingResult`, every array and counter
equal. The four built-in routers run inside the kernel; any other router (a user's
plug-in, or a subclass of a built-in one) runs on the readable loop instead.

How the reference's Python containers map to C, all over plain int64 arrays:

* a replica's waiting deque and running list: one doubly linked list per replica through
  ``nxt``/``prv`` (a request is in at most one of them at a time); its iteration's batch: a
  singly linked list through ``bnext`` with ``bchunk`` (the reference's ``(r, c)`` pairs);
* a request's prefix references ``refs[r]`` are always the first ``nref[r]`` of its hashes;
* the prefix cache of every replica: one open-addressing table keyed by ``replica x H +
  hash`` (hash ids made dense in Python) over an arena of entries, each with its
  reference count and its links in its replica's LRU list of unreferenced entries;
* the event heap: ``base/_heap.pxd`` (time, then insertion order: heapq's order on
  ``(t, seq)``), payload ``2 x replica`` (iteration end) or ``2 x request + 1`` (KV arrival);
* power-of-two's draw: NumPy's ``Generator.choice(k, 2, replace=False)`` (Floyd's
  algorithm, then a shuffle, with Lemire's bounded integers) on the run's own PCG64,
  through its C interface, so both forms consume the same stream.

Floating point follows the reference's operation order (replica.py), so iteration times
round to the same nanosecond.
"""
from cpython.pycapsule cimport PyCapsule_GetPointer
from libc.math cimport ceil, pow
from libc.stdint cimport UINT32_MAX, int64_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, qsort
from libc.string cimport memset
from numpy.random cimport bitgen_t

import numpy as np

from magnum_lib.base._growth cimport grow_array
from magnum_lib.base._heap cimport Heap, heap_init, heap_peek, heap_pop, heap_push
from magnum_lib.serving import routers as _routers
from magnum_lib.serving import serve_ref as _reference

__all__ = ["run_checked", "runs_in_kernel"]

# request status and host state (serve_ref's codes)
DEF WAITING = 0
DEF RUNNING = 1
DEF DONE = 2
DEF REFUSED = 3
DEF TRANSFER = 4
DEF PENDING = 5
DEF NO_HOST = 0
DEF SWAPPED = 1
DEF TRANSFERRED = 2
# routers
DEF R_ROUND_ROBIN = 0
DEF R_LEAST = 1
DEF R_POWER2 = 2
DEF R_PREFIX = 3
# counters, in serve_ref's order
DEF C_ITER = 0
DEF C_PREFILL = 1
DEF C_PREFILL_DONE = 2
DEF C_DECODE = 3
DEF C_OUTPUT = 4
DEF C_CACHED = 5
DEF C_RECOMPUTE = 6
DEF C_SWAP = 7
DEF C_SWAP_TOK = 8
DEF C_TRANSFER_TOK = 9
DEF C_REFUSED = 10
DEF N_COUNTERS = 11
COUNTER_NAMES = ("iterations", "prefill_tokens", "prefill_completions", "decode_tokens", "output_tokens",
                 "cached_tokens", "preempt_recompute", "preempt_swap", "swap_tokens", "transfer_tokens",
                 "refused")
_ROUTER_CODES = {_routers.RoundRobin: R_ROUND_ROBIN, _routers.LeastOutstanding: R_LEAST,
                 _routers.PowerOfTwo: R_POWER2, _routers.PrefixAware: R_PREFIX}
cdef int64_t INF = 1 << 62
cdef double NS = 1e9


def runs_in_kernel(router) -> bool:
    """True for the built-in routers (exact classes); a plug-in runs on the readable loop."""
    return type(router) in _ROUTER_CODES


cdef int _by_value(const void* a, const void* b) noexcept nogil:
    cdef int64_t x = (<const int64_t*>a)[0], y = (<const int64_t*>b)[0]
    return (x > y) - (x < y)


# ---------------------------------------------------------------- NumPy's bounded draws
cdef inline uint64_t _bounded(bitgen_t* bg, uint64_t rng) noexcept nogil:
    # numpy's random_bounded_uint64(bg, 0, rng, 0, use_masked=False) for rng < 2**32 - 1:
    # Lemire's multiply-shift with rejection, one fresh 32-bit draw each try
    cdef uint32_t rng_excl, threshold, leftover
    cdef uint64_t m
    if rng == 0:
        return 0
    rng_excl = <uint32_t>rng + 1
    m = <uint64_t>bg.next_uint32(bg.state) * rng_excl
    leftover = <uint32_t>m  # the low 32 bits
    if leftover < rng_excl:
        threshold = (UINT32_MAX - <uint32_t>rng) % rng_excl
        while leftover < threshold:
            m = <uint64_t>bg.next_uint32(bg.state) * rng_excl
            leftover = <uint32_t>m  # the low 32 bits
    return m >> 32


cdef inline void _choice2(bitgen_t* bg, int64_t k, int64_t* a, int64_t* b) noexcept nogil:
    # Generator.choice(k, 2, replace=False): Floyd's sampling over j = k - 2, k - 1, then shuffle
    cdef int64_t idx[2]
    cdef int64_t v, tmp
    cdef uint64_t j
    idx[0] = <int64_t>_bounded(bg, <uint64_t>(k - 2))
    v = <int64_t>_bounded(bg, <uint64_t>(k - 1))
    idx[1] = k - 1 if v == idx[0] else v
    j = _bounded(bg, 1)
    tmp = idx[j]
    idx[j] = idx[1]
    idx[1] = tmp
    a[0] = idx[0]
    b[0] = idx[1]


def choice2(rng, int64_t k, int64_t times):
    """``times`` draws of ``rng.choice(k, 2, replace=False)`` as the kernel makes them (a test hook)."""
    cdef bitgen_t* bg = <bitgen_t*>PyCapsule_GetPointer(rng.bit_generator.capsule, "BitGenerator")
    out = np.empty((times, 2), np.int64)
    cdef int64_t[:, ::1] o = out
    cdef int64_t i
    with rng.bit_generator.lock:
        for i in range(times):
            _choice2(bg, k, &o[i, 0], &o[i, 1])
    return out


# ---------------------------------------------------------------- the kernel
cdef class _Kernel:
    # inputs
    cdef int64_t n, n_rep, n_p, n_entry, H, hb, bs, ppe, pages, max_batch, budget
    cdef bint static, swap, prefix
    cdef int router
    cdef double pw, lw
    cdef const int64_t[::1] arrival, prompt, output, hptr, hid
    # cost constants (replica.py's expressions, precomputed in the same order)
    cdef double a2, b4, tp, moe_q, experts, shared, expert_p, dtype_b, dense_w, kvdev, c_den, m_den
    cdef double k1, link, lat, overhead, host_bps, xfer_bps, layers2
    cdef int64_t hidden_db
    cdef bint moe, tp_comm
    # requests
    cdef int64_t[::1] computed, target, gen, own, nref, host, status, first, finish, routed, drep, hit, npre
    cdef int64_t[::1] admitted, nxt, prv, bnext, bchunk
    # replicas
    cdef int64_t[::1] role_prefill, free_p, evictions, lru_head, lru_tail, lru_len
    cdef int64_t[::1] l_head, l_tail, l_len, busy, b_head, b_tail  # lists: [2 i] waiting, [2 i + 1] running
    cdef int64_t[::1] outstanding, busy_ns, dirty, dirty_list
    cdef double[::1] swap_s
    cdef int64_t[::1] counters
    cdef int64_t rr[2]
    # prefix cache: table of entry ids, entries' key, refcount, LRU links
    cdef int64_t* tab
    cdef int64_t tab_mask, tab_bits, tab_count
    cdef int64_t* e_key
    cdef int64_t* e_rc
    cdef int64_t* e_prev
    cdef int64_t* e_next
    cdef int64_t e_cap, e_used, e_free
    # outputs that grow
    cdef int64_t* kv_t
    cdef int64_t* kv_rep
    cdef int64_t* kv_used
    cdef int64_t kv_n, kv_cap
    cdef Heap heap
    cdef bint oom
    # loop state (a run may pause between instants, for the progress bar)
    cdef public int64_t next_arrival, t_last, area, in_system
    cdef object rng
    cdef bitgen_t* bg

    def __cinit__(self):
        self.tab = NULL
        self.e_key = self.e_rc = self.e_prev = self.e_next = NULL
        self.kv_t = self.kv_rep = self.kv_used = NULL
        self.heap.data = NULL

    def __dealloc__(self):
        free(self.tab)
        free(self.e_key)
        free(self.e_rc)
        free(self.e_prev)
        free(self.e_next)
        free(self.kv_t)
        free(self.kv_rep)
        free(self.kv_used)
        free(self.heap.data)

    def __init__(self, args):
        reqs, spec, m = args.requests, args.replica, args.replica.model
        n = self.n = len(reqs)
        self.n_rep, self.n_p = args.n_rep, args.n_prefill
        self.n_entry = args.n_prefill if args.n_prefill else args.n_rep
        self.static, self.swap, self.prefix = args.batching == "static", args.preemption == "swap", args.prefix
        self.max_batch = args.max_batch
        self.budget = args.token_budget if args.batching == "chunked" else INF
        self.bs, self.hb, self.pages, self.ppe = spec.block_size, reqs.hash_block, spec.kv_blocks, args.pages_per_entry
        self.router = _ROUTER_CODES[type(args.router)]
        if self.router == R_PREFIX:
            self.pw, self.lw = args.router.prefix_weight, args.router.load_weight
        self.arrival, self.prompt, self.output = reqs.arrival_ns, reqs.prompt, reqs.output
        if self.prefix:
            uniq, dense = np.unique(reqs.hash_ids, return_inverse=True)
            self.H = max(uniq.size, 1)
            self.hptr, self.hid = reqs.hash_ptr, np.ascontiguousarray(dense, np.int64)
        else:
            self.H = 1
            self.hptr, self.hid = np.zeros(n + 1, np.int64), np.zeros(1, np.int64)
        self._roofline(m, spec)

        def z(k, fill=0):
            return np.full(k, fill, np.int64)

        self.computed, self.target, self.gen, self.own, self.nref = z(n), z(n), z(n), z(n), z(n)
        self.host, self.status, self.first, self.finish = z(n), z(n, PENDING), z(n, -1), z(n, -1)
        self.routed, self.drep, self.hit, self.npre, self.admitted = z(n, -1), z(n, -1), z(n), z(n), z(n)
        self.nxt, self.prv, self.bnext, self.bchunk = z(n, -1), z(n, -1), z(n, -1), z(n)
        R = self.n_rep
        self.role_prefill = np.array([1 if i < self.n_p else 0 for i in range(R)], np.int64)
        self.free_p, self.evictions = z(R, self.pages), z(R)
        self.lru_head, self.lru_tail, self.lru_len = z(R, -1), z(R, -1), z(R)
        self.l_head, self.l_tail, self.l_len = z(2 * R, -1), z(2 * R, -1), z(2 * R)
        self.busy, self.b_head, self.b_tail = z(R), z(R, -1), z(R, -1)
        self.outstanding, self.busy_ns, self.dirty, self.dirty_list = z(R), z(R), z(R), z(R)
        self.swap_s = np.zeros(R, np.float64)
        self.counters = z(N_COUNTERS)
        self.rr[0] = self.rr[1] = 0
        router = args.router
        if hasattr(router, "reset"):
            router.reset(R)  # as the reference does (the kernel keeps the routers' state itself)
        self.rng = np.random.default_rng(args.seed)
        self.bg = <bitgen_t*>PyCapsule_GetPointer(self.rng.bit_generator.capsule, "BitGenerator")
        self.tab_bits = 10
        self.tab_mask = (1 << self.tab_bits) - 1
        self.tab = <int64_t*>malloc((self.tab_mask + 1) * sizeof(int64_t))
        self.e_cap = 512
        self.e_key = <int64_t*>malloc(self.e_cap * sizeof(int64_t))
        self.e_rc = <int64_t*>malloc(self.e_cap * sizeof(int64_t))
        self.e_prev = <int64_t*>malloc(self.e_cap * sizeof(int64_t))
        self.e_next = <int64_t*>malloc(self.e_cap * sizeof(int64_t))
        self.kv_cap = 1024
        self.kv_t = <int64_t*>malloc(self.kv_cap * sizeof(int64_t))
        self.kv_rep = <int64_t*>malloc(self.kv_cap * sizeof(int64_t))
        self.kv_used = <int64_t*>malloc(self.kv_cap * sizeof(int64_t))
        heap_init(&self.heap, 64)
        if (self.tab == NULL or self.e_key == NULL or self.e_rc == NULL or self.e_prev == NULL
                or self.e_next == NULL or self.kv_t == NULL or self.kv_rep == NULL or self.kv_used == NULL
                or self.heap.data == NULL):
            raise MemoryError("serving kernel: out of memory")
        memset(self.tab, 0xFF, (self.tab_mask + 1) * sizeof(int64_t))
        self.tab_count = self.e_used = 0
        self.e_free = -1
        self.kv_n = 0
        self.oom = False
        self.next_arrival = self.t_last = self.area = self.in_system = 0

    def _roofline(self, m, spec):
        """The constants of replica.py's IterationCost, swap_time and transfer_time (FLOPs, bytes, B/s)."""
        self.a2 = 2.0 * m.active_params
        self.b4 = 4.0 * m.layers * m.heads * m.head_dim
        self.tp = float(spec.tp)
        self.moe = m.experts != 1
        self.moe_q = 1.0 - m.experts_per_token / m.experts
        self.experts, self.shared, self.expert_p = float(m.experts), float(m.shared_params), float(m.expert_params)
        self.dtype_b = float(m.dtype_bytes)
        self.dense_w = float(m.params * m.dtype_bytes)
        self.kvdev = spec.kv_bytes_per_token_device
        self.c_den = spec.device.peak(m.dtype) * spec.compute_efficiency
        self.m_den = spec.device.mem_bandwidth_Bps * spec.memory_efficiency
        self.tp_comm = spec.tp > 1
        self.k1 = 2.0 * (spec.tp - 1) / spec.tp
        self.hidden_db = m.hidden * m.dtype_bytes
        self.link = float(spec.link.per_direction_Bps)
        self.lat, self.overhead = float(spec.allreduce_latency_s), float(spec.overhead_s)
        self.layers2 = float(2 * m.layers)
        self.host_bps = float(spec.host_link.per_direction_Bps)
        self.xfer_bps = float(spec.transfer_link.per_direction_Bps)

    # ------------------------------------------------------------ the roofline (replica.py)
    cdef inline double _iter_time(self, int64_t n, int64_t pairs, int64_t kv_read) noexcept nogil:
        cdef double flops, nbytes, wbr, touched, compute, memory, comm = 0.0
        if n <= 0:
            return self.overhead
        flops = (self.a2 * <double>n + self.b4 * <double>pairs) / self.tp
        if self.moe:
            touched = self.experts * (1.0 - pow(self.moe_q, <double>n))
            wbr = (self.shared + self.expert_p * touched) * self.dtype_b
        else:
            wbr = self.dense_w
        nbytes = wbr / self.tp + self.kvdev * <double>(kv_read + n)
        compute = flops / self.c_den
        memory = nbytes / self.m_den
        if self.tp_comm:
            comm = self.layers2 * (self.k1 * <double>(n * self.hidden_db) / self.link + self.lat)
        if memory > compute:
            compute = memory
        return compute + comm + self.overhead

    # ------------------------------------------------------------ small helpers
    cdef inline int64_t _remaining(self, int64_t r) noexcept nogil:
        cdef int64_t left = self.target[r] - self.computed[r]
        return (left if left > 0 else 0) + self.output[r] - self.gen[r]

    cdef inline int64_t _npages(self, int64_t tokens) noexcept nogil:
        return (tokens + self.bs - 1) // self.bs

    cdef inline int64_t _hash_limit(self, int64_t r) noexcept nogil:
        cdef int64_t a = self.prompt[r] // self.hb, b = (self.prompt[r] + self.gen[r] - 1) // self.hb
        return a if a < b else b

    cdef inline int64_t _chunk(self, int64_t r, int64_t budget) noexcept nogil:
        cdef int64_t left = self.target[r] - self.computed[r]
        if left > 0:
            return left if left < budget else budget
        return 1 if budget >= 1 else 0

    # a replica's two lists: L = 2 i (waiting, a deque) or 2 i + 1 (running, admission order)
    cdef inline void _append(self, int64_t L, int64_t r) noexcept nogil:
        self.nxt[r] = -1
        self.prv[r] = self.l_tail[L]
        if self.l_tail[L] >= 0:
            self.nxt[self.l_tail[L]] = r
        else:
            self.l_head[L] = r
        self.l_tail[L] = r
        self.l_len[L] += 1

    cdef inline void _remove(self, int64_t L, int64_t r) noexcept nogil:
        if self.prv[r] >= 0:
            self.nxt[self.prv[r]] = self.nxt[r]
        else:
            self.l_head[L] = self.nxt[r]
        if self.nxt[r] >= 0:
            self.prv[self.nxt[r]] = self.prv[r]
        else:
            self.l_tail[L] = self.prv[r]
        self.l_len[L] -= 1

    cdef inline void _prepend(self, int64_t L, int64_t r) noexcept nogil:
        self.prv[r] = -1
        self.nxt[r] = self.l_head[L]
        if self.l_head[L] >= 0:
            self.prv[self.l_head[L]] = r
        else:
            self.l_tail[L] = r
        self.l_head[L] = r
        self.l_len[L] += 1

    cdef inline void _batch_add(self, int64_t i, int64_t r, int64_t c) noexcept nogil:
        self.bnext[r] = -1
        self.bchunk[r] = c
        if self.b_tail[i] >= 0:
            self.bnext[self.b_tail[i]] = r
        else:
            self.b_head[i] = r
        self.b_tail[i] = r

    cdef inline int _push(self, int64_t t, int64_t payload) noexcept nogil:
        if heap_push(&self.heap, t, payload) < 0:
            self.oom = True
            return -1
        return 0

    # ------------------------------------------------------------ prefix cache (kvcache.py)
    cdef inline int64_t _slot(self, int64_t key) noexcept nogil:
        return <int64_t>((<uint64_t>key * <uint64_t>0x9E3779B97F4A7C15) >> (64 - self.tab_bits))

    cdef inline int64_t _find(self, int64_t i, int64_t h) noexcept nogil:
        cdef int64_t key = i * self.H + h, pos = self._slot(key), e
        while True:
            e = self.tab[pos]
            if e < 0:
                return -1
            if self.e_key[e] == key:
                return e
            pos = (pos + 1) & self.tab_mask

    cdef inline void _tab_put(self, int64_t e) noexcept nogil:
        cdef int64_t pos = self._slot(self.e_key[e])
        while self.tab[pos] >= 0:
            pos = (pos + 1) & self.tab_mask
        self.tab[pos] = e

    cdef int _grow(self) noexcept nogil:
        # more entries (arena doubled) and a table kept at most half full (rehashed)
        cdef int64_t cap = self.e_cap * 2, k
        if (grow_array(<void**>&self.e_key, cap, sizeof(int64_t)) < 0
                or grow_array(<void**>&self.e_rc, cap, sizeof(int64_t)) < 0
                or grow_array(<void**>&self.e_prev, cap, sizeof(int64_t)) < 0
                or grow_array(<void**>&self.e_next, cap, sizeof(int64_t)) < 0):
            return -1
        self.e_cap = cap
        if 2 * cap > self.tab_mask + 1:
            if grow_array(<void**>&self.tab, 4 * cap, sizeof(int64_t)) < 0:
                return -1
            self.tab_mask = 4 * cap - 1
            self.tab_bits = 0
            while (<int64_t>1 << self.tab_bits) < 4 * cap:
                self.tab_bits += 1
            memset(self.tab, 0xFF, 4 * cap * sizeof(int64_t))
            # live entries: every arena slot not on the free list
            for k in range(self.e_used):
                if self.e_rc[k] >= 0:
                    self._tab_put(k)
        return 0

    cdef inline int64_t _insert(self, int64_t i, int64_t h) noexcept nogil:
        """A new entry for ``h`` in replica ``i`` referenced once; -1 when out of memory."""
        cdef int64_t e
        if self.e_free >= 0:
            e = self.e_free
            self.e_free = self.e_next[e]
        else:
            if self.e_used == self.e_cap and self._grow() < 0:
                self.oom = True
                return -1
            e = self.e_used
            self.e_used += 1
        self.e_key[e] = i * self.H + h
        self.e_rc[e] = 1
        self._tab_put(e)
        self.tab_count += 1
        return e

    cdef inline void _erase(self, int64_t e) noexcept nogil:
        # backward-shift deletion (linear probing keeps no tombstones)
        cdef int64_t pos = self._slot(self.e_key[e]), j, k, mask = self.tab_mask
        while self.tab[pos] != e:
            pos = (pos + 1) & mask
        j = pos
        while True:
            j = (j + 1) & mask
            if self.tab[j] < 0:
                break
            k = self._slot(self.e_key[self.tab[j]])
            if (k <= j and (pos < k or pos > j)) or (k > j and pos < k and pos > j):
                continue  # tab[j] sits at or after its home past the hole: leave it
            self.tab[pos] = self.tab[j]
            pos = j
        self.tab[pos] = -1
        self.tab_count -= 1
        self.e_rc[e] = -1
        self.e_next[e] = self.e_free
        self.e_free = e

    cdef inline void _lru_unlink(self, int64_t i, int64_t e) noexcept nogil:
        if self.e_prev[e] >= 0:
            self.e_next[self.e_prev[e]] = self.e_next[e]
        else:
            self.lru_head[i] = self.e_next[e]
        if self.e_next[e] >= 0:
            self.e_prev[self.e_next[e]] = self.e_prev[e]
        else:
            self.lru_tail[i] = self.e_prev[e]
        self.lru_len[i] -= 1

    cdef inline void _ref(self, int64_t i, int64_t e) noexcept nogil:
        if self.e_rc[e] == 0:
            self._lru_unlink(i, e)
        self.e_rc[e] += 1

    cdef inline void _unref(self, int64_t i, int64_t e) noexcept nogil:
        self.e_rc[e] -= 1
        if self.e_rc[e] == 0:  # most recently used end
            self.e_next[e] = -1
            self.e_prev[e] = self.lru_tail[i]
            if self.lru_tail[i] >= 0:
                self.e_next[self.lru_tail[i]] = e
            else:
                self.lru_head[i] = e
            self.lru_tail[i] = e
            self.lru_len[i] += 1

    cdef inline bint _make_free(self, int64_t i, int64_t need) noexcept nogil:
        cdef int64_t e
        while self.free_p[i] < need and self.lru_len[i] > 0:
            e = self.lru_head[i]
            self._lru_unlink(i, e)
            self._erase(e)
            self.free_p[i] += self.ppe
            self.evictions[i] += 1
        return self.free_p[i] >= need

    cdef inline int64_t _match(self, int64_t i, int64_t r, int64_t limit) noexcept nogil:
        cdef int64_t j = 0, base = self.hptr[r]
        while j < limit and self._find(i, self.hid[base + j]) >= 0:
            j += 1
        return j

    cdef inline void _release(self, int64_t i, int64_t r) noexcept nogil:
        cdef int64_t k, base = self.hptr[r]
        self.free_p[i] += self.own[r]
        for k in range(self.nref[r] - 1, -1, -1):  # deepest block first: it becomes the older LRU entry
            self._unref(i, self._find(i, self.hid[base + k]))
        self.own[r] = 0
        self.nref[r] = 0

    # ------------------------------------------------------------ routers (routers.py)
    cdef int64_t _route(self, int64_t r, int decode) noexcept nogil:
        cdef int64_t lo = self.n_p if decode else 0
        cdef int64_t hi = self.n_rep if decode else self.n_entry
        cdef int64_t k = hi - lo, i, best, a, b, busiest, limit = 0
        cdef double s, best_s
        if self.router == R_ROUND_ROBIN:
            best = lo + self.rr[decode] % k
            self.rr[decode] += 1
            return best
        if self.router == R_LEAST:
            best = lo
            for i in range(lo + 1, hi):
                if self.outstanding[i] < self.outstanding[best]:
                    best = i
            return best
        if self.router == R_POWER2:
            if k == 1:
                return lo
            _choice2(self.bg, k, &a, &b)
            a += lo
            b += lo
            return b if self.outstanding[b] < self.outstanding[a] else a
        # prefix-aware: highest score, ties to the lowest index
        busiest = 0
        for i in range(lo, hi):
            if self.outstanding[i] > busiest:
                busiest = self.outstanding[i]
        if busiest == 0:
            busiest = 1
        if self.prefix:
            limit = self._hash_limit(r)
        best, best_s = lo, 0.0
        for i in range(lo, hi):
            a = self._match(i, r, limit) * self.hb if self.prefix else 0
            s = (self.pw * (<double>a / <double>self.prompt[r])
                 + self.lw * (1.0 - <double>self.outstanding[i] / <double>busiest))
            if i == lo or s > best_s:
                best, best_s = i, s
        return best

    # ------------------------------------------------------------ events
    cdef int64_t _arrive(self, int64_t r) noexcept nogil:
        cdef int64_t i
        if self._npages(self.prompt[r] + self.output[r]) > self.pages:
            self.status[r] = REFUSED
            self.counters[C_REFUSED] += 1
            return -1
        i = self._route(r, 0)
        self.routed[r], self.status[r], self.target[r] = i, WAITING, self.prompt[r]
        self._append(2 * i, r)
        self.outstanding[i] += self._remaining(r) - (self.output[r] - 1 if self.role_prefill[i] else 0)
        self.in_system += 1
        return i

    cdef int64_t _deliver(self, int64_t r) noexcept nogil:
        cdef int64_t i = self.drep[r]
        self.status[r], self.host[r] = WAITING, TRANSFERRED
        self._append(2 * i, r)
        return i

    cdef void _end_iteration(self, int64_t i, int64_t t) noexcept nogil:
        cdef int64_t r = self.b_head[i], nx, c, k, top, h, e, base
        cdef bint was_prefill
        self.busy[i] = 0
        while r >= 0:
            nx = self.bnext[r]
            c = self.bchunk[r]
            was_prefill = self.computed[r] < self.target[r]
            self.computed[r] += c
            if was_prefill:
                self.outstanding[i] -= c
                self.counters[C_PREFILL] += c
                if self.prefix:
                    k, base = self.nref[r], self.hptr[r]
                    top = (self.computed[r] if self.computed[r] < self.prompt[r] else self.prompt[r]) // self.hb
                    while k < top:  # a full prompt block completed: cache it (or share the copy there)
                        h = self.hid[base + k]
                        e = self._find(i, h)
                        if e < 0:
                            if self._insert(i, h) < 0:
                                return
                        else:
                            self._ref(i, e)
                            self.free_p[i] += self.ppe
                        self.own[r] -= self.ppe
                        self.nref[r] += 1
                        k += 1
                if self.computed[r] < self.target[r]:
                    r = nx
                    continue
                self.counters[C_PREFILL_DONE] += 1
            else:
                self.counters[C_DECODE] += 1
            self.gen[r] += 1
            self.outstanding[i] -= 1
            self.counters[C_OUTPUT] += 1
            if self.first[r] < 0:
                self.first[r] = t
            if self.gen[r] == self.output[r]:
                self.status[r], self.finish[r] = DONE, t
                self.in_system -= 1
                if not self.static:
                    self._remove(2 * i + 1, r)
                    self._release(i, r)
            elif self.role_prefill[i]:
                self._handoff(i, r, t)
            r = nx
        self.b_head[i] = self.b_tail[i] = -1

    cdef void _handoff(self, int64_t i, int64_t r, int64_t t) noexcept nogil:
        cdef int64_t rem, d
        self._remove(2 * i + 1, r)
        self._release(i, r)
        rem = self._remaining(r)
        d = self._route(r, 1)
        self.drep[r], self.status[r] = d, TRANSFER
        self.outstanding[d] += rem
        self.counters[C_TRANSFER_TOK] += self.computed[r]
        self._push(t + <int64_t>ceil(<double>self.computed[r] * self.kvdev / self.xfer_bps * NS), 2 * r + 1)

    # ------------------------------------------------------------ scheduling
    cdef void _preempt(self, int64_t i, int64_t r) noexcept nogil:
        cdef int64_t before
        self._remove(2 * i + 1, r)
        before = self._remaining(r)
        if self.swap:
            self.swap_s[i] += <double>self.computed[r] * self.kvdev / self.host_bps
            self.counters[C_SWAP_TOK] += self.computed[r]
            self.host[r] = SWAPPED
            self.counters[C_SWAP] += 1
        else:
            self.computed[r] = 0
            self.target[r] = self.prompt[r] + self.gen[r]
            self.counters[C_RECOMPUTE] += 1
        self._release(i, r)
        self.npre[r] += 1
        self.status[r] = WAITING
        self.outstanding[i] += self._remaining(r) - before
        self._prepend(2 * i, r)

    cdef int64_t _admit(self, int64_t i, int64_t r, int64_t budget) noexcept nogil:
        """Admit the head of replica ``i``'s line if its pages can be had; its first chunk, or 0."""
        cdef int64_t m = 0, base, before, c, want, need, in_lru = 0, k, hb0
        if self.host[r] != NO_HOST:
            base = self.computed[r]
        else:
            self.target[r] = self.prompt[r] + self.gen[r]
            if self.prefix:
                m = self._match(i, r, self._hash_limit(r))
            base = m * self.hb
        before = self._remaining(r)
        self.computed[r] = base
        c = self._chunk(r, budget)
        want = self.prompt[r] + self.output[r] if self.static else base + c
        need = self._npages(want) - m * self.ppe
        hb0 = self.hptr[r]
        for k in range(m):
            if self.e_rc[self._find(i, self.hid[hb0 + k])] == 0:
                in_lru += self.ppe
        if c == 0 or self.free_p[i] + self.lru_len[i] * self.ppe - in_lru < need:
            if self.host[r] == NO_HOST:
                self.computed[r] = 0
            return 0
        for k in range(m):
            self._ref(i, self._find(i, self.hid[hb0 + k]))
        self._make_free(i, need)
        self.free_p[i] -= need
        self.own[r], self.nref[r] = need, m
        self.outstanding[i] += self._remaining(r) - before
        if self.host[r] == SWAPPED:
            self.swap_s[i] += <double>base * self.kvdev / self.host_bps
            self.counters[C_SWAP_TOK] += base
        self.host[r] = NO_HOST
        if not self.admitted[r]:
            self.admitted[r], self.hit[r] = 1, (base if m > 0 else 0)
        self.counters[C_CACHED] += base if m > 0 else 0
        self.status[r] = RUNNING
        return c

    cdef void _schedule(self, int64_t i) noexcept nogil:
        cdef int64_t budget = self.budget, r, c, need, victim
        cdef bint preempted = False, lost
        r = self.l_head[2 * i + 1]
        while r >= 0:
            c = self._chunk(r, budget)
            if c == 0:
                r = self.nxt[r]
                continue
            need = self._npages(self.computed[r] + c) - self.own[r] - self.nref[r] * self.ppe
            if need < 0:
                need = 0
            lost = False
            while not self._make_free(i, need):
                victim = self.l_tail[2 * i + 1]
                self._preempt(i, victim)
                preempted = True
                if victim == r:
                    lost = True
                    break
            if lost:
                break
            self.free_p[i] -= need
            self.own[r] += need
            self._batch_add(i, r, c)
            budget -= c
            r = self.nxt[r]
        if not preempted or self.l_len[2 * i + 1] == 0:
            while self.l_len[2 * i] > 0 and self.l_len[2 * i + 1] < self.max_batch and budget > 0:
                r = self.l_head[2 * i]
                c = self._admit(i, r, budget)
                if c == 0:
                    break
                self._remove(2 * i, r)
                self._append(2 * i + 1, r)
                self._batch_add(i, r, c)
                budget -= c

    cdef void _schedule_static(self, int64_t i) noexcept nogil:
        cdef int64_t r = self.l_head[2 * i + 1]
        cdef bint all_done = True
        while r >= 0:
            if self.status[r] != DONE:
                all_done = False
                break
            r = self.nxt[r]
        if all_done:
            r = self.l_head[2 * i + 1]
            while r >= 0:
                self._release(i, r)
                r = self.nxt[r]
            self.l_head[2 * i + 1] = self.l_tail[2 * i + 1] = -1
            self.l_len[2 * i + 1] = 0
            while self.l_len[2 * i] > 0 and self.l_len[2 * i + 1] < self.max_batch:
                r = self.l_head[2 * i]
                if self._admit(i, r, self.budget) == 0:
                    break
                self._remove(2 * i, r)
                self._append(2 * i + 1, r)
        r = self.l_head[2 * i + 1]
        while r >= 0:
            if self.status[r] != DONE:
                self._batch_add(i, r, self._chunk(r, self.budget))
            r = self.nxt[r]

    cdef void _start_iteration(self, int64_t i, int64_t t) noexcept nogil:
        cdef int64_t r, c, k, n = 0, pairs = 0, kv_read = 0, dur
        if self.static:
            self._schedule_static(i)
        else:
            self._schedule(i)
        if self.b_head[i] < 0 and self.swap_s[i] == 0.0:
            return
        r = self.b_head[i]
        while r >= 0:
            c, k = self.bchunk[r], self.computed[r]
            n += c
            pairs += c * k + c * (c + 1) // 2
            kv_read += k
            r = self.bnext[r]
        dur = <int64_t>ceil((self._iter_time(n, pairs, kv_read) + self.swap_s[i]) * NS)
        if dur < 1:
            dur = 1
        self.swap_s[i] = 0.0
        self.busy[i] = 1
        self.busy_ns[i] += dur
        self.counters[C_ITER] += 1
        if self.kv_n == self.kv_cap:
            self.kv_cap *= 2
            if (grow_array(<void**>&self.kv_t, self.kv_cap, sizeof(int64_t)) < 0
                    or grow_array(<void**>&self.kv_rep, self.kv_cap, sizeof(int64_t)) < 0
                    or grow_array(<void**>&self.kv_used, self.kv_cap, sizeof(int64_t)) < 0):
                self.oom = True
                return
        self.kv_t[self.kv_n] = t
        self.kv_rep[self.kv_n] = i
        self.kv_used[self.kv_n] = self.pages - self.free_p[i]
        self.kv_n += 1
        self._push(t + dur, 2 * i)

    # ------------------------------------------------------------ the loop
    cdef bint _run(self, int64_t horizon, int64_t pause_at) noexcept nogil:
        """Run until the end or the horizon (True), or pause after the instant at which
        ``pause_at`` arrivals have been handled (False)."""
        cdef int64_t t, ht, payload, x, i, j, nd
        while not self.oom:
            t = INF
            if heap_peek(&self.heap, &ht, &payload):
                t = ht
            if self.next_arrival < self.n and self.arrival[self.next_arrival] < t:
                t = self.arrival[self.next_arrival]
            if t == INF or t > horizon:
                return True
            self.area += self.in_system * (t - self.t_last)
            self.t_last = t
            nd = 0
            while heap_peek(&self.heap, &ht, &payload) and ht == t:
                heap_pop(&self.heap, &ht, &payload)
                x = payload >> 1
                if payload & 1:
                    x = self._deliver(x)
                else:
                    self._end_iteration(x, t)
                if not self.dirty[x]:
                    self.dirty[x] = 1
                    self.dirty_list[nd] = x
                    nd += 1
            while self.next_arrival < self.n and self.arrival[self.next_arrival] == t:
                x = self._arrive(self.next_arrival)
                if x >= 0 and not self.dirty[x]:
                    self.dirty[x] = 1
                    self.dirty_list[nd] = x
                    nd += 1
                self.next_arrival += 1
            if nd > 1:  # lowest index first
                qsort(&self.dirty_list[0], nd, sizeof(int64_t), _by_value)
            for j in range(nd):
                i = self.dirty_list[j]
                self.dirty[i] = 0
                if not self.busy[i]:
                    self._start_iteration(i, t)
            if self.next_arrival >= pause_at:
                return False
        return True

    def run(self, int64_t horizon, int64_t pause_at):
        """Advance (see ``_run``); True when the run is over."""
        cdef bint done
        with self.rng.bit_generator.lock:
            with nogil:
                done = self._run(horizon, pause_at)
        if self.oom:
            raise MemoryError("serving kernel: out of memory while growing its tables")
        return done

    def result_arrays(self):
        def arr(m):
            return np.asarray(m).copy()

        arrays = dict(status=arr(self.status), first_token_ns=arr(self.first), finish_ns=arr(self.finish),
                      routed=arr(self.routed), decode_replica=arr(self.drep), prefix_hit_tokens=arr(self.hit),
                      preempted=arr(self.npre), busy_ns=arr(self.busy_ns), kv_t_ns=_copy(self.kv_t, self.kv_n),
                      kv_replica=_copy(self.kv_rep, self.kv_n), kv_used=_copy(self.kv_used, self.kv_n))
        counters = {name: int(self.counters[k]) for k, name in enumerate(COUNTER_NAMES)}
        counters["evictions"] = int(np.asarray(self.evictions).sum())
        return arrays, counters


cdef object _copy(int64_t* p, int64_t n):
    out = np.empty(n, np.int64)
    cdef int64_t[::1] o = out
    cdef int64_t k
    for k in range(n):
        o[k] = p[k]
    return out


def run_checked(args, bar=None):
    """Run the compiled loop on checked inputs (serve_ref.run_checked's signature and result).

    A router that is not one of the four built-in classes runs on the readable loop."""
    if not runs_in_kernel(args.router):
        return _reference.run_checked(args, bar)
    k = _Kernel(args)
    # pause every so many arrivals: the bar moves, and Ctrl-C is seen between two stretches
    step = 4096 if bar is not None else 65536
    pause = step
    while not k.run(args.horizon_ns, pause):
        if bar is not None:
            bar.update(k.next_arrival - bar.n)
        pause = k.next_arrival + step
    if bar is not None:
        bar.update(k.next_arrival - bar.n)
    arrays, counters = k.result_arrays()
    return _reference.make_result(args, arrays, counters, k.t_last, k.area)
