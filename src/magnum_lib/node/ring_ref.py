"""Pure-Python single-producer single-consumer ring buffer: the readable reference for ``_ring.pyx``.

The ring is a list of ``capacity`` slots (a power of two) and two counters that only
ever grow: ``tail`` (the next item to write, owned by the producer) and ``head`` (the
next item to read, owned by the consumer). The slot of counter ``c`` is ``c & mask``
(``mask = capacity - 1``, why capacity is a power of two), the ring holds
``tail - head`` items, it is empty when ``tail == head`` and full when
``tail - head == capacity``. Each side writes only its own counter and moves it *after*
touching the slots, so the other side never sees a half-written item: this is what
makes the ring safe for one producer thread and one consumer thread without a lock.
(Here the GIL orders the writes; the compiled ring uses C11 acquire/release atomics.)

Batch calls are partial, not all-or-nothing: ``push_many`` pushes as many items from the
front of the array as fit and returns that count; ``pop_many`` fills the front of
``out`` with what is there. The ``*_wait`` calls loop until everything has moved.

The validators below (``check_capacity``, ``check_item``, ``check_array``) are shared
with the compiled ring, so both backends reject the same inputs with the same messages.
"""
from __future__ import annotations

import operator
import time

from magnum_lib.base.validate import ParameterError, check_int

#: Largest accepted capacity: 2**24 slots of 8 bytes = 128 MiB (a teaching kit, not a database).
MAX_CAPACITY = 2**24
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_UINT64 = 2**64
# Buffer formats of a native 8-byte signed integer ('l' on LP64 Linux/macOS, 'q' elsewhere).
_INT64_FORMATS = ("q", "l", "<q", "<l", "=q", "=l", "@q", "@l")


def check_capacity(capacity) -> int:
    """Return ``capacity`` as an int if it is a power of two in ``[1, MAX_CAPACITY]``."""
    capacity = check_int("capacity", capacity, 1, MAX_CAPACITY)
    if capacity & (capacity - 1):
        raise ParameterError("capacity", f"must be a power of two (1, 2, 4, ..., {MAX_CAPACITY}), "
                                         f"got {capacity}")
    return capacity


def check_item(item) -> int:
    """Return ``item`` as an int64 Python int (TypeError for non-integers, OverflowError outside int64)."""
    item = operator.index(item)
    if not _INT64_MIN <= item <= _INT64_MAX:
        raise OverflowError(f"item must fit in int64, got {item}")
    return item


def check_array(name: str, array, writable: bool) -> memoryview:
    """Return a memoryview of ``array`` if it is a 1-D C-contiguous int64 buffer.

    Raises TypeError for a non-buffer or another dtype, ValueError for another shape, a
    strided view, or (``writable``) a read-only buffer.
    """
    try:
        view = memoryview(array)
    except TypeError:
        raise TypeError(f"{name} must be a 1-D C-contiguous int64 array (e.g. numpy.int64), "
                        f"got {type(array).__name__}") from None
    if view.itemsize != 8 or view.format not in _INT64_FORMATS:
        raise TypeError(f"{name} must be a 1-D C-contiguous int64 array, got buffer format "
                        f"{view.format!r} of {view.itemsize}-byte items")
    if view.ndim != 1:
        raise ParameterError(name, f"must be 1-D, got {view.ndim} dimensions")
    if not view.c_contiguous:
        raise ParameterError(name, "must be C-contiguous (a strided view was given; "
                                   "pass numpy.ascontiguousarray(...))")
    if writable and view.readonly:
        raise ParameterError(name, "must be writable, got a read-only buffer")
    return view


def check_timeout(timeout) -> float:
    """Seconds to wait as a float deadline offset; ``None`` (wait forever) becomes 0."""
    if timeout is None:
        return 0.0
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ParameterError("timeout", f"must be None or a number of seconds > 0, got {timeout!r}")
    return float(timeout)


def deadline_after(timeout) -> float:
    """Monotonic deadline (s) ``timeout`` seconds from now; 0 means no deadline."""
    timeout = check_timeout(timeout)
    return time.monotonic() + timeout if timeout else 0.0


class RingBuffer:
    """Single-producer single-consumer ring of int64 items.

    Parameters
    ----------
    capacity : int
        Number of slots, a power of two in ``[1, MAX_CAPACITY]``.

    Notes
    -----
    Safe for exactly one producer thread (``try_push``, ``push_many``, ``push_wait``) and
    one consumer thread (``try_pop``, ``pop_many``, ``pop_wait``) at the same time.
    """

    def __init__(self, capacity):
        self._capacity = check_capacity(capacity)
        self._mask = self._capacity - 1
        self._slots = [0] * self._capacity
        self._head = 0  # written by the consumer only
        self._tail = 0  # written by the producer only

    # ---- producer side ----------------------------------------------------------------
    def try_push(self, item) -> bool:
        """Push one int64 ``item``; return False (and push nothing) when the ring is full."""
        item = check_item(item)
        tail = self._tail
        if tail - self._head == self._capacity:
            return False
        self._slots[tail & self._mask] = item
        self._tail = tail + 1  # publish only after the slot is written
        return True

    def push_many(self, items) -> int:
        """Push as many items from the front of ``items`` (1-D int64) as fit; return the count."""
        return self._push(check_array("items", items, writable=False))

    def _push(self, view) -> int:
        tail = self._tail
        count = min(len(view), self._capacity - (tail - self._head))
        for i in range(count):
            self._slots[(tail + i) & self._mask] = view[i]
        self._tail = tail + count
        return count

    def push_wait(self, items, timeout=None) -> int:
        """Push every item of ``items``, waiting while the ring is full.

        Returns the number pushed: ``len(items)``, or fewer if ``timeout`` seconds passed.
        """
        view = check_array("items", items, writable=False)
        return _wait(self._push, view, deadline_after(timeout))

    # ---- consumer side ----------------------------------------------------------------
    def try_pop(self):
        """Pop one item; return it, or None when the ring is empty."""
        head = self._head
        if self._tail == head:
            return None
        item = self._slots[head & self._mask]
        self._head = head + 1  # hand the slot back only after reading it
        return item

    def pop_many(self, out) -> int:
        """Pop up to ``len(out)`` items into the front of ``out`` (1-D int64, writable); return the count."""
        return self._pop(check_array("out", out, writable=True))

    def _pop(self, view) -> int:
        head = self._head
        count = min(len(view), self._tail - head)
        for i in range(count):
            view[i] = self._slots[(head + i) & self._mask]
        self._head = head + count
        return count

    def pop_wait(self, out, timeout=None) -> int:
        """Fill all of ``out``, waiting while the ring is empty.

        Returns the number popped: ``len(out)``, or fewer if ``timeout`` seconds passed.
        """
        view = check_array("out", out, writable=True)
        return _wait(self._pop, view, deadline_after(timeout))

    # ---- either side -------------------------------------------------------------------
    @property
    def capacity(self) -> int:
        """Number of slots."""
        return self._capacity

    def __len__(self) -> int:
        return self._tail - self._head

    def empty(self) -> bool:
        """True when no item is waiting."""
        return self._tail == self._head

    def full(self) -> bool:
        """True when every slot holds an item."""
        return self._tail - self._head == self._capacity

    def __repr__(self) -> str:
        return f"RingBuffer(capacity={self._capacity}, len={len(self)})"


def _wait(move, view, deadline: float) -> int:
    # Move the items in as many partial steps as it takes; while nothing moves, give the
    # other thread the GIL (sleep(0)) instead of spinning on it.
    done = 0
    while done < len(view):
        moved = move(view[done:])
        done += moved
        if not moved:
            if deadline and time.monotonic() >= deadline:
                break
            time.sleep(0)
    return done


def produce_range(ring: RingBuffer, n: int, batch: int, timeout=None) -> int:
    """Producer thread body: push the integers ``0 .. n-1`` in batches; return how many went in."""
    if not isinstance(ring, RingBuffer):
        raise TypeError(f"ring must be a RingBuffer, got {type(ring).__name__}")
    n, batch = check_int("n", n, 0, 2**62), check_int("batch", batch, 1, MAX_CAPACITY)
    deadline = deadline_after(timeout)
    chunk = memoryview(bytearray(8 * batch)).cast("q")
    done = 0
    while done < n:
        k = min(batch, n - done)
        for i in range(k):
            chunk[i] = done + i
        moved = _wait(ring._push, chunk[:k], deadline)
        done += moved
        if moved < k:  # timed out
            break
    return done


def consume_range(ring: RingBuffer, n: int, batch: int, timeout=None) -> tuple[int, bool, int]:
    """Consumer thread body: pop ``n`` items in batches and check them.

    Returns ``(received, in_order, checksum)``: how many arrived, whether item ``i`` was
    ``i`` for every one of them (nothing lost, duplicated or reordered) and their sum
    modulo 2**64.
    """
    if not isinstance(ring, RingBuffer):
        raise TypeError(f"ring must be a RingBuffer, got {type(ring).__name__}")
    n, batch = check_int("n", n, 0, 2**62), check_int("batch", batch, 1, MAX_CAPACITY)
    deadline = deadline_after(timeout)
    chunk = memoryview(bytearray(8 * batch)).cast("q")
    received, in_order, checksum = 0, True, 0
    while received < n:
        k = min(batch, n - received)
        moved = _wait(ring._pop, chunk[:k], deadline)
        for i in range(moved):
            in_order &= chunk[i] == received + i
            checksum += chunk[i]
        received += moved
        if moved < k:  # timed out
            break
    return received, in_order, checksum % _UINT64
