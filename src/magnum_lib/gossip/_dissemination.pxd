# The compiled gossip dissemination kernels: the peer / contact steps on a SplitMix64
# stream (base/_rng.pxd), as `cdef inline` functions so the nogil round loops in _dissemination.pyx inline
# them. Each mirrors a function of dissemination_ref.py exactly (same draws, same order).
from libc.stdint cimport int64_t, uint64_t

from magnum_lib._typedefs cimport intp_t
from magnum_lib.base._rng cimport below64, splitmix64


cdef enum:
    PUSH = 1
    PULL = 2
    PUSHPULL = 3
    NEVER = -1


cdef inline bint sm_chance(uint64_t* state, uint64_t threshold) noexcept nogil:
    # rng.SplitMix64.chance: the next output's top 53 bits below the threshold.
    return (splitmix64(state) >> 11) < threshold


cdef inline void pick_peers(uint64_t* state, intp_t u, intp_t n, intp_t fanout,
                            intp_t* peers) noexcept nogil:
    # dissemination_ref.pick_peers: draw in [0, n - 2], skip u, redraw repeats.
    cdef intp_t chosen = 0, i, v
    cdef bint repeat
    while chosen < fanout:
        v = <intp_t> below64(splitmix64(state), <uint64_t> (n - 1))
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
