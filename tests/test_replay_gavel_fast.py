"""The compiled Gavel rounds (replay/_gavel_rounds.pyx) against the Python GavelRounds policy.

Parity: ``replay(..., GavelRounds(...))`` on the compiled kernel and on the Python loop
(``backend="python"``, the readable reference) give identical results: finish and start
times to the ns, preemptions and the utilization step function, on Philly VC slices,
Tiresias' 60-job trace, Gavel-style heterogeneous traces (unit and measured steps, FIFO
and both max-min allocations) and random small traces (hypothesis). Bad input to the
kernel's ``def`` raises ValueError/TypeError, never crashes (checked in a child process).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import replay_peers  # noqa: E402

from magnum_lib.replay import ReplayCluster, make_jobs, replay, traces  # noqa: E402
from magnum_lib.replay.api import PolicyError  # noqa: E402
from magnum_lib.replay.gavel_rounds import GavelFIFO, GavelRounds  # noqa: E402

kernel = pytest.importorskip("magnum_lib.replay._gavel_rounds")
ROOT = Path(__file__).resolve().parents[1]


def same(jobs, cluster, make, restore_s=0.0):
    """Replay with both forms; assert every per-job figure and the utilization are equal."""
    ref = replay(jobs, cluster, make(), backend="python", restore_s=restore_s, progress=False)
    out = replay(jobs, cluster, make(), restore_s=restore_s, progress=False)
    assert (ref.backend, out.backend) == ("python", "compiled")
    for f in ("finish_s", "start_s", "preemptions", "util_t_s", "util_busy"):
        a, b = getattr(ref, f), getattr(out, f)
        assert np.array_equal(a, b), (f, np.flatnonzero(a != b)[:5] if a.shape == b.shape else (a.shape, b.shape))
    assert np.all(out.finish_s >= out.submit_s)
    return ref, out


@pytest.fixture(autouse=True)
def _compiled(monkeypatch):
    monkeypatch.delenv("MAGNUM_PUREPYTHON", raising=False)


# ------------------------------------------------------------------ real traces
@pytest.mark.needs_traces
@pytest.mark.parametrize("vc,count,gpus", [("0e4a51", 200, 16), ("103959", 150, 16), ("ee9e8c", 150, 32),
                                           ("7f04ca", 120, 8)])
def test_philly_vc_slices_fifo(vc, count, gpus):
    raw = traces.philly_jobs(vc, gpu_counts=[1, 2, 4, 8]).subset(slice(0, count)).shifted()
    cluster = ReplayCluster.uniform(gpus // 4, 4)
    raw = raw.subset(raw.num_gpus <= gpus)
    same(raw, cluster, GavelFIFO)                                   # the trace as it is
    same(replay_peers.whole_seconds(raw), cluster, GavelFIFO)      # Gavel's unit steps


@pytest.mark.needs_traces
def test_philly_fifo_measured_steps():
    raw = traces.philly_jobs("0e4a51", min_duration_s=60, gpu_counts=[1, 2, 4]).subset(slice(0, 120))
    jobs, rate = replay_peers.measured_durations(raw)
    same(jobs, ReplayCluster.uniform(4, 4), lambda: GavelFIFO(steps_per_s=rate))


def test_whole_steps_pause_jobs():
    """tests/test_replay_gavel_rounds.py's hand case (micro-tasks of 357 s in 360 s rounds)."""
    jobs = make_jobs([0, 0], [1000 * 7.0, 2000.0], 1)
    ref, out = same(jobs, ReplayCluster.uniform(1, 2), lambda: GavelFIFO(steps_per_s=[1 / 7, 1.0]))
    assert out.preemptions.tolist() == [5, 0]
    np.testing.assert_allclose(out.finish_s, [7015, 2000], rtol=0, atol=1e-6)


@pytest.mark.needs_traces
@pytest.mark.parametrize("nodes", [2, 4])
def test_tiresias_60_jobs(nodes):
    jobs = traces.tiresias_jobs()
    same(jobs, ReplayCluster.uniform(nodes, 4), GavelFIFO)
    same(replay_peers.whole_seconds(jobs), ReplayCluster.uniform(nodes, 4), GavelFIFO)


@pytest.mark.needs_traces
@pytest.mark.parametrize("allocation", ["maxmin", "maxmin-blind"])
@pytest.mark.parametrize("measured", [True, False])
def test_gavel_hetero_maxmin(allocation, measured):
    jobs, thr = replay_peers.gavel_hetero_jobs(40, 6, 1)
    cluster = ReplayCluster.from_counts(replay_peers.GAVEL_TYPES, 4)
    same(jobs, cluster, lambda: GavelRounds(allocation, steps_per_s=thr if measured else None))


@pytest.mark.needs_traces
@pytest.mark.parametrize("measured", [True, False])
def test_gavel_hetero_fifo(measured):
    """Gavel's multi-type FIFO: its allocation (seeded random.Random) is called back in Python."""
    jobs, thr = replay_peers.gavel_hetero_jobs(60, 6, 3)
    cluster = ReplayCluster.from_counts(replay_peers.GAVEL_TYPES, 4)
    same(jobs, cluster, lambda: GavelFIFO(steps_per_s=thr if measured else None))


@pytest.mark.needs_traces
def test_gavel_style_single_type_all_allocations():
    jobs = traces.gavel_jobs(60, jobs_per_hour=20, seed=4, gpu_types=("v100",))
    cluster = ReplayCluster.uniform(2, 4, "v100")
    for alloc in ("fifo", "maxmin", "maxmin-blind"):
        same(jobs, cluster, lambda: GavelRounds(alloc))                     # (max-min: waterfill)  # noqa: B023
    for alloc in ("maxmin", "maxmin-blind"):
        same(jobs, cluster, lambda: GavelRounds(alloc, solver="highs"))     # HiGHS, called back  # noqa: B023


@pytest.mark.needs_traces
def test_lp_callable_is_used_at_resets_only():
    """The kernel calls ``lp`` once per allocation reset, as the Python form does."""
    from magnum_lib.replay.fairness import maxmin_allocation

    jobs, thr = replay_peers.gavel_hetero_jobs(30, 6, 2)
    cluster = ReplayCluster.from_counts(replay_peers.GAVEL_TYPES, 4)
    calls = {"python": 0, "compiled": 0}

    def counting(key):
        def lp(t, scale, gpus_by_type):
            calls[key] += 1
            return maxmin_allocation(t, scale, list(gpus_by_type.values()))
        return lp

    ref = replay(jobs, cluster, GavelRounds("maxmin", steps_per_s=thr, lp=counting("python")), backend="python")
    out = replay(jobs, cluster, GavelRounds("maxmin", steps_per_s=thr, lp=counting("compiled")))
    assert out.backend == "compiled" and np.array_equal(ref.finish_s, out.finish_s)
    assert calls["python"] == calls["compiled"] > 1


def test_restore_time_and_forced_reset():
    """restore_s on resumes (paused jobs pay it) and the forced reset on an idle drained queue."""
    jobs = make_jobs([0, 50, 150, 1000], [100, 100, 100, 100], 1)
    ref, out = same(jobs, ReplayCluster.uniform(1, 1), GavelFIFO)
    np.testing.assert_array_equal(out.finish_s, [100, 200, 1100, 1200])
    jobs = make_jobs([0, 0, 10], [900, 100, 50], 1)
    same(jobs, ReplayCluster.uniform(1, 2), GavelFIFO, restore_s=5.0)


# ------------------------------------------------------------------ the waterfill solver (one type)
@pytest.mark.needs_traces
@pytest.mark.parametrize("allocation", ["maxmin", "maxmin-blind"])
@pytest.mark.parametrize("vc,count,gpus", [("0e4a51", 250, 16), ("103959", 150, 16), ("ee9e8c", 150, 32)])
def test_philly_vc_slices_waterfill(allocation, vc, count, gpus):
    """The kernel's own max-min allocation (no callback) equals the Python form's
    fairness.maxmin_waterfill bit for bit: identical replays."""
    raw = traces.philly_jobs(vc, gpu_counts=[1, 2, 4, 8]).subset(slice(0, count)).shifted()
    cluster = ReplayCluster.uniform(gpus // 4, 4)
    raw = raw.subset(raw.num_gpus <= gpus)
    make = lambda: GavelRounds(allocation, solver="waterfill")      # noqa: E731
    same(raw, cluster, make)
    ref, out = same(replay_peers.whole_seconds(raw), cluster, make)
    assert np.any(out.preemptions > 0)                              # the allocation mattered


@pytest.mark.needs_traces
def test_philly_waterfill_measured_steps():
    raw = traces.philly_jobs("0e4a51", min_duration_s=60, gpu_counts=[1, 2, 4]).subset(slice(0, 120))
    jobs, rate = replay_peers.measured_durations(raw)
    for allocation in ("maxmin", "maxmin-blind"):
        same(jobs, ReplayCluster.uniform(4, 4), lambda: GavelRounds(allocation, steps_per_s=rate, solver="waterfill"))  # noqa: B023


@pytest.mark.needs_traces
def test_waterfill_allocation_is_called_in_the_kernel_not_back():
    """With solver='waterfill' the kernel gets no allocate callback; the Python form calls
    maxmin_waterfill at each reset (counted), and its X differs from HiGHS's vertex somewhere."""
    import magnum_lib.replay.fairness as fairness

    raw = traces.philly_jobs("103959", gpu_counts=[1, 2, 4, 8]).subset(slice(0, 150)).shifted()
    jobs = replay_peers.whole_seconds(raw.subset(raw.num_gpus <= 16))   # (X not unique at ~90 resets)
    cluster = ReplayCluster.uniform(4, 4)
    seen = {"calls": 0, "differ": 0}
    real = fairness.maxmin_waterfill

    def spy(scale, num_gpus, thr=None):
        x = real(scale, num_gpus, thr)
        seen["calls"] += 1
        h = fairness.maxmin_allocation(np.ones((len(scale), 1)), scale, [num_gpus])[:, 0]
        seen["differ"] += int(not np.allclose(x, h, rtol=0, atol=1e-9))
        return x

    pol = GavelRounds("maxmin-blind", solver="waterfill")
    try:
        fairness.maxmin_waterfill = spy
        ref = replay(jobs, cluster, pol, backend="python", progress=False)
        calls = seen["calls"]
        out = replay(jobs, cluster, GavelRounds("maxmin-blind", solver="waterfill"), progress=False)
    finally:
        fairness.maxmin_waterfill = real
    assert out.backend == "compiled" and seen["calls"] == calls > 1 and seen["differ"] > 0
    assert np.array_equal(ref.finish_s, out.finish_s)


@pytest.mark.needs_traces
def test_waterfill_solver_bad_use():
    from magnum_lib.base.validate import ParameterError

    jobs, thr = replay_peers.gavel_hetero_jobs(10, 6, 1)
    cluster = ReplayCluster.from_counts(replay_peers.GAVEL_TYPES, 4)
    for backend in ("python", None):
        with pytest.raises(ParameterError, match="one GPU type") as e:
            replay(jobs, cluster, GavelRounds("maxmin", solver="waterfill"), backend=backend)
        assert e.value.name == "solver"
    with pytest.raises(ParameterError, match="solver"):
        GavelRounds("fifo", solver="waterfill")
    with pytest.raises(ParameterError, match="solver"):
        GavelRounds("maxmin", solver="waterfill", lp=lambda t, s, g: None)
    with pytest.raises(ParameterError, match="solver"):
        GavelRounds("maxmin", solver="clarabel")
    # "auto" (the default): waterfill on one GPU type, HiGHS on several, the hook when given.
    one = traces.gavel_jobs(5, jobs_per_hour=20, seed=4, gpu_types=("v100",))
    for pol, c, expect in [(GavelRounds("maxmin"), ReplayCluster.uniform(2, 4, "v100"), True),
                           (GavelRounds("maxmin"), cluster, False),
                           (GavelRounds("maxmin", solver="highs"), ReplayCluster.uniform(2, 4, "v100"), False),
                           (GavelRounds("maxmin", lp=lambda t, s, g: None), ReplayCluster.uniform(2, 4, "v100"), False),
                           (GavelRounds("fifo"), ReplayCluster.uniform(2, 4, "v100"), False)]:
        pol.reset(one if len(c.type_names) == 1 else jobs, c)
        assert pol.waterfill is expect
    # A good call equals the kernel fed the same allocation through the callback.
    from magnum_lib.replay.fairness import maxmin_waterfill

    out = kernel.run_gavel_rounds(**kernel_args(fifo=False, waterfill_thr=np.ones(2)))
    back = kernel.run_gavel_rounds(**kernel_args(fifo=False, allocate=lambda ids: maxmin_waterfill(
        np.ones(len(ids)), 1)[:, None]))
    assert out["finish"].tolist() == back["finish"].tolist() == [5 * 10**9, 6 * 10**9]


@st.composite
def one_type_traces(draw):
    n = draw(st.integers(1, 16))
    N = draw(st.integers(1, 8))
    submit = sorted(draw(st.lists(st.integers(0, 3000), min_size=n, max_size=n)))
    dur = draw(st.lists(st.integers(1, 1500), min_size=n, max_size=n))
    frac = draw(st.booleans())
    dur = [d + (0.37 if frac else 0.0) for d in dur]
    gpus = [draw(st.sampled_from([g for g in (1, 2, 3, 4, 8) if g <= N] or [1])) for _ in range(n)]
    alloc = draw(st.sampled_from(["maxmin", "maxmin-blind"]))
    steps = None
    if draw(st.booleans()):
        steps = [draw(st.sampled_from([0.1, 1 / 7, 0.9, 1.0, 2.5])) for _ in range(n)]
    return submit, dur, gpus, N, alloc, steps


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(one_type_traces())
def test_random_one_type_traces_waterfill_agree(case):
    submit, dur, gpus, N, alloc, steps = case
    jobs = make_jobs(submit, dur, gpus)
    cluster = ReplayCluster.from_counts({"v100": N}, 1)
    make = lambda: GavelRounds(alloc, steps_per_s=steps, solver="waterfill")     # noqa: E731
    try:
        ref = replay(jobs, cluster, make(), backend="python", progress=False)
    except (RuntimeError, PolicyError) as e:       # the Python form's own limits: the same here
        with pytest.raises(type(e)):
            replay(jobs, cluster, make(), progress=False)
        return
    out = replay(jobs, cluster, make(), progress=False)
    assert out.backend == "compiled"
    for f in ("finish_s", "start_s", "preemptions", "util_t_s", "util_busy"):
        assert np.array_equal(getattr(ref, f), getattr(out, f)), f


# ------------------------------------------------------------------ random traces
@st.composite
def small_traces(draw):
    n = draw(st.integers(1, 14))
    ntypes = draw(st.integers(1, 3))
    names = ["v100", "p100", "k80"][:ntypes]
    counts = [draw(st.integers(1, 4)) for _ in range(ntypes)]
    submit = sorted(draw(st.lists(st.integers(0, 3000), min_size=n, max_size=n)))
    dur = draw(st.lists(st.integers(1, 1500), min_size=n, max_size=n))
    frac = draw(st.booleans())
    dur = [d + (0.37 if frac else 0.0) for d in dur]
    gpus = [draw(st.integers(1, max(counts))) for _ in range(n)]
    alloc = draw(st.sampled_from(["fifo", "maxmin", "maxmin-blind"]))
    speed = None
    if ntypes > 1 and draw(st.booleans()):
        speed = [[1.0] + [draw(st.sampled_from([0.25, 0.5, 0.8, 1.3])) for _ in range(ntypes - 1)] for _ in range(n)]
    steps = None
    if draw(st.booleans()):
        steps = [[draw(st.sampled_from([0.1, 1 / 7, 0.9, 1.0, 2.5])) for _ in range(ntypes)] for _ in range(n)]
    return submit, dur, gpus, dict(zip(names, counts, strict=True)), alloc, speed, steps


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_traces())
def test_random_traces_agree(case):
    submit, dur, gpus, counts, alloc, speed, steps = case
    jobs = make_jobs(submit, dur, gpus, speed=speed)
    cluster = ReplayCluster.from_counts(counts, 1)
    try:
        ref = replay(jobs, cluster, GavelRounds(alloc, steps_per_s=steps), backend="python", progress=False)
    except (RuntimeError, PolicyError) as e:       # the Python form's own limits: the same here
        with pytest.raises(type(e)):
            replay(jobs, cluster, GavelRounds(alloc, steps_per_s=steps), progress=False)
        return
    out = replay(jobs, cluster, GavelRounds(alloc, steps_per_s=steps), progress=False)
    assert out.backend == "compiled"
    for f in ("finish_s", "start_s", "preemptions", "util_t_s", "util_busy"):
        assert np.array_equal(getattr(ref, f), getattr(out, f)), f


# ------------------------------------------------------------------ where it runs
@pytest.mark.needs_traces
def test_backend_choice(monkeypatch):
    jobs = traces.tiresias_jobs()
    cluster = ReplayCluster.uniform(2, 4)
    assert replay(jobs, cluster, GavelFIFO()).backend == "compiled"
    assert replay(jobs, cluster, GavelFIFO(), backend="python").backend == "python"
    assert replay(jobs, cluster, GavelFIFO(), placement="consolidated").backend == "python"

    class Mine(GavelFIFO):                 # a user subclass may change anything: Python loop
        pass

    assert replay(jobs, cluster, Mine()).backend == "python"
    monkeypatch.setenv("MAGNUM_PUREPYTHON", "1")
    assert replay(jobs, cluster, GavelFIFO()).backend == "python"
    assert replay(jobs, cluster, GavelFIFO(), backend="compiled").backend == "compiled"


@pytest.mark.needs_traces
def test_bad_lp_output_is_an_error_not_a_crash():
    jobs, thr = replay_peers.gavel_hetero_jobs(10, 6, 1)
    cluster = ReplayCluster.from_counts(replay_peers.GAVEL_TYPES, 4)
    for bad in (lambda t, s, g: np.zeros((1, 1)), lambda t, s, g: np.full((len(s), 3), np.nan)):
        with pytest.raises(ValueError, match="allocation"):
            replay(jobs, cluster, GavelRounds("maxmin", lp=bad))


def kernel_args(**change):
    a = dict(submit_ns=np.array([0, 10], np.int64), work_ns=np.array([5 * 10**9, 10**9], np.int64),
             num_gpus=np.array([1, 1], np.int64), speed=np.ones((2, 1)), thr=np.ones((2, 1)),
             steps_left=np.array([5.0, 1.0]), type_gpus=np.array([1], np.int64),
             type_order=np.array([0], np.int64), fifo=True, iteration_s=360.0, reset_s=1920.0,
             restore_ns=0, allocate=None, permute=None)
    a.update(change)
    return a


BAD = {
    "baseline": "{}",
    "short-work": "dict(work_ns=np.array([1], np.int64))",
    "zero-work": "dict(work_ns=np.array([0, 1], np.int64))",
    "unsorted": "dict(submit_ns=np.array([10, 0], np.int64))",
    "negative-submit": "dict(submit_ns=np.array([-5, 0], np.int64))",
    "too-many-gpus": "dict(num_gpus=np.array([1, 2], np.int64))",
    "zero-gpus": "dict(num_gpus=np.array([0, 1], np.int64))",
    "speed-shape": "dict(speed=np.ones((2, 2)))",
    "speed-nan": "dict(speed=np.array([[np.nan], [1.0]]))",
    "thr-negative": "dict(thr=np.array([[-1.0], [1.0]]))",
    "thr-huge": "dict(thr=np.array([[1e300], [1.0]]))",
    "steps-short": "dict(steps_left=np.array([1.0]))",
    "steps-inf": "dict(steps_left=np.array([np.inf, 1.0]))",
    "order-not-permutation": "dict(type_order=np.array([3], np.int64))",
    "no-types": "dict(type_gpus=np.zeros(0, np.int64), type_order=np.zeros(0, np.int64))",
    "negative-gpus": "dict(type_gpus=np.array([-1], np.int64))",
    "fifo-two-types": "dict(type_gpus=np.array([1, 1], np.int64), type_order=np.array([0, 1], np.int64), "
                      "speed=np.ones((2, 2)), thr=np.ones((2, 2)))",
    "maxmin-no-lp": "dict(fifo=False)",
    "maxmin-bad-lp": "dict(fifo=False, allocate=lambda ids: 'x')",
    "bad-permute": "dict(fifo=False, allocate=lambda ids: np.ones((len(ids), 1)), permute=lambda k: [[5]] * k)",
    "waterfill-fifo": "dict(waterfill_thr=np.ones(2))",
    "waterfill-short": "dict(fifo=False, waterfill_thr=np.ones(1))",
    "waterfill-nan": "dict(fifo=False, waterfill_thr=np.array([np.nan, 1.0]))",
    "waterfill-negative": "dict(fifo=False, waterfill_thr=np.array([-1.0, 1.0]))",
    "waterfill-and-lp": "dict(fifo=False, waterfill_thr=np.ones(2), allocate=lambda ids: np.ones((len(ids), 1)))",
    "waterfill-two-types": "dict(fifo=False, waterfill_thr=np.ones(2), type_gpus=np.array([1, 1], np.int64), "
                           "type_order=np.array([0, 1], np.int64), speed=np.ones((2, 2)), thr=np.ones((2, 2)))",
    "restore-negative": "dict(restore_ns=-1)",
    "round-zero": "dict(iteration_s=0.0)",
    "reset-nan": "dict(reset_s=float('nan'))",
    "wrong-dtype": "dict(submit_ns=np.array(['a', 'b']))",
}


def test_kernel_rejects_bad_input_without_crashing():
    """Each bad argument, in a child interpreter (a crash fails the case, not pytest)."""
    code = f"""
import json, numpy as np, sys
sys.path.insert(0, {str(ROOT / 'tests')!r})
from test_replay_gavel_fast import kernel_args, BAD
import magnum_lib.replay._gavel_rounds as m
out = {{}}
for name, change in BAD.items():
    try:
        m.run_gavel_rounds(**kernel_args(**eval(change)))
        out[name] = "ok"
    except (ValueError, TypeError) as e:
        out[name] = "error"
print(json.dumps(out))
"""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert got.pop("baseline") == "ok"
    assert got == {name: "error" for name in BAD if name != "baseline"}


def _lp_rows(thr, scale, N, w):
    """The LP of fairness._maxmin_lp built row by row (dense), as first written: its check."""
    m, T = thr.shape
    nv = m * T + 1
    c = np.zeros(nv)
    c[-1] = -1.0
    rows, b = [], []
    for j in range(m):  # z - w_j s_j sum_t thr X <= 0
        r = np.zeros(nv)
        r[j * T:(j + 1) * T] = -w[j] * scale[j] * thr[j]
        r[-1] = 1.0
        rows.append(r)
        b.append(0.0)
    for j in range(m):  # sum_t X[j,t] <= 1
        r = np.zeros(nv)
        r[j * T:(j + 1) * T] = 1.0
        rows.append(r)
        b.append(1.0)
    for t in range(T):  # sum_j s_j X[j,t] <= N_t
        r = np.zeros(nv)
        r[t:m * T:T] = scale
        rows.append(r)
        b.append(N[t])
    bounds = [(0.0, 1.0)] * (m * T) + [(None, None)]
    for j in range(m):
        for t in range(T):
            if thr[j, t] <= 0:
                bounds[j * T + t] = (0.0, 0.0)
    return c, np.array(rows), np.array(b), bounds


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 30), st.integers(1, 3), st.integers(0, 2**32 - 1))
def test_lp_built_in_array_steps_is_the_row_by_row_lp(m, T, seed):
    """maxmin_allocation's sparse whole-array LP has exactly the nonzeros, right-hand sides
    and bounds of the row-by-row dense LP it replaced (so HiGHS solves the same model)."""
    from magnum_lib.replay.fairness import _maxmin_lp

    rng = np.random.default_rng(seed)
    thr = rng.choice([0.0, 0.3, 1.0, 2.5, 1 / 7], size=(m, T))
    scale = rng.choice([1.0, 2.0, 4.0, 8.0], m)
    N = rng.integers(1, 40, T).astype(float)
    w = 1.0 / rng.uniform(0.1, 3.0, m)
    c1, A1, b1, bo1 = _maxmin_lp(thr, scale, N, w)
    c2, A2, b2, bo2 = _lp_rows(thr, scale, N, w)
    assert np.array_equal(c1, c2) and np.array_equal(b1, b2)
    dense = A1.toarray()
    assert np.array_equal(dense, A2) and A1.nnz == np.count_nonzero(A2)
    lo = np.array([-np.inf if x is None else x for x, _ in bo2])
    hi = np.array([np.inf if y is None else y for _, y in bo2])
    assert np.array_equal(bo1[:, 0], lo) and np.array_equal(bo1[:, 1], hi)
    from scipy.optimize import linprog

    r1 = linprog(c1, A_ub=A1, b_ub=b1, bounds=bo1, method="highs")
    r2 = linprog(c2, A_ub=A2, b_ub=b2, bounds=bo2, method="highs")
    assert r1.status == r2.status == 0 and np.array_equal(r1.x, r2.x)


@pytest.mark.parametrize("make", [GavelFIFO, lambda: GavelRounds("maxmin-blind", solver="waterfill")])
def test_a_resumed_jobs_last_micro_task_includes_its_restore_time(make):
    """A job resumed for its last micro-task pays the restore time before its work: the
    micro-task's length counts it (both forms; without it the job outlived its last
    micro-task, an internal error, on both backends)."""
    jobs = make_jobs([391, 819, 880, 948, 999, 1854, 1909], [244, 1333, 2841, 1898, 1113, 2985, 1850],
                     [4, 1, 2, 4, 4, 2, 2])
    ref, out = same(jobs, ReplayCluster.uniform(1, 4), make, restore_s=10.0)
    assert out.preemptions.sum() > 0   # resumes happened, and so did their restores
    work = np.array([244, 1333, 2841, 1898, 1113, 2985, 1850])
    span = out.finish_s - out.start_s
    assert np.all(span >= work + 10.0 * out.preemptions)   # each resume paid its 10 s
    assert np.all(span[out.preemptions == 0] == work[out.preemptions == 0])
