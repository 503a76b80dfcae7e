"""Compiled Bloom-filter kernels: the nogil twins of the vectorized ones in ``bloom_ref.py``.

Same arguments, same bits and answers as :func:`magnum_lib.gossip.bloom_ref.add_hashed`
and :func:`magnum_lib.gossip.bloom_ref.contains_hashed`; read that file for the model.
The caller (:class:`magnum_lib.gossip.bloom.BloomFilter`) has validated everything:
``len(bits) == ceil(m / 8)``, ``1 <= m <= 2**40``, ``1 <= k <= 64``, ``len(h1) == len(h2)``.
"""
from libc.stdint cimport uint64_t, uint8_t

from magnum_lib._typedefs cimport intp_t


def add_hashed(uint8_t[::1] bits, const uint64_t[::1] h1, const uint64_t[::1] h2,
               uint64_t m, int k):
    """Set bits ``(a + i*b) mod m``, ``i < k``, of every key."""
    cdef intp_t j, n = h1.shape[0]
    cdef int i
    cdef uint64_t p, b
    with nogil:
        for j in range(n):
            p = h1[j] % m
            b = h2[j] % (m - 1) + 1 if m > 1 else 0
            for i in range(k):
                bits[p >> 3] |= <uint8_t>(1 << (p & 7))
                # p + b < 2m <= 2**41: one subtraction replaces a modulo
                p += b
                if p >= m:
                    p -= m


def contains_hashed(const uint8_t[::1] bits, const uint64_t[::1] h1, const uint64_t[::1] h2,
                    uint64_t m, int k, uint8_t[::1] out):
    """``out[j] = 1`` if all ``k`` bits of key ``j`` are set, else 0 (stops at the first clear bit)."""
    cdef intp_t j, n = h1.shape[0]
    cdef int i
    cdef uint64_t p, b
    cdef uint8_t hit
    with nogil:
        for j in range(n):
            p = h1[j] % m
            b = h2[j] % (m - 1) + 1 if m > 1 else 0
            hit = 1
            for i in range(k):
                if not (bits[p >> 3] >> (p & 7)) & 1:
                    hit = 0
                    break
                p += b
                if p >= m:
                    p -= m
            out[j] = hit
