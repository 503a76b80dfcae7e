"""Checkpoints in the baseline simulation are simulated time, never a tally beside it (issue 13, item 4)."""
import pytest

from magnum_lib.regional.baselines import simulate_scheduling

# Runs the compiled kernels through the default backend: part of `make test-debug`.
pytestmark = pytest.mark.kernel


@pytest.mark.parametrize("bandwidth", ["25GB/s", "400GB/s", "10TB/s"])
@pytest.mark.parametrize("load", [0.9, 1.5])
def test_useful_work_plus_waste_fits_in_the_capacity(bandwidth, load):
    r = simulate_scheduling("speculative", nodes=16, schedulers=8, rounds=150, load=load, seed=3,
                            checkpoint_bandwidth=bandwidth, check_invariants=True)
    assert r.preemptions > 0
    useful = r.utilization * r.capacity_device_s
    assert 0 <= r.utilization <= r.held_utilization <= 1
    assert useful + r.wasted_work_device_s <= r.capacity_device_s * (1 + 1e-9)


def test_slower_checkpoints_waste_more_and_leave_less_useful_work():
    kw = dict(nodes=16, schedulers=8, rounds=150, load=0.9, seed=3)
    slow = simulate_scheduling("speculative", checkpoint_bandwidth="25GB/s", **kw)
    fast = simulate_scheduling("speculative", checkpoint_bandwidth="10TB/s", **kw)
    # 80 GB per device: 3.2 s at 25 GB/s (longer than the run), 8 ms at 10 TB/s.
    assert slow.wasted_work_device_s > fast.wasted_work_device_s
    assert slow.utilization < fast.utilization
    assert fast.held_utilization - fast.utilization < 0.5 * (slow.held_utilization - slow.utilization)


def test_without_preemption_held_is_useful():
    r = simulate_scheduling("pessimistic", nodes=16, schedulers=4, rounds=100, seed=1)
    assert r.utilization == r.held_utilization and r.wasted_work_device_s == 0
