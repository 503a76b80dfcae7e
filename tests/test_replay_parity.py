"""Both replay loops (compiled and Python) agree exactly with each other and with an
independent naive oracle (tests/replay_oracle.py) on seeded small traces."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from magnum_lib.replay import ReplayCluster, make_jobs, replay
from magnum_lib.replay.policies import TiresiasLAS
from tests.replay_oracle import oracle

compiled = pytest.importorskip("magnum_lib.replay._fastloop")

POLICIES = ["fifo-strict", "fifo-skip", "sjf", "srtf", "las"]


def _trace(seed, n=40, total=8):
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.integers(0, 2000, n)).astype(float)
    dur = rng.integers(1, 900, n).astype(float)
    gpus = rng.choice([1, 1, 1, 2, 4, total], n)
    return make_jobs(submit, dur, gpus)


def _policy(name, las):
    return TiresiasLAS(*las) if name == "las" else name


def _run_all(jobs, total, name, las=((300.0, 1200.0), 0.0)):
    cluster = ReplayCluster.uniform(1, total)
    a = replay(jobs, cluster, _policy(name, las), backend="compiled")
    b = replay(jobs, cluster, _policy(name, las), backend="python")
    return a, b


def _same(a, b):
    assert a.backend == "compiled" and b.backend == "python"
    np.testing.assert_array_equal(a.start_s, b.start_s)
    np.testing.assert_array_equal(a.finish_s, b.finish_s)
    np.testing.assert_array_equal(a.preemptions, b.preemptions)
    np.testing.assert_array_equal(a.util_t_s, b.util_t_s)
    np.testing.assert_array_equal(a.util_busy, b.util_busy)


@pytest.mark.parametrize("name", POLICIES)
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_backends_and_oracle_agree(name, seed):
    jobs = _trace(seed)
    a, b = _run_all(jobs, 8, name)
    _same(a, b)
    th = [300 * 10**9, 1200 * 10**9]
    start, finish, pre = oracle(jobs.submit_ns, jobs.work_ns, jobs.num_gpus, 8, name, th, 0.0)
    np.testing.assert_array_equal(a.finish_s * 1e9, np.array(finish, float))
    np.testing.assert_array_equal(a.start_s * 1e9, np.array(start, float))
    np.testing.assert_array_equal(a.preemptions, pre)


@pytest.mark.parametrize("knob", [0.5, 2.0])
def test_las_starvation_avoidance_agrees(knob):
    jobs = _trace(7, n=30)
    a, b = _run_all(jobs, 8, "las", ((100.0, 400.0), knob))
    _same(a, b)
    start, finish, pre = oracle(jobs.submit_ns, jobs.work_ns, jobs.num_gpus, 8, "las",
                                [100 * 10**9, 400 * 10**9], knob)
    np.testing.assert_array_equal(a.finish_s * 1e9, np.array(finish, float))
    np.testing.assert_array_equal(a.preemptions, pre)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), name=st.sampled_from(POLICIES), total=st.sampled_from([4, 8]),
       restore=st.sampled_from([0.0, 7.0]))
def test_backends_agree_property(seed, name, total, restore):
    jobs = _trace(seed, n=25, total=total)
    cluster = ReplayCluster.uniform(1, total)
    a = replay(jobs, cluster, _policy(name, ((200.0, 800.0), 1.0)), backend="compiled", restore_s=restore)
    b = replay(jobs, cluster, _policy(name, ((200.0, 800.0), 1.0)), backend="python", restore_s=restore)
    _same(a, b)
    # Invariants: every job finishes after its work, never before its submit.
    assert np.all(a.finish_s - a.start_s >= jobs.duration_s - 1e-9)
    assert np.all(a.start_s >= a.submit_s)
    assert np.all(a.util_busy <= total)


@pytest.mark.parametrize("seed", [0, 5])
def test_las_tiresias_jump_backends_agree(seed):
    jobs = make_jobs(*[np.round(a) for a in (np.sort(np.random.default_rng(seed).integers(0, 3000, 40)),
                                             np.random.default_rng(seed + 1).integers(1, 2000, 40))],
                     np.random.default_rng(seed + 2).choice([1, 2, 4], 40))
    cluster = ReplayCluster.uniform(1, 8)
    a = replay(jobs, cluster, TiresiasLAS((300.0, 1200.0), tiresias_jump=True), backend="compiled")
    b = replay(jobs, cluster, TiresiasLAS((300.0, 1200.0), tiresias_jump=True), backend="python")
    _same(a, b)


SJF_VARIANTS = [("duration", True), ("gpus", False), ("gpus", True), ("gpu_time", False), ("gpu_time", True)]


@pytest.mark.parametrize("by,preemptive", SJF_VARIANTS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sjf_variants_backends_agree(by, preemptive, seed):
    from magnum_lib.replay.policies import SJF

    jobs = _trace(seed)
    cluster = ReplayCluster.uniform(1, 8)
    a = replay(jobs, cluster, SJF(by, preemptive), backend="compiled")
    b = replay(jobs, cluster, SJF(by, preemptive), backend="python")
    _same(a, b)
    if not preemptive:
        assert a.preemptions.sum() == 0


@pytest.mark.parametrize("seed", [0, 3])
def test_srtf_by_gpu_time_backends_agree(seed):
    from magnum_lib.replay.policies import SRTF

    jobs = _trace(seed)
    cluster = ReplayCluster.uniform(1, 8)
    _same(replay(jobs, cluster, SRTF("gpu_time"), backend="compiled"),
          replay(jobs, cluster, SRTF("gpu_time"), backend="python"))


def test_sjf_by_gpus_ranks_by_gpu_count_not_duration():
    """Two jobs waiting behind a full cluster: by duration the short 4-GPU job goes first,
    by GPU count the long 1-GPU job; preemptive by GPU count, the small arrival evicts."""
    from magnum_lib.replay.policies import SJF

    jobs = make_jobs([0, 1, 1], [10, 5, 100], [4, 4, 1])
    cluster = ReplayCluster.uniform(1, 4)
    for backend in ("compiled", "python"):
        by_dur = replay(jobs, cluster, SJF("duration"), backend=backend)
        by_gpu = replay(jobs, cluster, SJF("gpus"), backend=backend)
        np.testing.assert_array_equal(by_dur.start_s, [0, 10, 15])
        np.testing.assert_array_equal(by_gpu.start_s, [0, 110, 10])
        pre = replay(jobs, cluster, SJF("gpus", preemptive=True), backend=backend)
        # t=1: the 1-GPU job ranks first and evicts job 0 (the 3 GPUs left fit no 4-GPU
        # job); at 101 job 0 resumes before job 1 (equal GPU counts: lower id first).
        np.testing.assert_array_equal(pre.start_s, [0, 110, 1])
        np.testing.assert_array_equal(pre.finish_s, [110, 115, 101])
        assert pre.preemptions.tolist() == [1, 0, 0]


def test_sjf_options_validated():
    from magnum_lib.base.validate import ParameterError
    from magnum_lib.replay.policies import SJF, SRTF

    with pytest.raises(ParameterError, match="by"):
        SJF("size")
    with pytest.raises(ParameterError, match="preemptive"):
        SJF("gpus", preemptive="yes")
    with pytest.raises(ParameterError, match="by"):
        SRTF("gpus")
    with pytest.raises(ValueError, match="overflow"):
        compiled.run_fast(np.array([0]), np.array([2**61]), np.array([4]), 4, ("sjf", "gpu_time", False), 0)
