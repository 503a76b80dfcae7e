"""Node state and vector clocks: validation, bitmaps, and the vector-clock order laws."""
from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from magnum_lib.gossip.state import MAX_GPUS, NodeState, bitmap_of, check_view, view_of
from magnum_lib.gossip.vclock import Order, VectorClock


# -- NodeState --------------------------------------------------------------------------
def test_defaults_and_reading():
    s = NodeState("n1", generation=3, busy=0b1010, gpus=4, pending=[("j1", 5), ("j2", -1)])
    assert s.busy_gpus() == (1, 3)
    assert [s.is_busy(i) for i in range(4)] == [False, True, False, True]
    assert s.free_count == 2
    assert s.pending == (("j1", 5), ("j2", -1))  # lists become tuples: hashable, immutable
    assert hash(s) == hash(NodeState("n1", 3, 0b1010, 4, (("j1", 5), ("j2", -1))))
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.generation = 4


def test_256_gpus_fit_in_32_bytes():
    full = NodeState("big", busy=2**256 - 1, gpus=256)
    assert full.free_count == 0 and len(full.busy_gpus()) == 256
    b = full.bitmap_bytes()
    assert len(b) == 32 and b == b"\xff" * 32
    one = NodeState("big", busy=bitmap_of([255], 256), gpus=256)
    assert one.bitmap_bytes() == bytes(31) + b"\x80"  # little-endian: GPU 255 is the top bit


def test_updated_bumps_generation_and_keeps_the_rest():
    s = NodeState("n", 7, 0b1, 8, (("j", 1),))
    t = s.updated(busy_gpus=[2, 5])
    assert (t.generation, t.busy_gpus(), t.pending, t.gpus) == (8, (2, 5), (("j", 1),), 8)
    u = t.updated(pending=())
    assert (u.generation, u.busy, u.pending) == (9, t.busy, ())
    assert s.generation == 7  # the original is untouched


def test_dict_round_trip():
    s = NodeState("n", 2, 0b11, 2, (("a", 1),))
    assert NodeState.from_dict(s.to_dict()) == s


@pytest.mark.parametrize("kwargs, field", [
    (dict(node_id=""), "node_id"),
    (dict(node_id=7), "node_id"),
    (dict(node_id="x" * 65), "node_id"),
    (dict(node_id="a\nb"), "node_id"),
    (dict(generation=-1), "generation"),
    (dict(generation=2**63), "generation"),
    (dict(generation=1.0), "generation"),
    (dict(generation=True), "generation"),
    (dict(gpus=0), "gpus"),
    (dict(gpus=257), "gpus"),
    (dict(busy=-1), "busy"),
    (dict(busy=2**256), "busy"),
    (dict(busy=0b10000, gpus=4), "busy"),  # GPU 4 on a 4-GPU node
    (dict(pending="j1"), "pending"),
    (dict(pending=[("j1",)]), "pending[0]"),
    (dict(pending=[("j1", 1.5)]), "pending[0].priority"),
    (dict(pending=[("j1", 2**31)]), "pending[0].priority"),
    (dict(pending=[("", 1)]), "pending[0].job_id"),
    (dict(pending=[("j", 1), ("j", 2)]), "pending"),
    (dict(pending=[(f"j{i}", 0) for i in range(65)]), "pending"),
])
def test_bad_state_names_the_field(kwargs, field):
    args = dict(node_id="n", generation=0, busy=0, gpus=8, pending=())
    args.update(kwargs)
    with pytest.raises((ValueError, TypeError)) as exc:
        NodeState(**args)
    assert getattr(exc.value, "name", None) == field, str(exc.value)


def test_bad_gpu_indexes():
    s = NodeState("n", gpus=4)
    for bad in (-1, 4, 1.0, None):
        with pytest.raises(ValueError, match="gpu"):
            s.is_busy(bad)
    with pytest.raises(ValueError, match="gpu"):
        bitmap_of([256])
    with pytest.raises(ValueError, match="gpu"):
        s.updated(busy_gpus=[4])
    with pytest.raises(ValueError, match="busy_gpus"):
        s.updated(busy=1, busy_gpus=[0])
    with pytest.raises(ValueError, match="gpus"):
        bitmap_of([0], MAX_GPUS + 1)


def test_from_dict_rejects_wrong_keys():
    d = NodeState("n").to_dict()
    with pytest.raises(ValueError, match="keys"):
        NodeState.from_dict({**d, "extra": 1})
    with pytest.raises(ValueError, match="mapping"):
        NodeState.from_dict([1, 2])


def test_views():
    a, b = NodeState("a"), NodeState("b")
    assert view_of(a, b) == {"a": a, "b": b}
    with pytest.raises(ValueError, match="twice"):
        view_of(a, a)
    with pytest.raises(ValueError, match="NodeState"):
        view_of(a, "b")
    with pytest.raises(ValueError, match="'x'"):
        check_view({"x": a})
    with pytest.raises(ValueError, match="mapping"):
        check_view([a])


@given(st.sets(st.integers(0, 255)))
def test_bitmap_round_trip(gpus):
    s = NodeState("n", busy=bitmap_of(gpus, 256), gpus=256)
    assert s.busy_gpus() == tuple(sorted(gpus))
    assert s.free_count == 256 - len(gpus)
    assert int.from_bytes(s.bitmap_bytes(), "little") == s.busy


# -- VectorClock -------------------------------------------------------------------------
def test_clock_basics():
    a = VectorClock({"x": 1})
    b = a.increment("y")
    assert b == VectorClock({"x": 1, "y": 1}) and b["y"] == 1 and b.get("z") == 0
    assert a.compare(b) is Order.BEFORE and b.compare(a) is Order.AFTER
    c = a.increment("x")
    assert b.compare(c) is Order.CONCURRENT
    assert b.merge(c) == VectorClock({"x": 2, "y": 1})
    assert VectorClock({"x": 0}) == VectorClock() and len(VectorClock({"x": 0})) == 0
    assert hash(VectorClock({"a": 1, "b": 2})) == hash(VectorClock({"b": 2, "a": 1}))


@pytest.mark.parametrize("bad", [{"x": -1}, {"x": 1.5}, {"x": True}, {"": 1}, {3: 1}])
def test_bad_clocks(bad):
    with pytest.raises(ValueError):
        VectorClock(bad)


def test_compare_needs_a_clock():
    with pytest.raises(ValueError, match="other"):
        VectorClock().compare({"x": 1})


clocks = st.dictionaries(st.sampled_from("abc"), st.integers(0, 3)).map(VectorClock)


@settings(max_examples=200)
@given(clocks, clocks, clocks)
def test_clock_merge_is_a_least_upper_bound(a, b, c):
    m = a.merge(b)
    assert m == b.merge(a) and a.merge(a) == a and m.merge(c) == a.merge(b.merge(c))
    assert m.compare(a) in (Order.AFTER, Order.EQUAL) and m.compare(b) in (Order.AFTER, Order.EQUAL)
    # Least: any clock at or after both is at or after the merge.
    if c.compare(a) in (Order.AFTER, Order.EQUAL) and c.compare(b) in (Order.AFTER, Order.EQUAL):
        assert c.compare(m) in (Order.AFTER, Order.EQUAL)


@settings(max_examples=200)
@given(clocks, clocks)
def test_compare_is_antisymmetric_and_matches_pointwise_order(a, b):
    mirror = {Order.BEFORE: Order.AFTER, Order.AFTER: Order.BEFORE,
              Order.EQUAL: Order.EQUAL, Order.CONCURRENT: Order.CONCURRENT}
    assert b.compare(a) is mirror[a.compare(b)]
    nodes = set(a) | set(b)
    le = all(a.get(n) <= b.get(n) for n in nodes)
    ge = all(a.get(n) >= b.get(n) for n in nodes)
    expected = Order.EQUAL if le and ge else Order.BEFORE if le else Order.AFTER if ge else Order.CONCURRENT
    assert a.compare(b) is expected
    assert (a.compare(b) is Order.EQUAL) == (a == b)
