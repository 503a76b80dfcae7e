"""Hedged requests: simulation against the closed forms of the independent-latency model.

Tolerances are derived, not tuned:

* extra load at the true p95: the hedged fraction is Binomial(N, 0.05) / N with standard
  deviation sqrt(0.05 x 0.95 / N). The issue allows +/- 0.2%; with N = 5 x 10^5 the sd is
  0.031%, so 0.2% is 6.5 sd (N = 10^5 would give 2.9 sd, too close to flaky for any seed).
* hedged p99.9 within 3%: the empirical q-quantile has sd sqrt(q (1 - q) / N) / f_R(x_q)
  (``quantile_standard_error``). At N = 10^5 that is 1.0% (exp), 1.5% (lognormal sigma 1),
  1.6% (Pareto alpha 2) of x_q; N = 5 x 10^5 brings the worst to 0.70%, so 3% is >= 4 sd.
  The test asserts that bound before using it.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from magnum_lib.base.validate import ParameterError
from magnum_lib.node.hedging import (
    LATENCY_KINDS,
    expected_extra_busy,
    hedge_delay,
    hedged_density,
    hedged_quantile,
    hedged_survival,
    latency_dist,
    quantile_standard_error,
    simulate_hedging,
)

N_THEORY = 500_000
DISTS = {"exp": latency_dist("exp"), "lognormal": latency_dist("lognormal", sigma=1.0),
         "pareto": latency_dist("pareto", alpha=2.0)}


@pytest.fixture(scope="module", params=list(DISTS))
def p95_run(request):
    """One run per distribution, hedged at the true p95 (the issue's setting)."""
    return simulate_hedging(DISTS[request.param], requests=N_THEORY, hedge_at="p95", seed=7)


def test_p95_hedge_adds_five_percent_load(p95_run):
    # The true quantile is used (quantile_from="true"), so P(X1 > t_h) is exactly 0.05.
    assert p95_run.quantile_from == "true"
    assert p95_run.dist.sf(p95_run.hedge_delay_s) == pytest.approx(0.05, rel=1e-9)
    sd = math.sqrt(0.05 * 0.95 / N_THEORY)
    assert 0.002 >= 6 * sd
    assert abs(p95_run.extra_load - 0.05) <= 0.002


def test_hedged_p999_matches_closed_form(p95_run):
    dist, t_h = p95_run.dist, p95_run.hedge_delay_s
    x = hedged_quantile(0.999, dist, t_h)
    assert quantile_standard_error(0.999, N_THEORY, dist, t_h) / x <= 0.03 / 4
    assert p95_run.p999 == pytest.approx(x, rel=0.03)
    # And hedging shortens the tail a lot: the unhedged p99.9 is far above.
    assert p95_run.p999_unhedged > 1.2 * p95_run.p999


def test_unhedged_percentiles_match_true_quantiles(p95_run):
    # Same N, same argument: the unhedged tail is flatter, so allow 4 of its sds.
    dist = p95_run.dist
    for key, q in (("p50_unhedged", 0.5), ("p99_unhedged", 0.99), ("p999_unhedged", 0.999)):
        x = float(dist.quantile(q))
        sd = math.sqrt(q * (1 - q) / N_THEORY) / float(dist.pdf(x))
        assert abs(getattr(p95_run, key) - x) <= 4 * sd, key


def test_p50_unchanged_by_p95_hedge(p95_run):
    # Hedging only alters requests slower than t_h = p95, so the median is untouched.
    assert p95_run.p50 == p95_run.p50_unhedged


def test_extra_busy_matches_closed_form():
    # Exponential: memoryless, so hedging with instant cancellation costs no work at all
    # (the two copies finish at twice the rate). Lognormal: a finite-variance case.
    for dist in (DISTS["exp"], DISTS["lognormal"]):
        r = simulate_hedging(dist, requests=200_000, hedge_at="p90", seed=3)
        expected = expected_extra_busy(dist, r.hedge_delay_s)
        # sd of the work ratio ~ cv(X) / sqrt(N) <= 1.31 / 447 = 0.3%; allow 1%.
        assert r.extra_busy == pytest.approx(expected, abs=0.01)
    assert expected_extra_busy(DISTS["exp"], 0.02) == pytest.approx(0.0, abs=1e-9)


def test_exponential_hedged_quantile_in_closed_form():
    # For exp(mean m), t > t_h: P(R > t) = exp(-(2t - t_h) / m), so x_q = (t_h - m log(1-q)) / 2.
    m, t_h = 0.01, 0.02
    dist = latency_dist("exp", mean=m)
    for q in (0.9, 0.99, 0.999, 0.99999):
        assert hedged_quantile(q, dist, t_h) == pytest.approx((t_h - m * math.log1p(-q)) / 2, rel=1e-9)
    # Below P(X <= t_h) nothing is hedged yet: the plain quantile.
    assert hedged_quantile(0.5, dist, t_h) == pytest.approx(-m * math.log(0.5), rel=1e-12)


def test_survival_and_density_are_consistent():
    dist, t_h = DISTS["lognormal"], 0.02
    t = np.linspace(0.001, 0.2, 400)
    s = hedged_survival(t, dist, t_h)
    assert np.all(np.diff(s) <= 0) and np.all(s <= dist.sf(t))
    assert np.array_equal(s[t <= t_h], dist.sf(t[t <= t_h]))
    # The density is minus the derivative of the survival (central differences).
    h = 1e-7
    fd = (hedged_survival(t - h, dist, t_h) - hedged_survival(t + h, dist, t_h)) / (2 * h)
    away = np.abs(t - t_h) > 2 * h
    np.testing.assert_allclose(hedged_density(t, dist, t_h)[away], fd[away], rtol=1e-5)


def test_zero_delay_hedges_every_request_as_minimum_of_two():
    r = simulate_hedging("exp", requests=20_000, hedge_at="0ms", seed=2)
    assert r.extra_load == 1.0
    # min of two exponentials with mean m is exponential with mean m / 2 (sd m/2/sqrt(N)).
    assert r.mean == pytest.approx(0.005, abs=4 * 0.005 / math.sqrt(20_000))


def test_delay_beyond_every_latency_sends_no_copies():
    first = simulate_hedging("pareto", requests=5_000, hedge_at="p50", seed=11, alpha=1.5)
    late = simulate_hedging("pareto", requests=5_000, hedge_at=2 * first.latency_unhedged.max(),
                            seed=11, alpha=1.5)
    assert late.quantile_from == "fixed"
    assert late.extra_load == 0 and late.copy_busy == 0 and late.extra_busy == 0
    assert not late.hedged.any()
    assert np.array_equal(late.latency, late.latency_unhedged)
    # Same seed, same primaries, whatever the hedge delay.
    assert np.array_equal(late.latency_unhedged, first.latency_unhedged)


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(LATENCY_KINDS),
       shape=st.floats(1.05, 4.0),
       hedge_at=st.one_of(st.floats(0.0, 0.1), st.sampled_from(["p1", "p50", "p95", "p99.9"])),
       cancel=st.one_of(st.none(), st.floats(0.0, 0.05)),
       seed=st.integers(0, 2**32))
def test_hedging_never_slower_than_unhedged(kind, shape, hedge_at, cancel, seed):
    r = simulate_hedging(kind, requests=300, hedge_at=hedge_at, seed=seed, sigma=shape,
                         alpha=shape, cancel_delay=cancel)
    t_h = r.hedge_delay_s
    assert np.all(r.latency <= r.latency_unhedged)
    # Only requests slower than t_h send a copy, and those never answer before t_h.
    assert np.array_equal(r.hedged, r.latency_unhedged > t_h)
    assert np.array_equal(r.latency[~r.hedged], r.latency_unhedged[~r.hedged])
    assert np.all(r.latency[r.hedged] > t_h)
    assert r.extra_load == np.count_nonzero(r.hedged) / 300
    assert 0 <= r.copy_busy and r.extra_busy <= r.copy_busy + 1e-12
    for q in ("p50", "p99", "p999"):
        assert getattr(r, q) <= getattr(r, q + "_unhedged")


def test_no_cancellation_costs_the_full_copies():
    never = simulate_hedging("lognormal", requests=20_000, hedge_at="p90", seed=4, cancel_delay=None)
    instant = simulate_hedging("lognormal", requests=20_000, hedge_at="p90", seed=4)
    # Without cancellation every copy runs X2 to the end and the primaries their whole X1.
    work = never.latency_unhedged.sum()
    rng = np.random.default_rng(4)
    rng.lognormal(size=20_000)  # skip the X1 draws (draw order: X1, then X2)
    dist = never.dist
    x2 = np.exp(math.log(dist.mean) - dist.sigma ** 2 / 2 + dist.sigma * rng.standard_normal(20_000))
    assert never.extra_busy == pytest.approx(x2[never.hedged].sum() / work, rel=1e-9)
    assert never.copy_busy == pytest.approx(never.extra_busy, rel=1e-12)
    assert instant.extra_busy < never.extra_busy
    assert np.array_equal(never.latency, instant.latency)  # cancellation does not change R
    assert math.isinf(never.cancel_delay_s) and never.to_dict()["cancel_delay_s"] is None


def test_warmup_quantile_is_the_empirical_quantile_of_later_draws():
    r = simulate_hedging("exp", requests=1_000, hedge_at="p95", seed=5, quantile_from="warmup",
                         warmup=400)
    rng = np.random.default_rng(5)
    rng.exponential(0.01, 2_000)  # X1 and X2 come first
    warm = rng.exponential(0.01, 400)
    assert r.quantile_from == "warmup"
    assert r.hedge_delay_s == np.quantile(warm, 0.95)
    assert r.hedge_delay_s != pytest.approx(float(r.dist.quantile(0.95)), rel=1e-6)


def test_same_seed_same_result_and_arrays_read_only():
    a = simulate_hedging("pareto", requests=2_000, hedge_at="5ms", seed=9)
    b = simulate_hedging("pareto", requests=2_000, hedge_at="5ms", seed=9)
    da, db = a.to_dict(), b.to_dict()
    da.pop("wall_s"), db.pop("wall_s")
    assert da == db
    for arr in (a.latency, a.latency_unhedged, a.hedged):
        with pytest.raises(ValueError):
            arr[0] = 0


def test_hedge_delay_forms():
    dist = DISTS["exp"]
    assert hedge_delay("10ms", dist) == 0.01
    assert hedge_delay(0.25, dist) == 0.25
    assert hedge_delay("p99.9", dist) == pytest.approx(-0.01 * math.log(0.001))


@pytest.mark.parametrize("kwargs, name", [
    ({"dist": "weibull"}, "dist"),
    ({"dist": "lognormal", "sigma": 0.0}, "sigma"),
    ({"dist": "lognormal", "sigma": -1.0}, "sigma"),
    ({"dist": "pareto", "alpha": 1.0}, "alpha"),
    ({"dist": "pareto", "alpha": 0.5}, "alpha"),
    ({"mean": 0}, "mean"),
    ({"mean": "fast"}, "mean"),
    ({"requests": 0}, "requests"),
    ({"requests": 2.5}, "requests"),
    ({"seed": -1}, "seed"),
    ({"hedge_at": "p0"}, "hedge_at"),
    ({"hedge_at": "p100"}, "hedge_at"),
    ({"hedge_at": "p-5"}, "hedge_at"),
    ({"hedge_at": "pfast"}, "hedge_at"),
    ({"hedge_at": "-10ms"}, "hedge_at"),
    ({"hedge_at": -0.01}, "hedge_at"),
    ({"hedge_at": "10"}, "hedge_at"),  # a bare number in a string has no unit
    ({"hedge_at": math.nan}, "hedge_at"),
    ({"quantile_from": "guess"}, "quantile_from"),
    ({"warmup": 0}, "warmup"),
    ({"cancel_delay": "-1ms"}, "cancel_delay"),
])
def test_bad_input_names_the_parameter(kwargs, name):
    args = {"dist": "exp", "requests": 100, "hedge_at": "p95", "seed": 0, **kwargs}
    with pytest.raises(ParameterError) as info:
        simulate_hedging(**args)
    assert info.value.name == name


def test_bad_quantile_level():
    with pytest.raises(ParameterError, match="q must be in"):
        hedged_quantile(1.0, DISTS["exp"], 0.01)
