# The hedging rule, once (Dean & Barroso; C22): a copy is sent when the primary is still running
# `delay` after it started, at that moment (hedge_delay_ns, sends_copy), to another replica that
# can start it at once, probing HEDGE_PROBES of them (takes_copy). `cdef inline` so that a nogil
# loop which hedges (sim/_core.pyx) gets it compiled in; readable twins of the same names in
# hedge_rule_ref.py (used by simulate_hedging and sim/core_ref.py), and a checked batch entry
# point in _hedge_rule.pyx.
from libc.stdint cimport int64_t

from magnum_lib._typedefs cimport time_ns


cdef inline time_ns hedge_delay_ns(time_ns expected_ns, int64_t factor_milli) noexcept nogil:
    # The relative delay: factor_milli / 1000 x the expected service time (rounded down).
    return expected_ns * factor_milli // 1000


cdef inline bint sends_copy(time_ns duration_ns, time_ns delay_ns, bint enabled) noexcept nogil:
    # A primary that takes longer than the delay gets a copy at `delay_ns` after its start.
    return enabled and duration_ns > delay_ns


cdef enum:
    HEDGE_PROBES = 2    # replicas probed (over one RTT) for a copy; when none can take it, no copy


cdef inline bint takes_copy(int64_t replica, int64_t primary, int64_t free_devices) noexcept nogil:
    # A copy goes only to another replica that can start it at once: a copy that queues
    # behind other work defeats the hedge.
    return replica != primary and free_devices > 0
