# The node-side lease rule, once: accept, preempt the lowest priority, or refuse (C26, C29-C31).
#
# `cdef inline` so that every kernel that applies the rule gets it compiled into its own
# nogil loop: the validator (_validator.pyx's validate_core) and the whole-system simulator
# (sim/_core.pyx). The readable twin is in validator_ref.py (lease_expired, lost_work_ns,
# lease_verdict, cover_victims, is_victim), used by validator_ref and sim/core_ref.py.
#
# Priorities: higher wins; a lease may displace only strictly lower priorities, lowest first,
# then by slot index, until enough devices are free. A caller describes its slots with a
# VictimSlots (strided pointers into its own arrays), so each keeps its own layout.
from libc.stdint cimport int64_t

from magnum_lib._typedefs cimport intp_t, time_ns

cdef enum:
    LR_ACCEPT = 0       # enough free devices (= validator ACCEPTED)
    LR_PREEMPT = 1      # someone of lower priority runs here: look for victims (= ACCEPTED_PREEMPT)
    LR_NO_DEVICES = 2   # neither (= INSUFFICIENT_DEVICES)


cdef struct VictimSlots:
    const int64_t* prio     # priority of slot s: prio[s * prio_step] (step 0: one priority for all)
    const int64_t* count    # devices slot s holds: count[s * count_step]
    const int64_t* state    # slot s runs a job when live_lo <= state[s * state_step] <= live_hi
    intp_t prio_step
    intp_t count_step
    intp_t state_step
    int64_t live_lo
    int64_t live_hi


cdef inline bint lease_expired(time_ns expiry, time_ns now) noexcept nogil:
    # A lease is good until (not at) its expiry.
    return expiry <= now


cdef inline time_ns lost_work_ns(time_ns now, time_ns started, time_ns interval) noexcept nogil:
    # Work a job evicted at `now` loses per device: the time since its last periodic checkpoint
    # (every `interval` from `started`; now >= started, so C's % agrees with Python's).
    return (now - started) % interval


cdef inline int lease_verdict(int64_t free, int64_t count, bint preempt, int64_t min_prio,
                              int64_t prio) noexcept nogil:
    # `min_prio`: the lowest priority running on the node (anything >= prio when none can go).
    if free >= count:
        return LR_ACCEPT
    if preempt and min_prio < prio:
        return LR_PREEMPT
    return LR_NO_DEVICES


cdef inline bint victim_after(intp_t s, int64_t p, int64_t last_p, intp_t last_s) noexcept nogil:
    # True when slot s (priority p) comes after the victim (last_p, last_s) in (priority, slot) order.
    return p > last_p or (p == last_p and s > last_s)


cdef inline bint is_victim(const VictimSlots* v, intp_t s, int64_t prio, int64_t last_p,
                           intp_t last_s) noexcept nogil:
    # Slot s is evicted for a lease of priority `prio` whose last victim is (last_p, last_s).
    cdef int64_t st = v.state[s * v.state_step], p = v.prio[s * v.prio_step]
    return v.live_lo <= st <= v.live_hi and p < prio and not victim_after(s, p, last_p, last_s)


cdef inline intp_t cover_victims(const VictimSlots* v, intp_t lo, intp_t hi, int64_t free,
                                 int64_t count, int64_t prio, int64_t* last_p) noexcept nogil:
    # The last victim among slots [lo, hi), taking strictly lower priorities in (priority, slot)
    # order until `free` plus their devices reaches `count`; -1 when all of them are not enough.
    # Nothing is changed: the caller evicts every slot with is_victim(..., last_p[0], result).
    cdef intp_t s, best, last_s = -1
    cdef int64_t gained = free, p, st, best_p = 0
    last_p[0] = -1
    while gained < count:
        best = -1
        for s in range(lo, hi):
            st = v.state[s * v.state_step]
            p = v.prio[s * v.prio_step]
            if v.live_lo <= st <= v.live_hi and p < prio and victim_after(s, p, last_p[0], last_s):
                if best < 0 or p < best_p:
                    best = s
                    best_p = p
        if best < 0:
            return -1
        last_p[0] = best_p
        last_s = best
        gained += v.count[best * v.count_step]
    return last_s
