"""A Bloom filter in plain Python: the readable reference for :mod:`magnum_lib.gossip.bloom`.

One key sets ``k`` bits of an ``m``-bit array; a query answers "maybe present" when all
``k`` of its bits are set and "certainly absent" otherwise, so there are false positives
but never false negatives. The ``k`` bit positions come from two 64-bit hashes by
double hashing (Kirsch & Mitzenmacher, 2006), ``g_i = (a + i * b) mod m`` for
``i = 0 .. k-1`` with ``a = h1 mod m`` and step ``b = 1 + h2 mod (m - 1)`` (``0`` when
``m = 1``), which is as good as ``k`` independent hashes for the false-positive rate and
costs two hashes instead of ``k``. The step is never 0, and when ``m`` is prime (as
:func:`magnum_lib.gossip.bloom.optimal_params` chooses) the ``k <= m`` positions of a key
are all distinct; with ``b = h2 mod m`` and a composite ``m`` a few keys in a thousand
probe only one or two distinct bits, which measurably raised the false-positive rate of
~1000-bit filters (by ~7 %).

Hashes (deterministic across runs, machines and backends):

* an integer key ``x`` in ``[0, 2**64)``: ``h1 = hash64(x ^ hash64(seed))``,
  ``h2 = hash64(h1)`` (:func:`magnum_lib.base.rng.hash64`, SplitMix64's first output);
* a ``bytes`` key (a ``str`` is its UTF-8 bytes): ``blake2b(key, digest_size=16,
  salt=seed as 8 little-endian bytes)``, ``h1`` the first and ``h2`` the last 8 bytes
  (little-endian).

Bit ``p`` lives in byte ``p >> 3`` at bit ``p & 7`` (little-endian bit order, as
``numpy.packbits(bitorder="little")``), so this class and the vectorized
:class:`magnum_lib.gossip.bloom.BloomFilter` hold byte-identical arrays for the same
keys.

Two forms live here: :class:`BloomRef`, one key at a time in plain Python (what the
notebook reads and the benchmark's pure-Python loop), and the vectorized numpy kernels
:func:`add_hashed` / :func:`contains_hashed`, the reference twins of the compiled
``_bloom.pyx`` (same signatures, same bits). The public
:class:`magnum_lib.gossip.bloom.BloomFilter` validates keys and sizes; the kernels (both
backends) still check, with :func:`check_kernel_args`, every invariant the compiled nogil
loop trusts (``m``, ``k`` and the array lengths), so no call from Python can make it read or
write outside its arrays.
"""
from __future__ import annotations

import hashlib

import numpy as np

from magnum_lib.base.rng import MASK64, hash64
from magnum_lib.base.validate import ParameterError, check_int

M_MAX = 2**33  # bits: a 1 GiB bit array (~900 million keys at 1 % false positives) at most
K_MAX = 64


def int_hashes(key: int, seed: int = 0) -> tuple[int, int]:
    """``(h1, h2)`` of an integer key in ``[0, 2**64)``."""
    h1 = hash64(key ^ hash64(seed))
    return h1, hash64(h1)


def bytes_hashes(key: bytes, seed: int = 0) -> tuple[int, int]:
    """``(h1, h2)`` of a bytes key: the two halves of a 16-byte salted BLAKE2b digest."""
    d = hashlib.blake2b(key, digest_size=16, salt=seed.to_bytes(8, "little")).digest()
    return int.from_bytes(d[:8], "little"), int.from_bytes(d[8:], "little")


def key_hashes(key, seed: int = 0) -> tuple[int, int]:
    """``(h1, h2)`` of an int, bytes or str key."""
    if isinstance(key, str):
        key = key.encode("utf-8")
    if isinstance(key, (bytes, bytearray, memoryview)):
        return bytes_hashes(bytes(key), seed)
    return int_hashes(int(key), seed)


def start_step(h1, h2, m):
    """``(a, b)``: first position ``h1 mod m`` and step ``1 + h2 mod (m-1)`` (0 if ``m == 1``).

    Works on Python ints and on numpy uint64 arrays alike.
    """
    if m == 1:
        return h1 % m, h2 % m
    return h1 % m, h2 % (m - 1) + 1


def positions(h1: int, h2: int, m: int, k: int) -> list[int]:
    """The ``k`` bit positions ``(a + i*b) mod m`` of one key."""
    a, b = start_step(h1, h2, m)
    return [(a + i * b) % m for i in range(k)]


class BloomRef:
    """``m`` bits, ``k`` hashes, held in a ``bytearray``; one key at a time."""

    def __init__(self, m: int, k: int, seed: int = 0):
        self.m, self.k = check_int("m", m, 1, M_MAX), check_int("k", k, 1, K_MAX)
        self.seed = check_int("seed", seed, 0, MASK64)
        self.bits = bytearray((m + 7) // 8)

    def add(self, key) -> None:
        for p in positions(*key_hashes(key, self.seed), self.m, self.k):
            self.bits[p >> 3] |= 1 << (p & 7)

    def __contains__(self, key) -> bool:
        bits = self.bits
        # all() stops at the first clear bit: an absent key usually costs one or two probes
        return all(bits[p >> 3] >> (p & 7) & 1
                   for p in positions(*key_hashes(key, self.seed), self.m, self.k))


# -- vectorized kernels (reference twins of _bloom.pyx) ----------------------------

def check_kernel_args(bits, h1, h2, m, k, out=None) -> None:
    """Raise ParameterError unless ``add_hashed`` / ``contains_hashed`` may run on these.

    The kernels index ``bits`` at ``p >> 3`` for positions ``p < m`` and write ``out[j]``
    for every key ``j``: so ``1 <= m <= M_MAX``, ``1 <= k <= K_MAX``,
    ``len(bits) == ceil(m / 8)``, ``len(h1) == len(h2)`` (== ``len(out)``).
    """
    m = check_int("m", m, 1, M_MAX)
    check_int("k", k, 1, K_MAX)
    if len(bits) != (m + 7) // 8:
        raise ParameterError("bits", f"must hold ceil(m / 8) = {(m + 7) // 8} bytes for m={m}, got {len(bits)}")
    if len(h1) != len(h2):
        raise ParameterError("h2", f"must have the length of h1 ({len(h1)}), got {len(h2)}")
    if out is not None and len(out) != len(h1):
        raise ParameterError("out", f"must have one byte per key ({len(h1)}), got {len(out)}")


def add_hashed(bits: np.ndarray, h1: np.ndarray, h2: np.ndarray, m: int, k: int) -> None:
    """Set bits ``(a + i*b) mod m``, ``i < k``, of every key (uint64 hash arrays)."""
    check_kernel_args(bits, h1, h2, m, k)
    m = np.uint64(m)
    a, b = start_step(h1, h2, m)
    for i in range(k):
        # a, b < m <= 2**33 and i < 64: a + i*b cannot wrap 2**64
        p = (a + np.uint64(i) * b) % m
        # bitwise_or.at, not bits[idx] |= ...: repeated byte indices must all apply
        np.bitwise_or.at(bits, p >> np.uint64(3), np.left_shift(1, p & np.uint64(7)).astype(np.uint8))


def contains_hashed(bits: np.ndarray, h1: np.ndarray, h2: np.ndarray, m: int, k: int,
                    out: np.ndarray) -> None:
    """``out[j] = 1`` if all ``k`` bits of key ``j`` are set, else 0 (``out`` is uint8)."""
    check_kernel_args(bits, h1, h2, m, k, out)
    m = np.uint64(m)
    a, b = start_step(h1, h2, m)
    out[:] = 1
    alive = np.arange(a.shape[0])
    for i in range(k):
        # probe only keys still "maybe": with half the bits set, work halves each round
        p = (a[alive] + np.uint64(i) * b[alive]) % m
        hit = (bits[p >> np.uint64(3)] >> (p & np.uint64(7))) & 1
        out[alive[hit == 0]] = 0
        alive = alive[hit != 0]
        if alive.size == 0:
            break
