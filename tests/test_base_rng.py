"""base.rng (readable) and base/_rng.pxd (compiled, through base/_rng.pyx): the published
outputs, and the two forms drawing the same numbers."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from magnum_lib.base import rng

# Vigna's splitmix64.c (prng.di.unimi.it/splitmix64.c) with x = 1234567, compiled and run:
# the first five next() values, also the values of Java's SplittableRandom for that seed.
SPLITMIX64_1234567 = [6457827717110365317, 3203168211198807973, 9817491932198370423,
                      4593380528125082431, 16408922859458223821]
# Vigna's xorshift64* (x ^= x >> 12; x ^= x << 25; x ^= x >> 27; return x * 0x2545F4914F6CDD1D)
# with x = 1234567, compiled and run.
XORSHIFT64STAR_1234567 = [15206870846055014720, 11814338285426115798, 17343005542382387338,
                          8561422197155331277, 16361354537960685371]

u64 = st.integers(0, 2**64 - 1)


def _stream(step, state, n):
    out = []
    for _ in range(n):
        state, x = step(state)
        out.append(x)
    return out


def test_splitmix64_published_outputs():
    assert _stream(rng.splitmix64, 1234567, 5) == SPLITMIX64_1234567
    g = rng.SplitMix64(1234567)
    assert [g.next() for _ in range(5)] == SPLITMIX64_1234567
    assert rng.hash64(1234567) == SPLITMIX64_1234567[0]


def test_xorshift64star_published_outputs():
    assert _stream(rng.xorshift64star, 1234567, 5) == XORSHIFT64STAR_1234567


def test_seeds_and_ranges():
    assert rng.xorshift64_seed(0) == 1
    # seed x gamma + 1 wraps to 0 for the gamma's inverse times -1: the state must stay nonzero
    inv = pow(rng.GOLDEN_GAMMA, -1, 2**64)
    assert rng.xorshift64_seed((-inv) % 2**64) == 1
    assert rng.unit_double(2**64 - 1) < 1.0 and rng.unit_double(0) == 0.0
    assert rng.below32(2**64 - 1, 10) == 9 and rng.below64(2**64 - 1, 10) == 9


@given(st.lists(u64, min_size=1, max_size=50))
def test_hash64_array_matches_scalar(xs):
    got = rng.hash64_array(np.array(xs, dtype=np.uint64))
    assert got.tolist() == [rng.hash64(x) for x in xs]


compiled = pytest.importorskip("magnum_lib.base._rng")


def test_compiled_published_outputs():
    assert compiled.outputs("splitmix64", 1234567, 5).tolist() == SPLITMIX64_1234567
    assert compiled.outputs("xorshift64star", 1234567, 5).tolist() == XORSHIFT64STAR_1234567


@given(u64, u64)
def test_compiled_matches_readable(seed, n):
    assert compiled.outputs("splitmix64", seed, 3).tolist() == _stream(rng.splitmix64, seed, 3)
    state = rng.xorshift64_seed(seed)
    assert compiled.outputs("xorshift64star", state, 3).tolist() == _stream(rng.xorshift64star, state, 3)
    n32 = n >> 32
    assert compiled.draws(seed, n32) == (rng.hash64(seed), rng.unit_double(seed), rng.below32(seed, n32),
                                         rng.below64(seed, n32))
    assert compiled.draws(seed, n)[3] == rng.below64(seed, n)
    assert compiled.seed_state(seed) == rng.xorshift64_seed(seed)


@pytest.mark.parametrize("seed", [0, 1234567, 2**63 + 12345, 2**64 - 1])
def test_splitmix64_stream_object_is_the_step_function_across_blocks(seed):
    """The stream object makes its outputs a block at a time: output for output, and state
    for state, it is :func:`rng.splitmix64` iterated, also across block boundaries."""
    g, state = rng.SplitMix64(seed), seed
    assert g.state == state
    for _ in range(2 * rng.SplitMix64.BLOCK + 3):
        state, x = rng.splitmix64(state)
        assert g.next() == x
        assert g.state == state
