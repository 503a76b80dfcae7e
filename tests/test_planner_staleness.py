"""Hint staleness under Poisson churn: simulation against the closed form."""
from __future__ import annotations

import numpy as np
import pytest

from magnum_lib.planner.plan import plan
from magnum_lib.planner.snapshot import make_snapshot
from magnum_lib.planner.staleness import expected_hint_validity, simulate_hint_validity


@pytest.fixture(scope="module")
def planned():
    snap = make_snapshot(6000, 3000, seed=11)
    return snap, plan(snap, "greedy").job_node


def test_simulation_matches_closed_form(planned):
    snap, job_node = planned
    times = np.array([0.0, 0.01, 0.05, 0.2, 1.0, 30.0])
    sim = simulate_hint_validity(snap, job_node, 10.0, times, seed=1)
    exact = expected_hint_validity(snap, job_node, 10.0, times)
    n = int((job_node >= 0).sum())
    # Binomial standard error of a share over n hints is <= 0.5 / sqrt(n); allow 5 of them.
    assert np.all(np.abs(sim - exact) <= 5 * 0.5 / np.sqrt(n))
    assert sim[0] == 1.0 and exact[0] == 1.0  # at t = 0 every hint fits (the planner checked)
    assert np.all(np.diff(exact) <= 0)


def test_the_two_readings_of_every_10_ms(planned):
    snap, job_node = planned
    per_node = expected_hint_validity(snap, job_node, 100.0, [30.0])[0]
    fleet = expected_hint_validity(snap, job_node, 100.0 / 50000, [30.0])[0]
    # One change per node every 10 ms: after 30 s only the fresh-draw share is left.
    assert per_node < 0.8
    # One change in a 50,000-node fleet every 10 ms: exp(-0.06) of the nodes never changed.
    assert fleet >= np.exp(-0.06)
    assert simulate_hint_validity(snap, job_node, 0.0, [5.0])[0] == 1.0


@pytest.mark.parametrize("kwargs, message", [
    ({"rate_per_node": -1.0}, "rate_per_node must be"),
    ({"rate_per_node": float("inf")}, "rate_per_node must be"),
    ({"times_s": [1.0, 0.5]}, "times_s must be"),
    ({"times_s": []}, "times_s must be"),
    ({"load": 2.0}, "load must be"),
])
def test_bad_inputs(planned, kwargs, message):
    snap, job_node = planned
    args = {"rate_per_node": 1.0, "times_s": [1.0], **kwargs}
    with pytest.raises(ValueError, match=message):
        simulate_hint_validity(snap, job_node, **args)
    with pytest.raises(ValueError, match=message):
        expected_hint_validity(snap, job_node, **args)


def test_no_hints_means_nothing_stale():
    snap = make_snapshot(10, 0, seed=0)
    assert simulate_hint_validity(snap, np.zeros(0, dtype=np.int64), 5.0, [1.0]).tolist() == [1.0]
