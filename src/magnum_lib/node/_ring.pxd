# The compiled single-producer single-consumer ring of int64 items.
#
# The state is a plain C struct (declared in the verbatim C below so that it can carry
# alignment: the consumer's and the producer's counters each own a cache-line pair, so
# the two threads never write to the same line: no false sharing). The operations are
# `cdef inline ... noexcept nogil` functions here, so a kernel that `cimport`s them (a
# dispatcher loop) gets them inlined; RingBuffer in _ring.pyx wraps the struct for Python.
#
# Protocol (Lamport's ring with C11 acquire/release, as in Rigtorp's SPSCQueue):
#   head, tail are monotonically increasing int64 counters; slot = counter & mask.
#   Producer: write slots [tail, tail+k), then store-release tail+k (publishes the items).
#   Consumer: load-acquire tail, read slots [head, tail), then store-release head+k
#   (hands the slots back). Each side also keeps a private cached copy of the other
#   side's counter and reloads it (acquire) only when the cache says full / empty, so
#   the hot path touches only its own cache line.
# Zero-copy spans: ring_claim/ring_publish (producer) and ring_peek/ring_consume (consumer)
# hand out contiguous runs of slots to write or read in place; push_many / pop_many and
# the single-item calls are built on them.
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcpy

from magnum_lib._typedefs cimport intp_t


cdef extern from *:
    """
    #include <stdint.h>
    #include <stdlib.h>
    #include <sched.h>
    #include <time.h>

    /* Two 64-byte lines: Intel's adjacent-line prefetcher pulls lines in pairs. */
    #define MAGNUM_RING_LINE 128

    typedef struct magnum_ring {
        /* Read-only after creation: both threads read it, nobody writes it. */
        int64_t *slots;
        int64_t mask;
        int64_t capacity;
        /* Consumer-owned line: written only by the consumer. */
        _Alignas(MAGNUM_RING_LINE) int64_t head;  /* next counter to read */
        int64_t tail_cache;                      /* consumer's last view of tail */
        /* Producer-owned line: written only by the producer. */
        _Alignas(MAGNUM_RING_LINE) int64_t tail;  /* next counter to write */
        int64_t head_cache;                      /* producer's last view of head */
    } magnum_ring;  /* sizeof is rounded up to 3 * MAGNUM_RING_LINE: nothing follows tail on its line */

    static inline int64_t magnum_load_acquire(const int64_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
    static inline int64_t magnum_load_relaxed(const int64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
    static inline void magnum_store_release(int64_t *p, int64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

    /* Tell the core we are spinning (frees pipeline resources for the sibling hyperthread). */
    static inline void magnum_cpu_relax(void) {
    #if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
    #elif defined(__aarch64__)
        __asm__ __volatile__("yield");
    #endif
    }

    static inline double magnum_monotonic_s(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    }

    static magnum_ring *magnum_ring_new(int64_t capacity) {
        magnum_ring *r = (magnum_ring *)aligned_alloc(MAGNUM_RING_LINE, sizeof(magnum_ring));
        size_t bytes = (size_t)capacity * sizeof(int64_t);
        if (r == NULL) return NULL;
        /* aligned_alloc wants a size that is a multiple of the alignment. */
        bytes = (bytes + MAGNUM_RING_LINE - 1) / MAGNUM_RING_LINE * MAGNUM_RING_LINE;
        r->slots = (int64_t *)aligned_alloc(MAGNUM_RING_LINE, bytes);
        if (r->slots == NULL) { free(r); return NULL; }
        r->capacity = capacity;
        r->mask = capacity - 1;
        r->head = r->tail_cache = r->tail = r->head_cache = 0;
        return r;
    }

    static void magnum_ring_free(magnum_ring *r) {
        if (r != NULL) { free(r->slots); free(r); }
    }
    """
    ctypedef struct magnum_ring:
        int64_t* slots
        int64_t mask
        int64_t capacity
        int64_t head
        int64_t tail_cache
        int64_t tail
        int64_t head_cache

    int64_t load_acquire "magnum_load_acquire"(const int64_t* p) noexcept nogil
    int64_t load_relaxed "magnum_load_relaxed"(const int64_t* p) noexcept nogil
    void store_release "magnum_store_release"(int64_t* p, int64_t v) noexcept nogil
    void cpu_relax "magnum_cpu_relax"() noexcept nogil
    int sched_yield() noexcept nogil
    double monotonic_s "magnum_monotonic_s"() noexcept nogil
    magnum_ring* ring_new "magnum_ring_new"(int64_t capacity) noexcept nogil
    void ring_free "magnum_ring_free"(magnum_ring* r) noexcept nogil


cdef inline intp_t ring_span(magnum_ring* r, int64_t counter, intp_t available,
                             intp_t wanted) noexcept nogil:
    """How many of ``available`` slots from ``counter`` on to use: at most ``wanted``, and
    not past the end of the slot array (the rest comes in the next span)."""
    cdef intp_t k = r.capacity - (counter & r.mask)
    if k > available:
        k = available
    if k > wanted:
        k = wanted
    return k if k > 0 else 0


# ---- producer side (call from exactly one thread) -------------------------------------

cdef inline intp_t ring_free_slots(magnum_ring* r, intp_t wanted) noexcept nogil:
    """Free slots as the producer sees them; refresh the cached head only if < wanted."""
    cdef int64_t tail = load_relaxed(&r.tail)  # our own counter: no ordering needed
    cdef int64_t free_slots = r.capacity - (tail - r.head_cache)
    if free_slots < wanted:
        # Acquire pairs with the consumer's release of head: its reads of those slots
        # are finished before we overwrite them.
        r.head_cache = load_acquire(&r.head)
        free_slots = r.capacity - (tail - r.head_cache)
    return free_slots


cdef inline intp_t ring_claim(magnum_ring* r, intp_t wanted, int64_t** span) noexcept nogil:
    """Zero-copy push, step 1: up to ``wanted`` free slots, contiguous in memory, at ``*span``.

    Returns how many (0 when full; fewer than are free at the wrap). Write the items
    there, then ``ring_publish``: no intermediate buffer, the items cross memory once.
    """
    cdef int64_t tail = load_relaxed(&r.tail)  # our own counter: no ordering needed
    span[0] = &r.slots[tail & r.mask]
    return ring_span(r, tail, ring_free_slots(r, wanted), wanted)


cdef inline void ring_publish(magnum_ring* r, intp_t k) noexcept nogil:
    """Zero-copy push, step 2: hand the first ``k`` claimed slots to the consumer."""
    # Release: the slot writes become visible to the consumer before the new tail does.
    store_release(&r.tail, load_relaxed(&r.tail) + k)


cdef inline intp_t ring_push_many(magnum_ring* r, const int64_t* items, intp_t n) noexcept nogil:
    """Push up to ``n`` items from the front of ``items``; return how many were pushed."""
    cdef intp_t done = 0, k
    cdef int64_t* span
    while done < n:  # two spans at most: before and after the wrap
        k = ring_claim(r, n - done, &span)
        if k == 0:  # full: return without touching tail's cache line
            break
        memcpy(span, &items[done], k * sizeof(int64_t))
        ring_publish(r, k)
        done += k
    return done


cdef inline bint ring_try_push(magnum_ring* r, int64_t item) noexcept nogil:
    """Push one item; False when the ring is full."""
    cdef int64_t* span
    if ring_claim(r, 1, &span) == 0:
        return False
    span[0] = item
    ring_publish(r, 1)
    return True


# ---- consumer side (call from exactly one thread) -------------------------------------

cdef inline intp_t ring_ready(magnum_ring* r, intp_t wanted) noexcept nogil:
    """Items ready as the consumer sees them; refresh the cached tail only if < wanted."""
    cdef int64_t head = load_relaxed(&r.head)
    cdef int64_t ready = r.tail_cache - head
    if ready < wanted:
        # Acquire pairs with the producer's release of tail: the slots are written.
        r.tail_cache = load_acquire(&r.tail)
        ready = r.tail_cache - head
    return ready


cdef inline intp_t ring_peek(magnum_ring* r, intp_t wanted, const int64_t** span) noexcept nogil:
    """Zero-copy pop, step 1: up to ``wanted`` ready items, contiguous in memory, at ``*span``.

    Returns how many (0 when empty). Read them in place, then ``ring_consume``.
    """
    cdef int64_t head = load_relaxed(&r.head)
    span[0] = &r.slots[head & r.mask]
    return ring_span(r, head, ring_ready(r, wanted), wanted)


cdef inline void ring_consume(magnum_ring* r, intp_t k) noexcept nogil:
    """Zero-copy pop, step 2: give the first ``k`` peeked slots back to the producer."""
    # Release: our reads of the slots complete before the producer may reuse them.
    store_release(&r.head, load_relaxed(&r.head) + k)


cdef inline intp_t ring_pop_many(magnum_ring* r, int64_t* out, intp_t n) noexcept nogil:
    """Pop up to ``n`` items into ``out``; return how many were popped."""
    cdef intp_t done = 0, k
    cdef const int64_t* span
    while done < n:  # two spans at most: before and after the wrap
        k = ring_peek(r, n - done, &span)
        if k == 0:  # empty: return without touching head's cache line
            break
        memcpy(&out[done], span, k * sizeof(int64_t))
        ring_consume(r, k)
        done += k
    return done


cdef inline bint ring_try_pop(magnum_ring* r, int64_t* out) noexcept nogil:
    """Pop one item into ``*out``; False when the ring is empty."""
    cdef const int64_t* span
    if ring_peek(r, 1, &span) == 0:
        return False
    out[0] = span[0]
    ring_consume(r, 1)
    return True


# ---- either side, or a third observer -------------------------------------------------

cdef inline intp_t ring_size(magnum_ring* r) noexcept nogil:
    """Items in the ring (a snapshot: exact when neither side is running)."""
    # Tail first: head can only have grown since, so the snapshot never exceeds the
    # capacity; it can undershoot below 0 if the consumer moved on meanwhile, hence the clamp.
    cdef int64_t tail = load_acquire(&r.tail)
    cdef int64_t size = tail - load_acquire(&r.head)
    return size if size > 0 else 0


# ---- waiting ------------------------------------------------------------------------------

cdef inline bint ring_backoff(intp_t* spins, double deadline) noexcept nogil:
    """One step of waiting for the other side; False once ``deadline`` (monotonic s, 0 = none) passed.

    Spin briefly with a pause instruction (the other side is usually on another core and
    about to move), then yield the CPU so an oversubscribed machine still makes progress.
    """
    spins[0] += 1
    if spins[0] < 256:
        cpu_relax()
        return True
    spins[0] = 0
    sched_yield()
    return deadline <= 0 or monotonic_s() < deadline


cdef inline intp_t ring_move_wait(magnum_ring* r, int64_t* buf, intp_t n, bint push,
                                  double deadline) noexcept nogil:
    """Push all ``n`` items of ``buf`` (``push``) or pop exactly ``n`` into it, waiting while
    the ring is full / empty; return how many moved (< n only once ``deadline`` passed).

    ``push`` is a constant at every call site, so the compiler keeps one branch of it.
    """
    cdef intp_t done = 0, spins = 0, k
    while done < n:
        if push:
            k = ring_push_many(r, &buf[done], n - done)
        else:
            k = ring_pop_many(r, &buf[done], n - done)
        if k:
            done += k
            spins = 0
        elif not ring_backoff(&spins, deadline):
            break
    return done


cdef class RingBuffer:
    cdef magnum_ring* ring
    cdef intp_t _wait(self, int64_t* buf, intp_t n, bint push, object timeout) except -1
