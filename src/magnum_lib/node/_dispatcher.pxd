# The compiled per-node dispatcher loop (see dispatcher_ref.py for the model). The loop
# itself, `dispatch_loop`, is private to _dispatcher.pyx; this declares what it reports and
# the dispatch rules it applies (`cdef inline`, also compiled into sim/_core.pyx; readable
# twins of the same names in dispatcher_ref.py). Classes: 0 is the most urgent.
from libc.stdint cimport int64_t

from magnum_lib._typedefs cimport intp_t, time_ns


cdef struct Counters:
    int64_t work_in_ns          # work of the requests admitted so far (ns)
    int64_t work_done_ns        # work finished or done before a pause (ns)
    int64_t preemptions
    int64_t pause_overhead_ns
    int64_t resume_overhead_ns
    int64_t visited             # quantum boundaries looked at
    int64_t decisions           # boundaries that assigned or paused something
    int64_t events              # arrivals + starts + completions + pauses
    int64_t audited             # boundaries at which the conservation was recounted
    int64_t violations          # ... and found broken (0 when correct)
    int64_t admitted            # requests admitted by the end
    time_ns end_ns              # the last boundary


cdef inline time_ns next_boundary(time_ns t, time_ns quantum) noexcept nogil:
    # The first decision boundary k * quantum >= t (C19; t >= 0). quantum <= 0: every instant is one.
    if quantum <= 0:
        return t
    return (t + quantum - 1) // quantum * quantum


cdef inline time_ns start_after(time_ns ready, time_ns overhead, time_ns quantum) noexcept nogil:
    # Useful work of an item that can be decided at `ready` begins at the next boundary plus the
    # device's `overhead` spent first (pausing the item it displaces, C20, or a checkpoint).
    return next_boundary(ready, quantum) + overhead


cdef inline intp_t most_urgent(const int64_t* qlen, intp_t n_classes) noexcept nogil:
    # The class a free device serves: the most urgent (lowest) class whose queue holds work
    # (qlen[k] > 0); -1 when every queue is empty.
    cdef intp_t k
    for k in range(n_classes):
        if qlen[k] > 0:
            return k
    return -1


cdef inline intp_t pause_victim(const int64_t* rank, intp_t n, int64_t waiting) noexcept nogil:
    # Micro-preemption's victim for queued work of class `waiting`: among the running items
    # (rank[d] = class of device d's item, < 0 when nothing pausable runs there), the least
    # urgent one of a class after `waiting`, the lowest index on a tie; -1 when none.
    cdef intp_t d, victim = -1
    for d in range(n):
        if rank[d] > waiting and (victim < 0 or rank[d] > rank[victim]):
            victim = d
    return victim
