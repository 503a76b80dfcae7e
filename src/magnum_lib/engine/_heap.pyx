"""Compiled event heap: a binary min-heap keyed on (int64 ns time, insertion order).

Same Python API as :mod:`magnum_lib.engine.heap_ref`. The nogil operations
(``heap_push``, ``heap_pop``, ``heap_replace``, ``heap_peek``) are inline functions in ``_heap.pxd``;
the ``def`` methods below are thin wrappers for Python and the parity tests.
"""
from cpython.number cimport PyNumber_Index
from libc.stdlib cimport free, malloc
from libc.stdint cimport int64_t

from magnum_lib._typedefs cimport intp_t, time_ns
from magnum_lib.base._growth cimport no_memory

from magnum_lib.engine.heap_ref import check_capacity, check_int64


cdef int64_t _int64(object value, str name) except? -1:
    # Integers only, as the reference: Cython's own conversion would truncate 1.5 to 1.
    # (TypeError for non-integers; outside int64, the reference's ParameterError.)
    cdef object number = PyNumber_Index(value)
    cdef int64_t result
    try:
        result = number
    except OverflowError:
        check_int64(number, name)  # raises the reference's ParameterError
        raise
    return result


cdef class EventHeap:
    """Binary min-heap of events ``(time_ns, payload)``.

    Parameters
    ----------
    capacity : int, optional
        Initial number of slots; the heap doubles when full.

    Notes
    -----
    Pops come out ordered by time, and events with equal times come out in the order
    they were pushed, so a simulation is deterministic.
    """

    def __cinit__(self, capacity=16):
        # Checked before the C multiply: a huge capacity would wrap malloc's size.
        cdef intp_t slots = check_capacity(capacity)
        self.heap.data = <HeapEntry*> malloc(slots * sizeof(HeapEntry))
        if self.heap.data == NULL:
            raise MemoryError(f"EventHeap: cannot allocate {slots} entries")
        self.heap.capacity = slots
        self.heap.size = 0
        self.heap.next_seq = 0

    def __dealloc__(self):
        free(self.heap.data)

    def push(self, time, payload=0):
        """Add an event at ``time`` (int ns) carrying ``payload`` (int64)."""
        if heap_push(&self.heap, _int64(time, "time"), _int64(payload, "payload")) != 0:
            no_memory("EventHeap")

    def pop(self):
        """Remove and return the earliest event as ``(time_ns, payload)``.

        Raises
        ------
        IndexError
            If the heap is empty.
        """
        cdef time_ns time
        cdef int64_t payload
        if not heap_pop(&self.heap, &time, &payload):
            raise IndexError("pop from an empty EventHeap")
        return time, payload

    def replace(self, time, payload=0):
        """Pop the earliest event and push a new one; return the popped ``(time_ns, payload)``.

        Equivalent to ``pop()`` then ``push(time, payload)`` (like ``heapq.heapreplace``).
        """
        cdef time_ns first, new_time = _int64(time, "time")
        cdef int64_t first_payload, new_payload = _int64(payload, "payload")
        if not heap_peek(&self.heap, &first, &first_payload):
            raise IndexError("replace on an empty EventHeap")
        heap_replace(&self.heap, new_time, new_payload)
        return first, first_payload

    def peek(self):
        """Return the earliest event ``(time_ns, payload)`` without removing it."""
        cdef time_ns time
        cdef int64_t payload
        if not heap_peek(&self.heap, &time, &payload):
            raise IndexError("peek at an empty EventHeap")
        return time, payload

    def clear(self):
        """Drop every event (the insertion counter keeps counting)."""
        self.heap.size = 0

    def __len__(self):
        return self.heap.size

    def __repr__(self):
        return f"EventHeap(len={self.heap.size})"
