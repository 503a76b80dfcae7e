# The compiled load-balancing kernels (see _balance.pyx and balance_ref.py). The random
# number helpers are `cdef inline` here so that any kernel can cimport them into its
# nogil loop; balance_ref.py mirrors them exactly in Python.
from libc.stdint cimport uint64_t


cdef inline uint64_t splitmix64(uint64_t* state) noexcept nogil:
    # SplitMix64 (Steele, Lea & Flood 2014): one 64-bit state, passes BigCrush.
    state[0] += <uint64_t>0x9E3779B97F4A7C15ULL
    cdef uint64_t z = state[0]
    z = (z ^ (z >> 30)) * <uint64_t>0xBF58476D1CE4E5B9ULL
    z = (z ^ (z >> 27)) * <uint64_t>0x94D049BB133111EBULL
    return z ^ (z >> 31)


cdef inline double unit_double(uint64_t x) noexcept nogil:
    # Top 53 bits times 2^-53: a double in [0, 1), exact.
    return <double>(x >> 11) * (1.0 / 9007199254740992.0)


cdef inline uint64_t below(uint64_t x, uint64_t n) noexcept nogil:
    # An integer in [0, n) for n < 2^32: Lemire's multiply-shift of the top 32 bits.
    return ((x >> 32) * n) >> 32
