"""Event heap: ordering properties (hypothesis), agreement with heapq, parity of backends."""
from __future__ import annotations

import heapq

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from magnum_lib.base.validate import ParameterError
from magnum_lib.engine import heap_ref
from tests.conftest import import_compiled

INT64_MAX = 2**63 - 1

# Small time range on purpose: many equal times exercise the FIFO tie-break.
times = st.integers(min_value=-5, max_value=20)
payloads = st.integers(min_value=-(2**63), max_value=INT64_MAX)
ops = st.lists(
    st.one_of(
        st.tuples(st.just("push"), times, payloads),
        st.tuples(st.just("replace"), times, payloads),
        st.tuples(st.just("pop"), st.none(), st.none()),
        st.tuples(st.just("peek"), st.none(), st.none()),
    ),
    max_size=200,
)


@pytest.fixture(scope="module", params=["python", "compiled"])
def EventHeap(request):
    if request.param == "python":
        return heap_ref.EventHeap
    return import_compiled("magnum_lib.engine._heap").EventHeap


def run_ops(heap, sequence):
    """Apply operations; return what each returned (or the exception type it raised)."""
    out = []
    for op, time, payload in sequence:
        try:
            if op in ("push", "replace"):
                out.append(getattr(heap, op)(time, payload))
            else:
                out.append(getattr(heap, op)())
        except IndexError:
            out.append(IndexError)
        out.append(len(heap))
    return out


class HeapqModel:
    """The specification: heapq on (time, insertion number, payload) tuples."""

    def __init__(self):
        self.items, self.seq = [], 0

    def push(self, time, payload):
        heapq.heappush(self.items, (time, self.seq, payload))
        self.seq += 1

    def pop(self):
        if not self.items:
            raise IndexError
        time, _, payload = heapq.heappop(self.items)
        return time, payload

    def replace(self, time, payload):
        first = self.pop() if self.items else None
        self.push(time, payload)
        if first is None:  # the real heaps refuse, leaving themselves unchanged
            self.items.clear()
            raise IndexError
        return first

    def peek(self):
        if not self.items:
            raise IndexError
        return self.items[0][0], self.items[0][2]

    def __len__(self):
        return len(self.items)


@settings(max_examples=60, deadline=None)
@given(events=st.lists(st.tuples(times, payloads), max_size=300))
def test_pops_come_out_by_time_then_insertion_order(EventHeap, events):
    heap = EventHeap(capacity=1)  # also exercises growth
    for time, payload in events:
        heap.push(time, payload)
    popped = [heap.pop() for _ in range(len(events))]
    expected = [(t, p) for (t, p), _ in sorted(zip(events, range(len(events)), strict=True),
                                               key=lambda e: (e[0][0], e[1]))]
    assert popped == expected
    assert len(heap) == 0


@settings(max_examples=60, deadline=None)
@given(sequence=ops)
def test_matches_heapq_model_on_random_operations(EventHeap, sequence):
    assert run_ops(EventHeap(), sequence) == run_ops(HeapqModel(), sequence)


@settings(max_examples=60, deadline=None)
@given(sequence=ops)
def test_compiled_and_reference_agree(sequence):
    compiled = import_compiled("magnum_lib.engine._heap").EventHeap
    assert run_ops(compiled(), sequence) == run_ops(heap_ref.EventHeap(), sequence)


def test_empty_heap_raises_index_error(EventHeap):
    heap = EventHeap()
    for method in (heap.pop, heap.peek):
        with pytest.raises(IndexError):
            method()
    with pytest.raises(IndexError):
        heap.replace(1, 1)
    assert len(heap) == 0 and not heap


def test_peek_does_not_remove_and_clear_empties(EventHeap):
    heap = EventHeap()
    heap.push(5, 1)
    heap.push(3, 2)
    assert heap.peek() == (3, 2) and len(heap) == 2
    heap.clear()
    assert len(heap) == 0


def test_int64_extremes_round_trip(EventHeap):
    heap = EventHeap()
    heap.push(INT64_MAX, -(2**63))
    heap.push(-(2**63), INT64_MAX)
    assert heap.pop() == (-(2**63), INT64_MAX)
    assert heap.pop() == (INT64_MAX, -(2**63))


@pytest.mark.parametrize("time, payload, error", [
    (2**63, 0, ParameterError),
    (0, -(2**63) - 1, ParameterError),
    (1.5, 0, TypeError),
    ("1", 0, TypeError),
])
def test_bad_values_raise_like_the_compiled_heap(EventHeap, time, payload, error):
    heap = EventHeap()
    with pytest.raises(error):
        heap.push(time, payload)
    assert len(heap) == 0  # nothing half-applied


@pytest.mark.parametrize("time, payload, name", [(2**64, 0, "time"), (-(2**63) - 1, 0, "time"),
                                                 (0, 2**70, "payload")])
def test_times_past_int64_name_the_argument_on_both_backends(EventHeap, time, payload, name):
    heap = EventHeap()
    heap.push(1, 1)
    for op in (heap.push, heap.replace):
        with pytest.raises(ParameterError) as e:
            op(time, payload)
        assert e.value.name == name and "int64" in str(e.value)
    assert heap.pop() == (1, 1) and len(heap) == 0  # replace refused before popping
