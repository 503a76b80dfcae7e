"""Compiled load-balancing kernels: the nogil twins of ``balance_ref.py``.

Same arguments, same results (bit for bit) as
:func:`magnum_lib.node.balance_ref.simulate_supermarket` and
:func:`magnum_lib.node.balance_ref.place_power_of_d`; read that file for the model.
"""
import operator

import numpy as np

from libc.math cimport log
from libc.stdint cimport int64_t, uint64_t

from magnum_lib._typedefs cimport intp_t, time_ns
from magnum_lib.node.balance_ref import (BATCH, POWER_OF_D, RANDOM, STALE, TAIL_LEVELS,
                                         check_placement_inputs, check_supermarket_inputs)

cdef enum:
    C_RANDOM = 0
    C_POWER_OF_D = 1
    C_STALE = 2
    C_BATCH = 3
    LEVELS = 10  # TAIL_LEVELS

assert (RANDOM, POWER_OF_D, STALE, BATCH, TAIL_LEVELS) == (C_RANDOM, C_POWER_OF_D, C_STALE,
                                                           C_BATCH, LEVELS)


cdef struct Tail:
    # count[i]: servers holding >= i tasks; area[i]: its integral (server-ns) over the
    # window, updated lazily at each change of count[i] (since[i] = time of the last one).
    int64_t count[LEVELS + 1]
    double area[LEVELS + 1]
    time_ns since[LEVELS + 1]
    bint measuring


cdef struct Servers:
    # The queues: per-server FIFO linked lists through the task numbers, plus the busy set.
    int64_t* tis        # per task: arrival time (ns) until it leaves, then its time in system
    int64_t* next_task
    int64_t* head
    int64_t* tail
    int64_t* queue
    intp_t* busy        # busy[0:n_busy] lists the busy servers
    intp_t n_busy
    int64_t max_queue


cdef inline void level_changed(Tail* t, intp_t level, int64_t delta, time_ns now) noexcept nogil:
    if t.measuring:
        t.area[level] += <double>t.count[level] * <double>(now - t.since[level])
        t.since[level] = now
    t.count[level] += delta


cdef inline intp_t sample(intp_t* perm, intp_t n, intp_t k, uint64_t* state) noexcept nogil:
    # Step k of a partial Fisher-Yates shuffle: perm[k] becomes a new distinct server.
    cdef intp_t r = k + <intp_t>below32(splitmix64(state), <uint64_t>(n - k))
    cdef intp_t tmp = perm[k]
    perm[k] = perm[r]
    perm[r] = tmp
    return perm[k]


cdef inline intp_t sample_least(intp_t* perm, const int64_t* load, intp_t n, intp_t d,
                                uint64_t* state) noexcept nogil:
    # d distinct random servers; the first least loaded wins.
    cdef intp_t k, c, best = -1
    for k in range(d):
        c = sample(perm, n, k, state)
        if best < 0 or load[c] < load[best]:
            best = c
    return best


cdef intp_t refresh_board(const int64_t* queue, intp_t n, intp_t* board) noexcept nogil:
    # The servers holding the fewest tasks right now; returns how many.
    cdef intp_t s, size = 0
    cdef int64_t low = queue[0]
    for s in range(1, n):
        if queue[s] < low:
            low = queue[s]
    for s in range(n):
        if queue[s] == low:
            board[size] = s
            size += 1
    return size


cdef inline void enqueue(Servers* q, Tail* t, intp_t s, int64_t task, time_ns now) noexcept nogil:
    q.tis[task] = now
    q.next_task[task] = -1
    if q.tail[s] < 0:
        q.head[s] = task
    else:
        q.next_task[q.tail[s]] = task
    q.tail[s] = task
    q.queue[s] += 1
    if q.queue[s] == 1:
        q.busy[q.n_busy] = s
        q.n_busy += 1
    if q.queue[s] <= LEVELS:
        level_changed(t, q.queue[s], 1, now)
    if q.queue[s] > q.max_queue:
        q.max_queue = q.queue[s]


cdef inline void depart(Servers* q, Tail* t, uint64_t* state, time_ns now) noexcept nogil:
    cdef intp_t k = <intp_t>below32(splitmix64(state), <uint64_t>q.n_busy)
    cdef intp_t s = q.busy[k]
    cdef int64_t task = q.head[s]
    q.tis[task] = now - q.tis[task]
    q.head[s] = q.next_task[task]
    if q.head[s] < 0:
        q.tail[s] = -1
    if q.queue[s] <= LEVELS:
        level_changed(t, q.queue[s], -1, now)
    q.queue[s] -= 1
    if q.queue[s] == 0:
        q.n_busy -= 1
        q.busy[k] = q.busy[q.n_busy]


cdef void run_supermarket(intp_t servers, double load, int policy, intp_t choices, intp_t tasks,
                          time_ns refresh_ns, intp_t jobs, intp_t warmup, uint64_t* state,
                          Servers* q, intp_t* perm, intp_t* board, Tail* t,
                          int64_t* out) noexcept nogil:
    # balance_ref.simulate_supermarket's loop, statement for statement.
    cdef double arrival_rate = load * servers / tasks, rate, gap
    cdef time_ns now = 0, next_refresh = 0, window_start = 0, window_end = 0
    cdef intp_t arrived = 0, board_size = 0, s, k, j, best, job, level, tmp
    cdef intp_t probes = choices * tasks
    cdef int64_t events = 0, zero_wait = 0
    cdef bint is_arrival, all_idle
    while arrived < jobs or q.n_busy > 0:
        if arrived < jobs:
            rate = arrival_rate + q.n_busy
        else:
            rate = <double>q.n_busy
        gap = -log(1.0 - unit_double(splitmix64(state)))
        now += <time_ns>(gap / rate * 1e9 + 0.5)
        if arrived < jobs:
            is_arrival = unit_double(splitmix64(state)) * rate < arrival_rate
        else:
            is_arrival = False
        if policy == C_STALE and arrived < jobs and now >= next_refresh:
            board_size = refresh_board(q.queue, servers, board)
            next_refresh += refresh_ns * ((now - next_refresh) // refresh_ns + 1)
        events += 1
        if not is_arrival:
            depart(q, t, state, now)
            continue
        job = arrived
        if job == warmup:
            t.measuring = True
            window_start = now
            for level in range(1, LEVELS + 1):
                t.since[level] = now
        if job == jobs - 1:
            for level in range(1, LEVELS + 1):
                level_changed(t, level, 0, now)
            t.measuring = False
            window_end = now
        if policy == C_BATCH:
            for k in range(probes):
                sample(perm, servers, k, state)
        all_idle = True
        for j in range(tasks):
            if policy == C_RANDOM:
                s = <intp_t>below32(splitmix64(state), <uint64_t>servers)
            elif policy == C_POWER_OF_D:
                s = sample_least(perm, q.queue, servers, choices, state)
            elif policy == C_STALE:
                s = board[<intp_t>below32(splitmix64(state), <uint64_t>board_size)]
            else:
                best = j
                for k in range(j + 1, probes):
                    if q.queue[perm[k]] < q.queue[perm[best]]:
                        best = k
                tmp = perm[j]
                perm[j] = perm[best]
                perm[best] = tmp
                s = perm[j]
            all_idle = all_idle and q.queue[s] == 0
            enqueue(q, t, s, <int64_t>job * tasks + j, now)
        if all_idle and job >= warmup:
            zero_wait += 1
        arrived += 1
    out[0] = events
    out[1] = window_end - window_start
    out[2] = q.max_queue
    out[3] = zero_wait


def simulate_supermarket(servers_, load_, policy_, choices_, tasks_, refresh_ns_, jobs_, warmup_,
                         seed):
    """Run the supermarket model (compiled); same arguments and result as the reference.

    The Python values are checked (``check_supermarket_inputs``) before they become C
    integers, so nothing wraps and the loop's array sizes are what it assumes.
    """
    check_supermarket_inputs(servers_, load_, policy_, choices_, tasks_, refresh_ns_, jobs_, warmup_)
    cdef intp_t servers = servers_, choices = choices_, tasks = tasks_, jobs = jobs_
    cdef intp_t warmup = warmup_
    cdef int policy = policy_
    cdef double load = load_
    cdef time_ns refresh_ns = refresh_ns_
    cdef uint64_t state = <uint64_t>(operator.index(seed) & 0xFFFFFFFFFFFFFFFF)
    tis = np.zeros(jobs * tasks, dtype=np.int64)
    cdef int64_t[::1] tis_v = tis
    cdef int64_t[::1] next_task = np.full(jobs * tasks, -1, dtype=np.int64)
    cdef int64_t[::1] head = np.full(servers, -1, dtype=np.int64)
    cdef int64_t[::1] tail = np.full(servers, -1, dtype=np.int64)
    cdef int64_t[::1] queue = np.zeros(servers, dtype=np.int64)
    cdef intp_t[::1] busy = np.zeros(servers, dtype=np.intp)
    cdef intp_t[::1] perm = np.arange(servers, dtype=np.intp)
    cdef intp_t[::1] board = np.zeros(servers if policy == STALE else 1, dtype=np.intp)
    cdef Servers q
    q.tis = &tis_v[0]
    q.next_task = &next_task[0]
    q.head = &head[0]
    q.tail = &tail[0]
    q.queue = &queue[0]
    q.busy = &busy[0]
    q.n_busy = 0
    q.max_queue = 0
    cdef Tail t
    cdef int64_t out[4]
    cdef intp_t level
    for level in range(LEVELS + 1):
        t.count[level] = 0
        t.area[level] = 0.0
        t.since[level] = 0
    t.measuring = False
    with nogil:
        run_supermarket(servers, load, policy, choices, tasks, refresh_ns, jobs, warmup, &state,
                        &q, &perm[0], &board[0], &t, out)
    area = np.array([t.area[level] for level in range(1, LEVELS + 1)], dtype=np.float64)
    return {"time_in_system": tis, "tail_area": area, "window_ns": int(out[1]),
            "events": int(out[0]), "max_queue": int(out[2]), "zero_wait": int(out[3])}


cdef uint64_t run_placement(int64_t[::1] loads, int64_t decisions, intp_t choices,
                            intp_t[::1] perm, uint64_t state) noexcept nogil:
    cdef intp_t n = loads.shape[0], best
    cdef int64_t _i
    for _i in range(decisions):
        best = sample_least(&perm[0], &loads[0], n, choices, &state)
        loads[best] += 1
    return state


def place_power_of_d(loads_array, decisions_, choices_, seed):
    """Place ``decisions`` unit jobs by power-of-d (compiled); updates ``loads`` in place.

    Same arguments and result as :func:`magnum_lib.node.balance_ref.place_power_of_d`
    (and the same ``check_placement_inputs``); returns the final SplitMix64 state.
    """
    check_placement_inputs(loads_array, decisions_, choices_)
    cdef int64_t[::1] loads = loads_array
    cdef int64_t decisions = decisions_
    cdef intp_t choices = choices_, n = loads.shape[0]
    cdef uint64_t state = <uint64_t>(operator.index(seed) & 0xFFFFFFFFFFFFFFFF)
    cdef intp_t[::1] perm = np.arange(n, dtype=np.intp)
    with nogil:
        state = run_placement(loads, decisions, choices, perm, state)
    return int(state)
