"""Pure-Python event heap: the readable reference for ``_heap.pyx``.

Events are ``(time_ns, payload)`` pairs. The heap orders them by time, and events at
the same time by the order they were pushed (an insertion counter breaks ties), so a
simulation built on it is deterministic. Times and payloads are int64, as in the
compiled heap.
"""
from __future__ import annotations

import heapq
import operator
from typing import SupportsIndex

from magnum_lib.base.validate import ParameterError

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1


def check_int64(value: SupportsIndex, name: str) -> int:
    """``value`` as an int in int64's range; integers only (TypeError otherwise), and a
    ParameterError naming ``name`` outside the range. Both heaps raise through it."""
    number = operator.index(value)
    if not _INT64_MIN <= number <= _INT64_MAX:
        raise ParameterError(name, f"must fit in int64 ([{_INT64_MIN}, {_INT64_MAX}]), got {number}")
    return number


#: Largest initial capacity (slots of 24 bytes: 1.6 GB); the heap still grows past it.
MAX_INITIAL_CAPACITY = 2**26


def check_capacity(capacity: SupportsIndex) -> int:
    """The initial capacity as an int in ``[1, MAX_INITIAL_CAPACITY]`` (values < 1 mean 1)."""
    slots = operator.index(capacity)  # TypeError for 1.5, as for times
    if slots > MAX_INITIAL_CAPACITY:
        raise ValueError(f"capacity must be <= {MAX_INITIAL_CAPACITY} slots, got {slots}")
    return max(slots, 1)


class EventHeap:
    """Binary min-heap of events ``(time_ns, payload)``.

    Parameters
    ----------
    capacity : int, optional
        Checked as by the compiled heap (at most ``MAX_INITIAL_CAPACITY``), else unused:
        Python lists grow by themselves.
    """

    def __init__(self, capacity: int = 16) -> None:
        check_capacity(capacity)
        self._items: list[tuple[int, int, int]] = []  # (time, seq, payload)
        self._next_seq = 0

    def push(self, time: SupportsIndex, payload: SupportsIndex = 0) -> None:
        """Add an event at ``time`` (int ns) carrying ``payload`` (int64)."""
        item = (check_int64(time, "time"), self._next_seq, check_int64(payload, "payload"))
        self._next_seq += 1
        heapq.heappush(self._items, item)

    def pop(self) -> tuple[int, int]:
        """Remove and return the earliest event as ``(time_ns, payload)``."""
        if not self._items:
            raise IndexError("pop from an empty EventHeap")
        time, _, payload = heapq.heappop(self._items)
        return time, payload

    def replace(self, time: SupportsIndex, payload: SupportsIndex = 0) -> tuple[int, int]:
        """Pop the earliest event and push a new one; return the popped ``(time_ns, payload)``.

        Equivalent to ``pop()`` then ``push(time, payload)`` (like ``heapq.heapreplace``).
        """
        item = (check_int64(time, "time"), self._next_seq, check_int64(payload, "payload"))
        if not self._items:
            raise IndexError("replace on an empty EventHeap")
        self._next_seq += 1
        time, _, payload = heapq.heapreplace(self._items, item)
        return time, payload

    def peek(self) -> tuple[int, int]:
        """Return the earliest event ``(time_ns, payload)`` without removing it."""
        if not self._items:
            raise IndexError("peek at an empty EventHeap")
        time, _, payload = self._items[0]
        return time, payload

    def clear(self) -> None:
        """Drop every event (the insertion counter keeps counting)."""
        self._items.clear()

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"EventHeap(len={len(self._items)})"
