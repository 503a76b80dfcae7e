"""Agreement with the published simulators, run here on the same inputs (each test skips
when its checkout is absent):

* Tiresias' simulator, unchanged and under Python 2.7 as its README requires (found as
  benchmarks/replay_peers.py does: ``$MAGNUM_TIRESIAS_PYTHON``, pyenv's 2.7, ``python2.7``;
  the checkout at ``$MAGNUM_TIRESIAS``): same per-job finish times for FIFO, skip-ahead
  FIFO, SRTF and LAS on Tiresias' 60-job trace and on a Philly slice, and issue 19's
  two-job LAS case (171 s under 2.7, 172 s under Python 3).
* Gavel's max-min fairness LP (its own policy code under cvxpy, in a separate
  interpreter ``$MAGNUM_GAVEL_PYTHON``): the same optimum as ours (HiGHS), and the same
  per-job normalized throughput wherever the optimum fixes it.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import replay_peers  # noqa: E402

from magnum_lib.replay import (  # noqa: E402
    ReplayCluster,
    replay,
    traces,  # noqa: E402
)

# Tiresias runs as its authors ran it, under Python 2.7 (replay_peers.run_tiresias): the
# skip reason names what is missing, the checkout ($MAGNUM_TIRESIAS) or the interpreter.
tiresias_peer = pytest.mark.skipif(not replay_peers.available(),
                                   reason=replay_peers.missing() or "Tiresias peer present")


def _on_traces(peer):
    """``peer``'s skip mark plus needs_traces: the test compares on a real trace or on
    Gavel's throughputs (the reproduction case below needs neither)."""
    return lambda test: pytest.mark.needs_traces(peer(test))


tiresias = _on_traces(tiresias_peer)
gavel_lp = _on_traces(pytest.mark.skipif(not replay_peers.gavel_lp_available(),
                                         reason="Gavel checkout ($MAGNUM_GAVEL) or its cvxpy interpreter "
                                                "($MAGNUM_GAVEL_PYTHON) not found"))


@tiresias_peer
def test_reproduction_case_ends_job_1_where_tiresias_under_python27_does(sim):
    """Issue 19 section 7 (worked out in tests/test_replay_core.py): the published program
    under Python 2.7 ends job 1 at 171 s; the same files under Python 3 at 172 s."""
    from magnum_lib.replay import make_jobs
    from magnum_lib.replay.policies import TiresiasLAS

    jobs = make_jobs([0, 10], [200, 100], [8, 1])
    theirs, pre, _ = replay_peers.run_tiresias(sim, jobs, 1, 8, "las", "repro", thresholds_gpu_s=[500])
    under3, _, _ = replay_peers.run_tiresias(sim, jobs, 1, 8, "las", "repro3", thresholds_gpu_s=[500],
                                             python3=True)
    assert theirs[1] == 171 and under3[1] == 172
    for backend in ("compiled", "python"):
        ours = replay(jobs, ReplayCluster.uniform(1, 8), TiresiasLAS((500.0,), tiresias_jump=True),
                      backend=backend)
        np.testing.assert_array_equal(ours.finish_s, theirs)
        assert ours.preemptions.sum() == pre


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    return replay_peers.prepare(tmp_path_factory.mktemp("tiresias"))


@tiresias
@pytest.mark.parametrize("policy", ["fifo-strict", "fifo-skip", "srtf", "las"])
@pytest.mark.parametrize("nodes", [2, 4])
def test_60_job_trace_matches_tiresias(sim, policy, nodes):
    jobs = traces.tiresias_jobs()
    theirs, pre, _ = replay_peers.run_tiresias(sim, jobs, nodes, 4, policy, f"t60_{nodes}")
    ours = replay(jobs, ReplayCluster.uniform(nodes, 4), policy)
    np.testing.assert_array_equal(ours.finish_s, theirs)
    assert ours.preemptions.sum() == pre


@tiresias
@pytest.mark.parametrize("knob", replay_peers.SWEEP_LAS_KNOBS)
@pytest.mark.parametrize("thresholds", [t for t in replay_peers.SWEEP_LAS_THRESHOLDS if t], ids=str)
@pytest.mark.parametrize("nodes", [2, 4])
def test_las_thresholds_and_promotion_match_tiresias_under_python27(sim, nodes, thresholds, knob):
    """Tiresias' own thresholds preempt nothing on its 60 jobs; these do. Under Python 2.7
    (its arithmetic) we agree job for job on both backends."""
    from magnum_lib.replay.policies import TiresiasLAS

    jobs = traces.tiresias_jobs()
    theirs, pre, _ = replay_peers.run_tiresias(sim, jobs, nodes, 4, "las", f"las{nodes}", thresholds, knob)
    for backend in ("compiled", "python"):
        ours = replay(jobs, ReplayCluster.uniform(nodes, 4), TiresiasLAS(thresholds, knob, tiresias_jump=True),
                      backend=backend)
        np.testing.assert_array_equal(ours.finish_s, theirs)
        assert ours.preemptions.sum() == pre


@tiresias
@pytest.mark.parametrize("policy", ["fifo-strict", "fifo-skip", "srtf"])
def test_philly_slice_matches_tiresias(sim, policy):
    jobs = traces.philly_jobs("0e4a51", min_duration_s=60, gpu_counts=[1, 2, 4, 8]).subset(slice(0, 150))
    theirs, pre, _ = replay_peers.run_tiresias(sim, jobs, 4, 4, policy, "philly")
    ours = replay(jobs, ReplayCluster.uniform(4, 4), policy)
    np.testing.assert_array_equal(ours.finish_s, theirs)


@tiresias
def test_philly_slice_las_with_tiresias_jump_formula_matches(sim):
    from magnum_lib.replay.policies import TiresiasLAS

    jobs = traces.philly_jobs("0e4a51", min_duration_s=60, gpu_counts=[1, 2, 4, 8]).subset(slice(0, 150))
    theirs, pre, _ = replay_peers.run_tiresias(sim, jobs, 4, 4, "las", "philly_las")
    for backend in ("compiled", "python"):
        ours = replay(jobs, ReplayCluster.uniform(4, 4), TiresiasLAS(tiresias_jump=True), backend=backend)
        np.testing.assert_array_equal(ours.finish_s, theirs)
        assert ours.preemptions.sum() == pre
    exact = replay(jobs, ReplayCluster.uniform(4, 4), "las")
    assert not np.array_equal(exact.finish_s, theirs)   # the formula matters on this slice


LP_CASES = [(12, {"v100": 4, "p100": 4, "k80": 4}, 1), (40, {"v100": 12, "p100": 12, "k80": 12}, 2),
            (30, {"v100": 8, "p100": 16, "k80": 24}, 3)]


@gavel_lp
@pytest.mark.parametrize("aware", [True, False], ids=["aware", "blind"])
@pytest.mark.parametrize("n,spec,seed", LP_CASES)
def test_maxmin_lp_matches_gavels_policy(n, spec, seed, aware):
    """Gavel's MaxMinFairnessPolicyWithPerf / MaxMinFairnessPolicy (cvxpy, Clarabel) and our
    maxmin_allocation (HiGHS) on the same jobs, matrix and cluster."""
    from magnum_lib.replay.fairness import maxmin_allocation

    jobs, thr = replay_peers.gavel_lp_inputs(n, spec, seed)
    if not aware:
        thr = np.ones_like(thr)
    theirs, _, _ = replay_peers.run_gavel_lp(thr, jobs.num_gpus, spec, aware=aware)
    ours = maxmin_allocation(jobs.speed if aware else np.ones_like(jobs.speed), jobs.num_gpus,
                             list(spec.values()))
    for X in (theirs, ours):                          # both feasible for the same constraints
        assert np.all(X >= -1e-7) and np.all(X.sum(axis=1) <= 1 + 1e-6)
        assert np.all((jobs.num_gpus[:, None] * X).sum(axis=0) <= np.array(list(spec.values())) + 1e-5)
    g = replay_peers.normalized_throughputs(thr, jobs.num_gpus, spec, theirs)
    o = replay_peers.normalized_throughputs(thr, jobs.num_gpus, spec, ours)
    z = o.min()
    assert abs(g.min() - z) <= 1e-6 * z                # the optimum, to solver tolerance
    lo, hi = replay_peers.unique_range(thr, jobs.num_gpus, spec, z, slack=1e-9)
    for v in (g, o):                                    # each solution is optimal for the other's LP
        assert np.all(v >= lo - 1e-5 * z) and np.all(v <= hi + 1e-5 * z)
    fixed = hi - lo <= 1e-6 * z                         # jobs whose throughput the optimum fixes
    assert fixed.any()                                  # (at least the bottleneck jobs)
    np.testing.assert_allclose(g[fixed], o[fixed], rtol=1e-5)


# ----------------------------------------------------------------------------- Gavel's FIFO
gavel_sim = _on_traces(pytest.mark.skipif(not replay_peers.gavel_available(),
                                          reason="Gavel checkout not found (set MAGNUM_GAVEL to "
                                                 "stanford-futuredata/gavel)"))


def _philly_slice():
    return traces.philly_jobs("0e4a51", min_duration_s=60, gpu_counts=[1, 2, 4]).subset(slice(0, 100))


def _gavel_style():
    return traces.gavel_jobs(60, jobs_per_hour=20, seed=4, gpu_types=("v100",))


@gavel_sim
@pytest.mark.parametrize("trace,gpus", [("philly", 16), ("gavel", 8), ("tiresias", 8)])
def test_gavel_fifo_rounds_match_gavels_simulator(tmp_path, trace, gpus):
    """Whole-second jobs at one step per second: Gavel's finish times, job for job."""
    from magnum_lib.replay.gavel_rounds import GavelFIFO

    raw = {"philly": _philly_slice, "gavel": _gavel_style, "tiresias": traces.tiresias_jobs}[trace]()
    jobs = replay_peers.whole_seconds(raw)
    theirs, _, avg = replay_peers.run_gavel(tmp_path, jobs, gpus, 4, steps="unit")
    cluster = ReplayCluster.uniform(gpus // 4, 4)
    ours = replay(jobs, cluster, GavelFIFO())
    np.testing.assert_array_equal(ours.finish_s, theirs)
    assert ours.jct_s.mean() == pytest.approx(avg, rel=1e-12)
    # Gavel's round semantics matter: our event-driven FIFO finishes jobs differently.
    assert not np.array_equal(replay(jobs, cluster, "fifo-strict").finish_s, theirs)


@gavel_sim
@pytest.mark.parametrize("trace,gpus", [("philly", 16), ("gavel", 8)])
def test_gavel_fifo_rounds_match_with_measured_throughputs(tmp_path, trace, gpus):
    """Gavel's matrix: whole steps per micro-task (int(360 r)); finish times to 10 us (Gavel
    adds float seconds round after round, we add whole ns)."""
    from magnum_lib.replay.gavel_rounds import GavelFIFO

    jobs, rate = replay_peers.measured_durations(_philly_slice() if trace == "philly" else _gavel_style())
    theirs, _, _ = replay_peers.run_gavel(tmp_path, jobs, gpus, 4, steps="measured")
    ours = replay(jobs, ReplayCluster.uniform(gpus // 4, 4), GavelFIFO(steps_per_s=rate))
    np.testing.assert_allclose(ours.finish_s, theirs, rtol=0, atol=1e-5)


@gavel_sim
@pytest.mark.parametrize("n,seed", [(40, 1), (60, 3)])
def test_gavel_fifo_on_three_gpu_types_matches_gavels_simulator(tmp_path, n, seed):
    """Gavel's base FIFO on 8 V100 + 8 P100 + 8 K80 (its type pick, its own seeded
    random.Random, its over-commit) with Gavel's matrix: finish times to 50 us (Gavel adds
    float seconds round after round, we add whole ns: 13 us apart at most here)."""
    from magnum_lib.replay.gavel_rounds import GavelFIFO

    jobs, thr = replay_peers.gavel_hetero_jobs(n, 6, seed)
    spec = replay_peers.GAVEL_TYPES
    theirs, _, _ = replay_peers.run_gavel(tmp_path, jobs, spec, 4, policy="fifo", steps="measured")
    ours = replay(jobs, ReplayCluster.from_counts(spec, 4), GavelFIFO(steps_per_s=thr))
    np.testing.assert_allclose(ours.finish_s, theirs, rtol=0, atol=5e-5)
    # Gavel's type pick matters: the first available type in name order would differ.
    from magnum_lib import _backend

    assert ours.backend == ("python" if _backend.pure_python_forced() else "compiled")


@gavel_lp
def test_las_on_one_gpu_type_waterfill_and_highs_vs_gavels_simulator(tmp_path):
    """Gavel's simulator with max_min_fairness ("LAS") on a Philly VC slice (one GPU type,
    the LP's X not unique at ~90 of its resets): fed Gavel's LP code we agree job for job;
    with our solvers (HiGHS's vertex, or the waterfill's max-min fair X, the default on one
    type) the rounds see another X where it is not unique, so finish times move, but stay
    close: measured 109 (waterfill) and 96 (HiGHS) of 150 within 10 us, avg JCT 1.4% and
    0.55% apart (on the whole VC 0e4a51: 331 and 316 of 1429, 0.036% and 0.16%, see
    benchmarks/bench_replay.py gavel_las)."""
    from magnum_lib.replay.gavel_rounds import GavelRounds

    raw = traces.philly_jobs("103959", gpu_counts=[1, 2, 4, 8]).subset(slice(0, 150)).shifted()
    jobs = replay_peers.whole_seconds(raw.subset(raw.num_gpus <= 16))
    cluster = ReplayCluster.uniform(4, 4)
    theirs, _, jct = replay_peers.run_gavel(tmp_path, jobs, 16, 4, policy="max_min_fairness", steps="unit")
    with replay_peers.GavelLP(aware=False) as lp:
        same = replay(jobs, cluster, GavelRounds("maxmin-blind", lp=lp))
    np.testing.assert_allclose(same.finish_s, theirs, rtol=0, atol=1e-5)
    for solver in ("waterfill", "highs"):
        ours = replay(jobs, cluster, GavelRounds("maxmin-blind", solver=solver))
        assert np.sum(np.abs(ours.finish_s - theirs) <= 1e-5) >= len(jobs) // 2, solver
        assert abs(ours.jct_s.mean() - jct) / jct < 0.03, solver


# ----------------------------------------------------------------------------- SJF-like twins
def _vc_slice():
    return traces.philly_jobs("0e4a51", min_duration_s=60, gpu_counts=[1, 2, 4, 8]).subset(slice(0, 150))


@tiresias
@pytest.mark.parametrize("trace,nodes", [("t60", 2), ("t60", 4), ("vc", 4)])
def test_sjf_by_gpu_count_preemptive_matches_tiresias_sjf(sim, trace, nodes):
    """Tiresias' ``sjf`` is smallest GPU count first, preemptive (it has no SJF by duration)."""
    from magnum_lib.replay.policies import SJF

    jobs = traces.tiresias_jobs() if trace == "t60" else _vc_slice()
    theirs, pre, _ = replay_peers.run_tiresias(sim, jobs, nodes, 4, "sjf-gpus-preemptive", f"sjf_{trace}{nodes}")
    for backend in ("compiled", "python"):
        ours = replay(jobs, ReplayCluster.uniform(nodes, 4), SJF("gpus", preemptive=True), backend=backend)
        np.testing.assert_array_equal(ours.finish_s, theirs)
        assert ours.preemptions.sum() == pre
    # Our default SJF (by duration, non-preemptive) is another policy.
    assert not np.array_equal(replay(jobs, ReplayCluster.uniform(nodes, 4), "sjf").finish_s, theirs)


@tiresias
@pytest.mark.parametrize("trace,nodes", [("t60", 2), ("t60", 4), ("vc", 4)])
def test_srtf_by_gpu_time_matches_tiresias_shortest_gpu(sim, trace, nodes):
    from magnum_lib.replay.policies import SRTF

    jobs = traces.tiresias_jobs() if trace == "t60" else _vc_slice()
    theirs, pre, _ = replay_peers.run_tiresias(sim, jobs, nodes, 4, "srtf-gpu-time", f"sg_{trace}{nodes}")
    ours = replay(jobs, ReplayCluster.uniform(nodes, 4), SRTF("gpu_time", ties="previous"))
    assert ours.backend == "python"
    np.testing.assert_array_equal(ours.finish_s, theirs)
    assert ours.preemptions.sum() == pre
    by_id = replay(jobs, ReplayCluster.uniform(nodes, 4), SRTF("gpu_time"), backend="compiled")
    if (trace, nodes) == ("t60", 4):    # two keys meet here: the tie rule decides (58 of 60 agree)
        assert np.sum(by_id.finish_s == theirs) == 58
    else:
        np.testing.assert_array_equal(by_id.finish_s, theirs)


@gavel_lp
@pytest.mark.parametrize("aware", [True, False], ids=["aware", "blind"])
def test_whole_replay_with_gavels_lp_matches_gavels_simulator(tmp_path, aware):
    """Gavel's simulator with MaxMinFairnessPolicyWithPerf / MaxMinFairnessPolicy on a
    Gavel-style trace on 8 V100 + 8 P100 + 8 K80, against GavelRounds fed Gavel's own LP
    code: job for job (to 10 us). With our HiGHS LP the same rounds agree on the optimum
    of every LP but not on its solution X where that is not unique, so finish times move
    (avg JCT within 1%, see benchmarks/bench_replay.py)."""
    from magnum_lib.replay.gavel_rounds import GavelRounds

    jobs, thr = replay_peers.gavel_hetero_jobs(40, 6, 1)
    spec = replay_peers.GAVEL_TYPES
    policy = "max_min_fairness_perf" if aware else "max_min_fairness"
    theirs, _, _ = replay_peers.run_gavel(tmp_path, jobs, spec, 4, policy=policy, steps="measured")
    with replay_peers.GavelLP(aware) as lp:
        ours = replay(jobs, ReplayCluster.from_counts(spec, 4),
                      GavelRounds("maxmin" if aware else "maxmin-blind", steps_per_s=thr, lp=lp))
        assert lp.calls > 10
    np.testing.assert_allclose(ours.finish_s, theirs, rtol=0, atol=1e-5)
