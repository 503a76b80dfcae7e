"""Bloom filter: no false negatives, the false-positive rate of theory, wire form, union, parity."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from magnum_lib.gossip import bloom_ref
from magnum_lib.gossip.bloom import (
    HEADER_BYTES,
    K_MAX,
    M_MAX,
    BloomFilter,
    expected_fp_rate,
    is_prime,
    next_prime,
    optimal_params,
    union_all,
)
from tests.conftest import import_compiled

int_keys = st.lists(st.integers(0, 2**64 - 1), max_size=60)
text_keys = st.lists(st.one_of(st.binary(max_size=20), st.text(max_size=10)), max_size=60)
shapes = st.tuples(st.integers(1, 3000), st.integers(1, 12), st.integers(0, 2**64 - 1))


# -- no false negatives, ever ------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(keys=int_keys, shape=shapes)
def test_no_false_negatives_int_keys(keys, shape):
    bulk, one = BloomFilter(*shape), BloomFilter(*shape)
    bulk.add_many(np.array(keys, dtype=np.uint64))
    for key in keys:
        one.add(key)
    assert bulk == one  # the scalar and vectorized paths set the same bits
    assert all(key in bulk for key in keys)
    assert bulk.contains_many(np.array(keys, dtype=np.uint64)).all()


@settings(max_examples=60, deadline=None)
@given(keys=text_keys, shape=shapes)
def test_no_false_negatives_bytes_keys(keys, shape):
    f = BloomFilter(*shape)
    f.add_many(keys)
    assert all(key in f for key in keys)
    assert f.contains_many(keys).all()
    ref = bloom_ref.BloomRef(*shape)
    for key in keys:
        ref.add(key)
    assert f.to_bytes()[HEADER_BYTES:] == bytes(ref.bits)


@settings(max_examples=40, deadline=None)
@given(keys=int_keys, shape=shapes)
def test_matches_pure_python_reference(keys, shape):
    f, ref = BloomFilter(*shape), bloom_ref.BloomRef(*shape)
    f.add_many(np.array(keys, dtype=np.uint64))
    for key in keys:
        ref.add(key)
    assert f.to_bytes()[HEADER_BYTES:] == bytes(ref.bits)
    probes = np.arange(200, dtype=np.uint64)
    assert f.contains_many(probes).tolist() == [int(p) in ref for p in probes]


def test_str_is_its_utf8_bytes_and_int_differs():
    f = BloomFilter(next_prime(10_000), 5)
    f.add("héllo")
    assert "héllo".encode() in f
    g = BloomFilter(next_prime(10_000), 5)
    g.add(97)
    assert 97 in g and b"a" not in g and "a" not in g


def test_compiled_kernels_match_reference():
    compiled = import_compiled("magnum_lib.gossip._bloom")
    rng = np.random.default_rng(7)
    h1, h2 = rng.integers(0, 2**64, 5000, dtype=np.uint64), rng.integers(0, 2**64, 5000, dtype=np.uint64)
    for m, k in [(1, 3), (2, 1), (1000, 7), (65_537, 4), (2**26 + 5, K_MAX)]:
        bits_c = np.zeros((m + 7) // 8, np.uint8)
        bits_r = bits_c.copy()
        compiled.add_hashed(bits_c, h1[:2500], h2[:2500], m, k)
        bloom_ref.add_hashed(bits_r, h1[:2500], h2[:2500], m, k)
        assert np.array_equal(bits_c, bits_r)
        out_c, out_r = np.empty(5000, np.uint8), np.empty(5000, np.uint8)
        compiled.contains_hashed(bits_c, h1, h2, m, k, out_c)
        bloom_ref.contains_hashed(bits_r, h1, h2, m, k, out_r)
        assert np.array_equal(out_c, out_r) and out_c[:2500].all()


def test_positions_are_distinct_when_m_is_prime():
    m = next_prime(1000)
    for key in range(2000):
        assert len(set(bloom_ref.positions(*bloom_ref.int_hashes(key), m, 20))) == 20


# -- false-positive rate against (1 - e^(-kn/m))^k ----------------------------------

def _fill_sd(n: int, m: int, k: int) -> float:
    """Standard deviation of the FP rate (fill ** k) caused by the random fill of the filter.

    Z = number of zero bits when n keys each set k distinct uniform bits:
    P(bit zero) = (1 - k/m)^n, P(two bits zero) = ((m-k)(m-k-1) / (m(m-1)))^n, so
    Var Z = m p1 + m(m-1) p2 - (m p1)^2; by the delta method sd(fill^k) = k q^(k-1) sd(Z)/m.
    """
    p1 = (1 - k / m) ** n
    p2 = ((m - k) * (m - k - 1) / (m * (m - 1))) ** n
    var_z = m * p1 + m * (m - 1) * p2 - (m * p1) ** 2
    q = 1 - p1
    return k * q ** (k - 1) * math.sqrt(max(var_z, 0.0)) / m


@pytest.mark.parametrize("n, m, k", [
    (2000, None, None),            # optimal (m, k) for 1 %
    (2000, next_prime(12_000), 2),  # too few hashes
    (2000, next_prime(12_000), 9),  # too many
    (5000, next_prime(30_000), 3),
    (1000, next_prime(20_000), 14),  # optimal k for this m, tiny rate
])
def test_false_positive_rate_matches_theory(n, m, k):
    if m is None:
        m, k = optimal_params(n, 0.01)
    rng = np.random.default_rng(n + m + k)
    members = rng.choice(2**62, n, replace=False)
    queries = 2**62 + np.arange(100_000)  # disjoint from members: every hit is a false positive
    f = BloomFilter(m, k, seed=3)
    f.add_many(members)
    assert f.contains_many(members).all()
    measured = f.contains_many(queries).mean()
    p = expected_fp_rate(n, m, k)
    # Two independent sources of spread: the 1e5 queries are Bernoulli(fill^k) given the
    # filter (binomial sd), and the filter's fill itself is random (_fill_sd). 4 sd of the sum.
    binom_var = p * (1 - p) / queries.size
    tol = 4 * math.sqrt(binom_var + _fill_sd(n, m, k) ** 2)
    assert abs(measured - p) <= tol, (measured, p, tol)
    # Given the actual fill, only the binomial spread remains.
    cond = f.current_fp_rate()
    assert abs(measured - cond) <= 4 * math.sqrt(cond * (1 - cond) / queries.size), (measured, cond)


def test_expected_fp_rate_closed_form():
    assert expected_fp_rate(0, 100, 3) == 0.0
    assert expected_fp_rate(10, 100, 1) == pytest.approx(1 - math.exp(-0.1))
    assert expected_fp_rate(1000, 9586, 7) == pytest.approx((1 - math.exp(-7000 / 9586)) ** 7)


@pytest.mark.parametrize("n, p", [(1, 0.5), (100, 0.01), (10_000, 0.001), (123_457, 0.05)])
def test_optimal_params(n, p):
    m, k = optimal_params(n, p)
    assert is_prime(m)
    assert expected_fp_rate(n, m, k) <= p
    textbook = -n * math.log(p) / math.log(2) ** 2
    assert textbook <= m <= 1.03 * textbook + 20
    assert abs(k - m / n * math.log(2)) <= 1
    # the other neighbouring integer k is no better
    for other in (k - 1, k + 1):
        if other >= 1:
            assert expected_fp_rate(n, m, other) >= expected_fp_rate(n, m, k)


def test_is_prime_against_sieve():
    sieve = np.ones(5000, bool)
    sieve[:2] = False
    for i in range(2, 71):
        sieve[i * i::i] = False
    assert [is_prime(i) for i in range(5000)] == sieve.tolist()
    assert is_prime(2**61 - 1) and not is_prime(2**61 + 1)
    assert next_prime(9586) == 9587 and next_prime(0) == 2


# -- wire form --------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(keys=int_keys, shape=shapes)
def test_to_bytes_round_trip(keys, shape):
    f = BloomFilter(*shape)
    f.add_many(np.array(keys, dtype=np.uint64))
    data = f.to_bytes()
    assert len(data) == f.wire_nbytes == HEADER_BYTES + math.ceil(shape[0] / 8) == HEADER_BYTES + f.nbytes
    g = BloomFilter.from_bytes(data)
    assert g == f and (g.m, g.k, g.seed) == shape
    assert g.contains_many(np.array(keys, dtype=np.uint64)).all()


def _bad(data: bytes, offset: int, value: bytes) -> bytes:
    return data[:offset] + value + data[offset + len(value):]


@pytest.mark.parametrize("mutate, match", [
    (lambda d: d[:10], "shorter than"),
    (lambda d: _bad(d, 0, b"XXXX"), "magic"),
    (lambda d: _bad(d, 4, bytes([2])), "version"),
    (lambda d: _bad(d, 5, bytes([0])), "k=0"),
    (lambda d: _bad(d, 5, bytes([K_MAX + 1])), "k=65"),
    (lambda d: _bad(d, 6, b"\x01\x00"), "reserved"),
    (lambda d: _bad(d, 8, (0).to_bytes(8, "little")), "m=0"),
    (lambda d: _bad(d, 8, (M_MAX + 1).to_bytes(8, "little")), "m="),
    (lambda d: _bad(d, 8, (200).to_bytes(8, "little")), "needs exactly"),
    (lambda d: d + b"\x00", "needs exactly"),
    (lambda d: d[:-1], "needs exactly"),
    (lambda d: d[:-1] + b"\xff", "padding"),
])
def test_from_bytes_rejects_malformed(mutate, match):
    f = BloomFilter(100, 3)  # 100 bits: 13 bytes, the last one has 4 padding bits
    f.add_many(np.arange(10))
    with pytest.raises(ValueError, match=match):
        BloomFilter.from_bytes(mutate(f.to_bytes()))


def test_from_bytes_type():
    with pytest.raises(TypeError, match="bytes"):
        BloomFilter.from_bytes("not bytes")


# -- union ------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(a=int_keys, b=int_keys, shape=shapes)
def test_union_equals_filter_of_union(a, b, shape):
    fa, fb, fab = BloomFilter(*shape), BloomFilter(*shape), BloomFilter(*shape)
    fa.add_many(np.array(a, dtype=np.uint64))
    fb.add_many(np.array(b, dtype=np.uint64))
    fab.add_many(np.array(sorted(set(a) | set(b)), dtype=np.uint64))
    assert fa.union(fb) == fab == (fb | fa) == union_all([fa, fb])
    assert fa.union(fa) == fa  # idempotent


@pytest.mark.parametrize("other", [BloomFilter(101, 3), BloomFilter(100, 4), BloomFilter(100, 3, seed=1)])
def test_union_mismatch(other):
    with pytest.raises(ValueError, match=r"differ in \(m, k, seed\)"):
        BloomFilter(100, 3).union(other)
    with pytest.raises(ValueError, match="differ"):
        union_all([BloomFilter(100, 3), other])


def test_union_bad_types():
    with pytest.raises(TypeError, match="BloomFilter"):
        BloomFilter(100, 3).union({1, 2})
    with pytest.raises(ValueError, match="at least one"):
        union_all([])


# -- sizes and estimates ----------------------------------------------------------

def test_fill_and_estimated_count():
    f = BloomFilter(next_prime(100_000), 5)
    assert f.bits_set == 0 and f.estimated_count() == 0 and f.current_fp_rate() == 0
    f.add_many(np.arange(5000))
    # Fill is the expected 1 - (1 - k/m)^n within 4 sd of the zero count (see _fill_sd).
    p1 = (1 - 5 / f.m) ** 5000
    assert abs((1 - f.fill_ratio) - p1) < 4 * math.sqrt(p1 / f.m)
    assert f.estimated_count() == pytest.approx(5000, rel=0.03)
    assert f.nbytes == math.ceil(f.m / 8)
    full = BloomFilter(8, 1)
    full.add_many(np.arange(1000))
    assert full.fill_ratio == 1.0 and full.estimated_count() == math.inf
    assert set(f.to_dict()) >= {"m", "k", "nbytes", "fill_ratio", "estimated_count"}


# -- bad input --------------------------------------------------------------------

@pytest.mark.parametrize("args, exc, match", [
    ((0, 3), ValueError, "m must be"),
    ((M_MAX + 1, 3), ValueError, "m must be"),
    ((100, 0), ValueError, "k must be"),
    ((100, K_MAX + 1), ValueError, "k must be"),
    ((100, 3, -1), ValueError, "seed must be"),
    ((100.0, 3), TypeError, "m must be"),
    ((True, 3), TypeError, "m must be"),
])
def test_constructor_rejects(args, exc, match):
    with pytest.raises(exc, match=match):
        BloomFilter(*args)


@pytest.mark.parametrize("keys, exc, match", [
    (np.array([1, -2]), ValueError, "negative key -2"),
    (np.array([0.5]), TypeError, "dtype float64"),
    (np.array([True]), TypeError, "dtype bool"),
    ([1, b"x"], TypeError, "mix"),
    ([1, 2**64], ValueError, "2\\*\\*64"),
    ([1, -1], ValueError, "got -1"),
    ([1, 2.5], TypeError, "got 2.5"),
])
def test_bad_keys_many(keys, exc, match):
    f = BloomFilter(100, 3)
    with pytest.raises(exc, match=match):
        f.add_many(keys)
    with pytest.raises(exc, match=match):
        f.contains_many(keys)
    assert f.bits_set == 0  # nothing half-applied


@pytest.mark.parametrize("key, exc", [(-1, ValueError), (2**64, ValueError), (1.5, TypeError),
                                      (None, TypeError), (True, TypeError)])
def test_bad_single_key(key, exc):
    f = BloomFilter(100, 3)
    with pytest.raises(exc, match="key must be"):
        f.add(key)
    with pytest.raises(exc, match="key must be"):
        key in f  # noqa: B015


@pytest.mark.parametrize("args, exc", [((0, 0.01), ValueError), ((10, 0), ValueError), ((10, 1), ValueError),
                                       ((10, "1%"), ValueError), ((1.5, 0.1), TypeError)])
def test_optimal_params_rejects(args, exc):
    with pytest.raises(exc, match="n must be|fp_rate must be"):
        optimal_params(*args)


def test_expected_fp_rate_rejects():
    with pytest.raises(ValueError, match="m must be"):
        expected_fp_rate(10, 0, 3)
    with pytest.raises(ValueError, match="n must be"):
        expected_fp_rate(-1, 10, 3)


@pytest.mark.parametrize("n, frac, seed", [(1, 1.0, 0), (7, 0.0, 3), (5000, 0.4, 12345), (960, 0.1, 2**31 - 1)])
def test_member_flags_are_a_real_filters_answers(n, frac, seed):
    from magnum_lib.gossip.bloom import member_flags
    rng = np.random.default_rng(seed)
    is_member = rng.random(n) < frac
    m, k = optimal_params(max(int(is_member.sum()), 1), 0.01)
    f = BloomFilter(m, k, seed=seed)
    f.add_many(np.flatnonzero(is_member))
    got = member_flags(is_member, m, k, seed=seed)
    assert got.dtype == bool and np.array_equal(got, f.contains_many(np.arange(n)))
    assert got[is_member].all()


def test_member_flags_rejects_non_boolean_input():
    from magnum_lib.gossip.bloom import member_flags
    with pytest.raises(TypeError, match="is_member"):
        member_flags(np.array([0, 1]), 101, 3)
    with pytest.raises(ValueError, match="k must"):
        member_flags(np.array([True]), 101, 0)
