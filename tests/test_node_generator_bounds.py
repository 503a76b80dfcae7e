"""Size parameters of the node-layer generators have documented upper bounds, checked
before anything is allocated (a huge value is a one-line ParameterError, not a MemoryError
or an hour of work)."""
from __future__ import annotations

import pytest

from magnum_lib.base.validate import ParameterError
from magnum_lib.node import hedging_queue, placement, ring


@pytest.mark.parametrize("devices", [{"h100": 10**12}, {"h100": placement.MAX_DEVICES + 1},
                                     {"h100": placement.MAX_DEVICES, "mi300x": 1}])
def test_node_devices_bounded(devices):
    with pytest.raises(ParameterError) as exc:
        placement.node_devices(devices)
    assert exc.value.name.startswith("devices") and len(str(exc.value)) < 200


def test_node_devices_at_the_bound_is_accepted():
    assert len(placement.node_devices({"h100": 3, "mi300x": 2})) == 5


@pytest.mark.parametrize("items", [ring.MAX_ITEMS + 1, 10**30])
def test_ring_transfer_items_bounded(items):
    with pytest.raises(ParameterError, match="items"):
        ring.transfer(items)


@pytest.mark.parametrize("load", [1e-320, 1e-9])
def test_hedging_queue_load_has_a_floor(load):
    with pytest.raises(ParameterError, match="load"):
        hedging_queue.simulate_hedging_queue(load=load, requests=10)


def test_hedging_queue_smallest_load_runs():
    result = hedging_queue.simulate_hedging_queue(load=hedging_queue.MIN_LOAD, requests=50)
    assert result is not None
