"""Compiled Bloom-filter kernels: the nogil twins of the vectorized ones in ``bloom_ref.py``.

Same arguments, same bits and answers as :func:`magnum_lib.gossip.bloom_ref.add_hashed`
and :func:`magnum_lib.gossip.bloom_ref.contains_hashed`; read that file for the model.
Each ``def`` wrapper first runs :func:`magnum_lib.gossip.bloom_ref.check_kernel_args`
(``len(bits) == ceil(m / 8)``, ``1 <= m <= M_MAX``, ``1 <= k <= K_MAX``, equal hash and
output lengths); the nogil loops then trust their arguments, so they are compiled without
bounds checks even in a debug build.
"""
from libc.stdint cimport uint64_t, uint8_t

from magnum_lib._typedefs cimport intp_t

from magnum_lib.gossip.bloom_ref import check_kernel_args


cdef void _add(uint8_t[::1] bits, const uint64_t[::1] h1, const uint64_t[::1] h2,
               uint64_t m, int k) noexcept nogil:
    cdef intp_t j, n = h1.shape[0]
    cdef int _i
    cdef uint64_t p, b
    for j in range(n):
        p = h1[j] % m
        b = h2[j] % (m - 1) + 1 if m > 1 else 0
        for _i in range(k):
            bits[p >> 3] |= <uint8_t>(1 << (p & 7))
            # p + b < 2m <= 2**34: one subtraction replaces a modulo
            p += b
            if p >= m:
                p -= m


cdef void _contains(const uint8_t[::1] bits, const uint64_t[::1] h1, const uint64_t[::1] h2,
                    uint64_t m, int k, uint8_t[::1] out) noexcept nogil:
    cdef intp_t j, n = h1.shape[0]
    cdef int _i
    cdef uint64_t p, b
    cdef uint8_t hit
    for j in range(n):
        p = h1[j] % m
        b = h2[j] % (m - 1) + 1 if m > 1 else 0
        hit = 1
        for _i in range(k):
            if not (bits[p >> 3] >> (p & 7)) & 1:
                hit = 0
                break
            p += b
            if p >= m:
                p -= m
        out[j] = hit


def add_hashed(uint8_t[::1] bits, const uint64_t[::1] h1, const uint64_t[::1] h2, m, k):
    """Set bits ``(a + i*b) mod m``, ``i < k``, of every key."""
    check_kernel_args(bits, h1, h2, m, k)
    cdef uint64_t m_ = m
    cdef int k_ = k
    with nogil:
        _add(bits, h1, h2, m_, k_)


def contains_hashed(const uint8_t[::1] bits, const uint64_t[::1] h1, const uint64_t[::1] h2,
                    m, k, uint8_t[::1] out):
    """``out[j] = 1`` if all ``k`` bits of key ``j`` are set, else 0 (stops at the first clear bit)."""
    check_kernel_args(bits, h1, h2, m, k, out)
    cdef uint64_t m_ = m
    cdef int k_ = k
    with nogil:
        _contains(bits, h1, h2, m_, k_, out)
