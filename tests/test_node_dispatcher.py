"""Per-node dispatcher: hand-computed runs, conservation (hypothesis), parity, bad inputs."""
from __future__ import annotations

import heapq
import json

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from magnum_lib.base.validate import ParameterError
from magnum_lib.node import dispatcher_ref
from magnum_lib.node.dispatcher import Workload, check_conservation, dispatch, make_workload, mixed_workload
from tests.conftest import import_compiled


def wl(arrival, work, priority, sla=None):
    return make_workload(np.array(arrival), np.array(work), np.array(priority),
                         None if sla is None else np.array(sla))


# ---------------------------------------------------------------------------
# Hand-computed runs
# ---------------------------------------------------------------------------

def test_micro_preemption_by_hand():
    # One device, quantum 100 ns, pause 10 ns, resume 20 ns. A batch job (1000 ns) starts
    # at 0; an inference request (100 ns) arrives at 150 and is seen at boundary 200: the
    # batch job has done 200 ns, is paused; the request runs 210..310. At boundary 400 the
    # batch job resumes, useful from 420, and ends at 420 + 800 = 1220.
    w = wl([0, 150], [1000, 100], [1, 0], [0, 500])
    r = dispatch(w, devices=1, quantum=100e-9, pause_cost=10e-9, resume_cost=20e-9, audit=True)
    assert r.latency_s * 1e9 == pytest.approx([1220, 160])
    assert r.preemptions == 1 and list(r.pauses) == [1, 0]
    assert (r.pause_overhead_s, r.resume_overhead_s) == pytest.approx((10e-9, 20e-9))
    assert r.end_s == pytest.approx(1300e-9)  # the boundary that retires the batch job
    # Busy: 0..200 batch, 200..310 pause + request, 400..1220 resume + batch = 1130 ns.
    assert r.utilization == pytest.approx(1130 / 1300)
    assert r.useful_utilization == pytest.approx(1100 / 1300)
    assert r.per_class[0].sla_attainment == 1.0
    assert r.accounting.ok and r.accounting.audited > 0


def test_without_preemption_the_request_waits_for_the_batch_job():
    w = wl([0, 150], [1000, 100], [1, 0])
    r = dispatch(w, devices=1, quantum=100e-9, pause_cost=10e-9, resume_cost=20e-9, preemption=False)
    assert r.latency_s * 1e9 == pytest.approx([1000, 950])  # request runs 1000..1100
    assert r.preemptions == 0 and r.utilization == pytest.approx(1100 / 1100)


def test_priority_first_fifo_within_a_class():
    # All arrive at 0 on one device, quantum 100: class 0 in arrival order, then class 1.
    w = wl([0, 0, 0, 0], [50, 50, 50, 50], [1, 0, 1, 0])
    r = dispatch(w, devices=1, quantum=100e-9, preemption=False)
    assert r.latency_s * 1e9 == pytest.approx([250, 50, 350, 150])
    assert r.decisions == 4 and r.ticks == 5  # boundaries 0..400; 400 only retires


def test_decisions_wait_for_the_quantum_boundary():
    w = wl([1], [10], [0])
    r = dispatch(w, devices=1, quantum="250us")
    assert r.per_class[0].wait_mean_s == pytest.approx(250e-6 - 1e-9)
    assert r.latency_s[0] == pytest.approx(250e-6 - 1e-9 + 10e-9)


def test_no_preemption_within_a_class_or_upwards():
    # A running class-0 item is never paused for waiting work of its own or a lower class.
    w = wl([0, 10, 20], [1000, 100, 100], [0, 0, 1])
    r = dispatch(w, devices=1, quantum=100e-9, pause_cost=0, resume_cost=0)
    assert r.preemptions == 0 and r.latency_s[0] == pytest.approx(1000e-9)


def kiefer_wolfowitz_waits(arrival, work, servers):
    """Independent FIFO G/G/c waits: each job, in order, takes the earliest-free server."""
    free = [0] * servers
    waits = []
    for a, s in zip(arrival.tolist(), work.tolist(), strict=True):
        start = max(a, heapq.heappop(free))
        heapq.heappush(free, start + s)
        waits.append(start - a)
    return np.array(waits)


@pytest.mark.parametrize("devices", [1, 3])
def test_one_class_1ns_quantum_is_the_fifo_queue(devices):
    # With a 1 ns quantum every instant is a decision point, so one class reduces to the
    # FIFO multi-server queue: waits must equal the Kiefer-Wolfowitz recursion exactly.
    rng = np.random.default_rng(7)
    arrival = np.cumsum(rng.integers(0, 400, 300))
    work = rng.integers(1, 1000, 300)
    r = dispatch(wl(arrival, work, np.zeros(300, int)), devices=devices, quantum=1e-9)
    expected = kiefer_wolfowitz_waits(arrival, work, devices)
    assert np.array_equal(np.rint(r.latency_s * 1e9).astype(int), expected + work)


def test_coarser_quantum_never_starts_earlier_than_fifo():
    rng = np.random.default_rng(8)
    arrival = np.cumsum(rng.integers(0, 400, 200))
    work = rng.integers(1, 1000, 200)
    fifo = kiefer_wolfowitz_waits(arrival, work, 2)
    r = dispatch(wl(arrival, work, np.zeros(200, int)), devices=2, quantum=300e-9)
    assert r.per_class[0].wait_mean_s * 1e9 >= fifo.mean()


# ---------------------------------------------------------------------------
# Conservation and the effect of preemption (hypothesis, active backend)
# ---------------------------------------------------------------------------

@st.composite
def small_runs(draw):
    n = draw(st.integers(1, 25))
    classes = draw(st.integers(1, 3))
    gaps = draw(st.lists(st.integers(0, 400), min_size=n, max_size=n))
    work = draw(st.lists(st.integers(1, 2000), min_size=n, max_size=n))
    prio = draw(st.lists(st.integers(0, classes - 1), min_size=n, max_size=n))
    params = dict(devices=draw(st.integers(1, 3)), quantum=draw(st.integers(1, 600)) * 1e-9,
                  pause_cost=draw(st.integers(0, 300)) * 1e-9, resume_cost=draw(st.integers(0, 300)) * 1e-9,
                  preemption=draw(st.booleans()),
                  horizon=draw(st.one_of(st.none(), st.integers(0, 6000).map(lambda x: x * 1e-9))))
    return wl(np.cumsum(gaps), work, prio), params


@settings(max_examples=150, deadline=None)
@given(run=small_runs())
def test_work_is_conserved_at_every_step(run):
    w, params = run
    r = dispatch(w, audit=True, **params)
    acc = r.accounting
    assert acc.violations == 0 and acc.audited == r.visited
    arrived = w.arrival_ns <= round(r.end_s * 1e9)
    assert acc.work_in_ns == int(w.work_ns[arrived].sum())  # recounted from the input
    assert acc.work_in_ns == acc.work_done_ns + acc.work_remaining_ns
    if params["horizon"] is None:  # ran to the end: everything done, nothing owed
        assert r.completed == len(w) and acc.work_remaining_ns == 0
        assert acc.work_done_ns == int(w.work_ns.sum())
    finished = ~np.isnan(r.latency_s)
    assert (r.latency_s[finished] * 1e9 >= w.work_ns[finished] - 0.5).all()  # no item beats its work
    assert r.preemptions == int(r.pauses.sum())
    assert r.utilization <= 1 + 1e-12 and r.useful_utilization <= r.utilization + 1e-12


@settings(max_examples=100, deadline=None)
@given(run=small_runs())
def test_preemption_never_touches_a_run_with_one_class(run):
    w, params = run
    one = make_workload(w.arrival_ns, w.work_ns, np.zeros(len(w), np.int64))
    assert dispatch(one, **params).preemptions == 0


@settings(max_examples=100, deadline=None)
@given(run=small_runs())
def test_free_preemption_makes_batch_invisible_to_inference(run):
    # With a zero pause cost, class 0 displaces class 1 at the very boundary it is seen,
    # so class 0 runs exactly as if class 1 did not exist (an independent run), and its
    # mean wait is never worse than without preemption. (With a pause cost it can be: a
    # pause may outlast the batch job's own end; see the seeded scenario below.)
    w, params = run
    params.update(pause_cost=0, horizon=None)
    urgent = w.priority == 0
    assume(urgent.any())
    on = dispatch(w, **{**params, "preemption": True})
    off = dispatch(w, **{**params, "preemption": False})
    alone = dispatch(make_workload(w.arrival_ns[urgent], w.work_ns[urgent], w.priority[urgent]),
                     **{**params, "preemption": False})
    assert np.array_equal(on.latency_s[urgent], alone.latency_s)
    assert on.per_class[0].wait_mean_s <= off.per_class[0].wait_mean_s + 1e-15


def test_preemption_cuts_latency_critical_waits():
    # Heavy batch load on 4 devices: without preemption inference waits for a batch job
    # to end (tens of ms); with it, at most about a quantum plus the pause cost.
    gains = []
    for seed in range(3):
        w = mixed_workload("0.5s", inference_rate=1000, batch_rate=70, batch_work="50ms", seed=seed)
        on, off = (dispatch(w, devices=4, preemption=p) for p in (True, False))
        assert on.per_class[0].wait_mean_s <= off.per_class[0].wait_mean_s
        assert on.per_class[0].latency_p99_s <= off.per_class[0].latency_p99_s
        assert on.preemptions > 0 and on.accounting.ok and off.accounting.ok
        gains.append(off.per_class[0].wait_mean_s / on.per_class[0].wait_mean_s)
    assert min(gains) > 2


# ---------------------------------------------------------------------------
# Parity: compiled loop == reference loop
# ---------------------------------------------------------------------------

def _kernel_args(w: Workload, devices, q, p, r, preempt, horizon):
    return (w.arrival_ns, w.work_ns, w.priority, devices, q, p, r, preempt, w.n_classes, horizon, True)


def _assert_same(a: dict, b: dict):
    assert a.keys() == b.keys()
    for key in a:
        assert np.array_equal(a[key], b[key]), key


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("preempt", [True, False])
def test_parity_on_mixed_workloads(seed, preempt):
    compiled = import_compiled("magnum_lib.node._dispatcher")
    w = mixed_workload("0.3s", inference_rate=3000, batch_rate=80, seed=seed)
    for horizon in (-1, 150_000_000):
        args = _kernel_args(w, 6, 250_000, 20_000, 30_000, preempt, horizon)
        _assert_same(compiled.run_dispatch(*args), dispatcher_ref.run_dispatch(*args))


@settings(max_examples=80, deadline=None)
@given(run=small_runs())
def test_parity_on_small_runs(run):
    compiled = import_compiled("magnum_lib.node._dispatcher")
    w, p = run
    args = _kernel_args(w, p["devices"], round(p["quantum"] * 1e9), round(p["pause_cost"] * 1e9),
                        round(p["resume_cost"] * 1e9), p["preemption"],
                        -1 if p["horizon"] is None else round(p["horizon"] * 1e9))
    _assert_same(compiled.run_dispatch(*args), dispatcher_ref.run_dispatch(*args))


def test_same_seed_same_result_and_both_backends_agree():
    import_compiled("magnum_lib.node._dispatcher")
    w1, w2 = mixed_workload("0.2s", seed=5), mixed_workload("0.2s", seed=5)
    assert np.array_equal(w1.arrival_ns, w2.arrival_ns) and np.array_equal(w1.work_ns, w2.work_ns)
    a, b = dispatch(w1, backend="compiled"), dispatch(w2, backend="python")
    da, db = a.to_dict(), b.to_dict()
    for d in (da, db):
        d.pop("wall_s"), d.pop("backend")
    assert da == db
    assert mixed_workload("0.2s", seed=6).arrival_ns.size != w1.arrival_ns.size or \
        not np.array_equal(mixed_workload("0.2s", seed=6).arrival_ns, w1.arrival_ns)


# ---------------------------------------------------------------------------
# Results and workload
# ---------------------------------------------------------------------------

def test_result_to_dict_is_strict_json_and_frozen():
    r = dispatch(mixed_workload("0.1s", seed=2))
    d = json.loads(json.dumps(r.to_dict(), allow_nan=False))
    assert {"per_class", "preemptions", "pause_overhead_s", "resume_overhead_s", "utilization",
            "decisions", "events", "wall_s", "accounting"} <= d.keys()
    assert [c["priority"] for c in d["per_class"]] == [0, 1]
    assert d["per_class"][1]["sla_attainment"] is None  # batch has no SLA
    with pytest.raises(AttributeError):
        r.devices = 3
    assert check_conservation(r, None) is r.accounting


def test_mixed_workload_rates_and_classes():
    # Counts are Poisson: mean rate x duration, sd sqrt(mean); 5 sd bounds cannot flake.
    w = mixed_workload("2s", inference_rate=1000, batch_rate=50, seed=3)
    n0, n1 = int((w.priority == 0).sum()), int((w.priority == 1).sum())
    assert abs(n0 - 2000) < 5 * 2000**0.5 and abs(n1 - 100) < 5 * 100**0.5
    assert (np.diff(w.arrival_ns) >= 0).all() and w.arrival_ns.max() < 2e9
    assert set(np.unique(w.sla_ns[w.priority == 0])) == {10_000_000}
    assert (w.sla_ns[w.priority == 1] == 0).all()
    # Exponential work: the mean of n draws is within 5 sd (mean / sqrt(n)) of the mean.
    assert abs(w.work_ns[w.priority == 0].mean() - 1e6) < 5 * 1e6 / n0**0.5
    assert not w.arrival_ns.flags.writeable
    assert mixed_workload("0.1s", batch_rate=0, seed=1).n_classes == 1


def test_more_than_two_classes():
    w = wl([0, 0, 0, 5], [1000, 1000, 1000, 10], [2, 1, 2, 0])
    r = dispatch(w, devices=2, quantum=100e-9, pause_cost=0, resume_cost=0, audit=True)
    assert len(r.per_class) == 3 and r.accounting.ok
    assert r.preemptions == 1 and list(r.pauses) == [1, 0, 0, 0]  # the class-2 one, lowest index


# ---------------------------------------------------------------------------
# Bad inputs
# ---------------------------------------------------------------------------

W = wl([0, 10], [5, 5], [0, 1])


@pytest.mark.parametrize("kwargs, field", [
    (dict(devices=0), "devices"), (dict(devices=1.5), "devices"),
    (dict(quantum=0), "quantum"), (dict(quantum="-1ms"), "quantum"), (dict(quantum="fast"), "quantum"),
    (dict(quantum=None), "quantum"),
    (dict(pause_cost=-1e-6), "pause_cost"), (dict(resume_cost="-2us"), "resume_cost"),
    (dict(horizon=-1), "horizon"), (dict(horizon="1e12h"), "horizon"), (dict(quantum="2h"), "quantum"),
    (dict(pause_cost=1e9), "pause_cost"), (dict(n_classes=1), "n_classes"), (dict(n_classes=65), "n_classes"),
    (dict(preemption="yes"), "preemption"), (dict(backend="gpu"), "backend"),
])
def test_bad_dispatch_parameters(kwargs, field):
    with pytest.raises(ValueError, match=field):
        dispatch(W, **kwargs)


def test_workload_must_be_a_workload():
    with pytest.raises(TypeError, match="Workload"):
        dispatch({"arrival_ns": [0]})


@pytest.mark.parametrize("args, field", [
    (([], [], []), "arrival_ns"),
    (([5, 1], [1, 1], [0, 0]), "arrival_ns"),
    (([-1, 1], [1, 1], [0, 0]), "arrival_ns"),
    (([0, 1], [0, 1], [0, 0]), "work_ns"),
    (([0, 1], [1, 1, 1], [0, 0]), "work_ns"),
    (([0, 1], [1.5, 1], [0, 0]), "work_ns"),
    (([0, 1], [1, 1], [0, -1]), "priority"),
    (([0, 1], [1, 1], [0, 64]), "priority"),
    (([0, 1], [1, 1], [0, 0], [0, -5]), "sla_ns"),
    (([0, 2**61], [1, 1], [0, 0]), "work_ns"),
])
def test_bad_workload_arrays(args, field):
    with pytest.raises(ParameterError, match=field):
        make_workload(*args)


@pytest.mark.parametrize("kwargs, field", [
    (dict(duration=0), "duration"), (dict(inference_rate=-1), "inference_rate"),
    (dict(batch_rate=-3), "batch_rate"), (dict(inference_work="0s"), "inference_work"),
    (dict(inference_sla="-1ms"), "inference_sla"), (dict(seed=-1), "seed"),
    (dict(duration="1000h"), "duration"),
])
def test_bad_mixed_workload(kwargs, field):
    with pytest.raises(ValueError, match=field):
        mixed_workload(**kwargs)
