"""Hedging in a loaded pool of FIFO servers: theory for the unhedged pool, invariants, backfire."""
from __future__ import annotations

import numpy as np
import pytest

from magnum_lib.base.validate import ParameterError
from magnum_lib.engine import heap_ref
from magnum_lib.engine.metrics import batch_means
from magnum_lib.node import hedging_queue
from magnum_lib.node.hedging_queue import run_pool, simulate_hedging_queue
from tests.conftest import import_compiled

N = 20_000


def test_unhedged_pool_is_independent_mm1_queues():
    # Random dispatch splits Poisson arrivals into independent Poisson streams: each server
    # is an M/M/1 queue at the same load, mean response mean / (1 - load) = 20 ms at 0.5.
    r = simulate_hedging_queue("exp", servers=10, load=0.5, requests=N, hedge_at="1h", seed=2)
    mean, se = batch_means(r.latency_unhedged, 20)  # consecutive responses are correlated
    assert abs(mean - 0.02) <= 4 * se
    assert r.utilization_unhedged == pytest.approx(0.5, abs=0.03)


def test_delay_beyond_every_response_changes_nothing():
    r = simulate_hedging_queue("lognormal", servers=4, load=0.6, requests=5_000, hedge_at="1h", seed=3)
    assert r.extra_load == 0
    assert np.array_equal(r.latency, r.latency_unhedged)
    assert r.utilization == r.utilization_unhedged


def _pool(seed, n=3_000, servers=5, load=0.6):
    rng = np.random.default_rng(seed)
    arrival = np.cumsum(rng.integers(0, 2 * 10**7 // (servers * load), n))
    service = rng.integers(1, 2 * 10**7, (n, 2))
    primary = rng.integers(0, servers, n)
    server = np.column_stack([primary, (primary + rng.integers(1, servers, n)) % servers])
    return arrival, service, server, servers


@pytest.mark.parametrize("cancel", ["all", "queued", "none"])
def test_pool_invariants(cancel):
    arrival, service, server, servers = _pool(5)
    hedge = 10**7
    out = run_pool(arrival, service, server, hedge, servers, cancel)
    r, copied = out["response_ns"], out["copied"]
    assert out["copies"] == copied.sum()
    # No answer before the fastest copy could have finished.
    fastest = np.where(copied, np.minimum(service[:, 0], hedge + service[:, 1]), service[:, 0])
    assert np.all(r >= fastest)
    # Only requests still unanswered at t_h were copied.
    assert np.all(r[copied] > hedge) and np.all(r[~copied] <= hedge)
    full = service[:, 0].sum() + service[copied, 1].sum()
    if cancel == "none":  # every copy runs to the end
        assert out["busy_ns"] == full
    else:
        assert out["busy_ns"] <= full
    assert out["makespan_ns"] >= np.max(arrival + r)
    assert out["busy_ns"] <= servers * out["makespan_ns"]


def test_same_result_on_both_event_heaps(monkeypatch):
    compiled = import_compiled("magnum_lib.engine._heap")
    arrival, service, server, servers = _pool(8, n=1_500)
    outs = []
    for module in (compiled, heap_ref):
        monkeypatch.setattr(hedging_queue, "EventHeap", module.EventHeap)
        outs.append(run_pool(arrival, service, server, 10**7, servers, "queued"))
    assert np.array_equal(outs[0]["response_ns"], outs[1]["response_ns"])
    assert {k: v for k, v in outs[0].items() if np.isscalar(v)} == \
        {k: v for k, v in outs[1].items() if np.isscalar(v)}


def test_no_copies_means_only_primary_work():
    arrival, service, server, servers = _pool(6)
    # A fixed delay beyond every response sends no copy: busy time is the primaries' work.
    none = run_pool(arrival, service, server, 10**15, servers, "none")
    assert none["copies"] == 0 and none["busy_ns"] == service[:, 0].sum()


def test_late_hedge_helps_at_light_load():
    r = simulate_hedging_queue("lognormal", servers=10, load=0.3, requests=N, hedge_at="p95",
                               seed=1, sigma=0.5, cancel="queued")
    assert r.extra_load < 0.1
    assert r.p99 < 0.95 * r.p99_unhedged


def test_early_hedge_without_cancellation_backfires_under_load():
    # Copies for half the requests at load 0.7 ask for 1.05 of the pool's capacity: unstable.
    r = simulate_hedging_queue("exp", servers=10, load=0.7, requests=N, hedge_at="p50", seed=1,
                               cancel="none")
    assert r.extra_load > 0.5
    assert r.p50 > r.p50_unhedged and r.p99 > 5 * r.p99_unhedged
    assert r.utilization > 0.9


@pytest.mark.parametrize("kwargs, name", [
    ({"servers": 1}, "servers"),
    ({"load": 1.0}, "load"),
    ({"load": 0.0}, "load"),
    ({"requests": 0}, "requests"),
    ({"cancel": "maybe"}, "cancel"),
    ({"hedge_at": "p100"}, "hedge_at"),
    ({"hedge_at": "-1ms"}, "hedge_at"),
    ({"dist": "pareto", "alpha": 1.0}, "alpha"),
])
def test_bad_input(kwargs, name):
    with pytest.raises(ParameterError) as info:
        simulate_hedging_queue(**{"requests": 100, **kwargs})
    assert info.value.name == name
