"""Regional scheduler, stale view, baselines, job-state invariants and a randomized soak."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from magnum_lib.regional.baselines import JOB_STATES, MODES, compare, simulate_scheduling
from magnum_lib.regional.bench import bench_regional
from magnum_lib.regional.scheduler import POLICIES, RegionalScheduler, StaleView
from magnum_lib.regional.validator import NodeState, validate


def _req(i, count=4, device="h100"):
    return dict(job_id=f"j{i}", device_type=device, count=count, memory=80 * 10**9,
                interconnect="nvlink_3")


def test_view_is_stale_until_refresh():
    state = NodeState.uniform(4)
    stale = StaleView(state, "2ms")  # copies the truth at t=0, refreshes every 2 ms
    sched = RegionalScheduler(StaleView(state, "2ms"), "least-loaded")
    (lease,) = sched.issue([_req(0, 8)], 0)
    assert validate(lease, state, 0).accepted and state.free[lease.node_id] == 0
    assert stale.free[lease.node_id] == 8  # another scheduler's view has not heard yet
    assert not stale.refresh(1_999_999) and stale.free[lease.node_id] == 8
    assert stale.refresh(2_000_000) and stale.free[lease.node_id] == 0
    assert stale.age_ns(2_500_000) == 500_000


def test_leases_are_issued_without_checking_and_ids_unique():
    state = NodeState.uniform(3)
    scheds = [RegionalScheduler(StaleView(state, "1s"), "least-loaded", region=r) for r in range(2)]
    leases = [s.issue([_req(10 * r + i, 8) for i in range(3)], 0) for r, s in enumerate(scheds)]
    first, second = leases
    # Both schedulers saw the same empty view, so they issued the same nodes: overbooked.
    assert [l.node_id for l in first] == [l.node_id for l in second] == [0, 1, 2]
    ids = [l.lease_id for batch in leases for l in batch]
    assert len(set(ids)) == len(ids)
    results = [validate(l, state, 0) for batch in leases for l in batch]
    assert [r.accepted for r in results] == [True] * 3 + [False] * 3
    assert scheds[0].issue([_req(99, 8)], 0) == [None]  # its own view is now full


def test_policies_and_hints():
    state = NodeState.uniform(10)
    state.free[:] = [8, 1, 8, 3, 8, 8, 2, 8, 8, 5]
    ll = RegionalScheduler(StaleView(state, 0), "least-loaded").issue([_req(0, 1)], 0)[0]
    assert ll.node_id == 0  # most free, lowest index on ties
    hinted = RegionalScheduler(StaleView(state, 0), "hints")
    leases = hinted.issue([_req(1, 2), _req(2, 4)], 0, hints=np.array([[1, 3, 9], [1, 3, 9]]))
    assert [l.node_id for l in leases] == [3, 9]  # first hinted node that fits in the view
    for policy in POLICIES[:3]:
        lease = RegionalScheduler(StaleView(state, 0), policy, seed=3).issue([_req(3, 6)], 0)[0]
        assert state.free[lease.node_id] >= 6
    assert RegionalScheduler(StaleView(state, 0)).issue([_req(4, 1, "mi300x")], 0) == [None]


def test_scheduler_bad_input():
    state = NodeState.uniform(2)
    with pytest.raises(ValueError, match="^policy"):
        RegionalScheduler(StaleView(state), "best")
    with pytest.raises(ValueError, match="^staleness"):
        StaleView(state, "-2ms")
    with pytest.raises(ValueError, match="^view"):
        RegionalScheduler(state)
    with pytest.raises(ValueError, match="^hints"):
        RegionalScheduler(StaleView(state), "hints").issue([_req(0)], 0, hints=np.zeros((2, 2)))
    with pytest.raises(ValueError, match="^requests"):
        RegionalScheduler(StaleView(state)).issue([{"job_id": "x"}], 0)


@pytest.mark.parametrize("mode", MODES)
def test_invariants_hold_every_round(mode):
    r = simulate_scheduling(mode, nodes=16, schedulers=4, rounds=120, seed=2, check_invariants=True)
    assert sum(r.jobs.values()) > 100 and set(r.jobs) == set(JOB_STATES)
    assert 0 < r.utilization <= 1
    if mode != "speculative":
        assert r.preemptions == 0 and r.wasted_work_device_s == 0
    if mode == "pessimistic":
        assert r.conflicts == 0


def test_lock_latency_grows_with_concurrency_and_leases_do_not_wait():
    kw = dict(nodes=32, rounds=150, seed=1, load=0.8)
    lock = [simulate_scheduling("pessimistic", schedulers=c, **kw) for c in (2, 16)]
    spec = simulate_scheduling("speculative", schedulers=16, **kw)
    # Serialised: the k-th decision of a round waits k steps, so the mean grows with the
    # number of decisions per round (the offered load is the same for both).
    assert lock[1].decision_latency_mean_s > spec.decision_latency_mean_s
    assert lock[0].decision_latency_mean_s >= 120e-6 and spec.decision_latency_p99_s >= 120e-6
    out = compare(nodes=16, rounds=60, schedulers=4, seed=0)
    assert set(out) == set(MODES) and out["speculative"]["conflicts"] > 0


def test_preemption_wastes_work_only_in_speculative_mode():
    r = simulate_scheduling("speculative", nodes=16, schedulers=8, rounds=150, load=1.2,
                            priorities=4, seed=3, check_invariants=True)
    assert r.preemptions > 0 and r.wasted_work_device_s > 0
    # Each preemption checkpoints 80 GB per device at 25 GB/s: 3.2 s.
    assert r.checkpoint_s_total == pytest.approx(3.2 * r.preemptions)


def test_soak_randomized():
    """A longer randomized run over many seeds and settings, invariants checked every round."""
    rng = np.random.default_rng(2026)
    for _ in range(6):
        simulate_scheduling(MODES[int(rng.integers(3))], nodes=int(rng.integers(4, 40)),
                            devices=int(rng.choice([1, 2, 8])), schedulers=int(rng.integers(1, 12)),
                            rounds=80, load=float(rng.uniform(0.3, 1.5)),
                            priorities=int(rng.integers(1, 5)), staleness=float(rng.uniform(0, 0.01)),
                            policy=POLICIES[int(rng.integers(3))], seed=int(rng.integers(1000)),
                            check_invariants=True)


@settings(max_examples=15, deadline=None)
@given(mode=st.sampled_from(MODES), schedulers=st.integers(1, 6), priorities=st.integers(1, 4),
       seed=st.integers(0, 10_000))
def test_property_job_states_partition_jobs(mode, schedulers, priorities, seed):
    r = simulate_scheduling(mode, nodes=6, devices=4, schedulers=schedulers, rounds=30,
                            priorities=priorities, seed=seed, load=1.0, check_invariants=True)
    assert all(v >= 0 for v in r.jobs.values())


def test_same_seed_same_result():
    a = simulate_scheduling("speculative", nodes=8, rounds=40, seed=5).to_dict()
    b = simulate_scheduling("speculative", nodes=8, rounds=40, seed=5).to_dict()
    a.pop("wall_s"), b.pop("wall_s")
    assert a == b


def test_bad_simulation_input():
    for kw, name in ((dict(mode="locks"), "mode"), (dict(schedulers=0), "schedulers"),
                     (dict(load=-1), "load"), (dict(tick=0), "tick"), (dict(policy="hints"), "policy")):
        with pytest.raises(ValueError, match=f"^{name}"):
            simulate_scheduling(**kw)


def test_bench_regional_small():
    out = bench_regional(nodes=50, requests=20, repeats=2, backend="python")
    assert out["round_ms"] > 0 and out["validations_per_s"] > 0 and out["backend"] == "python"
