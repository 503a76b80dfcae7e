"""bursty_arrivals(method="spacings"): the same MMPP-2 as method="sort", drawn in order."""
import math

import numpy as np
import pytest

from magnum_lib.workload import bursty_arrivals, bursty_mean_rate


def test_spacings_gives_the_sorted_method_s_counts_and_sorted_points_in_their_segments():
    kw = dict(horizon=5_000.0, start="stationary", seed=11, return_states=True)
    a, starts_a, state_a = bursty_arrivals(0.5, 5.0, 20.0, 5.0, method="sort", **kw)
    b, starts_b, state_b = bursty_arrivals(0.5, 5.0, 20.0, 5.0, method="spacings", **kw)
    # the state path and the counts per segment come from the same draws
    assert np.array_equal(starts_a, starts_b) and np.array_equal(state_a, state_b)
    edges = np.append(starts_a, 5_000.0)
    assert np.array_equal(np.histogram(a, edges)[0], np.histogram(b, edges)[0])
    assert np.all(np.diff(b) >= 0) and b[0] >= 0 and b[-1] <= 5_000.0


def test_spacings_points_are_uniform_within_a_segment():
    # one segment (equal rates): Poisson arrivals, so gaps are exponential (cv 1) and the
    # points are uniform over the window (Kolmogorov-Smirnov distance small)
    t = bursty_arrivals(2.0, 2.0, 1e6, 1e6, horizon=20_000.0, seed=3, method="spacings")
    gaps = np.diff(t)
    assert abs(gaps.std() / gaps.mean() - 1.0) < 0.03
    u = np.sort(t) / 20_000.0
    ks = np.max(np.abs(u - np.arange(1, u.size + 1) / u.size))
    assert ks < 1.63 / math.sqrt(u.size)  # 1% level


def test_spacings_keeps_the_long_run_rate():
    lb, lB, mb, mB, h = 0.5, 5.0, 200.0, 50.0, 400_000.0
    t = bursty_arrivals(lb, lB, mb, mB, horizon=h, start="stationary", seed=5, method="spacings")
    lam = bursty_mean_rate(lb, lB, mb, mB)
    assert abs(t.size - lam * h) < 0.05 * lam * h


def test_unknown_method_is_refused():
    with pytest.raises(ValueError, match="method"):
        bursty_arrivals(1.0, 2.0, 1.0, 1.0, horizon=10.0, seed=1, method="magic")
