"""The kit's random numbers: SplitMix64 and xorshift64*, in readable Python.

Every kernel draws from one of these two generators, and its compiled form cimports the
same functions from ``base/_rng.pxd``; this module is their readable twin (same constants,
same wrap-around mod 2^64), so both backends draw identical streams.

* SplitMix64 (Steele, Lea & Flood 2014; Vigna's ``splitmix64.c``): one 64-bit state,
  passes BigCrush. :func:`splitmix64` is one step; :func:`hash64` is its first output from
  a given state, used as a 64-bit integer hash (Bloom filters, the consistent-hash ring).
* xorshift64* (Vigna 2016): the simulator core's generator.

Turning a 64-bit output into a number: :func:`unit_double` (a double in [0, 1)),
:func:`below32` (top 32 bits, n < 2^32) and :func:`below64` (the high word of x * n).
"""
from __future__ import annotations

import numpy as np

MASK64 = (1 << 64) - 1
GOLDEN_GAMMA = 0x9E3779B97F4A7C15  # SplitMix64's increment: 2^64 / the golden ratio, odd
MIX1 = 0xBF58476D1CE4E5B9  # the output function's two multipliers (Stafford's Mix13)
MIX2 = 0x94D049BB133111EB
XORSHIFT_STAR = 0x2545F4914F6CDD1D  # xorshift64*'s output multiplier
_TO_UNIT = 1.0 / 9007199254740992.0  # 2^-53


def mix64(z: int) -> int:
    """SplitMix64's output function (a bijection on 64-bit integers)."""
    z = ((z ^ (z >> 30)) * MIX1) & MASK64
    z = ((z ^ (z >> 27)) * MIX2) & MASK64
    return z ^ (z >> 31)


def splitmix64(state: int) -> tuple[int, int]:
    """One step of SplitMix64: ``(new_state, 64-bit output)``."""
    state = (state + GOLDEN_GAMMA) & MASK64
    return state, mix64(state)


def hash64(x: int) -> int:
    """A 64-bit hash of ``x`` in [0, 2^64): SplitMix64's first output from state ``x``."""
    return mix64((x + GOLDEN_GAMMA) & MASK64)


def hash64_array(x: np.ndarray) -> np.ndarray:
    """:func:`hash64` of every element of a uint64 array (numpy wraps mod 2^64)."""
    with np.errstate(over="ignore"):
        z = x + np.uint64(GOLDEN_GAMMA)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(MIX1)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(MIX2)
        out: np.ndarray = z ^ (z >> np.uint64(31))
        return out


class SplitMix64:
    """A SplitMix64 stream as an object (the state is ``self.state``).

    The outputs are made a block at a time with NumPy: SplitMix64 is counter-based (its
    k-th output is ``hash64(seed + (k - 1) x GOLDEN_GAMMA)``), so a block is one array
    expression, and a draw is a list lookup instead of three Python calls (the pure-Python
    kernels draw one number per gossip message). The stream is :func:`splitmix64`'s, output
    for output (tests/test_base_rng.py).
    """

    BLOCK = 4096

    def __init__(self, seed: int):
        self._seed = seed & MASK64
        self._block: list[int] = []      # the latest block: outputs _made - BLOCK + 1 .. _made
        self._made = 0
        self._i = 0                      # next unread item of _block

    @property
    def state(self) -> int:
        """The generator's state after the outputs drawn so far (as :func:`splitmix64` keeps it)."""
        drawn = self._made - len(self._block) + self._i
        return (self._seed + drawn * GOLDEN_GAMMA) & MASK64

    def next(self) -> int:
        """The next 64-bit output."""
        if self._i == len(self._block):
            k = np.arange(self._made, self._made + self.BLOCK, dtype=np.uint64)
            with np.errstate(over="ignore"):
                self._block = hash64_array(np.uint64(self._seed) + k * np.uint64(GOLDEN_GAMMA)).tolist()
            self._made += self.BLOCK
            self._i = 0
        x = self._block[self._i]
        self._i += 1
        return x

    def below(self, n: int) -> int:
        """An integer in [0, n), n < 2^64: :func:`below64` of the next output."""
        return below64(self.next(), n)

    def chance(self, threshold: int) -> bool:
        """True with probability threshold / 2^53 (the next output's top 53 bits below it)."""
        return (self.next() >> 11) < threshold


def xorshift64(x: int) -> int:
    """xorshift64*'s state step (shifts 12, 25, 27); a nonzero state stays nonzero."""
    x ^= x >> 12
    x ^= (x << 25) & MASK64
    x ^= x >> 27
    return x


def xorshift64_seed(seed: int) -> int:
    """A nonzero xorshift64* state from any seed: ``seed x GOLDEN_GAMMA + 1`` mod 2^64, or 1."""
    return ((seed * GOLDEN_GAMMA + 1) & MASK64) or 1


def xorshift64star(state: int) -> tuple[int, int]:
    """One step of xorshift64*: ``(new_state, 64-bit output)``."""
    state = xorshift64(state)
    return state, (state * XORSHIFT_STAR) & MASK64


def unit_double(x: int) -> float:
    """A 64-bit output as a double in [0, 1): its top 53 bits times 2^-53 (exact)."""
    return (x >> 11) * _TO_UNIT


def below32(x: int, n: int) -> int:
    """A 64-bit output as an integer in [0, n), n < 2^32: Lemire's multiply-shift of the top 32 bits."""
    return ((x >> 32) * n) >> 32


def below64(x: int, n: int) -> int:
    """A 64-bit output as an integer in [0, n), n < 2^64: the high word of x * n (Lemire 2019)."""
    return (x * n) >> 64
