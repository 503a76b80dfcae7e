"""Time-division packing: invariants (hypothesis), closed forms, parity of the two kernels."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from magnum_lib.base.validate import ParameterError
from magnum_lib.graph import packing_ref
from magnum_lib.graph.manifest import parse_manifest
from magnum_lib.graph.packing import (
    POLICIES,
    JobSet,
    compare_policies,
    jobs_from_manifests,
    make_inference_graphs,
    pack,
    utilization_vs_load,
)
from magnum_lib.graph.reserve import reserve
from tests.conftest import import_compiled
from tests.test_graph_manifest import GOOD

OUTPUTS = ("start_ns", "end_ns", "xfer_start_ns", "xfer_end_ns", "admit_ns", "done_ns")


def toy(runtimes, reserve_bytes, capacity, xfers=None, arrivals=None, link=None) -> JobSet:
    """A hand-made JobSet: ``runtimes`` is a list of per-job lists of layer ns."""
    n = len(runtimes)
    flat = np.array([r for job in runtimes for r in job], np.int64)
    x = np.zeros(flat.size, np.int64) if xfers is None else np.array([v for job in xfers for v in job], np.int64)
    links = np.where(x > 0, 0, -1) if link is None else np.asarray(link, np.int64)
    return JobSet("toy", capacity, np.zeros(n, np.int64) if arrivals is None else np.asarray(arrivals, np.int64),
                  np.asarray(reserve_bytes, np.int64), np.asarray(reserve_bytes, np.int64),
                  np.concatenate(([0], np.cumsum([len(j) for j in runtimes]))).astype(np.int64),
                  flat, x, links, ("link0",), tuple(f"j{i}" for i in range(n)))


def union_length(start, end) -> int:
    """Length of the union of [start, end) intervals (sweep over sorted starts)."""
    total, cur_s, cur_e = 0, None, None
    for s, e in sorted(zip(start.tolist(), end.tolist(), strict=True)):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    return total + (cur_e - cur_s if cur_e is not None else 0)


def check_invariants(r, max_resident=None):
    jobs = r.jobs
    order = np.argsort(r.start_ns, kind="stable")
    s, e = r.start_ns[order], r.end_ns[order]
    assert (r.start_ns >= 0).all() and (r.end_ns - r.start_ns == jobs.runtime_ns).all()
    assert (s[1:] >= e[:-1]).all(), "two layers overlap on the device"
    # Utilization two independent ways: busy-time sum vs integrating the timeline.
    span = int(r.done_ns.max() - jobs.arrival_ns.min())
    assert union_length(r.start_ns, r.end_ns) / span == pytest.approx(r.utilization, rel=1e-12)
    # Memory never exceeds the device, checked by brute force at every admission instant.
    for t in np.unique(r.admit_ns):
        resident = (r.admit_ns <= t) & (r.done_ns > t)
        assert r.held_bytes[resident].sum() <= jobs.capacity_bytes
        if max_resident is not None:
            assert resident.sum() <= max_resident
    assert r.peak_memory_bytes <= jobs.capacity_bytes
    # Chains: each layer after the previous one and its transfer; job held around its layers.
    for j in range(len(jobs)):
        a, b = jobs.layer_ptr[j], jobs.layer_ptr[j + 1]
        ready = np.maximum(r.end_ns[a:b], r.xfer_end_ns[a:b])
        assert (r.start_ns[a + 1:b] >= ready[:-1]).all()
        assert jobs.arrival_ns[j] <= r.admit_ns[j] <= r.start_ns[a] and r.done_ns[j] == ready[-1]
    # Transfers: after their layer, one at a time per link.
    has = jobs.transfer_ns > 0
    assert ((r.xfer_end_ns - r.xfer_start_ns)[has] == jobs.transfer_ns[has]).all()
    assert (r.xfer_start_ns[has] >= r.end_ns[has]).all() and (r.xfer_start_ns[~has] == -1).all()
    for c in range(len(jobs.link_names)):
        on = has & (jobs.link == c)
        xs, xe = np.sort(r.xfer_start_ns[on]), r.xfer_end_ns[on][np.argsort(r.xfer_start_ns[on])]
        assert (xs[1:] >= xe[:-1]).all(), "two transfers overlap on one link"


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 25), seed=st.integers(0, 10**6), spread=st.floats(0, 2),
       pressure=st.floats(0.05, 1.0), comm=st.floats(0, 2), policy=st.sampled_from(POLICIES),
       load=st.one_of(st.none(), st.floats(0.2, 2.0)), window=st.integers(1, 5))
def test_invariants(n, seed, spread, pressure, comm, policy, load, window):
    jobs = make_inference_graphs(n, seed, spread, pressure, comm=comm, load=load, layers=(1, 6))
    r = pack(jobs, policy, window=window)
    check_invariants(r, 1 if policy == "exclusive" else None)


def test_batch_without_transfers_is_fully_busy():
    # Everything fits and nothing waits on a link: makespan = total compute (closed form).
    jobs = make_inference_graphs(30, seed=4, memory_pressure=0.02, comm=0.0)
    r = pack(jobs, "packed")
    assert r.makespan_ns == jobs.runtime_ns.sum() and r.utilization == 1.0


def test_exclusive_batch_is_sequential():
    # One job at a time, link always free: makespan = sum of runtimes and transfers.
    jobs = make_inference_graphs(20, seed=5, comm=1.0)
    r = pack(jobs, "exclusive")
    assert r.makespan_ns == jobs.runtime_ns.sum() + jobs.transfer_ns.sum()
    assert (r.admit_ns[1:] == r.done_ns[:-1]).all()  # FIFO, back to back


def test_packing_hides_transfers_that_exclusive_pays():
    jobs = toy([[100, 100], [100, 100]], [1, 1], 10, xfers=[[100, 0], [100, 0]])
    exclusive, packed = pack(jobs, "exclusive"), pack(jobs, "packed")
    assert exclusive.makespan_ns == 600  # 100 + 100 (link) + 100, twice
    # j0 L0 [0,100) link [100,200); j1 L0 [100,200) link waits [200,300); j0 L1 [200,300); j1 L1 [300,400)
    assert packed.start_ns.tolist() == [0, 200, 100, 300] and packed.makespan_ns == 400


def test_switch_overhead_closed_form():
    jobs = toy([[100, 100], [100, 100]], [1, 1], 10)
    r = pack(jobs, "packed", switch_s=10e-9)
    assert r.start_ns.tolist() == [0, 220, 110, 330] and r.makespan_ns == 430
    assert r.utilization == pytest.approx(400 / 430)


def test_memory_blocks_admission_and_window_backfills():
    # j0 takes 6 of 10; j1 (6) cannot join it; j2 (4) can, once the window reaches it
    # (the window counts every arrived waiting job examined, admitted or not).
    jobs = toy([[100], [100], [100]], [6, 6, 4], 10)
    assert pack(jobs, "packed", window=1).admit_ns.tolist() == [0, 100, 200]
    assert pack(jobs, "packed", window=2).admit_ns.tolist() == [0, 100, 100]
    backfilled = pack(jobs, "packed", window=3)
    assert backfilled.admit_ns.tolist() == [0, 100, 0] and backfilled.start_ns.tolist() == [0, 200, 100]


def test_arrivals_and_idle_gaps():
    jobs = toy([[100], [100]], [1, 1], 10, arrivals=[0, 1000])
    r = pack(jobs, "packed")
    assert r.start_ns.tolist() == [0, 1000] and r.makespan_ns == 1100
    assert r.latency_s.tolist() == [1e-7, 1e-7]


def test_single_job_matches_reservation():
    m = parse_manifest(GOOD)
    r, alone = reserve(m), pack(jobs_from_manifests([m]), "packed")
    assert alone.start_ns.tolist() == r.start_ns.tolist() and alone.makespan_ns == r.makespan_ns


def test_seeded_and_deterministic():
    a, b = (pack(make_inference_graphs(40, seed=9, load=0.8)) for _ in range(2))
    assert all(np.array_equal(getattr(a, k), getattr(b, k)) for k in OUTPUTS)
    c = make_inference_graphs(40, seed=10, load=0.8)
    assert not np.array_equal(c.runtime_ns[:10], a.jobs.runtime_ns[:10])


def test_gantt_and_load_sweep():
    jobs = toy([[100, 100], [100, 100]], [1, 1], 10, xfers=[[100, 0], [100, 0]])
    g = pack(jobs, "packed").gantt()
    assert g["job"].tolist() == [0, 0, 1, 1] and g["duration_s"].tolist() == [1e-7] * 4
    assert g["xfer_job"].tolist() == [0, 1] and g["xfer_start_s"].tolist() == [1e-7, 2e-7]
    sweep = utilization_vs_load([0.3, 0.9], n=30, seed=1)
    assert sweep["load"].tolist() == [0.3, 0.9]
    assert all(sweep[f"{p}_utilization"].shape == (2,) for p in POLICIES)


def test_compare_policies_reports():
    res = compare_policies(make_inference_graphs(60, seed=2))
    assert set(res) == set(POLICIES)
    for name, r in res.items():
        d = r.to_dict()
        assert d["policy"] == name and 0 < d["utilization"] <= 1
        assert d["p50_latency_s"] <= d["p99_latency_s"] <= d["makespan_s"]
    assert res["dynamic"].switch_ns == 25_000 and res["packed"].switch_ns == 0


@pytest.mark.parametrize("seed, policy, load", [(0, "packed", None), (1, "exclusive", 0.7), (2, "dynamic", 0.95),
                                                (3, "packed", 1.5), (4, "dynamic", None)])
def test_parity_compiled_vs_reference(seed, policy, load):
    compiled = import_compiled("magnum_lib.graph._packing")
    jobs = make_inference_graphs(150, seed, runtime_spread=1.0, memory_pressure=0.2, comm=1.0, load=load)
    a, b = pack(jobs, policy, window=4, kernel=compiled), pack(jobs, policy, window=4, kernel=packing_ref)
    assert a.backend == "compiled" and b.backend == "python"
    for k in OUTPUTS:
        assert np.array_equal(getattr(a, k), getattr(b, k)), k


def test_parity_on_hand_made_edge_cases():
    compiled = import_compiled("magnum_lib.graph._packing")
    jobs = toy([[5], [5, 5, 5], [1]], [10, 3, 7], 10, xfers=[[3], [0, 9, 2], [4]], arrivals=[0, 0, 2])
    for policy in POLICIES:
        a, b = pack(jobs, policy, kernel=compiled), pack(jobs, policy, kernel=packing_ref)
        assert all(np.array_equal(getattr(a, k), getattr(b, k)) for k in OUTPUTS)
        check_invariants(a)


def test_jobs_from_manifests():
    m = parse_manifest(GOOD)
    jobs = jobs_from_manifests([m, m], arrivals_s=[0.0, 0.001])
    assert jobs.arrival_ns.tolist() == [0, 1_000_000] and jobs.layer_ptr.tolist() == [0, 3, 6]
    assert jobs.reserve_bytes.tolist() == [8_500_000_000] * 2 and jobs.largest_layer_bytes.tolist() == [4_800_000_000] * 2
    with pytest.raises(ParameterError, match="arrivals_s"):
        jobs_from_manifests([m], arrivals_s=[-1.0])
    with pytest.raises(ParameterError, match="manifests"):
        jobs_from_manifests([])


@pytest.mark.parametrize("kwargs, name", [
    ({"n": 0}, "n"), ({"n": 2.5}, "n"), ({"seed": -1}, "seed"), ({"runtime_spread": -0.1}, "runtime_spread"),
    ({"memory_pressure": 0}, "memory_pressure"), ({"memory_pressure": 1.5}, "memory_pressure"),
    ({"comm": -1}, "comm"), ({"layers": (3, 2)}, "layers[1]"), ({"layers": 4}, "layers"), ({"load": 0}, "load"),
])
def test_generator_bad_input(kwargs, name):
    args = {"n": 5, **kwargs}
    with pytest.raises(ParameterError) as info:
        make_inference_graphs(**args)
    assert info.value.name == name


def test_generator_unknown_device():
    with pytest.raises(ValueError, match="unknown accelerator 'tpu'"):
        make_inference_graphs(3, device="tpu")


def test_pack_bad_input():
    jobs = make_inference_graphs(3)
    for kwargs, name in [({"policy": "fifo"}, "policy"), ({"window": 0}, "window"), ({"switch_s": -1e-6}, "switch_s")]:
        with pytest.raises(ParameterError) as info:
            pack(jobs, **kwargs)
        assert info.value.name == name
    with pytest.raises(TypeError, match="JobSet"):
        pack([1, 2])
    with pytest.raises(ParameterError, match="needs 11 bytes"):
        pack(toy([[1]], [11], 10))


@pytest.mark.parametrize("change, match", [
    (dict(link=np.array([1])), "link must index"), (dict(transfer_ns=np.array([-1])), ">= 0"),
    (dict(layer_ptr=np.array([0, 2])), "layer_ptr"), (dict(arrival_ns=np.array([0, 0])), "arrival_ns"),
])
def test_hand_built_jobset_is_checked(change, match):
    import dataclasses
    jobs = dataclasses.replace(toy([[1]], [1], 10, xfers=[[1]]), **change)
    with pytest.raises(ParameterError, match=match):
        pack(jobs)
