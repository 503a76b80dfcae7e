"""Single-producer single-consumer ring buffer: the node's lock-free inbox.

``RingBuffer(capacity)`` is the compiled ring (:mod:`magnum_lib.node._ring`, C11
acquire/release atomics, GIL released while waiting) or, when it is not built or
``MAGNUM_PUREPYTHON=1``, the readable reference (:mod:`magnum_lib.node.ring_ref`); both
have the same API and the same sequential behaviour::

    ring = RingBuffer(8)                 # capacity: a power of two
    ring.try_push(42)                    # True, or False when full
    ring.try_pop()                       # 42, or None when empty
    ring.push_many(np.arange(5))         # how many fitted (a partial push when nearly full)
    ring.pop_many(out)                   # how many were copied into the front of ``out``
    ring.push_wait(items); ring.pop_wait(out)   # wait until everything moved

:func:`transfer` moves the integers ``0 .. n-1`` from a producer thread to a consumer
thread through a ring and checks that every one arrived once and in order.
"""
from __future__ import annotations

import importlib
import threading
import time
from dataclasses import asdict, dataclass

from magnum_lib._backend import pick
from magnum_lib.base.validate import ParameterError, check_choice, check_int
from magnum_lib.node.ring_ref import MAX_CAPACITY, check_capacity, check_timeout

__all__ = ["RingBuffer", "TransferResult", "transfer", "time_two_threads", "MAX_CAPACITY",
           "DEFAULT_CAPACITY", "DEFAULT_BATCH"]

_MODULES = {"compiled": "magnum_lib.node._ring", "python": "magnum_lib.node.ring_ref"}
_impl = pick(_MODULES["compiled"], _MODULES["python"])
RingBuffer = _impl.RingBuffer
BACKEND = "compiled" if _impl.__name__ == _MODULES["compiled"] else "python"

#: Defaults for :func:`transfer`: a 2 MiB ring (fits the L2/L3 caches) moved in batches
#: of 1/16 of it, so the producer can fill one batch while the consumer drains another.
DEFAULT_CAPACITY = 2**18
DEFAULT_BATCH = 2**14
MAX_ITEMS = 10**10  # items per transfer: about 100 s at the compiled ring's speed


@dataclass(frozen=True)
class TransferResult:
    """What :func:`transfer` measured.

    Attributes
    ----------
    items, capacity, batch : int
        Items to move, ring slots, items per push/pop call.
    backend : str
        ``"compiled"`` or ``"python"``.
    wall_s : float
        Seconds from the producer's start to the consumer's last item.
    items_per_s : float
        ``received / wall_s``.
    pushed, received : int
        Items the producer pushed and the consumer popped (both ``items`` unless timed out).
    in_order : bool
        Every popped item ``i`` was the integer ``i``: nothing lost, duplicated or reordered.
    checksum : int
        Sum of the popped items modulo 2**64 (``items*(items-1)/2`` when all arrived).
    verified : bool
        All of the above hold.
    """

    items: int
    capacity: int
    batch: int
    backend: str
    wall_s: float
    items_per_s: float
    pushed: int
    received: int
    in_order: bool
    checksum: int
    verified: bool

    def to_dict(self) -> dict:
        return asdict(self)


def _module(backend):
    if backend is None:
        return _impl
    return importlib.import_module(_MODULES[check_choice("backend", backend, tuple(_MODULES))])


def time_two_threads(producer, consumer):
    """Run ``producer()`` and ``consumer()`` in two threads started together.

    Returns ``(wall_s, producer_result, consumer_result)`` where ``wall_s`` runs from the
    earlier thread's start (after a barrier) to the consumer's end. An exception in
    either thread is re-raised here. The same harness times the ring and its peers
    (``queue.SimpleQueue``, ``collections.deque``) in benchmarks/bench_ring.py.
    """
    barrier = threading.Barrier(2)
    marks, results, errors = {}, {}, []

    def run(name, body):
        try:
            barrier.wait()
            marks[name + "_start"] = time.perf_counter()
            results[name] = body()
            marks[name + "_end"] = time.perf_counter()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller below
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=run, args=("producer", producer), daemon=True),
               threading.Thread(target=run, args=("consumer", consumer), daemon=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    start = min(marks["producer_start"], marks["consumer_start"])
    return marks["consumer_end"] - start, results["producer"], results["consumer"]


def transfer(items: int, capacity: int = DEFAULT_CAPACITY, batch: int | None = None,
             timeout=None, backend: str | None = None) -> TransferResult:
    """Move the integers ``0 .. items-1`` through a ring from one thread to another.

    A producer thread pushes them in batches of ``batch`` and a consumer thread pops
    them in batches of ``batch``, checking each one (with the compiled ring both loops
    run without the GIL, truly in parallel).

    Parameters
    ----------
    items : int
        How many integers to move, 1 .. MAX_ITEMS (10^10).
    capacity : int
        Ring slots, a power of two in ``[1, MAX_CAPACITY]``.
    batch : int or None
        Items per push and per pop, in ``[1, capacity]``; None means
        ``min(DEFAULT_BATCH, capacity)``.
    timeout : float or None
        Give up after this many seconds (the result then says ``verified=False``).
    backend : {"compiled", "python"} or None
        Which ring to use; None means the active backend.

    Returns
    -------
    TransferResult
    """
    items = check_int("items", items, 1, MAX_ITEMS)
    capacity = check_capacity(capacity)
    batch = min(DEFAULT_BATCH, capacity) if batch is None else check_int("batch", batch, 1)
    if batch > capacity:
        raise ParameterError("batch", f"must be <= capacity ({capacity}), got {batch}")
    check_timeout(timeout)
    module = _module(backend)
    ring = module.RingBuffer(capacity)
    wall_s, pushed, (received, in_order, checksum) = time_two_threads(
        lambda: module.produce_range(ring, items, batch, timeout),
        lambda: module.consume_range(ring, items, batch, timeout))
    expected_sum = items * (items - 1) // 2 % 2**64
    return TransferResult(
        items=items, capacity=capacity, batch=batch,
        backend="compiled" if module.__name__ == _MODULES["compiled"] else "python",
        wall_s=wall_s, items_per_s=received / wall_s, pushed=pushed, received=received,
        in_order=bool(in_order), checksum=int(checksum),
        verified=bool(pushed == received == items and in_order and checksum == expected_sum))
