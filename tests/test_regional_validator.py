"""Node-side validator: each reason, preemption, atomicity, costs, parity, invariants."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from magnum_lib.regional import validator_ref
from magnum_lib.regional.lease import LeaseIds, issue_lease
from magnum_lib.regional.validator import REASONS, NodeState, validate
from tests.conftest import import_compiled


def _issue(ids, job, node, count=4, device="h100", memory="80GB", ic="nvlink_3", timeout="1s", now=0.0):
    return issue_lease(ids, job, node, device, count, memory, ic, timeout, now)


def _snapshot(state):
    return [state.nodes.copy(), state.slots.copy()]


def _same(a, b):
    return all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def test_each_refusal_reason_and_nothing_half_applied():
    state, ids = NodeState.uniform(2, "h100", 8), LeaseIds(0)
    assert validate(_issue(ids, "a", 0, count=8), state, 0).reason == "accepted"
    before = _snapshot(state)
    cases = {
        "insufficient_devices": _issue(ids, "b", 0, count=1),
        "device_type_mismatch": _issue(ids, "c", 1, device="mi300x"),
        "interconnect_mismatch": _issue(ids, "d", 1, ic="infinity_fabric"),
        "insufficient_memory": _issue(ids, "e", 1, memory="81GB"),
        "unknown_node": _issue(ids, "f", 7),
        "expired": _issue(ids, "g", 1, timeout="1ms"),
        "released": _issue(ids, "h", 1).release(),
    }
    for reason, lease in cases.items():
        result = validate(lease, state, 1_000_000)
        assert (result.accepted, result.reason) == (False, reason)
        assert _same(before, _snapshot(state)), reason
    assert set(REASONS) >= set(cases)


def test_interconnect_same_family_faster_is_accepted():
    state, ids = NodeState.uniform(1, "h100", 8), LeaseIds(0)  # H100 nodes carry nvlink_4
    assert validate(_issue(ids, "a", 0, count=1, ic="nvlink_3"), state, 0).accepted
    state2 = NodeState(["h100"], 8, interconnects=["nvlink_3"])
    assert validate(_issue(ids, "b", 0, count=1, ic="nvlink_4"), state2, 0).reason == "interconnect_mismatch"


def test_preempts_lowest_priority_with_checkpoint_cost():
    state = NodeState.uniform(1, "h100", 8, checkpoint_bandwidth="25GB/s", checkpoint_interval=1.0)
    ids = LeaseIds(0)
    for job, prio in (("low", 1), ("mid", 2)):
        assert validate(_issue(ids, job, 0, count=4), state, 0, priority=prio).accepted
    now = 2_300_000_000  # 2.3 s after both started: 0.3 s since the last 1 s checkpoint
    result = validate(_issue(ids, "high", 0, count=4, now=2.3), state, now, priority=3)
    assert result.reason == "accepted_after_preemption"
    (victim,) = result.preempted
    assert victim.job_id == "low" and victim.devices == 4
    assert victim.checkpoint_s == pytest.approx(80e9 / 25e9)  # 3.2 s, far from the claimed 1 ms
    assert victim.lost_work_s == pytest.approx(0.3)
    state.check()
    # Equal priority never preempts, and a shortfall after all victims refuses untouched.
    before = _snapshot(state)
    assert validate(_issue(ids, "peer", 0, count=1, now=2.3), state, now, priority=2).reason \
        == "insufficient_devices"
    assert validate(_issue(ids, "huge", 0, count=8, now=2.3), state, now, priority=3).reason \
        == "insufficient_devices"
    assert _same(before, _snapshot(state))
    assert validate(_issue(ids, "no", 0, count=4, now=2.3), state, now, priority=9,
                    preempt=False).reason == "insufficient_devices"


def test_expired_leases_free_their_devices():
    state, ids = NodeState.uniform(1, "h100", 8), LeaseIds(0)
    validate(_issue(ids, "a", 0, count=8, timeout="10ms"), state, 0)
    assert state.free[0] == 0
    assert list(state.reap(9_999_999)) == []
    assert len(state.reap(10_000_000)) == 1 and state.free[0] == 8
    state.check()


def test_bad_input():
    state = NodeState.uniform(2)
    with pytest.raises(ValueError, match="^lease"):
        validate("L-1", state, 0)
    with pytest.raises(ValueError, match="^priority"):
        validate(_issue(LeaseIds(0), "a", 0), state, 0, priority=-1)
    with pytest.raises(ValueError, match="^now_ns"):
        validate(_issue(LeaseIds(0), "a", 0), state, -5)
    with pytest.raises(ValueError, match="^checkpoint_bandwidth"):
        NodeState.uniform(2, checkpoint_bandwidth="fast")
    with pytest.raises(ValueError, match="^checkpoint_interval"):
        NodeState.uniform(2, checkpoint_interval=0)
    with pytest.raises(ValueError, match="^devices"):
        NodeState(["h100", "h100"], [8, 0])
    with pytest.raises(ValueError, match="^leases"):
        state.validate_arrays([0], [0], [0], [0], [0], [1], [0], [0], 0)


def _random_batch(seed, n_nodes=20, r=600):
    rng = np.random.default_rng(seed)
    state = NodeState(list(rng.choice(["h100", "mi300x"], n_nodes)), rng.integers(1, 9, n_nodes),
                      checkpoint_interval=0.01)
    lease = (rng.integers(-1, n_nodes + 1, r), rng.integers(-1, 2, r), rng.integers(1, 5, r),
             rng.choice([10**9, 10**9, 100 * 10**9, 150 * 10**9], r), rng.choice([0, 3, 3, 4, 7], r),
             rng.integers(0, 3 * 10**7, r), rng.integers(0, 4, r), rng.permutation(r))
    return state, lease


@pytest.mark.parametrize("seed", range(4))
def test_validate_parity_compiled_vs_reference(seed):
    compiled = import_compiled("magnum_lib.regional._validator")
    results = []
    for mod in (compiled, validator_ref):
        state, lease = _random_batch(seed)
        out = state.validate_arrays(*lease, 10**6, module=mod)
        results.append((out, _snapshot(state)))
        state.check()
    (a, sa), (b, sb) = results
    assert _same(sa, sb)
    assert set(a) == set(b) and all(np.array_equal(a[k], b[k]) for k in a)
    assert len(a["pre_job"]) > 0 and (a["code"] == 0).any() and (a["code"] >= 2).any()


@pytest.mark.parametrize("policy", [0, 1, 2, 3])
def test_place_parity_compiled_vs_reference(policy):
    compiled = import_compiled("magnum_lib.regional._validator")
    rng = np.random.default_rng(policy)
    state, _ = _random_batch(policy)
    r = 200
    requests = np.stack([rng.integers(-1, 2, r), rng.integers(1, 9, r),
                         rng.choice([10**9, 150 * 10**9], r), rng.integers(0, 5, r)], axis=1)
    draws = rng.integers(0, state.n_nodes, (r, 3)).astype(np.int32)
    hints = rng.integers(-1, state.n_nodes, (r, 2))
    outs = []
    for mod in (compiled, validator_ref):
        free, out = state.free.copy(), np.empty(r, np.int64)
        mod.place_batch(free, state.nodes, state.ic_ok, len(state.ic_names), requests, policy,
                        draws, hints, out)
        outs.append((out, free))
    assert np.array_equal(outs[0][0], outs[1][0]) and np.array_equal(outs[0][1], outs[1][1])
    assert (outs[0][1] >= 0).all() and (outs[0][0] >= 0).any() and (outs[0][0] < 0).any()


@settings(max_examples=40, deadline=None)
@given(ops=st.lists(st.tuples(st.integers(0, 5), st.integers(1, 8), st.integers(0, 3),
                              st.integers(1, 30), st.booleans()), min_size=1, max_size=60))
def test_no_device_ever_overcommitted(ops):
    """Any sequence of leases, preemptions and expiries keeps held + free == devices >= 0."""
    state, ids = NodeState(["h100"] * 6, [8, 8, 4, 2, 1, 8]), LeaseIds(0)
    live = set()
    for step, (node, count, prio, timeout_ms, preempt) in enumerate(ops):
        now = step * 1_000_000
        expired = set(state.job_names[j] for j in state.reap(now))
        assert expired <= live
        live -= expired
        lease = _issue(ids, f"j{step}", node, count=count, timeout=f"{timeout_ms}ms", now=now / 1e9)
        result = validate(lease, state, now, priority=prio, preempt=preempt)
        live -= {p.job_id for p in result.preempted}
        if result.accepted:
            live.add(lease.job_id)
        state.check()
        assert set(state.job_names[j] for j in state.running()) == live
