"""workload.categorical: rng.choice(len(p), size, p=p)'s values and rng use, block by block."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from magnum_lib.workload import categorical


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), size=st.integers(0, 5000), block=st.integers(1, 700),
       w=st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.7]), min_size=1, max_size=9))
def test_equals_generator_choice_and_leaves_rng_in_the_same_state(seed, size, block, w):
    if sum(w) == 0:
        w = w[:-1] + [1.0]
    p = np.array(w) / sum(w)
    a, b = np.random.default_rng(seed), np.random.default_rng(seed)
    want = a.choice(len(p), size=size, p=p)
    got = categorical(b, p, size, block=block)
    assert got.dtype == np.int8 and np.array_equal(got, want)
    assert a.random() == b.random()  # the same number of draws


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64])
def test_dtype_and_frequencies(dtype):
    p = [0.45, 0.25, 0.1, 0.2]
    x = categorical(np.random.default_rng(0), p, 200_000, dtype=dtype)
    assert x.dtype == dtype and x.min() >= 0 and x.max() <= 3
    freq = np.bincount(x, minlength=4) / len(x)
    assert np.all(np.abs(freq - p) < 4 * np.sqrt(np.array(p) * (1 - np.array(p)) / len(x)))
