"""pack() and make_inference_graphs() refuse what would overflow, truncate or allocate too much.

Hand-built JobSets with NaN, float, negative, zero or huge runtimes are refused before the
kernel runs; whatever is accepted yields a schedule whose times are ordered (property
test, both kernels).
"""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from magnum_lib._backend import compiled_available
from magnum_lib.base.validate import ParameterError
from magnum_lib.graph import packing_ref
from magnum_lib.graph.packing import MAX_GRAPHS, MAX_TOTAL_LAYERS, POLICIES, JobSet, make_inference_graphs, pack
from tests.conftest import import_compiled

KERNELS = {"reference": packing_ref}


def _kernels():
    """Both kernels; without the compiled one, the reference alone (unless
    MAGNUM_REQUIRE_COMPILED=1, where import_compiled fails the test)."""
    if "compiled" not in KERNELS and (compiled_available() or os.environ.get("MAGNUM_REQUIRE_COMPILED")):
        KERNELS["compiled"] = import_compiled("magnum_lib.graph._packing")
    return KERNELS


def jobset(runtime, arrival=None, reserve=None, xfer=None, capacity=100) -> JobSet:
    """One layer per job."""
    runtime = np.asarray(runtime)
    n = runtime.size
    arrival = np.zeros(n, np.int64) if arrival is None else np.asarray(arrival)
    reserve = np.ones(n, np.int64) if reserve is None else np.asarray(reserve)
    xfer = np.zeros(n, np.int64) if xfer is None else np.asarray(xfer, np.int64)
    link = np.where(xfer > 0, 0, -1).astype(np.int64)
    return JobSet("toy", capacity, arrival, reserve, reserve.copy(), np.arange(n + 1, dtype=np.int64),
                  runtime, xfer, link, ("nvlink",), tuple(f"j{i}" for i in range(n)))


@pytest.mark.parametrize("runtime, match", [
    (np.array([1e6, np.nan]), "runtime_ns must be a 1-D int64 array"),
    (np.array([1.5e6, 2e6]), "runtime_ns must be a 1-D int64 array"),
    (np.array([2**62, 5], np.int64), "int64 clock"),
    (np.array([2**61, 2**61], np.int64), "int64 clock"),
    (np.array([0, 5], np.int64), "runtime_ns must be >= 1"),
    (np.array([-5, 5], np.int64), "runtime_ns must be >= 1"),
    (np.array([5, 5], np.uint64), "runtime_ns must be a 1-D int64 array"),
])
def test_bad_runtimes_are_refused_before_the_kernel(runtime, match):
    for kernel in _kernels().values():
        with pytest.raises(ParameterError, match=match):
            pack(jobset(runtime), kernel=kernel)


def test_bad_arrivals_transfers_and_capacity_are_refused():
    with pytest.raises(ParameterError, match="arrival_ns must be a 1-D int64"):
        pack(jobset(np.array([5, 5]), arrival=np.array([0.0, np.nan])))
    with pytest.raises(ParameterError, match="int64 clock"):
        pack(jobset(np.array([5, 5]), arrival=np.array([0, 2**62 - 4], np.int64)))
    with pytest.raises(ParameterError, match="int64 clock"):
        pack(jobset(np.array([5, 5]), xfer=np.array([2**62, 1])))
    bad = jobset(np.array([5, 5]))
    object.__setattr__(bad, "capacity_bytes", 2**70)
    with pytest.raises(ParameterError, match="capacity_bytes"):
        pack(bad)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 6), data=st.data(), policy=st.sampled_from(POLICIES),
       window=st.integers(1, 4), switch_s=st.sampled_from([None, 0.0, 1e-6, 0.5]))
def test_every_accepted_schedule_is_ordered(n, data, policy, window, switch_s):
    big = st.one_of(st.integers(1, 10), st.integers(1, 2**40), st.integers(2**58, 2**62))
    runtime = np.array(data.draw(st.lists(big, min_size=n, max_size=n)), np.int64)
    arrival = np.array(data.draw(st.lists(st.one_of(st.just(0), st.integers(0, 2**62)),
                                          min_size=n, max_size=n)), np.int64)
    xfer = np.array(data.draw(st.lists(st.one_of(st.just(0), big), min_size=n, max_size=n)), np.int64)
    reserve = np.array(data.draw(st.lists(st.integers(0, 100), min_size=n, max_size=n)), np.int64)
    jobs = jobset(runtime, arrival, reserve, xfer)
    outcomes = []
    for kernel in _kernels().values():
        try:
            r = pack(jobs, policy, window, switch_s, kernel=kernel)
        except ParameterError as exc:
            assert "int64 clock" in str(exc)
            outcomes.append(str(exc))
            continue
        assert (r.start_ns >= jobs.arrival_ns).all()
        assert (r.end_ns >= r.start_ns).all() and (r.end_ns - r.start_ns == jobs.runtime_ns).all()
        has = jobs.transfer_ns > 0
        assert (r.xfer_start_ns[has] >= r.end_ns[has]).all()
        assert (r.xfer_end_ns[has] - r.xfer_start_ns[has] == jobs.transfer_ns[has]).all()
        assert (r.done_ns >= r.admit_ns).all() and (r.admit_ns >= jobs.arrival_ns).all()
        assert (r.done_ns < packing_ref.MAX_HORIZON_NS).all()
        outcomes.append(r.end_ns.tolist())
    assert all(o == outcomes[0] for o in outcomes)  # both kernels agree, refusals included


@pytest.mark.parametrize("kwargs, name", [
    ({"n": 10**12}, "n"),
    ({"n": MAX_GRAPHS + 1}, "n"),
    ({"n": MAX_GRAPHS, "layers": (4, 12)}, "n"),  # 12 M layers > MAX_TOTAL_LAYERS
    ({"n": 10, "layers": (1, 10**9)}, "layers[1]"),
    ({"n": 10, "layers": (10**9, 10**9)}, "layers[0]"),
    ({"n": 10, "load": 1e-320}, "load"),
    ({"n": 10, "load": 1e30}, "load"),
    ({"n": 10, "seed": 2**200}, "seed"),
])
def test_generator_bounds_checked_before_allocating(kwargs, name):
    with pytest.raises(ParameterError) as exc:
        make_inference_graphs(**kwargs)
    assert exc.value.name == name
    assert len(str(exc.value)) < 200


def test_generator_largest_accepted_sizes_are_the_documented_ones():
    assert MAX_TOTAL_LAYERS // 12 < MAX_GRAPHS
    jobs = make_inference_graphs(50, layers=(1, 1), load=1e-3)
    assert len(jobs) == 50 and jobs.runtime_ns.size == 50
