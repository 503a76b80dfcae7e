"""GavelRounds / GavelFIFO: Gavel's simulator's round mechanism in our replay (its agreement
with Gavel's own code is in tests/test_replay_peers.py; here: hand-derived cases and inputs)."""
from __future__ import annotations

import numpy as np
import pytest

from magnum_lib.base.validate import ParameterError
from magnum_lib.replay import ReplayCluster, make_jobs, replay
from magnum_lib.replay.gavel_rounds import GavelFIFO, GavelRounds


def test_allocation_resets_leave_gpus_idle_as_gavel_does():
    """One GPU, four 100 s jobs at 0, 50, 150, 1000 s. Gavel: job 1 starts at 100 (reset
    allowed: the last was at 0); at 200 job 2 waits (it arrived after the last reset at
    100, < 1920 s ago) and the GPU idles until the next arrival at 1000, where, nothing
    left to arrive, Gavel forces a reset: jobs 2 and 3 run 1000-1100 and 1100-1200.
    (Gavel's simulator gives these times: checked by hand against it.)"""
    jobs = make_jobs([0, 50, 150, 1000], [100, 100, 100, 100], 1)
    ours = replay(jobs, ReplayCluster.uniform(1, 1), GavelFIFO())
    np.testing.assert_array_equal(ours.finish_s, [100, 200, 1100, 1200])
    np.testing.assert_array_equal(replay(jobs, ReplayCluster.uniform(1, 1), "fifo-strict").finish_s,
                                  [100, 200, 300, 1100])


def test_round_ends_with_its_last_micro_task():
    """Two 1-GPU jobs of 500 s and 100 s on 2 GPUs, both at 0: round 1 ends at 360 (the
    long job's micro-task); job 1 finishes at 100 but nothing starts before 360."""
    jobs = make_jobs([0, 0, 10], [500, 100, 50], 1)
    ours = replay(jobs, ReplayCluster.uniform(1, 2), GavelFIFO())
    # Job 2 arrives at 10, joins at the round boundary 360 (a reset is allowed: the last
    # was at time 0), runs 360-410; job 0 runs 0-360 and 360-500.
    np.testing.assert_array_equal(ours.finish_s, [500, 100, 410])


def test_whole_steps_pause_a_job_until_the_round_ends():
    """Job 0: 1000 steps at 1/7 steps/s, a micro-task of int(360/7) = 51 steps = 357 s;
    job 1: 2000 steps at 1 step/s (360 s micro-tasks), both at 0 on 2 GPUs. Rounds 1-5
    last 360 s (job 1's micro-task), and job 0 idles (here: pauses) its last 3 s of each;
    round 6: job 1's last 200 steps end at 2000, job 0's micro-task at 1800 + 357 = 2157,
    the round's end. Job 0 then has 1000 - 6 x 51 = 694 steps: 13 rounds of 357 s and 31
    steps (217 s): it finishes at 2157 + 13 x 357 + 217 = 7015."""
    jobs = make_jobs([0, 0], [1000 * 7.0, 2000.0], 1)
    ours = replay(jobs, ReplayCluster.uniform(1, 2), GavelFIFO(steps_per_s=[1 / 7, 1.0]))
    np.testing.assert_allclose(ours.finish_s, [7015, 2000], rtol=0, atol=1e-6)
    assert ours.preemptions.tolist() == [5, 0]


@pytest.mark.needs_traces
def test_maxmin_rounds_run_every_job_on_a_heterogeneous_cluster():
    from magnum_lib.replay import traces

    jobs = traces.gavel_jobs(30, jobs_per_hour=20, seed=1)
    cluster = ReplayCluster.from_counts({"v100": 8, "p100": 8, "k80": 8}, 4)
    for alloc in ("maxmin", "maxmin-blind"):
        res = replay(jobs, cluster, GavelRounds(alloc))
        assert np.all(res.finish_s >= res.submit_s + res.isolated_s - 1e-6)


@pytest.mark.parametrize("kwargs,name", [({"allocation": "lp"}, "allocation"), ({"round_s": 0}, "round_s"),
                                         ({"steps_per_s": [[np.nan]]}, "steps_per_s"),
                                         ({"lp": "highs"}, "lp")])
def test_bad_options(kwargs, name):
    with pytest.raises(ParameterError, match=name):
        GavelRounds(**kwargs)


def test_fifo_on_two_types_takes_gavels_type():
    """Gavel's base FIFO gives a queued job the last available type in name order (its loop
    variable), even where the job does not fit: job 0 (1 GPU) gets v100, job 1 (2 GPUs) fits
    only the two idle K80s but is given v100 too (over-committed), and waits there for job 0
    to finish. (Checked against Gavel's simulator in tests/test_replay_peers.py.)"""
    jobs = make_jobs([0, 0], [100, 100], [1, 2])
    cluster = ReplayCluster.from_counts({"v100": 2, "k80": 2})
    for backend in ("python", None):
        res = replay(jobs, cluster, GavelFIFO(), backend=backend)
        np.testing.assert_array_equal(res.finish_s, [100, 200])


def test_fifo_needs_matching_rates():
    jobs = make_jobs([0, 1], [10, 10], 1)
    with pytest.raises(ParameterError, match="steps_per_s"):
        replay(jobs, ReplayCluster.uniform(1, 1), GavelFIFO(steps_per_s=[1.0, 2.0, 3.0]))
