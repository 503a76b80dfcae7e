"""The node dispatcher's quantum loop with micro-preemption, in the form a person reads (notebook 04).

It wakes on every quantum boundary (the kernels, ``_dispatcher.pyx`` and ``dispatcher_ref``,
jump to the next boundary where something changes, with the same results);
``tests/test_teaching_forms.py`` checks that the finish times agree on seeded workloads.
"""
from __future__ import annotations

from collections import deque


def dispatch(requests, devices: int, quantum: int, pause: int, resume: int, preempt: bool = True):
    """``requests``: (arrival ns, work ns, class) sorted by arrival, class 0 most urgent.
    Returns each request's finish time (ns)."""
    remaining = [work for _, work, _ in requests]
    finish, paused = [None] * len(requests), [False] * len(requests)
    queues = [deque() for _ in range(1 + max(c for *_, c in requests))]
    running = [None] * devices                 # per device: (request, when its useful work starts)
    urgent = lambda: next((c for c, q in enumerate(queues) if q), None)  # noqa: E731
    cls = lambda i: requests[i][2]             # noqa: E731
    t = arrived = 0

    def start(d, overhead):                    # the first request of the most urgent queue
        i = queues[urgent()].popleft()
        running[d] = (i, t + overhead + (resume if paused[i] else 0))

    while None in finish:
        for d, run in enumerate(running):      # 1. retire what ended by now (at its exact end)
            if run and run[1] + remaining[run[0]] <= t:
                finish[run[0]], remaining[run[0]], running[d] = run[1] + remaining[run[0]], 0, None
        while arrived < len(requests) and requests[arrived][0] <= t:   # 2. admit arrivals
            queues[cls(arrived)].append(arrived)
            arrived += 1
        for d in range(devices):               # 3. free devices take the most urgent work
            if running[d] is None and urgent() is not None:
                start(d, 0)
        while preempt and urgent() is not None:    # 4. micro-preemption: pause less urgent work
            lower = [d for d, run in enumerate(running) if run and cls(run[0]) > urgent()]
            if not lower:
                break
            d = max(lower, key=lambda d: (cls(running[d][0]), -d))    # least urgent, lowest device
            i, began = running[d]
            remaining[i] -= min(max(t - began, 0), remaining[i])      # keep the work it did
            paused[i] = True
            queues[cls(i)].appendleft(i)       # back at the head of its queue
            start(d, pause)                    # the device first saves the paused item
        t += quantum
    return finish
