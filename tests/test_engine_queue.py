"""FIFO multi-server queue: parity of backends, exact invariants, bad inputs, determinism."""
from __future__ import annotations

import dataclasses
import heapq
import math

import numpy as np
import pytest

import magnum_lib
from magnum_lib.engine import ParameterError, QueueResult, distributions, kernel, queue_ref, simulate_queue
from tests.conftest import import_compiled


def draws(seed: int, n: int, lam: float, mu: float, service: str = "exp", cv: float = 1.0):
    rng = np.random.default_rng(seed)
    ia = distributions.to_ns(distributions.exponential(rng, lam, n))
    sv = distributions.to_ns(distributions.service_times(rng, service, 1 / mu, cv, n))
    return ia, sv


def small_integer_draws(seed: int, n: int):
    """Times of a few ns: many simultaneous events and zero-length gaps and services."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, 4, n, dtype=np.int64), rng.integers(0, 9, n, dtype=np.int64)


def kiefer_wolfowitz_waits(ia, sv, servers):
    """Independent FIFO G/G/c waits: each job, in order, takes the earliest-free server."""
    free = [0] * servers
    arrival = np.cumsum(ia).tolist()
    waits = []
    for a, s in zip(arrival, sv.tolist(), strict=True):
        start = max(a, heapq.heappop(free))
        heapq.heappush(free, start + s)
        waits.append(start - a)
    return np.array(waits, dtype=np.int64)


def assert_same_run(a: dict, b: dict):
    assert a.keys() == b.keys()
    for key in a:
        if isinstance(a[key], np.ndarray):
            assert a[key].dtype == b[key].dtype == np.int64
            np.testing.assert_array_equal(a[key], b[key])
        else:
            assert a[key] == b[key] and type(a[key]) is type(b[key]) is int, key


@pytest.mark.parametrize("servers", [1, 2, 10])
@pytest.mark.parametrize("service, cv", [("exp", 1.0), ("det", 1.0), ("lognormal", 2.0)])
def test_compiled_and_reference_give_identical_integers(servers, service, cv):
    compiled = import_compiled("magnum_lib.engine._queue")
    ia, sv = draws(servers, 3000, 0.8 * servers, 1.0, service, cv)
    assert_same_run(compiled.simulate_fifo(ia, sv, servers), queue_ref.simulate_fifo(ia, sv, servers))


@pytest.mark.parametrize("servers", [1, 3])
def test_parity_with_many_ties(servers):
    compiled = import_compiled("magnum_lib.engine._queue")
    ia, sv = small_integer_draws(7, 2000)
    assert_same_run(compiled.simulate_fifo(ia, sv, servers), queue_ref.simulate_fifo(ia, sv, servers))


def test_simulate_queue_same_on_both_backends():
    import_compiled("magnum_lib.engine._queue")
    a = simulate_queue(3, 2.4, 1.0, jobs=2000, seed=5, backend="compiled")
    b = simulate_queue(3, 2.4, 1.0, jobs=2000, seed=5, backend="python")
    da, db = a.to_dict(), b.to_dict()
    for key in ("wall_s", "backend"):
        da.pop(key), db.pop(key)
    assert da == db
    np.testing.assert_array_equal(a.time_in_system, b.time_in_system)


@pytest.mark.parametrize("servers", [1, 2, 5])
@pytest.mark.parametrize("tied", [False, True])
def test_exact_invariants(servers, tied):
    ia, sv = small_integer_draws(servers, 2000) if tied else draws(servers, 2000, 0.9 * servers, 1.0)
    out = kernel().simulate_fifo(ia, sv, servers)  # the active backend
    wait, tis = out["wait"], out["time_in_system"]
    arrival = np.cumsum(ia)
    assert (wait >= 0).all()
    np.testing.assert_array_equal(tis - wait, sv)  # time in system = wait + service, exactly
    # FIFO: an independent G/G/c recursion gives the same waits, to the nanosecond.
    np.testing.assert_array_equal(wait, kiefer_wolfowitz_waits(ia, sv, servers))
    # FIFO: service starts are in arrival order.
    assert (np.diff(arrival + wait) >= 0).all()
    assert out["events"] == 2 * len(ia)
    assert out["makespan_ns"] == int((arrival + tis).max())
    # The event-by-event integrals equal the per-job sums (Little's law, exactly).
    assert out["area_ns"] == int(tis.sum())
    assert out["busy_ns"] == int(sv.sum())


def test_single_server_matches_lindley_recursion():
    ia, sv = draws(11, 5000, 0.95, 1.0)
    w = [0]
    for j in range(1, len(ia)):
        w.append(max(0, w[-1] + int(sv[j - 1]) - int(ia[j])))
    np.testing.assert_array_equal(queue_ref.simulate_fifo(ia, sv, 1)["wait"], w)


def test_result_summary_is_consistent():
    r = simulate_queue(4, 3.0, 1.0, service="lognormal", cv=1.5, jobs=5000, seed=2)
    assert isinstance(r, QueueResult)
    assert 0 <= r.utilization <= 1 and 0 <= r.p_wait <= 1
    assert r.p50 <= r.p95 <= r.p99 <= r.time_in_system.max()
    assert r.wait_mean == pytest.approx(r.wait.mean(), rel=1e-12)
    assert r.p_wait == pytest.approx(np.mean(r.wait > 0))
    assert r.littles_law_error < 1e-9
    assert r.mean_in_system == pytest.approx(r.jobs / r.makespan * r.time_in_system_mean, rel=1e-9)
    assert r.events == 2 * r.jobs and r.load == pytest.approx(0.75)
    assert list(r.to_dict()) == ["wait_mean", "time_in_system_mean", "p_wait", "utilization",
                                 "p50", "p95", "p99", "jobs", "events", "wall_s", "backend"]
    assert r.to_dict()["backend"] == magnum_lib.backend()
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.jobs = 3
    with pytest.raises(ValueError):
        r.wait[0] = 1.0  # read-only arrays


def test_same_seed_same_result_different_seed_different_result():
    a, b = (simulate_queue(2, 1.5, 1.0, jobs=3000, seed=9) for _ in range(2))
    np.testing.assert_array_equal(a.wait, b.wait)
    assert a.to_dict() | {"wall_s": 0} == b.to_dict() | {"wall_s": 0}
    c = simulate_queue(2, 1.5, 1.0, jobs=3000, seed=10)
    assert not np.array_equal(a.wait, c.wait)


def test_deterministic_service_takes_exactly_the_mean():
    r = simulate_queue(1, 0.5, 4.0, service="det", jobs=1000, seed=0)
    np.testing.assert_allclose(r.time_in_system - r.wait, 0.25, rtol=0, atol=1e-9)


GOOD = dict(servers=2, arrival_rate=1.0, service_rate=1.0, service="exp", cv=1.0, jobs=10, seed=0)


@pytest.mark.parametrize("name, value", [
    ("servers", 0), ("servers", -1), ("servers", 1.5), ("servers", True), ("servers", "2"),
    ("arrival_rate", 0), ("arrival_rate", -1.0), ("arrival_rate", math.nan),
    ("arrival_rate", math.inf), ("arrival_rate", "8"), ("arrival_rate", 1e9),
    ("service_rate", 0.0), ("service_rate", -2), ("service_rate", None),
    ("service", "gamma"), ("service", "EXP"), ("service", None),
    ("cv", 0.0), ("cv", -1.0), ("cv", math.nan),
    ("jobs", 0), ("jobs", 1.5), ("jobs", 10**12), ("jobs", "100"),
    ("seed", -1), ("seed", 0.5),
])
def test_bad_parameter_is_named(name, value):
    with pytest.raises(ParameterError) as info:
        simulate_queue(**{**GOOD, name: value})
    assert info.value.name == name and str(info.value).startswith(name)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("servers, lam, mu", [(1, 1.0, 1.0), (1, 2.0, 1.0), (10, 10.0, 1.0), (3, 7.0, 2.0)])
def test_unstable_load_is_rejected(servers, lam, mu):
    with pytest.raises(ValueError, match="unstable"):
        simulate_queue(servers, lam, mu, jobs=10)


def test_too_long_horizon_is_rejected():
    with pytest.raises(ParameterError, match="int64"):
        simulate_queue(1, 1e-9, 1e-8, jobs=10_000)


def test_unknown_backend_is_rejected():
    with pytest.raises(ParameterError, match="backend"):
        simulate_queue(**GOOD, backend="gpu")


@pytest.mark.parametrize("module", ["python", "compiled"])
def test_kernel_rejects_inconsistent_arrays(module):
    kernel = queue_ref if module == "python" else import_compiled("magnum_lib.engine._queue")
    one = np.ones(3, dtype=np.int64)
    with pytest.raises(ValueError, match="same length"):
        kernel.simulate_fifo(one, one[:2], 1)
    with pytest.raises(ValueError, match="between 1"):
        kernel.simulate_fifo(one[:0], one[:0], 1)
    with pytest.raises(ValueError, match="servers"):
        kernel.simulate_fifo(one, one, 0)
    with pytest.raises(ValueError, match=">= 0"):
        kernel.simulate_fifo(one, -one, 1)
    with pytest.raises(ValueError, match="int64"):
        kernel.simulate_fifo(one * 2**61, one, 1)
