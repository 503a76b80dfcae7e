"""Bloom filters over node ids (integers) and bytes/str keys, compiled or vectorized.

The planner's digest (:mod:`magnum_lib.gossip.digest`) answers "does node j have a free
H100?" from a few bits per free node instead of the list of ids. A key sets ``k`` of
``m`` bits chosen by double hashing, ``g_i = (h1 + i*h2') mod m`` with the step
``h2' = 1 + h2 mod (m-1)`` never 0 (Kirsch & Mitzenmacher; ``m`` prime by default);
a query is "maybe" when all ``k`` bits are set, so false positives happen at a rate of
about ``(1 - exp(-k n / m))**k`` after ``n`` keys and false negatives never. The hashes
(base.rng.hash64 for integers, salted BLAKE2b for bytes) and the bit layout are those of the
readable reference :mod:`magnum_lib.gossip.bloom_ref`; both give byte-identical arrays.

Two backends, decided by measuring (``benchmarks/bench_bloom.py``, 10^6 node ids,
k = 7, 1 % false positives, this 2-core shared machine): the vectorized numpy kernels of
:mod:`magnum_lib.gossip.bloom_ref` insert about 1-5e6 keys/s (``np.bitwise_or.at`` on
random bytes dominates) and answer 2-10e6 queries/s; the compiled ``_bloom.pyx`` loop
inserts 7-11e6/s and answers 5-25e6/s (2-7x; it also replaces the per-position modulo
by one subtraction). The digest of the article's 600,000-node fleet (a third free) builds
in about 13 ms compiled, which is what makes "every 10 ms" simulable at that size.
Hashing (numpy hash64 or BLAKE2b) is shared by both backends, so they set the same bits.

Accuracy (measured, tests/test_gossip_bloom.py): for m >= 10^4 bits the false-positive
rate of 10^5 non-member queries sits within binomial-plus-fill noise of the formula
(z-scores over 20 seeds ~ N(0, 1)). Small filters run a little above it: at n = 110,
m = 1061, k = 7 (the digest of a 960-node cluster) 400 seeds gave 0.0103 against 0.0097,
half from the randomness of the fill (E[fill^k] > E[fill]^k) and half from double hashing's
O(1/m) correlation.

Integer keys must lie in ``[0, 2**64)``; a ``str`` key is its UTF-8 bytes (so ``"a"`` and
``b"a"`` are the same key, and the int ``97`` a different one).
"""
from __future__ import annotations

import math
import numbers
import struct
from collections.abc import Iterable

import numpy as np

from magnum_lib._backend import pick
from magnum_lib.base.kernel_args import int_scalar
from magnum_lib.base.rng import hash64, hash64_array
from magnum_lib.gossip import bloom_ref

__all__ = ["BloomFilter", "optimal_params", "expected_fp_rate", "union_all", "is_prime", "next_prime",
           "M_MAX", "K_MAX", "HEADER_BYTES"]

# Size bounds, checked before anything is allocated. M_MAX = 2**33 bits is a 1 GiB bit
# array (about 900 million keys at 1 % false positives), the most a laptop should be asked
# for; a + i*b then stays far below 2**64 for k <= K_MAX = 64.
M_MAX = bloom_ref.M_MAX
K_MAX = bloom_ref.K_MAX
_MAGIC = b"BLM1"
_VERSION = 1
# magic, version, k, reserved (0), m (bits), seed: little-endian, 24 bytes
_HEADER = struct.Struct("<4sBBHQQ")
HEADER_BYTES = _HEADER.size

_U64 = np.uint64


def _kernels():
    """The active backend's ``add_hashed`` / ``contains_hashed`` (looked up per call so that
    tests may switch ``MAGNUM_PUREPYTHON``)."""
    return pick("magnum_lib.gossip._bloom", "magnum_lib.gossip.bloom_ref")


def expected_fp_rate(n: int, m: int, k: int) -> float:
    """``(1 - exp(-k n / m))**k``: false-positive rate after ``n`` distinct keys.

    The standard approximation (each of ``k n`` bit settings lands uniformly and
    independently); exact to O(k n / m**2) for the large ``m`` used here.
    """
    n = int_scalar("n", n, 0, 2**63)
    m = int_scalar("m", m, 1, M_MAX)
    k = int_scalar("k", k, 1, K_MAX)
    return (1.0 - math.exp(-k * n / m)) ** k


def is_prime(n: int) -> bool:
    """Deterministic Miller-Rabin, exact for every ``n < 3.3e24`` (so every valid ``m``)."""
    if n < 2:
        return False
    bases = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)
    for p in bases:
        if n % p == 0:
            return n == p
    d, s = n - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    for a in bases:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def next_prime(n: int) -> int:
    """The smallest prime ``>= n``."""
    n = max(2, n)
    while not is_prime(n):
        n += 1
    return n


def optimal_params(n: int, fp_rate: float) -> tuple[int, int]:
    """``(m, k)`` for ``n`` keys at a target false-positive rate; ``m`` is prime.

    Starts from the textbook optimum ``m = -n ln(p) / ln(2)**2``, ``k = (m/n) ln 2``, takes
    the better of the two neighbouring integer ``k``, and grows ``m`` by 0.1 % steps until
    :func:`expected_fp_rate` is at most ``fp_rate`` (integer ``k`` costs a little). ``m``
    is rounded up to a prime so that every key's ``k`` bits are distinct (see
    :mod:`magnum_lib.gossip.bloom_ref`); primes are dense, so that adds a few bits.
    """
    n = int_scalar("n", n, 1, 2**48)
    if isinstance(fp_rate, bool) or not isinstance(fp_rate, numbers.Real) or not 0 < fp_rate < 1:
        raise ValueError(f"fp_rate must be a number in (0, 1), got {fp_rate!r}")
    m = max(2, math.ceil(-n * math.log(fp_rate) / math.log(2) ** 2))
    while True:
        m = next_prime(m)
        if m > M_MAX:
            raise ValueError(f"n={n} at fp_rate={fp_rate!r} needs more than M_MAX={M_MAX} bits")
        k_real = m / n * math.log(2)
        ks = {min(K_MAX, max(1, math.floor(k_real))), min(K_MAX, max(1, math.ceil(k_real)))}
        k = min(ks, key=lambda kk: (expected_fp_rate(n, m, kk), kk))
        if expected_fp_rate(n, m, k) <= fp_rate:
            return m, k
        m += max(1, m // 1000)


def _int_keys(keys) -> np.ndarray:
    """Integer keys as a uint64 array, or an error naming the problem."""
    arr = np.asarray(keys)
    if arr.dtype == bool or arr.dtype.kind not in "iu":
        raise TypeError(f"keys must be integers in [0, 2**64) (an integer array), got dtype {arr.dtype}")
    if arr.dtype.kind == "i" and arr.size and arr.min() < 0:
        raise ValueError(f"keys must be integers in [0, 2**64), got a negative key {int(arr.min())}")
    return arr.astype(_U64, copy=False).ravel()


def _hash_many(keys, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(h1, h2)`` arrays for an integer array or an iterable of bytes/str keys."""
    if isinstance(keys, np.ndarray) and keys.dtype.kind not in "OSU":
        x = _int_keys(keys)
        h1 = hash64_array(x ^ _U64(hash64(seed)))
        return h1, hash64_array(h1)
    keys = list(keys)
    if all(isinstance(key, (bytes, bytearray, memoryview, str)) for key in keys):
        pairs = [bloom_ref.key_hashes(key, seed) for key in keys]
        h = np.array(pairs, dtype=_U64).reshape(-1, 2)
        return h[:, 0].copy(), h[:, 1].copy()
    if any(isinstance(key, (bytes, bytearray, memoryview, str)) for key in keys):
        raise TypeError("keys must be all integers or all bytes/str, not a mix")
    for key in keys:  # give the offending element, not a numpy dtype
        if isinstance(key, bool) or not isinstance(key, numbers.Integral):
            raise TypeError(f"keys must be integers in [0, 2**64) or bytes/str, got {key!r}")
        if not 0 <= key < 2**64:
            raise ValueError(f"keys must be integers in [0, 2**64), got {key!r}")
    return _hash_many(np.array(keys, dtype=_U64), seed)


def _one_key_hashes(key, seed: int) -> tuple[int, int]:
    if isinstance(key, (bytes, bytearray, memoryview, str)):
        return bloom_ref.key_hashes(key, seed)
    if isinstance(key, bool) or not isinstance(key, numbers.Integral):
        raise TypeError(f"key must be an integer in [0, 2**64), bytes or str, got {key!r}")
    if not 0 <= key < 2**64:
        raise ValueError(f"key must be an integer in [0, 2**64), got {key!r}")
    return bloom_ref.int_hashes(int(key), seed)


class BloomFilter:
    """An ``m``-bit Bloom filter with ``k`` hash functions.

    ``m``, ``k`` and ``seed`` are read-only (the compiled kernels index the bit array by
    them); build a new filter to change them.

    Parameters
    ----------
    m : int
        Bits, 1 .. :data:`M_MAX` (2**33, a 1 GiB array). See :func:`optimal_params` to size
        for ``n`` keys.
    k : int
        Hash functions (bits set per key), 1 .. :data:`K_MAX`.
    seed : int
        Hash salt in ``[0, 2**64)``; filters combine only with equal seeds.

    Examples
    --------
    >>> f = BloomFilter.for_capacity(1000, 0.01)
    >>> f.add_many(np.arange(0, 2000, 2))
    >>> 10 in f, bool(f.contains_many(np.array([10]))[0])
    (True, True)
    """

    __slots__ = ("_m", "_k", "_seed", "_bits")

    def __init__(self, m: int, k: int, seed: int = 0):
        self._m = int_scalar("m", m, 1, M_MAX)
        self._k = int_scalar("k", k, 1, K_MAX)
        self._seed = int_scalar("seed", seed, 0, 2**64 - 1)
        self._bits = np.zeros((self._m + 7) // 8, dtype=np.uint8)

    @property
    def m(self) -> int:
        """Bits in the filter."""
        return self._m

    @property
    def k(self) -> int:
        """Bits set per key (hash functions)."""
        return self._k

    @property
    def seed(self) -> int:
        """Hash salt."""
        return self._seed

    @classmethod
    def for_capacity(cls, n: int, fp_rate: float, seed: int = 0) -> BloomFilter:
        """An empty filter sized by :func:`optimal_params` for ``n`` keys."""
        m, k = optimal_params(n, fp_rate)
        return cls(m, k, seed)

    # -- insert and query -------------------------------------------------------
    def add(self, key) -> None:
        """Insert one key (an int in ``[0, 2**64)``, bytes or str)."""
        bits = self._bits
        for p in bloom_ref.positions(*_one_key_hashes(key, self.seed), self.m, self.k):
            bits[p >> 3] |= 1 << (p & 7)

    def add_many(self, keys) -> None:
        """Insert many keys: an integer array (fast path) or an iterable of bytes/str."""
        h1, h2 = _hash_many(keys, self.seed)
        _kernels().add_hashed(self._bits, h1, h2, self.m, self.k)

    def __contains__(self, key) -> bool:
        bits = self._bits
        return all(bits[p >> 3] >> (p & 7) & 1
                   for p in bloom_ref.positions(*_one_key_hashes(key, self.seed), self.m, self.k))

    def contains_many(self, keys) -> np.ndarray:
        """Boolean array: ``True`` where the key may be present, ``False`` where surely absent."""
        h1, h2 = _hash_many(keys, self.seed)
        out = np.empty(h1.shape[0], dtype=np.uint8)
        _kernels().contains_hashed(self._bits, h1, h2, self.m, self.k, out)
        return out.view(bool)

    # -- combine and compare ---------------------------------------------------
    def _check_same_shape(self, other, what: str) -> None:
        if not isinstance(other, BloomFilter):
            raise TypeError(f"{what} needs a BloomFilter, got {type(other).__name__}")
        mine, theirs = (self.m, self.k, self.seed), (other.m, other.k, other.seed)
        if mine != theirs:
            raise ValueError(f"{what}: filters differ in (m, k, seed): {mine} vs {theirs}; "
                             "only filters of the same shape and seed combine")

    def union(self, other: BloomFilter) -> BloomFilter:
        """A new filter holding the keys of both (bitwise OR); same ``m``, ``k``, ``seed`` required."""
        self._check_same_shape(other, "union")
        out = self.copy()
        np.bitwise_or(out._bits, other._bits, out=out._bits)
        return out

    __or__ = union

    def copy(self) -> BloomFilter:
        out = BloomFilter(self.m, self.k, self.seed)
        out._bits[:] = self._bits
        return out

    def __eq__(self, other) -> bool:
        if not isinstance(other, BloomFilter):
            return NotImplemented
        return (self.m, self.k, self.seed) == (other.m, other.k, other.seed) and \
            bool(np.array_equal(self._bits, other._bits))

    __hash__ = None  # mutable

    # -- sizes and estimates ---------------------------------------------------
    @property
    def nbytes(self) -> int:
        """Bytes of the bit array, ``ceil(m / 8)`` (the wire form adds :data:`HEADER_BYTES`)."""
        return int(self._bits.nbytes)

    @property
    def wire_nbytes(self) -> int:
        """Length of :meth:`to_bytes`."""
        return HEADER_BYTES + self.nbytes

    @property
    def bits_set(self) -> int:
        return int(np.bitwise_count(self._bits).sum())

    @property
    def fill_ratio(self) -> float:
        """Fraction of the ``m`` bits that are set."""
        return self.bits_set / self.m

    def current_fp_rate(self) -> float:
        """``fill_ratio ** k``: the false-positive rate of this filter's actual bits."""
        return self.fill_ratio ** self.k

    def estimated_count(self) -> float:
        """Distinct keys estimated from the fill, ``-(m/k) ln(1 - X/m)`` (Swamidass & Baldi); inf if full."""
        x = self.bits_set
        return math.inf if x == self.m else -self.m / self.k * math.log1p(-x / self.m)

    def to_dict(self) -> dict:
        return {"m": self.m, "k": self.k, "seed": self.seed, "nbytes": self.nbytes,
                "wire_nbytes": self.wire_nbytes, "bits_set": self.bits_set,
                "fill_ratio": self.fill_ratio, "current_fp_rate": self.current_fp_rate(),
                "estimated_count": self.estimated_count()}

    def __repr__(self) -> str:
        return f"BloomFilter(m={self.m}, k={self.k}, seed={self.seed}, fill={self.fill_ratio:.3f})"

    # -- wire form -------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """24-byte header (``b"BLM1"``, version, k, 0, m, seed; little-endian) then the bits."""
        return _HEADER.pack(_MAGIC, _VERSION, self.k, 0, self.m, self.seed) + self._bits.tobytes()

    @classmethod
    def from_bytes(cls, data) -> BloomFilter:
        """Parse :meth:`to_bytes`; any malformed input raises ValueError (TypeError if not bytes)."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"data must be bytes, got {type(data).__name__}")
        data = bytes(data)
        if len(data) < HEADER_BYTES:
            raise ValueError(f"data: {len(data)} bytes is shorter than the {HEADER_BYTES}-byte header")
        magic, version, k, reserved, m, seed = _HEADER.unpack_from(data)
        if magic != _MAGIC:
            raise ValueError(f"data: magic {magic!r} is not {_MAGIC!r}")
        if version != _VERSION:
            raise ValueError(f"data: version {version} is not supported (only {_VERSION})")
        if reserved != 0:
            raise ValueError(f"data: reserved header field is {reserved}, must be 0")
        if not 1 <= k <= K_MAX:
            raise ValueError(f"data: k={k} outside [1, {K_MAX}]")
        if not 1 <= m <= M_MAX:
            raise ValueError(f"data: m={m} outside [1, {M_MAX}]")
        want = HEADER_BYTES + (m + 7) // 8
        if len(data) != want:
            raise ValueError(f"data: {len(data)} bytes, but m={m} needs exactly {want}")
        out = cls(m, k, seed)
        out._bits[:] = np.frombuffer(data, dtype=np.uint8, offset=HEADER_BYTES)
        if m % 8 and out._bits[-1] >> (m % 8):
            raise ValueError(f"data: padding bits beyond m={m} are set")
        return out


def union_all(filters: Iterable[BloomFilter]) -> BloomFilter:
    """The union of one or more same-shaped filters."""
    filters = list(filters)
    if not filters:
        raise ValueError("filters must hold at least one BloomFilter")
    out = filters[0].copy()
    for f in filters[1:]:
        out._check_same_shape(f, "union_all")
        np.bitwise_or(out._bits, f._bits, out=out._bits)
    return out


def member_flags(is_member: np.ndarray, m: int, k: int, seed: int = 0) -> np.ndarray:
    """Which ids ``0 .. n-1`` test positive in ``BloomFilter(m, k, seed)`` holding the ids where
    ``is_member`` (a boolean array of length ``n``) is True.

    The same bits and answers as ``f.add_many(np.flatnonzero(is_member))`` then
    ``f.contains_many(np.arange(n))``: members are always True (no false negatives), the
    others True at the filter's false-positive rate. One hash of every id, no filter object:
    the simulator's 10 ms digest of a region's full nodes calls this 100 times a second.
    """
    is_member = np.asarray(is_member)
    if is_member.dtype != bool or is_member.ndim != 1:
        raise TypeError(f"is_member must be a 1-d boolean array, got {is_member.dtype} of shape {is_member.shape}")
    m = int_scalar("m", m, 1, M_MAX)
    k = int_scalar("k", k, 1, K_MAX)
    seed = int_scalar("seed", seed, 0, 2**64 - 1)
    h1 = hash64_array(np.arange(len(is_member), dtype=_U64) ^ _U64(hash64(seed)))
    h2 = hash64_array(h1)
    bits = np.zeros((m + 7) // 8, dtype=np.uint8)
    kernels = _kernels()
    kernels.add_hashed(bits, h1[is_member], h2[is_member], m, k)
    out = np.empty(len(is_member), dtype=np.uint8)
    kernels.contains_hashed(bits, h1, h2, m, k, out)
    return out.view(bool)
