"""Compiled :func:`magnum_lib.node.hedge_rule_ref.hedge_plan` (same arguments, same result).

The rule itself is the ``cdef inline`` pair in ``_hedge_rule.pxd`` (also inlined into
``sim/_core.pyx``); this is its checked batch entry point.
"""
import numpy as np

from libc.stdint cimport int64_t

from magnum_lib._typedefs cimport intp_t
from magnum_lib.node.hedge_rule_ref import check_plan_inputs


cdef void plan_core(const int64_t[::1] duration, const int64_t[::1] expected, int64_t factor,
                    int64_t[::1] out) noexcept nogil:
    cdef intp_t r
    cdef int64_t delay
    for r in range(duration.shape[0]):
        delay = hedge_delay_ns(expected[r], factor)
        out[r] = delay if sends_copy(duration[r], delay, factor > 0) else -1


def hedge_plan(duration_ns, expected_ns, factor_milli):
    """Per request, the delay after its start at which a copy is sent, or -1 (see the reference)."""
    duration_a, expected_a, factor = check_plan_inputs(duration_ns, expected_ns, factor_milli)
    out_a = np.empty(duration_a.shape[0], dtype=np.int64)
    cdef const int64_t[::1] duration = duration_a
    cdef const int64_t[::1] expected = expected_a
    cdef int64_t[::1] out = out_a
    cdef int64_t f = factor
    with nogil:
        plan_core(duration, expected, f, out)
    return out_a
