# The regional scheduler's placement rules, once, as `cdef inline` functions for
# _validator.pyx's place_core and sim/_core.pyx; readable twins of the same names in
# validator_ref.py (better_of_two) and hashing.py (ring_first).
#
# better_of_two, the power-of-two-choices pick (Mitzenmacher): of two feasible picks, the
# second only when it has strictly more room in the view (the first on ties).
from libc.stdint cimport int64_t

from magnum_lib._typedefs cimport intp_t


cdef inline intp_t better_of_two(intp_t a, int64_t room_a, intp_t b, int64_t room_b) noexcept nogil:
    # a, b: node indices (both feasible; the caller handles a missing pick before reading its room).
    return b if room_b > room_a else a


cdef inline int64_t ring_first(const int64_t* keys, int64_t lo, int64_t hi, int64_t key) noexcept nogil:
    # Consistent hashing's lookup (regional/hashing.py has the readable twin, same name): the
    # first point with keys[p] >= key in the sorted keys[lo:hi] (hi > lo), lo past the last.
    cdef int64_t a = lo, b = hi, m
    while a < b:
        m = (a + b) // 2
        if keys[m] < key:
            a = m + 1
        else:
            b = m
    return lo if a == hi else a
