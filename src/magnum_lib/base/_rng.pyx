"""The compiled random numbers of ``_rng.pxd``, callable from Python so the tests can
check them against the published outputs and against ``base/rng.py``."""
import numpy as np

from libc.stdint cimport uint64_t


def outputs(str generator, uint64_t seed, Py_ssize_t n):
    """The first ``n`` outputs of ``generator`` ("splitmix64" or "xorshift64star") from
    state ``seed`` (a uint64 array)."""
    if generator not in ("splitmix64", "xorshift64star"):
        raise ValueError(f"generator must be splitmix64 or xorshift64star, got {generator!r}")
    cdef bint splitmix = generator == "splitmix64"
    out = np.empty(n, dtype=np.uint64)
    cdef uint64_t[::1] o = out
    cdef uint64_t state = seed
    cdef Py_ssize_t i
    for i in range(n):
        o[i] = splitmix64(&state) if splitmix else xorshift64star(&state)
    return out


def draws(uint64_t x, uint64_t n):
    """``(hash64(x), unit_double(x), below32(x, n), below64(x, n))`` as the kernels compute them."""
    cdef uint64_t state = x
    return splitmix64(&state), unit_double(x), below32(x, n), below64(x, n)


def seed_state(uint64_t seed):
    """``xorshift64_seed(seed)``: the simulator core's start state."""
    return xorshift64_seed(seed)
