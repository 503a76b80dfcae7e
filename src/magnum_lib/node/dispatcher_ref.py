"""The per-node dispatcher ("Bouncer") as a readable loop: the reference.

``_dispatcher.pyx`` is the same loop compiled, with the same arguments and results.

The model. A node has ``devices`` identical devices. Requests arrive at ``arrival_ns``
(sorted), need ``work_ns`` of device time and belong to a priority class (0 is the most
urgent). The dispatcher wakes on every quantum boundary ``t = k * quantum_ns`` and:

1. retires the items that finished since the last boundary (at their exact end time);
2. queues the new arrivals, one FIFO queue per class;
3. gives every free device the first item of the most urgent non-empty queue;
4. micro-preemption: while urgent work still waits and a device runs work of a lower
   class, it pauses that item (the least urgent one; the lowest device index on a tie)
   and puts it back at the head of its queue with the work it still needs. The device
   spends ``pause_ns`` saving it before it starts the waiting item. An item that was
   paused costs ``resume_ns`` of device time each time it restarts.

Between boundaries nothing is decided, so a device that finishes mid-quantum idles until
the next one. The loop jumps straight to the next boundary at which something can change
(an arrival or an end): the results are those of waking on every boundary.

All times are integer ns, so the accounting is exact:
``work in = work done + work still queued, paused or running`` (``audit=True`` recounts it
on every visited boundary).
"""
from __future__ import annotations

from collections import deque

import numpy as np

from magnum_lib.base.kernel_args import int_array, int_scalar

NO_HORIZON = 2**62  # "run until every request is done"
# Kernel bounds (the public dispatch() checks tighter ones first). With arrivals and the
# total work below 2^61 ns, a quantum below 2^60 ns and each cost below 2^58 ns, no time
# the loop computes (a boundary <= 2^62, plus costs, plus work, plus a quantum) and no
# work counter can overflow int64.
MAX_KERNEL_TIME_NS = 2**61
MAX_KERNEL_QUANTUM_NS = 2**60
MAX_KERNEL_COST_NS = 2**58
MAX_KERNEL_REQUESTS = 2**31
MAX_KERNEL_QUEUE_SLOTS = 2**31  # requests x classes: the compiled loop's flat queue array
MAX_KERNEL_DEVICES = 2**24


def next_boundary(t: int, quantum: int) -> int:
    """The first decision boundary ``k * quantum >= t`` (C19; ``t >= 0``); ``quantum <= 0``: ``t``.

    The dispatch rule, once (compiled twin in ``_dispatcher.pxd``; the whole-system
    simulator's cores call both).
    """
    return t if quantum <= 0 else -(-t // quantum) * quantum


def start_after(ready: int, overhead: int, quantum: int) -> int:
    """When useful work begins for an item that can be decided at ``ready`` (ns).

    At the next boundary, after the device's ``overhead`` (pausing the item it displaces,
    C20's micro-preemption, or a checkpoint).
    """
    return next_boundary(ready, quantum) + overhead


def most_urgent(qlen, n_classes: int) -> int:
    """The class a free device serves: the most urgent (lowest) ``k`` with ``qlen[k] > 0``; -1: none.

    Step 3's rule (compiled twin in ``_dispatcher.pxd``; the simulator's node queues use both).
    """
    return next((k for k in range(n_classes) if qlen[k] > 0), -1)


def pause_victim(rank, n: int, waiting: int) -> int:
    """Step 4's victim for queued work of class ``waiting``: the index ``d < n`` of the least
    urgent running item of a class after ``waiting`` (``rank[d]`` its class, < 0 when nothing
    pausable runs there), the lowest index on a tie; -1 when none (compiled twin in ``_dispatcher.pxd``).
    """
    victim = -1
    for d in range(n):
        if rank[d] > waiting and (victim < 0 or rank[d] > rank[victim]):
            victim = d
    return victim


def _rule_args(qlen=None, rank=None, waiting=0):
    """Validate the public rule wrappers' arguments (both backends): int64 arrays, a class."""
    out = []
    if qlen is not None:
        q = int_array("qlen", qlen, None)
        if q.shape[0] < 1 or q.shape[0] > MAX_KERNEL_QUEUE_SLOTS or q.min() < 0:
            raise ValueError("qlen must hold 1 or more queue lengths, each >= 0")
        out.append(q)
    if rank is not None:
        out.append(int_array("rank", rank, None))
        out.append(int_scalar("waiting", waiting, 0, MAX_KERNEL_QUEUE_SLOTS))
    return out


def serve_class(qlen) -> int:
    """:func:`most_urgent` over a queue-length array (validated; the compiled twin calls the ``.pxd`` rule)."""
    (q,) = _rule_args(qlen=qlen)
    return most_urgent(q.tolist(), q.shape[0])


def pause_choice(rank, waiting) -> int:
    """:func:`pause_victim` over a per-device class array (validated; compiled twin likewise)."""
    rk, w = _rule_args(rank=rank, waiting=waiting)
    return pause_victim(rk.tolist(), rk.shape[0], w)


def check_kernel_inputs(arrival_ns, work_ns, priority, devices, quantum_ns, pause_ns, resume_ns,
                        preempt, n_classes, horizon_ns, audit) -> tuple:
    """Validate :func:`run_dispatch`'s arguments (both backends); return them normalized.

    What the loop trusts: integer arrays of one length, arrivals sorted and >= 0, work
    >= 1 ns, classes in ``[0, n_classes)`` (they index the queues), and times small
    enough that no sum overflows int64 (see the ``MAX_KERNEL_*`` bounds).
    """
    arrival = int_array("arrival_ns", arrival_ns, None)
    n = arrival.shape[0]
    if n > MAX_KERNEL_REQUESTS:
        raise ValueError(f"arrival_ns must hold at most {MAX_KERNEL_REQUESTS} requests, got {n}")
    work = int_array("work_ns", work_ns, n)
    prio = int_array("priority", priority, n)
    devices = int_scalar("devices", devices, 1, MAX_KERNEL_DEVICES)
    n_classes = int_scalar("n_classes", n_classes, 1, MAX_KERNEL_QUEUE_SLOTS // max(n, 1))
    quantum_ns = int_scalar("quantum_ns", quantum_ns, 1, MAX_KERNEL_QUANTUM_NS)
    pause_ns = int_scalar("pause_ns", pause_ns, 0, MAX_KERNEL_COST_NS)
    resume_ns = int_scalar("resume_ns", resume_ns, 0, MAX_KERNEL_COST_NS)
    horizon_ns = int_scalar("horizon_ns", horizon_ns, -1, NO_HORIZON)
    for name, flag in (("preempt", preempt), ("audit", audit)):
        if not isinstance(flag, (bool, np.bool_)):
            raise TypeError(f"{name} must be True or False, got {type(flag).__name__}")
    if n:
        if arrival[0] < 0 or arrival[-1] > MAX_KERNEL_TIME_NS or (np.diff(arrival) < 0).any():
            raise ValueError(f"arrival_ns must be sorted and in [0, {MAX_KERNEL_TIME_NS}] ns")
        if work.min() < 1 or work.sum(dtype=np.float64) > MAX_KERNEL_TIME_NS:
            raise ValueError(f"work_ns must be >= 1 ns each and total at most {MAX_KERNEL_TIME_NS} ns")
        if prio.min() < 0 or prio.max() >= n_classes:
            raise ValueError(f"priority must lie in [0, n_classes={n_classes}), got values in "
                             f"[{int(prio.min())}, {int(prio.max())}]")
    return (arrival, work, prio, devices, quantum_ns, pause_ns, resume_ns, bool(preempt), n_classes,
            horizon_ns, bool(audit))


class _Node:
    """One node's dispatcher state, one method per step of a boundary (times in ns)."""

    def __init__(self, arrival: list, work: list, prio: list, devices: int, quantum_ns: int, pause_ns: int,
                 resume_ns: int, n_classes: int):
        n = len(arrival)
        self.arrival, self.work, self.prio, self.n = arrival, work, prio, n
        self.devices, self.q, self.pause_ns, self.resume_ns = devices, quantum_ns, pause_ns, resume_ns
        self.n_classes = n_classes
        self.remaining = list(work)     # work still needed (for a running item: as of run_from)
        self.start, self.finish, self.pauses = [-1] * n, [-1] * n, [0] * n
        self.queues = [deque() for _ in range(n_classes)]
        self.qlen = [0] * n_classes     # len(queues[k]): what the class rule reads
        self.item = [-1] * devices      # item each device runs (-1: free)
        self.run_cls = [-1] * devices   # class of that item (-1: free): what the pause rule reads
        self.given = [0] * devices      # boundary at which it got the item
        self.run_from = [0] * devices   # when its useful work begins (after pause/resume costs)
        self.busy = [0] * devices       # device time used, overheads included
        self.nxt = 0                    # the next request to admit
        self.counts = dict.fromkeys(("work_in_ns", "work_done_ns", "preemptions", "pause_overhead_ns",
                                     "resume_overhead_ns", "visited", "decisions", "events",
                                     "audited", "violations"), 0)

    def push(self, i: int, front: bool) -> None:
        """Queue item ``i`` in its class's FIFO, at the head (a paused item) or the tail."""
        k = self.prio[i]
        (self.queues[k].appendleft if front else self.queues[k].append)(i)
        self.qlen[k] += 1

    def give(self, d: int, t: int, overhead: int) -> None:
        """Device ``d`` takes the head of the most urgent queue at boundary ``t``, after ``overhead`` ns."""
        k = most_urgent(self.qlen, self.n_classes)
        i = self.queues[k].popleft()
        self.qlen[k] -= 1
        self.run_cls[d] = k
        if self.pauses[i]:  # restarting a paused item costs a resume
            overhead += self.resume_ns
            self.counts["resume_overhead_ns"] += self.resume_ns
        self.item[d], self.given[d] = i, t
        self.run_from[d] = start_after(t, overhead, self.q)  # t is a boundary
        if self.start[i] < 0:
            self.start[i] = self.run_from[d]
        self.counts["events"] += 1

    def done_by(self, d: int, t: int) -> int:
        """Useful work (ns) of device ``d``'s item between its ``run_from`` and ``t``."""
        return min(max(t - self.run_from[d], 0), self.remaining[self.item[d]])

    def retire(self, t: int) -> None:
        """Step 1: the items that ended by ``t`` finish at their exact end time (ns)."""
        item, remaining, counts = self.item, self.remaining, self.counts
        for d in range(self.devices):
            i = item[d]
            if i >= 0 and self.run_from[d] + remaining[i] <= t:
                self.finish[i] = self.run_from[d] + remaining[i]
                self.busy[d] += self.finish[i] - self.given[d]
                counts["work_done_ns"] += remaining[i]
                remaining[i], item[d], self.run_cls[d] = 0, -1, -1
                counts["events"] += 1

    def admit(self, t: int) -> None:
        """Step 2: queue the requests that arrived by ``t`` (ns)."""
        while self.nxt < self.n and self.arrival[self.nxt] <= t:
            self.push(self.nxt, False)
            self.counts["work_in_ns"] += self.work[self.nxt]
            self.counts["events"] += 1
            self.nxt += 1

    def assign(self, t: int) -> bool:
        """Step 3: every free device takes queued work at ``t``; True if any did."""
        decided = False
        for d in range(self.devices):
            if self.item[d] < 0 and most_urgent(self.qlen, self.n_classes) >= 0:
                self.give(d, t, 0)
                decided = True
        return decided

    def preempt(self, t: int) -> bool:
        """Step 4: pause less urgent running items while urgent work waits at ``t``; True if any was."""
        decided = False
        while most_urgent(self.qlen, self.n_classes) >= 0:
            victim = pause_victim(self.run_cls, self.devices, most_urgent(self.qlen, self.n_classes))
            if victim < 0:
                break
            i, done = self.item[victim], self.done_by(victim, t)
            self.remaining[i] -= done
            self.counts["work_done_ns"] += done
            self.busy[victim] += t - self.given[victim]
            self.pauses[i] += 1
            self.push(i, True)
            self.counts["preemptions"] += 1
            self.counts["pause_overhead_ns"] += self.pause_ns
            self.counts["events"] += 1
            self.give(victim, t, self.pause_ns)
            decided = True
        return decided

    def audit(self, t: int) -> None:
        """Recount at ``t``: work in = work done (credited + in progress) + work owed (ns)."""
        busy_now = [d for d in range(self.devices) if self.item[d] >= 0]
        in_progress = sum(self.done_by(d, t) for d in busy_now)
        owed = sum(self.remaining[i] for qu in self.queues for i in qu)
        owed += sum(self.remaining[self.item[d]] - self.done_by(d, t) for d in busy_now)
        self.counts["audited"] += 1
        self.counts["violations"] += self.counts["work_in_ns"] != self.counts["work_done_ns"] + in_progress + owed

    def soonest(self):
        """The next arrival or end time (ns), None when nothing is left."""
        ends = [self.run_from[d] + self.remaining[self.item[d]] for d in range(self.devices) if self.item[d] >= 0]
        return min(ends + self.arrival[self.nxt:self.nxt + 1], default=None)

    def snapshot(self, t: int) -> None:
        """Credit the items still running at the end ``t`` (ns) with the work they did."""
        for d in range(self.devices):
            if self.item[d] >= 0:
                done = self.done_by(d, t)
                self.remaining[self.item[d]] -= done
                self.counts["work_done_ns"] += done
                self.busy[d] += t - self.given[d]


def run_dispatch(arrival_ns, work_ns, priority, devices, quantum_ns, pause_ns, resume_ns,
                 preempt, n_classes, horizon_ns=-1, audit=False) -> dict:
    """Run the decision loop; see the module docstring for the model.

    Parameters
    ----------
    arrival_ns, work_ns, priority : int64 arrays of one length
        Arrival times (sorted, >= 0), work (>= 1 ns) and class (0 .. n_classes-1).
    devices, quantum_ns, pause_ns, resume_ns, n_classes : int
    preempt : bool
        Whether step 4 (micro-preemption) runs.
    horizon_ns : int
        Stop after the last boundary <= this time; -1 runs until all work is done.
    audit : bool
        Recount the conservation of work on every visited boundary.

    Returns
    -------
    dict of per-item arrays (``start_ns`` first start of useful work, ``finish_ns``,
    ``remaining_ns`` at the end, ``pauses``; -1 = never) and counters.
    """
    (arrival_ns, work_ns, priority, devices, quantum_ns, pause_ns, resume_ns, preempt, n_classes,
     horizon_ns, audit) = check_kernel_inputs(arrival_ns, work_ns, priority, devices, quantum_ns, pause_ns,
                                              resume_ns, preempt, n_classes, horizon_ns, audit)
    arrival, work, prio = (a.tolist() for a in (arrival_ns, work_ns, priority))
    q = quantum_ns
    last_tick = (NO_HORIZON if horizon_ns < 0 else horizon_ns) // q * q
    node = _Node(arrival, work, prio, devices, quantum_ns, pause_ns, resume_ns, n_classes)
    counts = node.counts
    t = 0
    while True:
        node.retire(t)
        node.admit(t)
        decided = node.assign(t)
        if preempt:
            decided = node.preempt(t) or decided
        if audit:
            node.audit(t)
        counts["visited"] += 1
        counts["decisions"] += decided
        # Next boundary at which something can change (an arrival or an end), rounded up.
        soonest = node.soonest()
        if soonest is None or t >= last_tick:
            break
        t = min(next_boundary(soonest, q), last_tick)
    node.snapshot(t)
    as_array = lambda xs: np.array(xs, dtype=np.int64)  # noqa: E731
    return dict(counts, start_ns=as_array(node.start), finish_ns=as_array(node.finish),
                remaining_ns=as_array(node.remaining), pauses=as_array(node.pauses),
                busy_ns=as_array(node.busy), end_ns=t, admitted=node.nxt)
