"""Predicting contention ahead of time (claim C47): naive and learned load forecasts.

The article (C47) says a pilot Transformer "predicts contention 50 ms ahead". Whether
anything can, depends on how long load stays correlated: a forecast ``lead`` steps
ahead can only beat the long-run mean by what the series remembers over ``lead``. This
module turns arrivals into a load series and compares forecasters on it, honestly:

* ``mean``: the training mean (knows nothing about now);
* ``persistence``: "the next 50 ms look like the last bin" (the naive forecast);
* ``moving_average``: the mean of the last ``window`` bins;
* :class:`AutoRegressive`: a direct ``lead``-step linear regression on the last
  ``order`` bins, fitted by least squares on the training part (the smallest learned
  model; a Transformer is a larger one of the same kind).

Scores are on a held-out test part: mean absolute error, RMSE, and for a contention
threshold the precision and recall of "load will exceed the threshold".
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from magnum_lib.base.validate import ParameterError, check_int, check_positive

__all__ = ["load_series", "persistence", "moving_average", "AutoRegressive", "score", "compare"]

MAX_BINS = 50_000_000  # 400 MB of float64: plenty for a notebook


def load_series(arrivals_s, bin_s: float, horizon_s: float) -> np.ndarray:
    """Arrivals per bin: counts of ``arrivals_s`` (seconds) in bins of ``bin_s`` up to ``horizon_s``."""
    bin_s = check_positive("bin_s", bin_s)
    horizon_s = check_positive("horizon_s", horizon_s)
    n = int(np.ceil(horizon_s / bin_s))
    if n > MAX_BINS:
        raise ParameterError("bin_s", f"gives {n:,} bins over {horizon_s:g} s; at most {MAX_BINS:,}")
    t = np.asarray(arrivals_s, dtype=float)
    if t.ndim != 1 or (t.size and not np.all(np.isfinite(t))):
        raise ParameterError("arrivals_s", "must be a 1-D array of finite times in seconds")
    idx = (t[(t >= 0) & (t < horizon_s)] / bin_s).astype(np.int64)
    return np.bincount(idx, minlength=n).astype(float)


def _check(series, lead: int, need: int) -> tuple[np.ndarray, int]:
    y = np.asarray(series, dtype=float)
    if y.ndim != 1 or not np.all(np.isfinite(y)):
        raise ParameterError("series", "must be a 1-D array of finite numbers")
    lead = check_int("lead", lead, 1, max(1, y.size))
    if y.size < need + lead:
        raise ParameterError("series", f"has {y.size} points; needs at least {need + lead}")
    return y, lead


def persistence(series, lead: int) -> np.ndarray:
    """Forecast of ``series[t + lead]`` made at ``t``: ``series[t]``. Aligned with ``series[lead:]``."""
    y, lead = _check(series, lead, 1)
    return y[:-lead].copy()


def moving_average(series, lead: int, window: int) -> np.ndarray:
    """Forecast ``series[t + lead]`` as the mean of ``series[t-window+1 .. t]``; aligned with
    ``series[window - 1 + lead:]``."""
    window = check_int("window", window, 1, 10**7)
    y, lead = _check(series, lead, window)
    c = np.concatenate(([0.0], np.cumsum(y)))
    means = (c[window:] - c[:-window]) / window  # means[i] covers y[i .. i+window-1]
    return means[:-lead]


@dataclass
class AutoRegressive:
    """Direct ``lead``-step AR(``order``) forecaster: ``y[t+lead] ~ a + sum_k b_k y[t-k]``."""

    order: int = 8
    lead: int = 50
    coef_: np.ndarray | None = None

    def __post_init__(self):
        self.order = check_int("order", self.order, 1, 10_000)
        self.lead = check_int("lead", self.lead, 1, 10**7)

    def _design(self, y: np.ndarray) -> np.ndarray:
        n = y.size - self.order + 1  # rows: t = order-1 .. size-1
        cols = [y[self.order - 1 - k: self.order - 1 - k + n] for k in range(self.order)]
        return np.column_stack([np.ones(n), *cols])

    def fit(self, series) -> AutoRegressive:
        """Least-squares fit on ``series`` (the training part)."""
        y, _ = _check(series, self.lead, self.order + 1)
        X = self._design(y)[:-self.lead]
        target = y[self.order - 1 + self.lead:]
        self.coef_, *_ = np.linalg.lstsq(X, target, rcond=None)
        return self

    def predict(self, series) -> np.ndarray:
        """Forecasts of ``series[t + lead]`` for ``t = order-1 .. len-1-lead``; aligned with
        ``series[order - 1 + lead:]``."""
        if self.coef_ is None:
            raise ParameterError("model", "is not fitted; call fit(train) first")
        y, _ = _check(series, self.lead, self.order)
        return self._design(y)[:-self.lead] @ self.coef_


def score(forecast, truth, threshold: float | None = None) -> dict:
    """MAE, RMSE and, given a contention ``threshold``, precision and recall of "above it"."""
    f, y = np.asarray(forecast, float), np.asarray(truth, float)
    if f.shape != y.shape or f.ndim != 1 or f.size == 0:
        raise ParameterError("forecast", f"and truth must be 1-D of one length, got {f.shape} and {y.shape}")
    out = {"mae": float(np.mean(np.abs(f - y))), "rmse": float(np.sqrt(np.mean((f - y) ** 2)))}
    if threshold is not None:
        hit, real = f > threshold, y > threshold
        out["precision"] = float((hit & real).sum() / hit.sum()) if hit.any() else float("nan")
        out["recall"] = float((hit & real).sum() / real.sum()) if real.any() else float("nan")
    return out


def compare(series, lead: int = 50, order: int = 8, window: int = 10, train_fraction: float = 0.5,
            threshold: float | None = None) -> dict:
    """Score every forecaster on the test part of ``series`` (all aligned on the same targets)."""
    y, lead = _check(series, lead, max(order, window) + 2)
    if not 0.1 <= float(train_fraction) <= 0.9:
        raise ParameterError("train_fraction", f"must be in [0.1, 0.9], got {train_fraction!r}")
    split = int(y.size * train_fraction)
    train, test = y[:split], y[split:]
    start = max(order, window) - 1  # first forecast origin every forecaster can use
    truth = test[start + lead:]
    ar = AutoRegressive(order, lead).fit(train)
    forecasts = {
        "mean": np.full(truth.size, train.mean()),
        "persistence": persistence(test, lead)[start:],
        "moving_average": moving_average(test, lead, window)[start - window + 1:],
        "autoregressive": ar.predict(test)[start - order + 1:],
    }
    return {name: score(f, truth, threshold) for name, f in forecasts.items()}
