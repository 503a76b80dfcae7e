# The compiled shortest-augmenting-path assignment kernel (see assignment_ref.py for
# the algorithm in readable Python; both do the same float operations in the same order).
from libc.stdint cimport int64_t

from magnum_lib._typedefs cimport float64_t, intp_t


cdef intp_t solve_sap(const float64_t[:, ::1] cost, float64_t[::1] u, float64_t[::1] v,
                      intp_t[::1] col4row, intp_t[::1] row4col, float64_t[::1] dist,
                      intp_t[::1] pred, intp_t[::1] todo, int64_t* steps) noexcept nogil
