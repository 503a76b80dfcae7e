# The kit's random numbers for the compiled kernels: `cdef inline ... noexcept nogil`
# functions that a kernel cimports into its nogil loop. base/rng.py is their readable
# twin (same constants, same order); tests/test_base_rng.py checks both against the
# published outputs and against each other (through base/_rng.pyx).
from libc.stdint cimport uint64_t


cdef extern from *:
    # High word of a 64 x 64-bit product (GCC/Clang 128-bit integers): Python's (a * b) >> 64.
    """
    static inline uint64_t magnum_mulhi64(uint64_t a, uint64_t b) {
        return (uint64_t)(((unsigned __int128)a * b) >> 64);
    }
    """
    uint64_t mulhi64 "magnum_mulhi64"(uint64_t a, uint64_t b) noexcept nogil


cdef inline uint64_t mix64(uint64_t z) noexcept nogil:
    # SplitMix64's output function; unsigned arithmetic wraps mod 2^64 like rng.py's masks.
    z = (z ^ (z >> 30)) * <uint64_t>0xBF58476D1CE4E5B9ULL
    z = (z ^ (z >> 27)) * <uint64_t>0x94D049BB133111EBULL
    return z ^ (z >> 31)


cdef inline uint64_t splitmix64(uint64_t* state) noexcept nogil:
    # One SplitMix64 step: advance the state by the golden gamma, return its mix.
    state[0] += <uint64_t>0x9E3779B97F4A7C15ULL
    return mix64(state[0])


cdef inline uint64_t xorshift64_seed(uint64_t seed) noexcept nogil:
    # A nonzero xorshift64* state from any seed: seed * golden gamma + 1 (wraps), or 1.
    cdef uint64_t x = seed * <uint64_t>0x9E3779B97F4A7C15ULL + 1
    return x if x != 0 else 1


cdef inline uint64_t xorshift64star(uint64_t* state) noexcept nogil:
    # One xorshift64* step (Vigna 2016): shift the state, return it times the multiplier.
    cdef uint64_t x = state[0]
    x ^= x >> 12
    x ^= x << 25
    x ^= x >> 27
    state[0] = x
    return x * <uint64_t>0x2545F4914F6CDD1DULL


cdef inline double unit_double(uint64_t x) noexcept nogil:
    # Top 53 bits times 2^-53: a double in [0, 1), exact.
    return <double>(x >> 11) * (1.0 / 9007199254740992.0)


cdef inline uint64_t below32(uint64_t x, uint64_t n) noexcept nogil:
    # An integer in [0, n) for n < 2^32: Lemire's multiply-shift of the top 32 bits.
    return ((x >> 32) * n) >> 32


cdef inline uint64_t below64(uint64_t x, uint64_t n) noexcept nogil:
    # An integer in [0, n) for n < 2^64: the high word of x * n (Lemire 2019).
    return mulhi64(x, n)
