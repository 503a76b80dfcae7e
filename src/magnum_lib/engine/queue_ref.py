"""FIFO multi-server queue (G/G/c), event by event: the readable reference.

This is the loop the notebooks show; ``_queue.pyx`` is the same loop compiled.
Jobs arrive one after another (``interarrival_ns[j]`` after the previous one, the first
at ``interarrival_ns[0]``), wait in one first-come-first-served line, and take
``service_ns[j]`` on whichever of the ``servers`` identical servers frees up. All times
are integer nanoseconds, so both backends give bit-identical results.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from magnum_lib.engine.heap_ref import EventHeap

ARRIVAL = -1  # heap payload of an arrival; a departure carries its job number
# The compiled loop's overflow-free integrals assume at most 2^30 jobs (see _queue.pyx).
MAX_JOBS = 2**30
MAX_SERVERS = 2**26  # the event heap holds one slot per server (24 bytes each)
MAX_HORIZON_NS = 2**62  # half the int64 range: no time plus a gap can overflow


def simulate_fifo(interarrival_ns: npt.ArrayLike, service_ns: npt.ArrayLike, servers: int) -> dict[str, Any]:
    """Run the queue and return per-job times and time integrals.

    Parameters
    ----------
    interarrival_ns, service_ns : array of int64, same length (the number of jobs)
        Gaps between arrivals and service demands, in ns, non-negative.
    servers : int
        Number of identical servers (c >= 1).

    Returns
    -------
    dict
        ``wait`` and ``time_in_system`` (int64 arrays, ns, one per job), ``events``
        (arrivals + departures processed), ``busy_ns`` (integral of busy servers over
        time, ns), ``area_ns`` (integral of jobs in system over time, ns) and
        ``makespan_ns`` (time of the last departure).
    """
    n = check_inputs(interarrival_ns, service_ns, servers)
    interarrival = np.asarray(interarrival_ns, dtype=np.int64).tolist()  # Python ints
    service = np.asarray(service_ns, dtype=np.int64).tolist()

    wait = [0] * n
    # Holds the arrival time until the job leaves, then its time in system.
    in_system = [0] * n
    heap = EventHeap(servers + 2)
    now = events = 0
    n_system = busy = 0  # jobs present; servers working
    arrived = head = 0  # jobs arrived so far; next job in line to start service
    area = busy_area = 0
    heap.push(interarrival[0], ARRIVAL)

    while heap:
        time, payload = heap.pop()
        # Integrate N(t) and busy(t) over the gap since the previous event.
        area += n_system * (time - now)
        busy_area += busy * (time - now)
        now = time
        events += 1
        if payload == ARRIVAL:
            job = arrived
            arrived += 1
            in_system[job] = now
            n_system += 1
            if arrived < n:
                heap.push(now + interarrival[arrived], ARRIVAL)
            if busy < servers:  # a free server means nobody is waiting
                busy += 1
                head += 1
                heap.push(now + service[job], job)
        else:
            job = payload
            in_system[job] = now - in_system[job]
            n_system -= 1
            if head < arrived:  # the freed server takes the first job in line
                nxt = head
                head += 1
                wait[nxt] = now - in_system[nxt]
                heap.push(now + service[nxt], nxt)
            else:
                busy -= 1

    return {
        "wait": np.array(wait, dtype=np.int64),
        "time_in_system": np.array(in_system, dtype=np.int64),
        "events": events,
        "busy_ns": busy_area,
        "area_ns": area,
        "makespan_ns": now,
    }


def check_inputs(interarrival_ns: npt.ArrayLike, service_ns: npt.ArrayLike, servers: int) -> int:
    """Validate the kernel arguments (both backends); return the number of jobs.

    Cheap whole-array checks, so that the loops may trust their input: equal lengths,
    1 to ``MAX_JOBS`` jobs, no negative time, and a horizon (every gap plus every service,
    an upper bound on the makespan) inside int64 nanoseconds.
    """
    ia, sv = np.asarray(interarrival_ns), np.asarray(service_ns)
    if ia.shape != sv.shape or ia.ndim != 1:
        raise ValueError(
            f"interarrival_ns and service_ns must be 1-D of the same length, "
            f"got shapes {ia.shape} and {sv.shape}"
        )
    if not 1 <= ia.size <= MAX_JOBS:
        raise ValueError(f"interarrival_ns must hold between 1 and {MAX_JOBS} jobs, got {ia.size}")
    if isinstance(servers, (bool, np.bool_)) or not isinstance(servers, (int, np.integer)):
        raise TypeError(f"servers must be an integer, got {type(servers).__name__}")
    if not 1 <= servers <= MAX_SERVERS:
        raise ValueError(f"servers must be in [1, {MAX_SERVERS}], got {servers}")
    if ia.dtype.kind not in "iu" or sv.dtype.kind not in "iu":
        raise TypeError(f"interarrival_ns and service_ns must be integer ns arrays, "
                        f"got dtypes {ia.dtype} and {sv.dtype}")
    if min(ia.min(), sv.min()) < 0:
        raise ValueError("interarrival_ns and service_ns must be >= 0 (ns)")
    if ia.sum(dtype=np.float64) + sv.sum(dtype=np.float64) >= MAX_HORIZON_NS:
        raise ValueError(f"the run could last beyond {MAX_HORIZON_NS} ns (int64 clock); "
                         "shorten the times or use fewer jobs")
    return int(ia.size)
