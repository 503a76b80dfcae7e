"""Tuners (magnum_lib.tune): budgets respected, the best arm found, honest against grid."""
import numpy as np
import pytest

from magnum_lib.base.validate import ParameterError
from magnum_lib.tune import fixed, grid, successive_halving

TRUE = np.linspace(0.0, 1.0, 32)  # arm i has mean TRUE[i]; the best is the last


def noisy(config, seed, sd=0.5):
    return TRUE[config] + np.random.default_rng([config, seed]).normal(0.0, sd)


def test_budgets_are_respected():
    for tuner, kwargs in ((grid, dict(candidates=range(32))), (successive_halving, dict(candidates=range(32)))):
        r = tuner(noisy, budget=640, **kwargs)
        assert r.budget_used <= 640
    assert fixed(noisy, 3, budget=10).budget_used == 10


def test_noise_free_tuners_find_the_best():
    exact = lambda c, s: TRUE[c]
    assert grid(exact, range(32), 32).best == 31
    assert successive_halving(exact, range(32), 32 * 5).best == 31


def test_halving_regrets_less_than_grid_on_the_same_budget():
    # Over many seeds, the arm each picks: halving spends its runs on contenders.
    budget = 320
    regret_grid = np.mean([1.0 - TRUE[grid(noisy, range(32), budget, seed=s * 1000).best] for s in range(40)])
    regret_sh = np.mean([1.0 - TRUE[successive_halving(noisy, range(32), budget, seed=s * 1000).best]
                         for s in range(40)])
    assert regret_sh < regret_grid


def test_fixed_mean_estimates_the_default():
    r = fixed(noisy, 10, budget=4000)
    assert r.best_mean == pytest.approx(TRUE[10], abs=4 * 0.5 / np.sqrt(4000))


@pytest.mark.parametrize("call", [
    lambda: grid(noisy, [], 10), lambda: grid(noisy, range(32), 10),
    lambda: successive_halving(noisy, range(32), 31), lambda: fixed(noisy, 1, 0),
    lambda: fixed(lambda c, s: float("nan"), 1, 3),
])
def test_bad_input_is_refused(call):
    with pytest.raises(ParameterError):
        call()
