"""Hedging under load: the copies queue behind real work, so an eager hedge can backfire.

:mod:`magnum_lib.node.hedging` assumes the copy's latency is independent of the load the
copies themselves add. Here requests share a pool of ``servers`` FIFO servers: Poisson
arrivals, each request sent to a random server; if it has not finished after ``t_h`` a copy
goes to another random server; the first to finish wins and the loser is cancelled as far
as ``cancel`` allows. Hedging late (p95) barely changes the load and cuts the tail; hedging
early (p50) adds copies for half the requests, and under load those copies can push the
pool towards saturation and make every percentile *worse* (why Dean & Barroso hedge late).

How much worse depends on cancellation (``cancel``). If the loser is stopped at once even
while running (``"all"``), hedging in a pool acts like late binding and rarely hurts: with
exponential service it costs no work at all (memoryless). If a running loser cannot be
stopped (``"queued"``) or nothing is cancelled (``"none"``), the copies are real work: at
load 0.7, hedging at the unhedged p50 with ``"none"`` sends a copy for nearly every
request, saturates the pool and multiplies p99 by ~80 (measured: 11.2 s against 0.135 s,
exp service with mean 10 ms, 10 servers, 20,000 requests, seed 1). The hedge delay is
fixed from the unhedged run, so slower responses trigger more copies: a feedback loop.

The event loop is plain Python on the engine's :class:`~magnum_lib.engine.EventHeap`
(compiled when built); it handles about 10^5 requests per second, enough for a lesson.
Service times come from :class:`~magnum_lib.node.hedging.LatencyDist` (seconds in the API,
int64 ns inside, as everywhere in the engine).
"""
from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

import numpy as np

from magnum_lib._backend import backend as active_backend
from magnum_lib.base.validate import ParameterError, check_choice, check_int, check_positive
from magnum_lib.engine import EventHeap
from magnum_lib.engine.distributions import to_ns
from magnum_lib.node.hedging import LatencyDist, TailLatency, _duration_s, _percentile, latency_dist, tail_latency

__all__ = ["QueueHedgeResult", "simulate_hedging_queue", "run_pool"]

_ARRIVE, _HEDGE, _DONE = 0, 1, 2  # event kinds, in the low 2 bits of the heap payload
CANCEL_MODES = ("all", "queued", "none")
MAX_QUEUE_REQUESTS = 1_000_000  # the Python event loop: about 10 s at this size
MIN_LOAD = 1e-6  # below this the arrival gaps (and the run) are absurdly long


def run_pool(arrival_ns, service_ns, server, hedge_ns: int, servers: int,
             cancel: str = "all") -> dict:
    """Run the pool once.

    Returns
    -------
    dict
        ``response_ns`` (int64 per request), ``copied`` (bool per request: a copy was sent),
        ``copies`` (their count), ``busy_ns`` (total busy server time) and ``makespan_ns``
        (when the last server went idle; a loser left running may end after every answer).

    Parameters
    ----------
    arrival_ns : int64 array (n,)
        Arrival times, nondecreasing.
    service_ns : int64 array (n, 2)
        Service time of the primary (column 0) and of the copy (column 1) of each request.
    server : int64 array (n, 2)
        Server of the primary and of the copy (different servers).
    hedge_ns : int
        Hedge delay; a negative value means never hedge.
    servers : int
        Number of servers.
    cancel : {"all", "queued", "none"}
        When one copy finishes, the other is removed from its queue and stopped if running
        (``"all"``), only removed if still waiting (``"queued"``), or left to run (``"none"``).
    """
    n = len(arrival_ns)
    arrival = arrival_ns.tolist()
    response = [0] * n
    done = [False] * n
    copied = [False] * n
    copies = 0
    heap = EventHeap(4 * servers + 16)
    for i in range(n):
        heap.push(arrival[i], i << 2 | _ARRIVE)
    submit, finish, totals = _pool_actions(arrival, service_ns.tolist(), server.tolist(), servers, cancel,
                                           heap, done, response)
    while len(heap):
        now, payload = heap.pop()
        kind, ident = payload & 3, payload >> 2
        if kind == _ARRIVE:
            submit(2 * ident, now)
            if hedge_ns >= 0:
                heap.push(now + hedge_ns, ident << 2 | _HEDGE)
        elif kind == _HEDGE:
            if not done[ident]:
                copies += 1
                copied[ident] = True
                submit(2 * ident + 1, now)
        else:
            finish(ident, now)
    busy, makespan = totals()
    return {"response_ns": np.asarray(response, dtype=np.int64), "copied": np.asarray(copied),
            "copies": copies, "busy_ns": busy, "makespan_ns": makespan}


def _pool_actions(arrival, service, where, servers, cancel, heap, done, response):
    """The servers' actions over their queues: ``submit(task, now)``, ``finish(task, now)`` (ns).

    Closures over the pool's state (the event loop's hot path); ``totals()`` returns the
    busy server time and the makespan (ns). A task is ``2 * request + copy``.
    """
    drop_queued, stop_running = cancel in ("all", "queued"), cancel == "all"
    waiting = [deque() for _ in range(servers)]
    running = [-1] * servers  # task id or -1 when idle
    started = [0] * servers
    busy = makespan = 0

    def start_next(k: int, now: int) -> None:
        queue = waiting[k]
        while queue:
            task = queue.popleft()
            if not (drop_queued and done[task >> 1]):  # cancelled while waiting: lazy deletion
                running[k], started[k] = task, now
                heap.push(now + service[task >> 1][task & 1], task << 2 | _DONE)
                return
        running[k] = -1

    def submit(task: int, now: int) -> None:
        k = where[task >> 1][task & 1]
        waiting[k].append(task)
        if running[k] < 0:
            start_next(k, now)

    def finish(task: int, now: int) -> None:
        nonlocal busy, makespan
        req = task >> 1
        k = where[req][task & 1]
        if running[k] != task:  # this copy was stopped while running: stale event
            return
        busy += now - started[k]
        makespan = now
        start_next(k, now)
        if done[req]:  # the loser, left running, ends: its answer is thrown away
            return
        done[req] = True
        response[req] = now - arrival[req]
        sibling = task ^ 1
        ks = where[req][sibling & 1]
        if stop_running and running[ks] == sibling:  # stop the loser, free its server
            busy += now - started[ks]
            start_next(ks, now)

    def totals() -> tuple[int, int]:
        return busy, makespan

    return submit, finish, totals


@dataclass(frozen=True, eq=False)
class QueueHedgeResult(TailLatency):
    """Hedging in a loaded pool, beside the same arrivals and service draws unhedged (seconds)."""

    servers: int
    load: float  # offered load without copies: arrival rate x mean service / servers
    requests: int
    seed: int
    dist: LatencyDist
    hedge_at: str
    cancel: str
    hedge_delay_s: float
    extra_load: float  # copies sent / requests
    utilization: float  # busy server time / (servers x makespan), with hedging
    utilization_unhedged: float
    backend: str  # of the engine's EventHeap
    wall_s: float

    def to_dict(self) -> dict:
        """Every scalar field and the distribution's parameters (the ``--json`` object)."""
        out = {k: v for k, v in self.__dict__.items()
               if not isinstance(v, (np.ndarray, LatencyDist))}
        out.update(self.dist.to_dict())
        return out


def simulate_hedging_queue(dist="exp", servers: int = 10, load: float = 0.5, requests: int = 20_000,
                           hedge_at="p95", seed: int = 0, *, mean=0.01, sigma: float = 1.0,
                           alpha: float = 2.0, cancel: str = "all") -> QueueHedgeResult:
    """Simulate hedged requests on a pool of FIFO servers with Poisson arrivals.

    Parameters
    ----------
    dist, mean, sigma, alpha
        Service-time distribution (see :func:`magnum_lib.node.hedging.latency_dist`).
    servers : int
        Pool size (>= 2: a copy must go to another server).
    load : float
        Offered load per server without hedging, in [MIN_LOAD, 1) = [1e-6, 1).
    requests : int
        Number of requests, 1 .. 10^6.
    hedge_at : str or float
        ``"pX"``: the X-th percentile of the *unhedged response time* measured on the same
        draws (what a client observes, queueing included); or a fixed delay (``"10ms"``,
        seconds).
    cancel : {"all", "queued", "none"}
        What happens to the loser (see :func:`run_pool`). ``"all"`` is the ideal; real
        systems often cannot stop a request already running (``"queued"``).
    seed : int
        Seed; draw order: interarrivals, primary services, copy services, primary servers,
        copy-server offsets.
    """
    start = time.perf_counter()
    dist = latency_dist(dist, mean, sigma, alpha)
    servers = check_int("servers", servers, 2, 100_000)
    load = check_positive("load", load)
    if load >= 1:
        raise ParameterError("load", f"must be in (0, 1), got {load:g}: the pool would be unstable")
    if load < MIN_LOAD:  # gaps of mean / (load x servers) must stay inside int64 ns
        raise ParameterError("load", f"must be >= {MIN_LOAD:g}, got {load:g}")
    requests = check_int("requests", requests, 1, MAX_QUEUE_REQUESTS)
    seed = check_int("seed", seed, 0)
    cancel = check_choice("cancel", cancel, CANCEL_MODES)
    q = _percentile(hedge_at)
    fixed_s = _duration_s("hedge_at", hedge_at) if q is None else None

    rng = np.random.default_rng(seed)
    arrival = to_ns(np.cumsum(rng.exponential(dist.mean / (load * servers), requests)))
    service = to_ns(np.column_stack([dist.sample(rng, requests), dist.sample(rng, requests)]))
    primary = rng.integers(0, servers, requests)
    # The copy goes to a different server: shift by 1 .. servers-1.
    server = np.column_stack([primary, (primary + rng.integers(1, servers, requests)) % servers])

    base = run_pool(arrival, service, server, -1, servers)
    hedge_s = float(np.quantile(base["response_ns"], q / 100)) / 1e9 if q is not None else fixed_s
    hedged = run_pool(arrival, service, server, int(round(hedge_s * 1e9)), servers, cancel)

    def utilization(out) -> float:
        return out["busy_ns"] / (servers * out["makespan_ns"])

    return QueueHedgeResult(
        servers=servers, load=load, requests=requests, seed=seed, dist=dist, hedge_at=str(hedge_at),
        cancel=cancel, backend=active_backend(), hedge_delay_s=hedge_s,
        extra_load=hedged["copies"] / requests,
        utilization=utilization(hedged), utilization_unhedged=utilization(base),
        **tail_latency(hedged["response_ns"] / 1e9, base["response_ns"] / 1e9),
        wall_s=time.perf_counter() - start,
    )
