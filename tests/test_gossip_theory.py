"""The gossip simulator against rumor-spreading theory (issue 4's correctness targets).

Seed counts: rounds_to_all has sd ~1.3-1.5 rounds for one peer per round (~0.7 for k = 2),
so 40 seeds give a standard error ~0.23 round. The true mean sits about one round above
log_(1+k) N + (ln N)/k (the O(1) term), so the -1..+2 window leaves ~3 standard errors on
either side. The compiled backend runs every case; the pure-Python backend runs N = 1,000
(the same 40 seeds, a few seconds) and skips the larger N, whose equivalence the parity
tests in test_gossip_sim.py carry.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from magnum_lib._backend import backend
from magnum_lib.gossip.dissemination import mean_coverage, simulate_seeds
from magnum_lib.gossip.theory import (
    mean_field,
    mean_field_push,
    push_rounds_expected,
    pushpull_rounds_estimate,
    rounds_to_fraction,
)

COMPILED = backend() == "compiled"
needs_compiled = pytest.mark.skipif(
    not COMPILED, reason="N >= 10,000 x 40 seeds takes minutes in pure Python; parity tests "
                         "show the reference gives the same results")


def test_issue_figures():
    assert push_rounds_expected(1000) == pytest.approx(16.9, abs=0.05)
    assert push_rounds_expected(50_000) == pytest.approx(26.4, abs=0.05)
    assert push_rounds_expected(1000, 3) == pytest.approx(math.log(1000, 4) + math.log(1000) / 3)
    assert pushpull_rounds_estimate(3**10) == pytest.approx(10 + math.log(10 * math.log(3)))


def test_mean_field_recursion():
    n = 10_000
    i = mean_field_push(n, 2, 0.25, 60)
    assert i[0] == 1 / n and np.all(np.diff(i) >= 0) and i[-1] == pytest.approx(1.0)
    # One step by hand.
    assert i[1] == pytest.approx(i[0] + (1 - i[0]) * (1 - math.exp(-2 * 0.75 * i[0])))
    # Early on the informed set grows (1 + k (1 - loss))-fold per round.
    assert i[1] / i[0] == pytest.approx(1 + 2 * 0.75, rel=1e-3)
    # Pull: (1 - i) shrinks to (1 - i)^(k+1) once requests all find informed peers.
    p = mean_field(n, 1, 0.0, 40, "pull")
    late = p[np.flatnonzero(p > 0.9)[0]]
    nxt = p[np.flatnonzero(p > 0.9)[0] + 1]
    assert 1 - nxt == pytest.approx((1 - late) ** 2)
    assert rounds_to_fraction(mean_field(n, 1, 0, 100, "pushpull"), 0.99) < \
        rounds_to_fraction(i, 0.99)


def _mean_rounds_to_all(nodes, fanout, seeds):
    runs = simulate_seeds(range(seeds), nodes=nodes, fanout=fanout, mode="push")
    assert all(r.rounds_to_all is not None for r in runs)
    return float(np.mean([r.rounds_to_all for r in runs]))


@pytest.mark.parametrize("nodes, fanout, seeds", [
    (1000, 1, 40),
    (1000, 3, 20),  # sd ~0.5: se ~0.1
    pytest.param(50_000, 1, 40, marks=needs_compiled),
    pytest.param(50_000, 2, 20, marks=needs_compiled),
])
def test_push_rounds_to_all_matches_theory(nodes, fanout, seeds):
    theory = push_rounds_expected(nodes, fanout)
    mean = _mean_rounds_to_all(nodes, fanout, seeds)
    assert theory - 1 <= mean <= theory + 2, (mean, theory)


@needs_compiled
@pytest.mark.parametrize("mode, fanout, loss", [
    ("push", 1, 0.0), ("push", 2, 0.3), ("push", 1, 0.2), ("pull", 1, 0.0), ("pushpull", 2, 0.2),
])
def test_mean_field_predicts_half_and_99_percent(mode, fanout, loss):
    n = 10_000
    runs = simulate_seeds(range(40), nodes=n, fanout=fanout, mode=mode, loss=loss)
    simulated = mean_coverage(runs)
    predicted = mean_field(n, fanout, loss, simulated.size + 50, mode)
    for level in (0.5, 0.99):
        sim_t, mf_t = rounds_to_fraction(simulated, level), rounds_to_fraction(predicted, level)
        assert abs(sim_t - mf_t) <= 1, (level, sim_t, mf_t)
