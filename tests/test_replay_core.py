"""Replay semantics on hand-made traces with answers worked out by hand, the policy
API's refusals (nothing half-applied), placement, metrics and trace builders."""
from __future__ import annotations

import math
import operator

import numpy as np
import pytest

from magnum_lib.base.validate import ParameterError
from magnum_lib.replay import Decision, Policy, PolicyError, ReplayCluster, make_jobs, make_policy, replay
from magnum_lib.replay.policies import TiresiasLAS

BACKENDS = ["compiled", "python"]


def _one_node(g):
    return ReplayCluster.uniform(1, g)


# ----------------------------------------------------------------- semantics
@pytest.mark.parametrize("backend", BACKENDS)
def test_strict_fifo_head_of_line_blocks_and_skip_ahead_does_not(backend):
    # 4 GPUs. Job 0 (2 GPUs, 100 s) runs; job 1 needs 4 (waits for job 0); job 2 needs 1.
    jobs = make_jobs([0, 1, 2], [100, 50, 10], [2, 4, 1])
    strict = replay(jobs, _one_node(4), "fifo-strict", backend=backend)
    skip = replay(jobs, _one_node(4), "fifo-skip", backend=backend)
    # strict: 1 starts at 100 (ends 150), 2 behind it starts at 150 (ends 160)
    assert strict.start_s.tolist() == [0, 100, 150] and strict.finish_s.tolist() == [100, 150, 160]
    # skip-ahead: 2 starts at 2 beside job 0
    assert skip.start_s.tolist() == [0, 100, 2] and skip.finish_s.tolist() == [100, 150, 12]


@pytest.mark.parametrize("backend", BACKENDS)
def test_gpus_freed_at_an_instant_go_to_jobs_arriving_then(backend):
    jobs = make_jobs([0, 10], [10, 5], [4, 4])
    r = replay(jobs, _one_node(4), "fifo-strict", backend=backend)
    assert r.start_s.tolist() == [0, 10] and r.queue_s.tolist() == [0, 0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_sjf_picks_shortest_and_srtf_preempts(backend):
    jobs = make_jobs([0, 1, 2], [100, 50, 10], [1, 1, 1])
    sjf = replay(jobs, _one_node(1), "sjf", backend=backend)
    assert sjf.finish_s.tolist() == [100, 160, 110]   # non-preemptive: 2 (10 s) before 1
    srtf = replay(jobs, _one_node(1), "srtf", backend=backend)
    # 1 arrives at 1 with 50 < 99 left: preempts 0; 2 at 2 with 10 < 49: preempts 1
    assert srtf.finish_s.tolist() == [160, 61, 12]
    assert srtf.preemptions.tolist() == [1, 1, 0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_restore_cost_is_paid_at_each_resume(backend):
    jobs = make_jobs([0, 1], [100, 10], [1, 1])
    r = replay(jobs, _one_node(1), "srtf", backend=backend, restore_s=5)
    # 0 runs 1 s, preempted by 1 (1..11), resumes at 11: 5 s restore + 99 s left
    assert r.finish_s.tolist() == [115, 11]


@pytest.mark.parametrize("backend", BACKENDS)
def test_las_demotes_at_the_threshold_and_long_job_yields(backend):
    # LAS with one threshold of 100 GPU-s: job 0 (2 GPUs) is demoted at 50 s; job 1
    # (arrives at 60) is in queue 0 and takes the 2 GPUs; job 0 resumes when 1 ends.
    jobs = make_jobs([0, 60], [200, 30], [2, 2])
    r = replay(jobs, _one_node(2), TiresiasLAS((100.0,)), backend=backend)
    assert r.finish_s.tolist() == [230, 90] and r.preemptions.tolist() == [1, 0]
    fifo = replay(jobs, _one_node(2), "fifo-strict", backend=backend)
    assert fifo.finish_s.tolist() == [200, 230]


def _tiresias_job1_finish_s(div) -> int:
    """Job 1's finish in Tiresias' ``dlas-gpu`` loop (run_sim.py) on the issue-19 case, with
    ``div`` standing for its ``/`` in ``jump_time = int(math.ceil((queue_limit[qid] -
    executed_time) / num_gpu) + event_time)`` (whole seconds, integer limit and GPU count)."""
    limit, gpus0 = 500, 8
    jump = math.ceil(div(limit - 0, gpus0)) + 0       # t=0: job 0 starts, has run 0 s
    assert jump > 10                                  # so job 1's arrival at t=10 comes first
    jump = math.ceil(div(limit - 10, gpus0)) + 10     # t=10: job 1 waits, job 0 has run 10 s
    assert gpus0 * jump >= limit                      # at the jump job 0 is demoted, preempted;
    return jump + 100                                 # job 1 (queue 0) starts and runs 100 s


@pytest.mark.parametrize("backend", BACKENDS)
def test_las_tiresias_jump_follows_python27_floor_division(backend):
    # Issue 19 section 7: 8 GPUs, one threshold of 500 GPU-s; job 0: 8 GPUs at t=0 for
    # 200 s; job 1: 1 GPU at t=10 for 100 s. Tiresias' README requires Python 2.7 and
    # run_sim.py has no ``from __future__ import division``, so on its integers
    # ``(500 - 10) / 8`` is 490 // 8 = 61 and math.ceil(61) = 61: job 0 is checked (and
    # demoted, 8 x 71 = 568 >= 500) at 10 + 61 = 71 s, and job 1 runs 71-171 s. Under
    # Python 3 the same line is ceil(61.25) = 62: 72 s, and job 1 ends at 172 s.
    py27 = _tiresias_job1_finish_s(operator.floordiv)
    py3 = _tiresias_job1_finish_s(operator.truediv)
    assert (py27, py3) == (171, 172)                  # the case tells the two apart
    jobs = make_jobs([0, 10], [200, 100], [8, 1])
    r = replay(jobs, _one_node(8), TiresiasLAS((500.0,), tiresias_jump=True), backend=backend)
    assert r.backend == backend
    assert r.start_s.tolist() == [0, py27 - 100] and r.finish_s[1] == py27
    assert r.finish_s[0] == py27 + (200 - (py27 - 100))   # job 0 resumes for its 129 s left
    assert r.preemptions.tolist() == [1, 0]
    # Without the flag the demotion is exact: 500 GPU-s / 8 GPUs = 62.5 s.
    exact = replay(jobs, _one_node(8), TiresiasLAS((500.0,)), backend=backend)
    assert exact.finish_s[1] == 62.5 + 100


def test_round_policy_waits_for_the_round_boundary():
    class EveryRound(Policy):
        name = "rounds"
        round_s = 100

        def schedule(self, view):
            plan = view.plan()
            for j in view.queue:
                plan.start(j)
            return plan

    jobs = make_jobs([0, 5], [30, 30], [1, 1])
    r = replay(jobs, _one_node(1), EveryRound())
    # job 0 at 0 (ends 30); the GPU idles until the round at 100 where job 1 starts
    assert r.start_s.tolist() == [0, 100] and r.finish_s.tolist() == [30, 130]


def test_utilization_is_busy_gpu_time_over_capacity():
    jobs = make_jobs([0], [100], [2])
    r = replay(jobs, _one_node(4), "fifo-strict")
    assert r.utilization() == pytest.approx(0.5)
    t, frac = r.utilization_over_time(bins=4)
    np.testing.assert_allclose(frac, 0.5)
    s = r.summary()
    assert s["makespan_s"] == 100 and s["avg_jct_s"] == 100 and s["ftf_rho_max"] == 1.0


# ----------------------------------------------------------------- API refusals
class Scripted(Policy):
    name = "scripted"

    def __init__(self, decision):
        self.decision = decision

    def schedule(self, view):
        return self.decision(view)


def _first_call_error(decision, jobs=None, g=4):
    jobs = jobs or make_jobs([0, 0], [10, 10], [2, 2])
    with pytest.raises(PolicyError) as e:
        replay(jobs, _one_node(g), Scripted(decision))
    return str(e.value)


def test_gpu_given_twice_is_refused_with_policy_and_decision_named():
    msg = _first_call_error(lambda v: Decision(start=[(0, [0, 1]), (1, [1, 2])]))
    assert "'scripted'" in msg and "start job 1" in msg and "GPU 1 is already given" in msg


def test_gang_without_all_its_gpus_is_refused():
    msg = _first_call_error(lambda v: Decision(start=[(0, [0])]))
    assert "start job 0" in msg and "needs all of them" in msg


def test_unknown_job_id_and_bad_return_are_refused():
    assert "unknown job id 7" in _first_call_error(lambda v: [7])
    assert "must return" in _first_call_error(lambda v: "start everything")
    assert "not running" in _first_call_error(lambda v: Decision(preempt=[0]))


def test_nothing_is_half_applied():
    seen = []

    def decide(view):
        seen.append((view.free_gpus, len(view.queue)))
        if len(seen) == 1:
            return Decision(start=[(0, [0, 1]), (1, [1, 2])])   # second item is invalid
        return None

    pol = Scripted(decide)
    jobs = make_jobs([0, 0], [10, 10], [2, 2])
    from magnum_lib.replay import event_loop
    from magnum_lib.replay.api import normalize

    st = event_loop._State(jobs, _one_node(4), "pooled", 0, 0)
    st.status[:] = 1
    before = st.free.copy()
    with pytest.raises(PolicyError):
        normalize(pol.name, decide(st.view([0, 1], [])), st)
    np.testing.assert_array_equal(st.free, before)
    assert st.status.tolist() == [1, 1]


def test_function_policy_and_stall_detection():
    def greedy(view):
        return [j.id for j in view.queue][:1]

    jobs = make_jobs([0, 0], [10, 10], [1, 1])
    r = replay(jobs, _one_node(2), greedy)
    assert r.finish_s.tolist() == [10, 20] and r.policy == "greedy"
    with pytest.raises(PolicyError, match="waiting on an idle cluster"):
        replay(jobs, _one_node(2), lambda view: None)


def test_bad_parameters_are_named():
    jobs = make_jobs([0], [10], [8])
    with pytest.raises(ParameterError, match="needs 8 GPUs"):
        replay(jobs, _one_node(4), "fifo-strict")
    with pytest.raises(ParameterError, match="placement"):
        replay(make_jobs([0], [1], [1]), _one_node(4), placement="tetris")
    with pytest.raises(ParameterError, match="policy"):
        replay(make_jobs([0], [1], [1]), _one_node(4), "best-policy")
    with pytest.raises(ParameterError, match="duration_s"):
        make_jobs([0], [-1], [1])
    with pytest.raises(ParameterError, match="thresholds"):
        TiresiasLAS((100, 50))


# ----------------------------------------------------------------- placement
@pytest.mark.parametrize("placement,expected", [
    ("pooled", [[0, 1, 2]]), ("consolidated", [[4, 5, 6]]), ("spread", None)])
def test_placements_choose_gpus(placement, expected):
    # Two nodes of 4 GPUs; job 0 takes 1 GPU; job 1 (3 GPUs) then placed by the rule.
    got = {}

    class Record(Policy):
        name = "record"

        def schedule(self, view):
            plan = view.plan()
            for j in view.queue:
                plan.start(j)
            return plan

    jobs = make_jobs([0, 1], [100, 10], [1, 3])
    from magnum_lib.replay import event_loop

    st = event_loop._State(jobs, ReplayCluster.uniform(2, 4), placement, 0, 0)
    st.free[0] = 0
    gpus = st.place(1, st.free)
    if placement == "pooled":
        assert gpus == [1, 2, 3]
    elif placement == "consolidated":
        assert gpus == [1, 2, 3]      # node 0 still fits 3 (best fit: the fuller node)
        st.free[1] = 0
        assert st.place(1, st.free) == [4, 5, 6]
    else:
        assert sorted(gpus) == [1, 4, 5] or len({g // 4 for g in gpus}) == 2
    r = replay(jobs, ReplayCluster.uniform(2, 4), Record(), placement=placement)
    assert r.finish_s.tolist() == [100, 11]
    del got, expected


def test_consolidated_refuses_to_spread():
    from magnum_lib.replay import placement as P

    free = np.array([1000, 1000, 0, 0, 1000, 1000, 0, 0])
    node = np.repeat([0, 1], 4)
    assert P.consolidated(free, node, np.arange(8), 4, 1000) is None
    assert P.pooled(free, node, np.arange(8), 4, 1000) == [0, 1, 4, 5]


def test_random_placement_is_seeded():
    jobs = make_jobs(np.arange(20.0), np.full(20, 50.0), np.ones(20, int))
    a = replay(jobs, ReplayCluster.uniform(4, 2), "fifo-skip", placement="random", seed=3)
    b = replay(jobs, ReplayCluster.uniform(4, 2), "fifo-skip", placement="random", seed=3)
    np.testing.assert_array_equal(a.finish_s, b.finish_s)


# ----------------------------------------------------------------- fairness policies
def test_gavel_aware_beats_blind_on_a_heterogeneous_cluster():
    from magnum_lib.replay.fairness import maxmin_allocation

    # Two jobs, two types; job 0 is 4x faster on type 0, job 1 equally fast on both.
    thr = np.array([[4.0, 1.0], [1.0, 1.0]])
    X = maxmin_allocation(thr, [1, 1], [1, 1])
    # Normalized by the throughput under an even split (2.5 and 1), both reach 1 (the
    # optimum: job 1 can never exceed 1), within the capacity of each type.
    norm = (thr * X).sum(axis=1) / np.array([2.5, 1.0])
    assert norm.min() == pytest.approx(1.0, abs=1e-6)
    assert np.all(X.sum(axis=0) <= 1 + 1e-9) and np.all(X.sum(axis=1) <= 1 + 1e-9)
    speed = np.array([[1.0, 0.25], [1.0, 1.0]] * 4)
    jobs = make_jobs(np.zeros(8), np.full(8, 3600.0), np.ones(8, int), speed=speed)
    cl = ReplayCluster.from_counts({"fast": 2, "slow": 2}, 1)
    aware = replay(jobs, cl, "gavel").summary()["avg_jct_s"]
    blind = replay(jobs, cl, "gavel-blind").summary()["avg_jct_s"]
    assert aware < blind


def test_ftf_lowers_the_worst_rho_against_fifo():
    rng = np.random.default_rng(0)
    jobs = make_jobs(np.sort(rng.uniform(0, 3600, 30)), rng.uniform(60, 7200, 30),
                     rng.choice([1, 2, 4], 30))
    cl = _one_node(4)
    ftf = replay(jobs, cl, "ftf").summary()["ftf_rho_max"]
    fifo = replay(jobs, cl, "fifo-strict").summary()["ftf_rho_max"]
    assert ftf < fifo


def test_fgd_places_shared_pods_and_never_overcommits():
    jobs = make_jobs(np.arange(12.0), np.full(12, 100.0), np.ones(12, int),
                     gpu_milli=[500, 500, 250, 1000, 750, 250, 500, 1000, 500, 250, 250, 500])
    cl = ReplayCluster.uniform(2, 2)
    r = replay(jobs, cl, "fgd")
    base = replay(jobs, cl, "fifo-skip")
    assert np.all(r.util_busy <= 4) and np.all(np.isfinite(r.finish_s))
    assert r.summary()["jobs"] == base.summary()["jobs"] == 12
    assert make_policy("fgd").name == "fgd"


def test_fragmentation_of_shared_gpus_by_hand():
    # One node, 2 GPUs. A 500-milli pod runs 0..100 s, a 250-milli pod 0..50 s.
    # Pooled first-fit packs both on GPU 0: free = [250, 1000] for 50 s (250 of 1250
    # stranded = 0.2), then [500, 1000] for 50 s (500 / 1500 = 1/3).
    jobs = make_jobs([0, 0], [100, 50], [1, 1], gpu_milli=[500, 250])
    r = replay(jobs, _one_node(2), "fifo-skip")
    assert r.summary()["gpu_fragmentation"] == pytest.approx((0.2 + 1 / 3) / 2)
    assert replay(make_jobs([0], [10], [1]), _one_node(2), "fifo-skip").summary().get(
        "gpu_fragmentation") is None


def test_job_views_show_each_job_at_the_current_decision():
    # One GPU. Job 0 runs 0..10 s; job 1 (submitted at 2 s) waits, starts at 10 s and is
    # preempted at 12 s by job 2 (submitted then) under a policy that always starts the
    # newest job. Each call records what the views say at that instant.
    seen = []

    def newest_first(view):
        seen.append({j.id: (j.running, j.attained_s, j.attained_ns, j.remaining_s, j.wait_s, j.gpus,
                            j.gpu_type, j.preemptions) for j in view.running + view.queue})
        plan = view.plan()
        if not view.running + view.queue:
            return plan
        newest = max(view.running + view.queue, key=lambda j: j.submit_s)
        for j in view.running:
            if j.id != newest.id:
                plan.preempt(j)
        if not newest.running:
            plan.start(newest)
        return plan

    newest_first.oracle = True      # it reads remaining_s: a declared oracle

    jobs = make_jobs([0, 2, 12], [10, 5, 1], [1, 1, 1])
    r = replay(jobs, _one_node(1), newest_first)
    # t = 0: job 0 alone, waiting; t = 2: job 1 newest, job 0 preempted after 2 s of work.
    assert seen[0] == {0: (False, 0.0, 0, 10.0, 0.0, (), None, 0)}
    assert seen[1] == {0: (True, 2.0, 2 * 10**9, 8.0, 0.0, (0,), "gpu", 0),
                       1: (False, 0.0, 0, 5.0, 0.0, (), None, 0)}
    # t = 7: job 1 done (it ran 2..7), job 0 resumes after waiting 5 s.
    assert seen[2] == {0: (False, 2.0, 2 * 10**9, 8.0, 5.0, (), None, 1)}
    # t = 12: job 2 arrives, job 0 has run 5 s more and is preempted again.
    assert seen[3] == {0: (True, 7.0, 7 * 10**9, 3.0, 5.0, (0,), "gpu", 1),
                       2: (False, 0.0, 0, 1.0, 0.0, (), None, 0)}
    assert r.finish_s.tolist() == [16.0, 7.0, 13.0] and r.preemptions.tolist() == [2, 0, 0]


def test_speed_that_would_overflow_the_clock_is_refused():
    from magnum_lib.replay.jobs import MAX_WALL_S
    with pytest.raises(ParameterError) as e:
        make_jobs([0.0], [1.0], 1, speed=[[1e-300]])
    assert e.value.name == "speed" and "job 0" in str(e.value)
    # The edge: exactly MAX_WALL_S on a slow type, and 0 (cannot run there), still accepted.
    jobs = make_jobs([0.0], [10.0], 1, speed=[[10.0 / MAX_WALL_S, 0.0]])
    assert jobs.speed[0].tolist() == [10.0 / MAX_WALL_S, 0.0]


@pytest.mark.parametrize("field, value", [("gpu_milli", 0), ("gpu_milli", 1001), ("num_gpus", 0),
                                          ("work_ns", 0), ("submit_ns", -1)])
def test_replay_jobs_built_directly_refuse_impossible_values(field, value):
    from magnum_lib.replay.jobs import ReplayJobs
    arrays = dict(submit_ns=np.zeros(2, np.int64), work_ns=np.ones(2, np.int64),
                  num_gpus=np.ones(2, np.int64), gpu_milli=np.full(2, 1000, np.int64))
    assert len(ReplayJobs(**arrays)) == 2
    arrays[field] = np.array([arrays[field][0], value], np.int64)
    with pytest.raises(ParameterError) as e:
        ReplayJobs(**arrays)
    assert e.value.name == field


@pytest.mark.parametrize("name", ["gavel", "gavel-blind", "gavel-fifo", "gavel-rounds", "ftf"])
@pytest.mark.parametrize("round_s", [1e-12, 0.0, -1.0, float("nan"), 1e300])
def test_round_policies_refuse_absurd_rounds_when_made(name, round_s):
    with pytest.raises(ParameterError) as e:
        make_policy(name, round_s=round_s)
    assert e.value.name == "round_s"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", ["gavel", "gavel-fifo", "ftf"])
def test_round_policies_accept_the_shortest_round(backend, name):
    from magnum_lib.replay.api import MIN_ROUND_S
    jobs = make_jobs([0, 0.5], [2, 1], [1, 1])
    r = replay(jobs, ReplayCluster.uniform(1, 1), make_policy(name, round_s=MIN_ROUND_S), backend=backend)
    assert sorted(r.finish_s.tolist())[-1] == pytest.approx(3.0, abs=0.01)  # one GPU, 3 s of work


def test_reserve_and_release_are_numpy_indexing_on_distinct_gpus():
    """The per-GPU loops the replay uses instead of ``free[gpus] -= milli`` give the same array."""
    from magnum_lib.replay.placement import release, reserve

    rng = np.random.default_rng(7)
    for _ in range(200):
        free = rng.integers(0, 1001, 16)
        gpus = rng.choice(16, size=int(rng.integers(1, 9)), replace=False).tolist()
        milli = int(rng.integers(1, 1001))
        want = free.copy()
        want[gpus] -= milli
        got = free.copy()
        reserve(got, gpus, milli)
        np.testing.assert_array_equal(got, want)
        release(got, gpus, milli)
        np.testing.assert_array_equal(got, free)
