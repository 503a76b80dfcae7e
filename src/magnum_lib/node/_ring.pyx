"""Compiled single-producer single-consumer ring of int64 items (C11 acquire/release atomics).

Same Python API as :mod:`magnum_lib.node.ring_ref` (and the same validators, imported
from it, so both backends reject the same inputs with the same messages). The nogil
operations live in ``_ring.pxd``; the ``def`` methods are thin wrappers. ``push_wait``,
``pop_wait``, ``produce_range`` and ``consume_range`` release the GIL for their whole
loop, so a producer and a consumer Python thread really run at the same time.
"""
from cpython.number cimport PyNumber_Index
from libc.stdint cimport int64_t, uint64_t

from magnum_lib._typedefs cimport intp_t

from magnum_lib.base.validate import check_int
from magnum_lib.node.ring_ref import MAX_CAPACITY, check_array, check_capacity, check_timeout


cdef int64_t _item(object item) except? -1:
    # Integers only, as the reference (Cython's own conversion would truncate 1.5 to 1).
    try:
        return PyNumber_Index(item)
    except OverflowError:
        raise OverflowError(f"item must fit in int64, got {item}") from None


cdef double _deadline(object timeout) except? -1:
    # Monotonic deadline (s) for the nogil waits; 0 means wait forever.
    cdef double seconds = check_timeout(timeout)
    return monotonic_s() + seconds if seconds else 0


cdef class RingBuffer:
    """Single-producer single-consumer ring of ``capacity`` int64 slots (a power of two).

    One producer thread (``try_push``, ``push_many``, ``push_wait``) and one consumer
    thread (``try_pop``, ``pop_many``, ``pop_wait``) may use it at the same time; the
    ``*_wait`` calls release the GIL while they wait. See ``ring_ref.RingBuffer``.
    """

    def __cinit__(self, capacity):
        cdef int64_t cap = check_capacity(capacity)
        self.ring = ring_new(cap)
        if self.ring == NULL:
            raise MemoryError(f"RingBuffer: cannot allocate {cap} slots")

    def __dealloc__(self):
        ring_free(self.ring)

    # ---- producer side ----------------------------------------------------------------
    def try_push(self, item):
        """Push one int64 ``item``; return False (and push nothing) when the ring is full."""
        return ring_try_push(self.ring, _item(item))

    def push_many(self, items):
        """Push as many items from the front of ``items`` (1-D int64) as fit; return the count."""
        cdef const int64_t[::1] view = check_array("items", items, writable=False)
        if view.shape[0] == 0:
            return 0
        return ring_push_many(self.ring, &view[0], view.shape[0])

    def push_wait(self, items, timeout=None):
        """Push every item of ``items``, waiting (GIL released) while the ring is full.

        Returns the number pushed: ``len(items)``, or fewer if ``timeout`` seconds passed.
        """
        # The ring only reads the items; the cast just lets one wait loop serve both sides.
        cdef const int64_t[::1] view = check_array("items", items, writable=False)
        return self._wait(<int64_t*> &view[0] if view.shape[0] else NULL, view.shape[0], True, timeout)

    cdef intp_t _wait(self, int64_t* buf, intp_t n, bint push, object timeout) except -1:
        cdef double deadline = _deadline(timeout)
        cdef intp_t done
        if n == 0:
            return 0
        with nogil:
            done = ring_move_wait(self.ring, buf, n, push, deadline)
        return done

    # ---- consumer side ----------------------------------------------------------------
    def try_pop(self):
        """Pop one item; return it, or None when the ring is empty."""
        cdef int64_t item
        if ring_try_pop(self.ring, &item):
            return item
        return None

    def pop_many(self, out):
        """Pop up to ``len(out)`` items into the front of ``out`` (1-D int64, writable); return the count."""
        cdef int64_t[::1] view = check_array("out", out, writable=True)
        if view.shape[0] == 0:
            return 0
        return ring_pop_many(self.ring, &view[0], view.shape[0])

    def pop_wait(self, out, timeout=None):
        """Fill all of ``out``, waiting (GIL released) while the ring is empty.

        Returns the number popped: ``len(out)``, or fewer if ``timeout`` seconds passed.
        """
        cdef int64_t[::1] view = check_array("out", out, writable=True)
        return self._wait(&view[0] if view.shape[0] else NULL, view.shape[0], False, timeout)

    # ---- either side -------------------------------------------------------------------
    @property
    def capacity(self):
        """Number of slots."""
        return self.ring.capacity

    def __len__(self):
        return ring_size(self.ring)

    def empty(self):
        """True when no item is waiting."""
        return ring_size(self.ring) == 0

    def full(self):
        """True when every slot holds an item."""
        return ring_size(self.ring) == self.ring.capacity

    def __repr__(self):
        return f"RingBuffer(capacity={self.ring.capacity}, len={ring_size(self.ring)})"


def produce_range(RingBuffer ring not None, n, batch, timeout=None):
    """Producer thread body: push the integers ``0 .. n-1``, at most ``batch`` per publish.

    Returns how many went in (``n`` unless ``timeout`` seconds passed). The whole loop
    runs without the GIL and writes the items straight into the ring's slots
    (``ring_claim`` / ``ring_publish``).
    """
    cdef intp_t count = check_int("n", n, 0, 2**62), size = check_int("batch", batch, 1, MAX_CAPACITY)
    cdef double deadline = _deadline(timeout)
    cdef intp_t done = 0, spins = 0, k, i
    cdef int64_t* span
    with nogil:
        while done < count:
            k = ring_claim(ring.ring, size if count - done > size else count - done, &span)
            if k == 0:
                if not ring_backoff(&spins, deadline):
                    break
                continue
            for i in range(k):
                span[i] = done + i
            ring_publish(ring.ring, k)
            done += k
            spins = 0
    return done


def consume_range(RingBuffer ring not None, n, batch, timeout=None):
    """Consumer thread body: pop ``n`` items, at most ``batch`` at a time, and check them.

    Returns ``(received, in_order, checksum)``: how many arrived, whether item ``i`` was
    ``i`` for every one of them (nothing lost, duplicated or reordered) and their sum
    modulo 2**64. The whole loop runs without the GIL and reads the items in place
    (``ring_peek`` / ``ring_consume``).
    """
    cdef intp_t count = check_int("n", n, 0, 2**62), size = check_int("batch", batch, 1, MAX_CAPACITY)
    cdef double deadline = _deadline(timeout)
    cdef intp_t received = 0, spins = 0, k, i
    cdef uint64_t checksum = 0, wrong = 0
    cdef const int64_t* span
    with nogil:
        while received < count:
            k = ring_peek(ring.ring, size if count - received > size else count - received, &span)
            if k == 0:
                if not ring_backoff(&spins, deadline):
                    break
                continue
            # Branch-free checks so the compiler vectorizes them.
            for i in range(k):
                wrong |= <uint64_t> (span[i] ^ (received + i))
                checksum += <uint64_t> span[i]
            ring_consume(ring.ring, k)
            received += k
            spins = 0
    return received, wrong == 0, checksum
