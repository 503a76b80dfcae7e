# The kit's binary heap: (time, seq, payload) entries ordered by time, then seq. The heap
# operations are `cdef inline` functions on a plain struct, so a kernel that cimports them
# gets them inlined into its nogil loop. heap_push numbers the entries itself (equal times
# pop in FIFO order, like engine/heap_ref.py's heapq of (time, seq, payload) tuples);
# heap_push_keyed takes the tie-break from the caller (a job id, say), for a heap keyed
# by (key, id). engine/_heap.pyx's EventHeap wraps the struct for Python.
from libc.stdint cimport int64_t
from libc.stdlib cimport malloc

from magnum_lib._typedefs cimport intp_t, time_ns
from magnum_lib.base._growth cimport grow_array


cdef struct HeapEntry:
    time_ns time      # when the event fires (ns)
    int64_t seq       # insertion number: equal times pop in FIFO order
    int64_t payload   # event kind / id, opaque to the heap


cdef struct Heap:
    HeapEntry* data
    intp_t size
    intp_t capacity
    int64_t next_seq


cdef inline bint heap_before(const HeapEntry* a, const HeapEntry* b) noexcept nogil:
    # Earlier time first; among equal times, earlier insertion first (deterministic FIFO).
    # Bitwise & and | instead of `and`/`or`: no branches, so no mispredictions.
    return (a.time < b.time) | ((a.time == b.time) & (a.seq < b.seq))


cdef inline int heap_push(Heap* h, time_ns time, int64_t payload) noexcept nogil:
    """Insert an event after every earlier one at the same time; 0, or -1 when memory runs out."""
    cdef int rc = heap_push_keyed(h, time, h.next_seq, payload)
    if rc == 0:
        h.next_seq += 1
    return rc


cdef inline int heap_push_keyed(Heap* h, time_ns time, int64_t seq, int64_t payload) noexcept nogil:
    """Insert ``(time, seq, payload)``; 0, or -1 when memory runs out."""
    cdef HeapEntry entry
    cdef intp_t i, parent
    if h.size == h.capacity:
        if grow_array(<void**> &h.data, 2 * h.capacity, sizeof(HeapEntry)) < 0:
            return -1
        h.capacity *= 2
    entry.time = time
    entry.seq = seq
    entry.payload = payload
    i = h.size
    h.size += 1
    # Sift up: move parents down until the new entry's slot is found.
    while i > 0:
        parent = (i - 1) >> 1
        if heap_before(&entry, &h.data[parent]):
            h.data[i] = h.data[parent]
            i = parent
        else:
            break
    h.data[i] = entry
    return 0


cdef inline void heap_sift_down(Heap* h, HeapEntry entry) noexcept nogil:
    # Place `entry` at the root's hole, moving the earlier child up until it fits.
    cdef intp_t i = 0, child, n = h.size
    cdef HeapEntry* data = h.data
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        if child + 1 < n:  # take the earlier child, without a branch on the data
            child += heap_before(&data[child + 1], &data[child])
        if heap_before(&data[child], &entry):
            data[i] = data[child]
            i = child
        else:
            break
    data[i] = entry


cdef inline bint heap_pop(Heap* h, time_ns* time, int64_t* payload) noexcept nogil:
    """Move the earliest event into ``*time, *payload``; False if the heap is empty."""
    if h.size == 0:
        return False
    time[0] = h.data[0].time
    payload[0] = h.data[0].payload
    h.size -= 1
    if h.size > 0:
        heap_sift_down(h, h.data[h.size])
    return True


cdef inline void heap_replace(Heap* h, time_ns time, int64_t payload) noexcept nogil:
    """Pop the earliest event and push ``(time, payload)`` in one sift (heap not empty).

    Same result as ``heap_pop`` then ``heap_push``, at half the cost: a simulation that
    handles an event and schedules its successor uses this.
    """
    cdef HeapEntry entry
    entry.time = time
    entry.seq = h.next_seq
    entry.payload = payload
    h.next_seq += 1
    heap_sift_down(h, entry)


cdef inline bint heap_peek(const Heap* h, time_ns* time, int64_t* payload) noexcept nogil:
    """Copy the earliest event into ``*time, *payload``; False if the heap is empty."""
    if h.size == 0:
        return False
    time[0] = h.data[0].time
    payload[0] = h.data[0].payload
    return True


cdef inline void heap_init(Heap* h, intp_t capacity) noexcept nogil:
    """An empty heap with room for ``capacity`` entries (``h.data`` is NULL if out of memory)."""
    h.data = <HeapEntry*> malloc(capacity * sizeof(HeapEntry))
    h.size = 0
    h.capacity = capacity
    h.next_seq = 0


cdef inline void heap_drop(Heap* h) noexcept nogil:
    """Remove the earliest entry (the heap is not empty)."""
    h.size -= 1
    if h.size > 0:
        heap_sift_down(h, h.data[h.size])
