"""Agreement with Tiresias' own simulator, run here on the same inputs (skipped when the
checkout is absent): same per-job finish times for FIFO, skip-ahead FIFO, SRTF and LAS
on Tiresias' 60-job trace and on a Philly slice."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import replay_peers  # noqa: E402

from magnum_lib.replay import ReplayCluster, replay  # noqa: E402
from magnum_lib.replay import traces  # noqa: E402

pytestmark = pytest.mark.skipif(not replay_peers.available(), reason="Tiresias checkout not found "
                                "(set MAGNUM_TIRESIAS to SymbioticLab/Tiresias)")


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    return replay_peers.prepare(tmp_path_factory.mktemp("tiresias"))


@pytest.mark.parametrize("policy", ["fifo-strict", "fifo-skip", "srtf", "las"])
@pytest.mark.parametrize("nodes", [2, 4])
def test_60_job_trace_matches_tiresias(sim, policy, nodes):
    jobs = traces.tiresias_jobs()
    theirs, pre, _ = replay_peers.run_tiresias(sim, jobs, nodes, 4, policy, f"t60_{nodes}")
    ours = replay(jobs, ReplayCluster.uniform(nodes, 4), policy)
    np.testing.assert_array_equal(ours.finish_s, theirs)
    assert ours.preemptions.sum() == pre


@pytest.mark.parametrize("policy", ["fifo-strict", "fifo-skip", "srtf"])
def test_philly_slice_matches_tiresias(sim, policy):
    jobs = traces.philly_jobs("0e4a51", min_duration_s=60, gpu_counts=[1, 2, 4, 8]).subset(slice(0, 150))
    theirs, pre, _ = replay_peers.run_tiresias(sim, jobs, 4, 4, policy, "philly")
    ours = replay(jobs, ReplayCluster.uniform(4, 4), policy)
    np.testing.assert_array_equal(ours.finish_s, theirs)


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
