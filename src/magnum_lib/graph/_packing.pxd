# The compiled time-division packer (see packing_ref.py for the model in readable Python;
# both make the same integer decisions in the same order).
from magnum_lib._typedefs cimport time_ns, intp_t


cdef int pack_core(const time_ns[::1] arrival, const time_ns[::1] reserve, const time_ns[::1] layer_ptr,
                   const time_ns[::1] runtime, const time_ns[::1] xfer, const time_ns[::1] link,
                   time_ns capacity, intp_t max_resident, intp_t window, time_ns switch_ns,
                   const intp_t[::1] order, time_ns[::1] start, time_ns[::1] end,
                   time_ns[::1] xstart, time_ns[::1] xend, time_ns[::1] admit, time_ns[::1] done,
                   time_ns[::1] nxt, time_ns[::1] ready, time_ns[::1] link_free,
                   intp_t[::1] resident, unsigned char[::1] taken) noexcept nogil
