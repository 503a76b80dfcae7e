# Node-side lease validator and batch placement (see _validator.pyx and validator_ref.py).
from magnum_lib._typedefs cimport time_ns, intp_t
from libc.stdint cimport int64_t, int32_t, uint8_t

cdef intp_t validate_core(const int64_t[:, ::1] leases, int64_t[:, ::1] nodes,
                          const uint8_t[::1] ic_ok, intp_t n_ic, int64_t[:, ::1] slots, intp_t K,
                          time_ns now, bint preempt, int64_t[:, ::1] out,
                          int64_t[:, ::1] pre) noexcept nogil

cdef intp_t place_core(int64_t[::1] view_free, const int64_t[:, ::1] nodes,
                       const uint8_t[::1] ic_ok, intp_t n_ic, const int64_t[:, ::1] requests,
                       int policy, const int32_t[:, ::1] draws, const int64_t[:, ::1] hints,
                       int64_t[::1] out_node) noexcept nogil
