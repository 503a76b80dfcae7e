# The compiled gossip dissemination kernels: a SplitMix64 stream and the peer / contact
# steps, as `cdef inline` functions so the nogil round loops in _dissemination.pyx inline
# them. Each mirrors a function of dissemination_ref.py exactly (same draws, same order).
from libc.stdint cimport int64_t, uint64_t

from magnum_lib._typedefs cimport intp_t


cdef extern from *:
    # High word of a 64 x 64-bit product (GCC/Clang 128-bit integers): Python's (x * m) >> 64.
    """
    static inline uint64_t magnum_mulhi64(uint64_t a, uint64_t b) {
        return (uint64_t)(((unsigned __int128)a * b) >> 64);
    }
    """
    uint64_t mulhi64 "magnum_mulhi64"(uint64_t a, uint64_t b) noexcept nogil


cdef enum:
    PUSH = 1
    PULL = 2
    PUSHPULL = 3
    NEVER = -1


cdef inline uint64_t sm_next(uint64_t* state) noexcept nogil:
    # SplitMix64.next; unsigned arithmetic wraps mod 2^64 like the reference's masks.
    state[0] += 0x9E3779B97F4A7C15ULL
    cdef uint64_t z = state[0]
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL
    return z ^ (z >> 31)


cdef inline bint sm_chance(uint64_t* state, uint64_t threshold) noexcept nogil:
    return (sm_next(state) >> 11) < threshold


cdef inline void pick_peers(uint64_t* state, intp_t u, intp_t n, intp_t fanout,
                            intp_t* peers) noexcept nogil:
    # dissemination_ref.pick_peers: draw in [0, n - 2], skip u, redraw repeats.
    cdef intp_t chosen = 0, i, v
    cdef bint repeat
    while chosen < fanout:
        v = <intp_t> mulhi64(sm_next(state), <uint64_t> (n - 1))
        if v >= u:
            v += 1
        repeat = False
        for i in range(chosen):
            if peers[i] == v:
                repeat = True
                break
        if not repeat:
            peers[chosen] = v
            chosen += 1


cdef inline int contact(uint64_t* state, int mode, uint64_t loss_threshold,
                        bint reachable) noexcept nogil:
    # dissemination_ref.contact: 0 nothing arrived, 1 u's message arrived, 2 reply too.
    cdef bint lost = loss_threshold != 0 and sm_chance(state, loss_threshold)
    if lost or not reachable:
        return 0
    if mode == PUSH:
        return 1
    if loss_threshold != 0 and sm_chance(state, loss_threshold):
        return 1
    return 2


cdef inline int64_t sent(int mode, int arrived) noexcept nogil:
    return 1 + (mode != PUSH and arrived >= 1)
