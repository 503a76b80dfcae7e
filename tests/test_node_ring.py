"""The single-producer single-consumer ring: sequential semantics, parity, threads, bad input.

Every behaviour is checked on both the pure-Python reference and the compiled ring
(when built): against a ``collections.deque`` model with a capacity limit (an
independent reference), against each other on random operation sequences (hypothesis),
and with a real producer thread and a real consumer thread, whose output must be exactly
``0 .. n-1``: nothing lost, nothing duplicated, order kept.
"""
from __future__ import annotations

import collections
import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import magnum_lib
from magnum_lib.node import ring, ring_ref
from tests.conftest import import_compiled

INT64 = np.iinfo(np.int64)


@pytest.fixture(params=["python", "compiled"])
def impl(request):
    """The ring module under test: the reference, or the compiled ring (skips if not built)."""
    if request.param == "compiled":
        return import_compiled("magnum_lib.node._ring")
    return ring_ref


def arange(start, stop):
    return np.arange(start, stop, dtype=np.int64)


# ---- sequential semantics ----------------------------------------------------------------

@pytest.mark.parametrize("capacity", [1, 2, 8, 1024])
def test_fills_to_capacity_then_refuses(impl, capacity):
    r = impl.RingBuffer(capacity)
    assert r.capacity == capacity and len(r) == 0 and r.empty() and not r.full()
    assert r.try_pop() is None
    for i in range(capacity):
        assert r.try_push(100 + i) is True
        assert len(r) == i + 1
    assert r.full() and not r.empty()
    assert r.try_push(-1) is False  # full: refused, nothing overwritten
    assert len(r) == capacity
    assert [r.try_pop() for _ in range(capacity)] == list(range(100, 100 + capacity))
    assert r.try_pop() is None and r.empty()


def test_partial_batch_push_when_nearly_full(impl):
    r = impl.RingBuffer(8)
    assert r.push_many(arange(0, 5)) == 5
    assert r.push_many(arange(5, 11)) == 3  # only 3 slots left: the front 3 go in
    assert r.push_many(arange(99, 100)) == 0 and r.full()
    out = np.full(12, -7, dtype=np.int64)
    assert r.pop_many(out) == 8  # fewer than asked: the front of out is filled
    assert out[:8].tolist() == list(range(8))
    assert (out[8:] == -7).all()  # the rest is untouched
    assert r.pop_many(out) == 0 and r.empty()


def test_wraps_around_many_times(impl):
    # Capacity 8, batches of 5 and 3 that straddle the end of the slot array.
    r, out, got, nxt = impl.RingBuffer(8), np.empty(5, dtype=np.int64), [], 0
    for _ in range(40):
        nxt += r.push_many(arange(nxt, nxt + 5))
        k = r.pop_many(out[:3])
        got.extend(out[:k].tolist())
    while (k := r.pop_many(out)):
        got.extend(out[:k].tolist())
    assert got == list(range(nxt)) and nxt > 40


def test_empty_arrays_and_extreme_values(impl):
    r = impl.RingBuffer(4)
    assert r.push_many(arange(0, 0)) == 0 and r.pop_many(np.empty(0, dtype=np.int64)) == 0
    assert r.try_push(int(INT64.min)) and r.try_push(int(INT64.max)) and r.try_push(True)
    assert r.push_many(np.array([INT64.max], dtype=np.int64)) == 1
    assert [r.try_pop() for _ in range(4)] == [INT64.min, INT64.max, 1, INT64.max]


def test_waiting_calls_give_up_at_the_timeout(impl):
    r = impl.RingBuffer(4)
    assert r.push_wait(arange(0, 10), timeout=0.05) == 4  # full after 4
    out = np.empty(10, dtype=np.int64)
    assert r.pop_wait(out, timeout=0.05) == 4  # empty after 4
    assert out[:4].tolist() == [0, 1, 2, 3]
    assert r.push_wait(arange(0, 3)) == 3 and r.pop_wait(out[:3]) == 3  # no wait needed


def test_thread_bodies_in_one_thread(impl):
    # produce_range / consume_range stop at the timeout with what they moved so far.
    r = impl.RingBuffer(8)
    assert impl.produce_range(r, 5, 2) == 5
    assert impl.produce_range(r, 10, 4, timeout=0.05) == 3  # full after 0..4, 0..2
    assert r.full()
    # Item 5 is 0, not 5: the check must say "out of order"; the sum is 0+..+4 + 0+1+2.
    assert impl.consume_range(r, 8, 3) == (8, False, 13)
    assert impl.consume_range(r, 4, 3, timeout=0.05) == (0, True, 0)
    assert impl.produce_range(r, 7, 3) == 7
    received, in_order, checksum = impl.consume_range(r, 7, 7)
    assert (received, in_order, checksum) == (7, True, 21) and r.empty()


def test_accepts_any_int64_buffer(impl):
    import array

    r = impl.RingBuffer(8)
    assert r.push_many(array.array("q", [5, 6])) == 2
    out = array.array("q", [0, 0, 0])
    assert r.pop_many(out) == 2 and out.tolist() == [5, 6, 0]


# ---- hypothesis: random operation sequences against a deque model and across backends -----

OPS = st.lists(st.one_of(
    st.tuples(st.just("push"), st.integers(INT64.min, INT64.max)),
    st.tuples(st.just("pop")),
    st.tuples(st.just("push_many"), st.lists(st.integers(-1000, 1000), max_size=20)),
    st.tuples(st.just("pop_many"), st.integers(0, 20)),
), max_size=60)


def run_model(capacity, ops):
    """What a FIFO of bounded size does: the expected result of every operation."""
    q, results = collections.deque(), []
    for op in ops:
        if op[0] == "push":
            results.append(len(q) < capacity)
            if results[-1]:
                q.append(op[1])
        elif op[0] == "pop":
            results.append(q.popleft() if q else None)
        elif op[0] == "push_many":
            k = min(len(op[1]), capacity - len(q))
            q.extend(op[1][:k])
            results.append(k)
        else:
            k = min(op[1], len(q))
            results.append((k, [q.popleft() for _ in range(k)]))
        results.append((len(q), not q, len(q) == capacity))
    return results


def run_ring(r, ops):
    results = []
    for op in ops:
        if op[0] == "push":
            results.append(r.try_push(op[1]))
        elif op[0] == "pop":
            results.append(r.try_pop())
        elif op[0] == "push_many":
            results.append(r.push_many(np.array(op[1], dtype=np.int64)))
        else:
            out = np.full(op[1], 12345, dtype=np.int64)
            k = r.pop_many(out)
            assert (out[k:] == 12345).all()  # beyond the popped count: untouched
            results.append((k, out[:k].tolist()))
        results.append((len(r), r.empty(), r.full()))
    return results


@settings(max_examples=150, deadline=None)
@given(capacity=st.sampled_from([1, 2, 4, 8, 16]), ops=OPS)
def test_reference_matches_bounded_fifo_model(capacity, ops):
    assert run_ring(ring_ref.RingBuffer(capacity), ops) == run_model(capacity, ops)


@settings(max_examples=150, deadline=None)
@given(capacity=st.sampled_from([1, 2, 4, 8, 16]), ops=OPS)
def test_compiled_matches_reference(capacity, ops):
    compiled = import_compiled("magnum_lib.node._ring")
    expected = run_ring(ring_ref.RingBuffer(capacity), ops)
    assert run_ring(compiled.RingBuffer(capacity), ops) == expected


# ---- real threads --------------------------------------------------------------------------

def threaded_transfer(r, n, seed):
    """Producer and consumer threads moving 0..n-1 in random-sized batches; return what arrived.

    Random batch sizes (1 .. 2*capacity) make every call hit partial pushes, partial
    pops, a full ring and an empty ring at unpredictable offsets.
    """
    rng = np.random.default_rng(seed)
    top = 2 * r.capacity
    push_sizes, pop_sizes = rng.integers(1, top + 1, size=n), rng.integers(1, top + 1, size=n)
    received = np.full(n, -1, dtype=np.int64)

    def producer():
        sent, i = 0, 0
        while sent < n:
            k = min(int(push_sizes[i]), n - sent)
            assert r.push_wait(arange(sent, sent + k), timeout=30) == k
            sent, i = sent + k, i + 1

    def consumer():
        got, i = 0, 0
        while got < n:
            k = min(int(pop_sizes[i]), n - got)
            assert r.pop_wait(received[got:got + k], timeout=30) == k
            got, i = got + k, i + 1

    ring.time_two_threads(producer, consumer)
    return received


@pytest.mark.parametrize("capacity", [1, 4, 64])
def test_threads_lose_nothing_duplicate_nothing_keep_order(impl, capacity):
    # Tiny rings hand over item by item (a thread switch each): keep n modest there.
    n = min(200_000, 5_000 * capacity) if impl is not ring_ref else min(20_000, 1_000 * capacity)
    received = threaded_transfer(impl.RingBuffer(capacity), n, seed=capacity)
    np.testing.assert_array_equal(received, arange(0, n))


def test_threads_single_item_calls(impl):
    # try_push / try_pop one at a time, spinning (and yielding) on full / empty.
    n, r, got = 5_000, impl.RingBuffer(2), []

    def producer():
        for i in range(n):
            while not r.try_push(i):
                time.sleep(0)

    def consumer():
        while len(got) < n:
            item = r.try_pop()
            if item is None:
                time.sleep(0)
            else:
                got.append(item)

    ring.time_two_threads(producer, consumer)
    assert got == list(range(n)) and r.empty()


def test_observer_sees_a_possible_size(impl):
    # A third thread reading len() while both sides run sees 0 <= len <= capacity.
    r, sizes, done = impl.RingBuffer(8), [], threading.Event()

    def observe():
        while not done.is_set():
            sizes.append(len(r))
            time.sleep(0)

    t = threading.Thread(target=observe)
    t.start()
    try:
        received = threaded_transfer(r, 20_000, seed=1)
    finally:
        done.set()
        t.join()
    np.testing.assert_array_equal(received, arange(0, 20_000))
    assert sizes and min(sizes) >= 0 and max(sizes) <= 8


def test_compiled_wait_releases_the_gil():
    compiled = import_compiled("magnum_lib.node._ring")
    r, out = compiled.RingBuffer(4), np.empty(4, dtype=np.int64)
    t = threading.Thread(target=r.pop_wait, args=(out,), kwargs={"timeout": 0.5})
    t.start()
    spins = 0
    while t.is_alive():  # runs only if the waiting thread let go of the GIL
        spins += 1
    t.join()
    assert spins > 1000


@pytest.mark.parametrize("backend", ["python", "compiled"])
@pytest.mark.parametrize("capacity, batch", [(1, 1), (8, 3), (1024, 1000), (1024, None)])
def test_transfer_is_verified(backend, capacity, batch):
    if backend == "compiled":
        import_compiled("magnum_lib.node._ring")
    n = min(300_000, 20_000 * capacity) if backend == "compiled" else min(30_000, 3_000 * capacity)
    res = ring.transfer(n, capacity=capacity, batch=batch, timeout=30, backend=backend)
    assert res.backend == backend and res.verified and res.in_order
    assert res.pushed == res.received == n
    assert res.checksum == n * (n - 1) // 2  # closed form of 0 + 1 + ... + n-1
    assert res.batch == (batch or min(ring.DEFAULT_BATCH, capacity))
    assert res.wall_s > 0 and res.items_per_s == pytest.approx(n / res.wall_s)
    assert res.to_dict()["items"] == n


def test_public_entry_follows_the_backend():
    if magnum_lib.backend() == "python":
        assert ring.BACKEND == "python" and ring.RingBuffer is ring_ref.RingBuffer
    assert ring.transfer(100).backend == ring.BACKEND


def test_time_two_threads_reraises():
    def boom():
        raise RuntimeError("producer failed")

    with pytest.raises(RuntimeError, match="producer failed"):
        ring.time_two_threads(boom, lambda: None)


# ---- bad input -------------------------------------------------------------------------------

@pytest.mark.parametrize("capacity", [0, 3, 6, -1, -8, 2**25, 2**40, 1.5, 8.0, True, "8", None])
def test_bad_capacity(impl, capacity):
    with pytest.raises(ValueError, match="capacity"):
        impl.RingBuffer(capacity)


@pytest.mark.parametrize("items, error, words", [
    (np.arange(4, dtype=np.float64), TypeError, "int64"),
    (np.arange(4, dtype=np.int32), TypeError, "int64"),
    (np.arange(4, dtype=np.uint64), TypeError, "int64"),
    ([1, 2, 3], TypeError, "list"),
    (None, TypeError, "NoneType"),
    (np.arange(8, dtype=np.int64)[::2], ValueError, "C-contiguous"),
    (np.zeros((2, 2), dtype=np.int64), ValueError, "1-D"),
])
def test_bad_arrays(impl, items, error, words):
    r = impl.RingBuffer(8)
    for call in (r.push_many, r.push_wait, r.pop_many, r.pop_wait):
        with pytest.raises(error, match=words):
            call(items)
    assert r.empty()  # nothing half-applied


def test_read_only_out(impl):
    r, out = impl.RingBuffer(8), np.zeros(4, dtype=np.int64)
    r.try_push(1)
    out.flags.writeable = False
    for call in (r.pop_many, r.pop_wait):
        with pytest.raises(ValueError, match="out must be writable"):
            call(out)
    assert len(r) == 1


@pytest.mark.parametrize("item, error", [(1.5, TypeError), ("1", TypeError), (None, TypeError),
                                         (2**63, OverflowError), (-(2**63) - 1, OverflowError)])
def test_bad_items(impl, item, error):
    r = impl.RingBuffer(8)
    with pytest.raises(error):
        r.try_push(item)
    assert r.empty()


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), "1s", True])
def test_bad_timeout(impl, timeout):
    r = impl.RingBuffer(8)
    with pytest.raises(ValueError, match="timeout"):
        r.push_wait(arange(0, 2), timeout=timeout)
    assert r.empty()


@pytest.mark.parametrize("n, batch, name", [(-1, 4, "n"), (1.5, 4, "n"), (10, 0, "batch"),
                                            (10, -3, "batch")])
def test_bad_thread_bodies(impl, n, batch, name):
    r = impl.RingBuffer(8)
    for body in (impl.produce_range, impl.consume_range):
        with pytest.raises(ValueError, match=name):
            body(r, n, batch)


@pytest.mark.parametrize("kwargs, name", [
    ({"items": 0}, "items"), ({"items": 2.5}, "items"), ({"items": 10, "capacity": 12}, "capacity"),
    ({"items": 10, "capacity": 8, "batch": 9}, "batch"), ({"items": 10, "batch": 0}, "batch"),
    ({"items": 10, "backend": "gpu"}, "backend"), ({"items": 10, "timeout": -1}, "timeout"),
])
def test_bad_transfer(kwargs, name):
    with pytest.raises(ValueError, match=name):
        ring.transfer(**kwargs)
