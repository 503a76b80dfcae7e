"""Arrival generators, service times and the Workload container.

Statistical checks compare against closed forms with 5-sigma tolerances on fixed
seeds, so they cannot pass by accident for a wrong formula and do not flake.
"""
import math

import numpy as np
import pytest

from magnum_lib.workload import (
    Workload,
    bursty_arrivals,
    bursty_mean_rate,
    diurnal_arrivals,
    diurnal_rate,
    exponential_service,
    lognormal_service,
    make_workload,
    pareto_service,
    poisson_arrivals,
    to_ns,
)

Z = 5.0


def close(x, expected, sd):
    assert abs(x - expected) <= Z * sd, f"{x} vs {expected} (sd {sd})"


# ------------------------------------------------------------------ arrivals

def test_poisson_n_mean_gap_and_order():
    rate, n = 4.0, 40_000
    t = poisson_arrivals(rate, n, seed=1)
    assert t.shape == (n,) and t.dtype == np.float64
    assert np.all(np.diff(t) > 0) and t[0] > 0
    gaps = np.diff(np.concatenate(([0.0], t)))
    close(gaps.mean(), 1 / rate, (1 / rate) / math.sqrt(n))
    # exponential gaps: P(gap > mean) = e^-1
    p = np.mean(gaps > 1 / rate)
    close(p, math.exp(-1), math.sqrt(math.exp(-1) * (1 - math.exp(-1)) / n))


def test_poisson_horizon_count():
    rate, h = 2.0, 20_000.0
    t = poisson_arrivals(rate, horizon=h, seed=2)
    assert t.min() >= 0 and t.max() < h and np.all(np.diff(t) >= 0)
    close(t.size, rate * h, math.sqrt(rate * h))


def test_seeding_and_units():
    a = poisson_arrivals(1.0, 100, seed=7)
    assert np.array_equal(a, poisson_arrivals(1.0, 100, seed=7))
    assert not np.array_equal(a, poisson_arrivals(1.0, 100, seed=8))
    ns = poisson_arrivals(1.0, 100, seed=7, unit="ns")
    assert ns.dtype == np.int64 and np.array_equal(ns, to_ns(a))
    assert np.all(np.abs(ns - a * 1e9) <= 0.5 + 1e-6 * a * 1e9)
    # one Generator threaded through calls is one stream
    g1, g2 = np.random.default_rng(3), np.random.default_rng(3)
    x = np.concatenate([poisson_arrivals(1.0, 10, seed=g1), poisson_arrivals(1.0, 10, seed=g1)])
    y = np.concatenate([poisson_arrivals(1.0, 10, seed=g2), poisson_arrivals(1.0, 10, seed=g2)])
    assert np.array_equal(x, y)


def test_diurnal_thinning_matches_rate_integral():
    mean, amp, period = 0.05, 0.8, 1000.0
    h = 400 * period
    t = diurnal_arrivals(mean, amp, period, horizon=h, seed=3)
    close(t.size, mean * h, math.sqrt(mean * h))
    # share in the first half of each period: integral of 1 + a sin = 1/2 + a/pi
    share = np.mean((t % period) < period / 2)
    p = 0.5 + amp / math.pi
    close(share, p, math.sqrt(p * (1 - p) / t.size))
    # finer: counts per tenth of a period follow the integrated rate
    edges = np.linspace(0, period, 11)
    counts = np.histogram(t % period, edges)[0]
    grid = np.linspace(0, period, 100_001)
    cum = np.concatenate(([0.0], np.cumsum(diurnal_rate(grid[:-1], mean, amp, period) * np.diff(grid))))
    expect = np.diff(np.interp(edges, grid, cum)) * (h / period)
    assert np.all(np.abs(counts - expect) <= Z * np.sqrt(expect))


def test_diurnal_amplitude_zero_is_poisson_rate():
    t = diurnal_arrivals(0.1, 0.0, horizon=50_000.0, seed=4)
    close(t.size, 5000, math.sqrt(5000))


def _mmpp_idc(lb, lB, mb, mB):
    """Asymptotic index of dispersion of counts of an MMPP-2 (variance/mean of N(t), t -> inf)."""
    pb, pB = mb / (mb + mB), mB / (mb + mB)
    lam = pb * lb + pB * lB
    return 1.0 + 2.0 * pb * pB * (lb - lB) ** 2 / (lam * (1 / mb + 1 / mB))


def test_bursty_rate_and_overdispersion():
    lb, lB, mb, mB = 0.5, 5.0, 200.0, 50.0
    h = 400_000.0
    t = bursty_arrivals(lb, lB, mb, mB, horizon=h, start="stationary", seed=5)
    lam = bursty_mean_rate(lb, lB, mb, mB)
    assert lam == pytest.approx((0.5 * 200 + 5 * 50) / 250)
    idc = _mmpp_idc(lb, lB, mb, mB)
    close(t.size, lam * h, math.sqrt(lam * h * idc))
    # counts in long windows have variance/mean near the MMPP's IDC, far above Poisson's 1
    counts = np.histogram(t, np.arange(0, h + 1, 5000.0))[0]
    ratio = counts.var(ddof=1) / counts.mean()
    assert 0.5 * idc < ratio < 1.6 * idc, (ratio, idc)


def test_bursty_states_segments():
    t, starts, state = bursty_arrivals(0.0, 2.0, 100.0, 100.0, horizon=50_000.0, seed=6,
                                       return_states=True)
    assert starts[0] == 0 and np.all(np.diff(starts) > 0)
    assert np.all(state[1:] != state[:-1])  # states alternate
    seg = np.searchsorted(starts, t, side="right") - 1
    assert np.all(state[seg] == 1)  # base rate 0: every arrival falls in a burst


def test_bursty_equal_rates_is_poisson():
    t = bursty_arrivals(1.0, 1.0, 10.0, 10.0, horizon=20_000.0, seed=9)
    close(t.size, 20_000, math.sqrt(20_000))
    counts = np.histogram(t, np.arange(0, 20_001, 100.0))[0]
    assert 0.7 < counts.var(ddof=1) / counts.mean() < 1.3


# ------------------------------------------------------------------ service times

def test_exponential_service():
    x = exponential_service(3.0, 50_000, seed=1)
    close(x.mean(), 3.0, 3.0 / math.sqrt(x.size))


def test_lognormal_mean_and_median():
    mean, cv, n = 10.0, 2.0, 200_000
    x = lognormal_service(mean, cv, n, seed=2)
    close(x.mean(), mean, cv * mean / math.sqrt(n))
    median = mean / math.sqrt(1 + cv * cv)
    close(np.mean(x < median), 0.5, 0.5 / math.sqrt(n))


def test_pareto_tail_and_mean():
    alpha, mean, n = 3.0, 2.0, 200_000
    x = pareto_service(alpha, n, mean=mean, seed=3)
    scale = mean * (alpha - 1) / alpha
    assert x.min() >= scale
    p = 2.0 ** -alpha  # P(X > 2 * scale)
    close(np.mean(x > 2 * scale), p, math.sqrt(p * (1 - p) / n))
    var = scale**2 * alpha / ((alpha - 1) ** 2 * (alpha - 2))
    close(x.mean(), mean, math.sqrt(var / n))
    y = pareto_service(alpha, 10, scale=scale, seed=3)
    assert np.allclose(y, x[:10])


# ------------------------------------------------------------------ bad inputs

BAD = [
    (lambda: poisson_arrivals(0, 10), "rate"),
    (lambda: poisson_arrivals(-1, 10), "rate"),
    (lambda: poisson_arrivals(float("nan"), 10), "rate"),
    (lambda: poisson_arrivals(1, 10, horizon=5), "exactly one"),
    (lambda: poisson_arrivals(1), "exactly one"),
    (lambda: poisson_arrivals(1, -3), "n must"),
    (lambda: poisson_arrivals(1, horizon=0), "horizon"),
    (lambda: poisson_arrivals(1, 5, unit="ms"), "unit"),
    (lambda: poisson_arrivals(1, 5, seed=-1), "seed"),
    (lambda: diurnal_arrivals(1, 1.5, horizon=10), "amplitude"),
    (lambda: diurnal_arrivals(1, 0.5, period=0, horizon=10), "period"),
    (lambda: diurnal_arrivals(0, 0.5, horizon=10), "mean_rate"),
    (lambda: bursty_arrivals(0, 0, 1, 1, horizon=10), "both 0"),
    (lambda: bursty_arrivals(-1, 1, 1, 1, horizon=10), "base_rate"),
    (lambda: bursty_arrivals(1, 1, 0, 1, horizon=10), "mean_base_s"),
    (lambda: bursty_arrivals(1, 1, 1, 1, horizon=10, start="hot"), "start"),
    (lambda: lognormal_service(0, 1, 5), "mean"),
    (lambda: lognormal_service(1, -1, 5), "cv"),
    (lambda: pareto_service(1.0, 5, mean=1), "alpha"),
    (lambda: pareto_service(0.5, 5, mean=1), "alpha"),
    (lambda: pareto_service(2.0, 5), "exactly one of mean or scale"),
    (lambda: pareto_service(2.0, 5, mean=1, scale=1), "exactly one of mean or scale"),
    (lambda: exponential_service(1, -1), "n must"),
]


@pytest.mark.parametrize("call,match", BAD, ids=[m for _, m in BAD])
def test_bad_parameters_name_the_field(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("call,match", [
    (lambda: poisson_arrivals("1", 10), "rate must be a real number"),
    (lambda: poisson_arrivals(1, 2.5), "n must be an integer"),
    (lambda: poisson_arrivals(1, True), "n must be an integer"),
    (lambda: exponential_service(1, 3, seed="x"), "seed"),
])
def test_bad_types(call, match):
    with pytest.raises(TypeError, match=match):
        call()


# ------------------------------------------------------------------ Workload

def test_make_workload_mix_and_service_callable():
    arr = poisson_arrivals(1.0, 20_000, seed=1)
    w = make_workload(arr, lambda n, rng: exponential_service(5.0, n, seed=rng),
                      gpus={1: 0.75, 8: 0.25}, seed=2)
    assert len(w) == 20_000 and set(np.unique(w.num_gpus)) == {1, 8}
    close(np.mean(w.num_gpus == 8), 0.25, math.sqrt(0.25 * 0.75 / len(w)))
    assert np.array_equal(w.gpu_time_s, w.duration_s * w.num_gpus)
    assert np.array_equal(w.submit_ns, to_ns(w.submit_s))
    assert w == make_workload(arr, lambda n, rng: exponential_service(5.0, n, seed=rng),
                              gpus={1: 0.75, 8: 0.25}, seed=2)


def test_make_workload_sorts_and_scalar_service():
    w = make_workload([3.0, 1.0, 2.0], [30.0, 10.0, 20.0], gpus=[3, 1, 2])
    assert list(w.submit_s) == [1, 2, 3] and list(w.duration_s) == [10, 20, 30]
    assert list(w.num_gpus) == [1, 2, 3]
    assert list(make_workload([0.0, 1.0], 7.0).duration_s) == [7, 7]
    with pytest.raises(ValueError):
        w.submit_s[0] = 5.0  # read-only


def test_offered_load():
    w = Workload([0.0, 10.0], [10.0, 10.0], [2, 2])
    assert w.offered_load(4) == pytest.approx(40.0 / (10.0 * 4))


@pytest.mark.parametrize("kwargs,match", [
    (dict(arrivals=[0.0, 1.0], service=[1.0]), "2 arrivals"),
    (dict(arrivals=[0.0, 1.0], service=[1.0, -1.0]), "duration_s"),
    (dict(arrivals=[0.0, 1.0], service=1.0, gpus=0), "num_gpus"),
    (dict(arrivals=[0.0, 1.0], service=1.0, gpus={}), "empty"),
    (dict(arrivals=[0.0, 1.0], service=1.0, gpus={0: 1.0}), "keys"),
    (dict(arrivals=[0.0, 1.0], service=1.0, gpus={1: -1.0}), "weights"),
    (dict(arrivals=[-1.0, 1.0], service=1.0), "submit_s"),
])
def test_make_workload_bad(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_workload(**kwargs)


def test_workload_unsorted_rejected():
    with pytest.raises(ValueError, match="sorted"):
        Workload([1.0, 0.0], [1.0, 1.0])


def test_csv_round_trip(tmp_path):
    w = make_workload(poisson_arrivals(0.5, 50, seed=1), lognormal_service(60, 2, 50, seed=2),
                      gpus={1: 0.5, 4: 0.5}, seed=3)
    p = tmp_path / "w.csv"
    w.to_csv(p, submit_decimals=6, duration_decimals=6)
    back = Workload.from_csv(p)
    assert np.allclose(back.submit_s, w.submit_s, atol=1e-6)
    assert np.allclose(back.duration_s, w.duration_s, atol=1e-6)
    assert np.array_equal(back.num_gpus, w.num_gpus)


@pytest.mark.parametrize("body,line,col", [
    ("0,0.0,5,1\n1,1.0,x,1\n", 3, 3),
    ("0,0.0,5,1\n1,1.0,0,1\n", 3, 3),
    ("0,0.0,5,1\n\n1,0.5,5,0\n", 4, 4),
    ("0,2.0,5,1\n1,1.0,5,1\n", 3, 2),
    ("0,0.0,5,1\n7,1.0,5,1\n", 3, 1),
])
def test_workload_csv_errors_give_line_and_column(tmp_path, body, line, col):
    p = tmp_path / "bad.csv"
    p.write_text("job_id,submit_s,duration_s,num_gpus\n" + body)
    with pytest.raises(ValueError, match=rf"bad\.csv: line {line}, column {col} "):
        Workload.from_csv(p)


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st

JOBS = st.lists(st.tuples(st.floats(0, 1e7), st.floats(1e-3, 1e7), st.integers(1, 1024)),
                min_size=0, max_size=30)


def _workload(jobs):
    jobs = sorted(jobs, key=lambda j: j[0])
    return Workload([j[0] for j in jobs], [j[1] for j in jobs],
                    np.array([j[2] for j in jobs], dtype=np.int64))


@settings(max_examples=40, deadline=None)
@given(JOBS)
def test_csv_round_trip_is_exact(tmp_path_factory, jobs):
    w = _workload(jobs)
    p = tmp_path_factory.mktemp("rt") / "w.csv"
    w.to_csv(p)
    assert Workload.from_csv(p) == w


@settings(max_examples=40, deadline=None)
@given(JOBS, st.integers(3, 9))
def test_csv_fixed_decimals_error_bound(tmp_path_factory, jobs, decimals):
    w = _workload(jobs)
    p = tmp_path_factory.mktemp("rt") / "w.csv"
    w.to_csv(p, submit_decimals=decimals, duration_decimals=decimals)
    back = Workload.from_csv(p)
    bound = 0.5 * 10.0**-decimals + 4e-16 * 1e7  # rounding, plus float spacing near 1e7
    assert np.all(np.abs(back.submit_s - w.submit_s) <= bound)
    assert np.all(np.abs(back.duration_s - w.duration_s) <= bound)
    assert np.array_equal(back.num_gpus, w.num_gpus)
