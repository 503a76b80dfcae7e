"""fairness.maxmin_waterfill: Gavel's one-type max-min LP solved by progressive filling.

Theory (module docstring of replay/fairness.py): with one GPU type the LP is
max z s.t. z <= a_j x_j, 0 <= x_j <= 1 (0 where thr_j = 0), sum_j s_j x_j <= N, with
a_j = w_j s_j thr_j = s_j up to rounding. Checked against HiGHS on the same LP
(``maxmin_allocation``): the optimum z*, the X where it is unique (capacity binds, no job
at x = 1), and that the waterfill levels are the lexicographic max-min (they dominate
HiGHS's sorted levels). Plus hand cases and every bad input.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from magnum_lib.base.validate import ParameterError
from magnum_lib.replay.fairness import maxmin_allocation, maxmin_waterfill

TOL = 1e-9


def coeff(scale, thr):
    """The LP's coefficient of x_j in job j's row (``fairness._maxmin_lp``): w_j s_j thr_j."""
    thr = np.asarray(thr, dtype=float)
    w = 1.0 / np.where(thr > 0, thr, 1.0)
    return w * np.asarray(scale, dtype=float) * thr


@st.composite
def instances(draw):
    m = draw(st.integers(1, 40))
    scale = draw(st.lists(st.sampled_from([1.0, 2.0, 4.0, 8.0, 3.0, 0.5]), min_size=m, max_size=m))
    N = draw(st.integers(0, 80))
    kind = draw(st.sampled_from(["ones", "positive", "with_zeros"]))
    if kind == "ones":
        thr = None
    else:
        vals = [0.3, 1.0, 2.5, 1 / 7, 13.0] + ([0.0] if kind == "with_zeros" else [])
        thr = draw(st.lists(st.sampled_from(vals), min_size=m, max_size=m))
    return scale, N, thr


def solve_both(scale, N, thr):
    m = len(scale)
    t = np.ones(m) if thr is None else np.asarray(thr, dtype=float)
    x = maxmin_waterfill(scale, N, thr)
    with np.errstate(invalid="ignore", divide="ignore"):     # (N = 0: Gavel's split divides 0 by 0)
        h = maxmin_allocation(t[:, None], scale, [N])[:, 0]
    a = coeff(scale, t)
    return x, h, a, t


@settings(max_examples=300, deadline=None)
@given(instances())
def test_optimum_equals_highs_and_feasible(case):
    scale, N, thr = case
    x, h, a, t = solve_both(scale, N, thr)
    s = np.asarray(scale)
    assert np.all(x >= 0) and np.all(x <= 1) and np.all(x[t <= 0] == 0)
    assert np.dot(s, x) <= N * (1 + TOL) + TOL                     # capacity
    z_ours, z_highs = np.min(a * x), np.min(a * h)
    assert abs(z_ours - z_highs) <= TOL * max(1.0, abs(z_highs)), (z_ours, z_highs)
    # The closed form: z* = min(min_j a_j, N / sum_j s_j / a_j) when every thr > 0, else 0.
    z_star = 0.0 if np.any(t <= 0) else min(a.min(), N / np.sum(s / a))
    assert abs(z_ours - z_star) <= TOL * max(1.0, z_star)


@settings(max_examples=300, deadline=None)
@given(instances())
def test_unique_x_where_the_capacity_binds(case):
    scale, N, thr = case
    x, h, a, t = solve_both(scale, N, thr)
    s = np.asarray(scale)
    if np.any(t <= 0) or N == 0:
        return
    level = N / np.sum(s / a)
    if level >= a.min() * (1 - 1e-6):        # some job at x = 1: X is not unique
        return
    np.testing.assert_allclose(x, level / a, rtol=TOL, atol=0)
    np.testing.assert_allclose(x, h, rtol=TOL, atol=TOL)


@settings(max_examples=300, deadline=None)
@given(instances())
def test_levels_are_the_lexicographic_max_min(case):
    """Sorted levels a_j x_j dominate HiGHS's sorted levels lexicographically (first
    difference beyond the tolerance is ours larger), and ours is the filling: a job below
    x = 1 sits at the common top level, a job at x = 1 is at or below it."""
    scale, N, thr = case
    x, h, a, t = solve_both(scale, N, thr)
    ours, theirs = np.sort(a * x), np.sort(a * h)
    for u, v in zip(ours, theirs, strict=True):
        if abs(u - v) <= TOL * max(1.0, abs(v)):
            continue
        assert u > v, (ours, theirs)
        break
    up = t > 0
    if N > 0 and np.any(up & (x < 1 - TOL)):
        top = np.max((a * x)[up & (x < 1 - TOL)])
        np.testing.assert_allclose((a * x)[up & (x < 1 - TOL)], top, rtol=TOL)
        assert np.all((a * x)[up & (x >= 1 - TOL)] <= top * (1 + TOL))
        assert abs(np.dot(scale, x) - N) <= TOL * N                  # and the capacity is used up


def test_hand_cases():
    # N / m < min s_j: every job gets N / (m s_j) (the LP's unique X).
    np.testing.assert_array_equal(maxmin_waterfill([4, 8, 8], 6), [0.5, 0.25, 0.25])
    # Room for all: x = 1.
    np.testing.assert_array_equal(maxmin_waterfill([1, 2, 4, 8], 36), [1, 1, 1, 1])
    # Small jobs fill to 1, the rest share what is left: levels 1, 2, 2.5, 2.5 (HiGHS may
    # return 1, 1, 1, 1: also optimal, z* = 1).
    np.testing.assert_array_equal(maxmin_waterfill([1, 2, 4, 8], 8), [1, 1, 0.625, 0.3125])
    # thr = 0: x = 0 and no capacity taken (the LP's optimum is then 0, any X is optimal).
    np.testing.assert_array_equal(maxmin_waterfill([1, 1, 8], 4, [1, 0, 1]), [1, 0, 0.375])
    # No GPUs, no jobs.
    np.testing.assert_array_equal(maxmin_waterfill([1, 2], 0), [0, 0])
    assert maxmin_waterfill([], 4).shape == (0,)
    # thr scales cancel (w_j = 1 / thr_j): the aware allocation equals the blind one.
    np.testing.assert_allclose(maxmin_waterfill([1, 2, 4, 8], 8, [0.5, 3.0, 1 / 7, 2.0]),
                               maxmin_waterfill([1, 2, 4, 8], 8), rtol=1e-15)


@pytest.mark.parametrize("kw,name", [
    (dict(scale=[1, 0], num_gpus=4), "scale"),
    (dict(scale=[1, -2], num_gpus=4), "scale"),
    (dict(scale=[1, np.nan], num_gpus=4), "scale"),
    (dict(scale=[[1, 2]], num_gpus=4), "scale"),
    (dict(scale=["a"], num_gpus=4), "scale"),
    (dict(scale=[1, 2], num_gpus=-1), "num_gpus"),
    (dict(scale=[1, 2], num_gpus=np.inf), "num_gpus"),
    (dict(scale=[1, 2], num_gpus="4"), "num_gpus"),
    (dict(scale=[1, 2], num_gpus=4, thr=[1.0]), "thr"),
    (dict(scale=[1, 2], num_gpus=4, thr=[1.0, -1.0]), "thr"),
    (dict(scale=[1, 2], num_gpus=4, thr=[1.0, np.inf]), "thr"),
])
def test_bad_input(kw, name):
    with pytest.raises(ParameterError) as e:
        maxmin_waterfill(**kw)
    assert e.value.name == name
