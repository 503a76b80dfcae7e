"""Compiled FIFO multi-server queue (G/G/c): the nogil twin of ``queue_ref.py``.

Same arguments, same results (bit for bit) as
:func:`magnum_lib.engine.queue_ref.simulate_fifo`; read that file for the model.
"""
import numpy as np

from libc.stdint cimport int64_t

from magnum_lib._typedefs cimport intp_t, time_ns
from magnum_lib.base._growth cimport no_memory
from magnum_lib.base._heap cimport Heap, heap_peek, heap_pop, heap_push, heap_replace
from magnum_lib.engine._heap cimport EventHeap
from magnum_lib.engine.queue_ref import check_inputs


cdef enum:
    ARRIVAL = -1
    NS_PER_S = 1_000_000_000


cdef struct Integral:
    # An integral of a count over time, exact in integers: `seconds` (count x s) plus
    # `rest_ns` (count x ns, flushed into `seconds` before it can overflow), so a long
    # run cannot overflow int64. The reference uses Python's unbounded ints instead.
    int64_t seconds
    int64_t rest_ns


cdef extern from *:
    # Compile-time int64 constants (a C enum is only an int). A gap below 2^32 ns
    # (4.3 s) times at most 2^30 jobs in system (check_inputs) stays below 2^62,
    # so the fast path adds it directly and flushes the sum before 2^62.
    """
    #define MAGNUM_SMALL_GAP (((int64_t)1) << 32)
    #define MAGNUM_FLUSH_AT (((int64_t)1) << 62)
    """
    const int64_t SMALL_GAP "MAGNUM_SMALL_GAP"
    const int64_t FLUSH_AT "MAGNUM_FLUSH_AT"


cdef inline void _accumulate(Integral* acc, int64_t count, int64_t dt) noexcept nogil:
    if dt < SMALL_GAP:
        acc.rest_ns += count * dt
    else:
        acc.seconds += count * (dt // NS_PER_S)
        acc.rest_ns += count * (dt % NS_PER_S)
    if acc.rest_ns >= FLUSH_AT:
        acc.seconds += acc.rest_ns // NS_PER_S
        acc.rest_ns = acc.rest_ns % NS_PER_S


cdef int _run(Heap* heap, const int64_t[::1] interarrival,
              const int64_t[::1] service, intp_t servers,
              int64_t[::1] wait, int64_t[::1] in_system,
              int64_t* events_out, time_ns* now_out,
              Integral* area, Integral* busy_area) noexcept nogil:
    # queue_ref.simulate_fifo's loop. One difference in form, none in result: the
    # reference pops an event and then pushes its successor; here the handled event
    # stays at the top (peek) and its first successor replaces it in a single sift.
    cdef intp_t n = interarrival.shape[0]
    cdef time_ns now = 0, time, dt
    cdef int64_t payload, events = 0
    cdef intp_t n_system = 0, busy = 0, arrived = 0, head = 0, job
    if heap_push(heap, interarrival[0], ARRIVAL) != 0:
        return -1
    while heap_peek(heap, &time, &payload):
        dt = time - now
        if dt != 0:
            _accumulate(area, n_system, dt)
            _accumulate(busy_area, busy, dt)
            now = time
        events += 1
        if payload == ARRIVAL:
            job = arrived
            arrived += 1
            in_system[job] = now  # arrival time, until the job leaves
            wait[job] = 0
            n_system += 1
            if arrived < n:
                heap_replace(heap, now + interarrival[arrived], ARRIVAL)
                if busy < servers:
                    busy += 1
                    head += 1
                    if heap_push(heap, now + service[job], job) != 0:
                        return -1
            elif busy < servers:
                busy += 1
                head += 1
                heap_replace(heap, now + service[job], job)
            else:
                heap_pop(heap, &time, &payload)
        else:
            job = <intp_t> payload
            in_system[job] = now - in_system[job]
            n_system -= 1
            if head < arrived:
                job = head
                head += 1
                wait[job] = now - in_system[job]
                heap_replace(heap, now + service[job], job)
            else:
                busy -= 1
                heap_pop(heap, &time, &payload)
    events_out[0] = events
    now_out[0] = now
    return 0


def simulate_fifo(const int64_t[::1] interarrival_ns not None, const int64_t[::1] service_ns not None,
                  servers):
    """Run the queue and return per-job times and time integrals.

    See :func:`magnum_lib.engine.queue_ref.simulate_fifo` (same contract; the same
    ``check_inputs`` runs first, so the nogil loop may trust lengths and ranges).
    """
    cdef intp_t n = check_inputs(interarrival_ns, service_ns, servers)
    cdef intp_t n_servers = servers  # a C integer only once it is known to be in range
    wait = np.empty(n, dtype=np.int64)  # every entry is written by the loop
    in_system = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] wait_v = wait
    cdef int64_t[::1] in_system_v = in_system
    cdef EventHeap heap = EventHeap(n_servers + 2)
    cdef Integral area, busy_area
    cdef int64_t events = 0
    cdef time_ns now = 0
    cdef int status
    area.seconds = area.rest_ns = busy_area.seconds = busy_area.rest_ns = 0
    with nogil:
        status = _run(&heap.heap, interarrival_ns, service_ns, n_servers, wait_v, in_system_v,
                      &events, &now, &area, &busy_area)
    if status != 0:
        no_memory("simulate_fifo: event heap")
    return {
        "wait": wait,
        "time_in_system": in_system,
        "events": int(events),
        "busy_ns": int(busy_area.seconds) * NS_PER_S + int(busy_area.rest_ns),
        "area_ns": int(area.seconds) * NS_PER_S + int(area.rest_ns),
        "makespan_ns": int(now),
    }
