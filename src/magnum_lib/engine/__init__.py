"""The discrete-event core: event heap, FIFO multi-server queue, metrics, theory.

Each kernel exists twice (docs/ARCHITECTURE.md, "Two forms"): compiled (``_heap.pyx``,
``_queue.pyx``) and a readable reference (``heap_ref.py``, ``queue_ref.py``). The names
exported here are those of the active backend (``magnum_lib.backend()``).

>>> from magnum_lib.engine import simulate_queue
>>> r = simulate_queue(servers=10, arrival_rate=8, service_rate=1, jobs=10_000, seed=1)
>>> 0 < r.utilization < 1
True
"""
from magnum_lib._backend import pick
from magnum_lib.base.validate import ParameterError
from magnum_lib.engine import metrics, theory
from magnum_lib.engine.simulation import QueueResult, kernel, simulate_queue

EventHeap = pick("magnum_lib.engine._heap", "magnum_lib.engine.heap_ref").EventHeap

__all__ = ["EventHeap", "ParameterError", "QueueResult", "kernel", "metrics",
           "simulate_queue", "theory"]
