# The regional scheduler's power-of-two-choices pick, once (Mitzenmacher): of two feasible
# picks, the second only when it has strictly more room in the view (the first on ties).
# `cdef inline` for _validator.pyx's place_core and sim/_core.pyx; readable twin of the same
# name in validator_ref.py (place_batch, sim/core_ref.py).
from libc.stdint cimport int64_t

from magnum_lib._typedefs cimport intp_t


cdef inline intp_t better_of_two(intp_t a, int64_t room_a, intp_t b, int64_t room_b) noexcept nogil:
    # a, b: node indices (both feasible; the caller handles a missing pick before reading its room).
    return b if room_b > room_a else a
