"""The queueing delay counts every wait, not only the one before the first start (hand-computed)."""
from __future__ import annotations

import pytest

from magnum_lib.replay import ReplayCluster, make_jobs, replay

# One GPU. Job 0 (100 s) starts at 0; job 1 (20 s) arrives at 10. SRTF preempts job 0
# (90 s left > 20 s), job 1 runs 10-30, job 0 resumes at 30 and ends at 120 (125 with a
# 5 s restore). Job 0 waited 10 -> 30 = 20 s, all of it after its first start.
JOBS = make_jobs([0, 10], [100, 20], [1, 1])
ONE = ReplayCluster.uniform(1, 1)


@pytest.mark.parametrize("backend", ["python", "compiled"])
@pytest.mark.parametrize("restore, end0", [(0.0, 120.0), (5.0, 125.0)])
def test_preempted_wait_counts(backend, restore, end0):
    r = replay(JOBS, ONE, "srtf", restore_s=restore, backend=backend)
    assert r.finish_s.tolist() == [end0, 30.0]
    assert r.held_s.tolist() == [100.0 + restore, 20.0]      # run time plus the restore
    assert r.queue_s.tolist() == [20.0, 0.0]                 # every wait
    assert r.first_wait_s.tolist() == [0.0, 0.0]             # the old metric: blind to it
    s = r.summary()
    assert s["avg_queue_s"] == 10.0 and s["avg_first_wait_s"] == 0.0


def test_las_counts_waits_after_demotion():
    # LAS on 1 GPU, threshold 50 GPU-s: job 0 (100 s) is demoted at 50 s; job 1 (40 s,
    # arrives at 20) then takes the GPU until 90; job 0 resumes and ends at 140.
    from magnum_lib.replay.policies import TiresiasLAS

    jobs = make_jobs([0, 20], [100, 40], [1, 1])
    r = replay(jobs, ONE, TiresiasLAS(thresholds_gpu_s=(50.0,)))
    assert r.finish_s.tolist() == [140.0, 90.0]
    assert r.queue_s.tolist() == [40.0, 30.0]      # job 0: 50 -> 90; job 1: 20 -> 50
    assert r.first_wait_s.tolist() == [0.0, 30.0]


@pytest.mark.needs_traces  # Gavel's throughput matrix (../shared/data/gavel)
@pytest.mark.parametrize("policy", ["gavel-fifo", "gavel-rounds"])
def test_gavel_kernel_reports_held_time_like_the_readable_loop(policy):
    from magnum_lib.replay.traces import gavel_jobs

    jobs = gavel_jobs(12, jobs_per_hour=30, seed=1, gpu_types=("v100", "k80"))
    cl = ReplayCluster.from_counts({"v100": 8, "k80": 8}, gpus_per_node=4)
    fast = replay(jobs, cl, policy, backend="compiled")
    ref = replay(jobs, cl, policy, backend="python")
    assert fast.backend == "compiled" and ref.backend == "python"
    assert fast.held_s.tolist() == ref.held_s.tolist()
    assert fast.queue_s.tolist() == ref.queue_s.tolist()
    assert fast.summary()["preemptions"] > 0            # so waits after preemptions exist
    assert (fast.queue_s >= fast.first_wait_s - 1e-9).all() and (fast.queue_s > fast.first_wait_s).any()
