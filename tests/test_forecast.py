"""Load forecasts (magnum_lib.workload.forecast, claim C47): theory, alignment, bad input."""
import numpy as np
import pytest

from magnum_lib.base.validate import ParameterError
from magnum_lib.workload.forecast import AutoRegressive, compare, load_series, moving_average, persistence, score
from magnum_lib.workload.generators import bursty_arrivals


def _ar1(phi, n, seed=0):
    rng = np.random.default_rng(seed)
    e = rng.normal(size=n)
    y = np.empty(n)
    y[0] = e[0]
    for t in range(1, n):
        y[t] = phi * y[t - 1] + e[t]
    return y


def test_load_series_counts_every_arrival_once():
    t = np.array([0.0, 0.0004, 0.0011, 0.0029, 0.003, 5.0])
    y = load_series(t, 0.001, 0.004)
    assert y.tolist() == [2, 1, 1, 1]


def test_forecasts_are_aligned_with_their_targets():
    y = np.arange(10.0)
    assert persistence(y, 3).tolist() == y[:-3].tolist()          # predicts y[3:]
    ma = moving_average(y, 2, 3)                                    # predicts y[4:]
    assert ma.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0] and ma.size == y[4:].size


def test_autoregressive_recovers_the_ar1_lead_coefficient():
    # For AR(1), E[y(t+L) | y(t)] = phi^L y(t): the direct fit's coefficient on y(t).
    phi, lead = 0.95, 10
    y = _ar1(phi, 200_000)
    m = AutoRegressive(order=1, lead=lead).fit(y)
    se = np.sqrt((1 - phi ** (2 * lead)) / y.size) * 3
    assert m.coef_[1] == pytest.approx(phi ** lead, abs=max(se, 0.01))
    # and its error variance is the theoretical one: sum_{k<L} phi^2k
    r = score(m.predict(y), y[lead:])
    assert r["rmse"] ** 2 == pytest.approx(sum(phi ** (2 * k) for k in range(lead)), rel=0.03)


def test_on_bursty_load_the_learned_forecast_beats_persistence_at_50ms():
    t = bursty_arrivals(20_000, 60_000, 0.3, 0.1, horizon=40, seed=3)
    y = load_series(t, 0.001, 40)
    r = compare(y, lead=50, order=16, window=20)
    assert r["autoregressive"]["rmse"] < r["persistence"]["rmse"]
    assert r["autoregressive"]["rmse"] < r["mean"]["rmse"]


def test_far_ahead_nothing_beats_the_mean_by_much():
    # The MMPP's rate forgets at 1/0.3 + 1/0.1 per second: after 0.4 s, e^-5.3 remains.
    t = bursty_arrivals(20_000, 60_000, 0.3, 0.1, horizon=40, seed=4)
    y = load_series(t, 0.001, 40)
    r = compare(y, lead=400, order=16, window=20)
    assert r["autoregressive"]["rmse"] > 0.97 * r["mean"]["rmse"]
    assert r["persistence"]["rmse"] > r["mean"]["rmse"]


@pytest.mark.parametrize("call", [
    lambda: load_series([0.1], 0, 1), lambda: load_series([np.nan], 0.1, 1),
    lambda: load_series([0.1], 1e-12, 1e6), lambda: persistence([1.0, 2.0], 5),
    lambda: persistence(np.ones(10), 0), lambda: AutoRegressive(order=0),
    lambda: AutoRegressive().predict(np.ones(100)), lambda: compare(np.ones(100), train_fraction=1.0),
    lambda: score([1.0], [1.0, 2.0]),
])
def test_bad_input_is_refused(call):
    with pytest.raises(ParameterError):
        call()
