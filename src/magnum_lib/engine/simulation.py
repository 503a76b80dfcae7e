"""``simulate_queue``: a seeded FIFO multi-server queue run, summarized.

Draws interarrival and service times from one seeded ``numpy.random.Generator``
(interarrivals first, then services), converts them to int64 ns, runs the active
backend's kernel (``_queue.pyx`` or ``queue_ref.py``) and summarizes the per-job times.
"""
from __future__ import annotations

import importlib
import time
from dataclasses import dataclass, field
from functools import cached_property
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt
from numpy.random import default_rng  # here, not at first use: wall_s times the run, not imports

from magnum_lib._backend import backend as active_backend
from magnum_lib.base.validate import ParameterError, check_choice, check_int, check_positive
from magnum_lib.engine import distributions, metrics
from magnum_lib.engine.queue_ref import MAX_HORIZON_NS

_KERNELS = {"compiled": "magnum_lib.engine._queue", "python": "magnum_lib.engine.queue_ref"}
MAX_JOBS = 100_000_000  # 10^8 jobs is about 5 GB of arrays: more is a mistake here
# Rates above 10^8 /s mean events under 10 ns apart, too close to the 1 ns clock tick.
MAX_RATE = 1e8


def kernel(name: str | None = None) -> ModuleType:
    """The queue kernel module for backend ``name`` (default: the active backend)."""
    name = active_backend() if name is None else check_choice("backend", name, tuple(_KERNELS))
    return importlib.import_module(_KERNELS[name])


@dataclass(frozen=True, eq=False)
class QueueResult:
    """Summary of one queue run. Times are in seconds.

    ``wait`` and ``time_in_system`` hold one read-only entry per job, in arrival order
    (seconds, converted from the kernel's int64 ns on first use: a run that only needs
    the summary, as ``faux-magnum queue`` does, skips two array passes).
    """

    servers: int
    arrival_rate: float
    service_rate: float
    service: str
    cv: float
    seed: int
    backend: str
    jobs: int
    events: int
    wall_s: float  # seconds of wall-clock time for draws + simulation + summary
    wait_mean: float
    time_in_system_mean: float
    p_wait: float  # fraction of jobs whose wait was > 0
    utilization: float  # busy-server time / (servers x makespan)
    p50: float  # percentiles of the time in system
    p95: float
    p99: float
    mean_in_system: float  # L, time-average number of jobs in system
    littles_law_error: float  # |L - lambda_hat W| / L, lambda_hat = jobs / makespan
    makespan: float  # time of the last departure
    wait_ns: np.ndarray = field(repr=False)  # per job, int64 ns (read-only)
    time_in_system_ns: np.ndarray = field(repr=False)

    @cached_property
    def wait(self) -> np.ndarray:
        """Per-job wait in seconds (read-only)."""
        return _seconds(self.wait_ns)

    @cached_property
    def time_in_system(self) -> np.ndarray:
        """Per-job time in system (wait + service) in seconds (read-only)."""
        return _seconds(self.time_in_system_ns)

    @property
    def load(self) -> float:
        """Offered load per server, ``arrival_rate / (servers x service_rate)``."""
        return self.arrival_rate / (self.servers * self.service_rate)

    def to_dict(self) -> dict[str, Any]:
        """The ``faux-magnum queue --json`` object: summary numbers plus ``backend``."""
        return {key: getattr(self, key) for key in JSON_KEYS}


JSON_KEYS = ("wait_mean", "time_in_system_mean", "p_wait", "utilization", "p50", "p95",
             "p99", "jobs", "events", "wall_s", "backend")


def _seconds(values_ns: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    out: npt.NDArray[np.float64] = values_ns / metrics.NS_PER_S
    out.flags.writeable = False
    return out


def validate_queue(servers: object, arrival_rate: object, service_rate: object, service: object, cv: object,
                   jobs: object, seed: object) -> tuple[int, float, float, str, float, int, int]:
    """Check ``simulate_queue``'s parameters; return them normalized.

    Raises
    ------
    ParameterError
        (a ValueError) naming the first bad parameter, its value and what is accepted.
    """
    servers = check_int("servers", servers, 1, MAX_JOBS)
    arrival_rate = check_positive("arrival_rate", arrival_rate, MAX_RATE)
    service_rate = check_positive("service_rate", service_rate, MAX_RATE)
    service = check_choice("service", service, distributions.SERVICE_KINDS)
    cv = check_positive("cv", cv, 100.0)
    jobs = check_int("jobs", jobs, 1, MAX_JOBS)
    seed = check_int("seed", seed, 0)
    load = arrival_rate / (servers * service_rate)
    if load >= 1:
        raise ParameterError(
            "arrival_rate",
            f"gives load = arrival rate / (servers x service rate) = {arrival_rate:g} / "
            f"({servers} x {service_rate:g}) = {load:.4g} >= 1: the queue is unstable "
            "(it grows without bound); need load < 1",
        )
    return servers, arrival_rate, service_rate, service, cv, jobs, seed


def simulate_queue(servers: int, arrival_rate: float, service_rate: float, service: str = "exp",
                   cv: float = 1.0, jobs: int = 100_000, seed: int = 0,
                   backend: str | None = None) -> QueueResult:
    """Simulate a FIFO queue with Poisson arrivals and ``servers`` identical servers.

    Parameters
    ----------
    servers : int
        Number of servers c (>= 1).
    arrival_rate, service_rate : float
        lambda and mu, per second (> 0); the load lambda / (c mu) must be < 1.
    service : {"exp", "det", "lognormal"}
        Service-time distribution with mean ``1 / service_rate``: M/M/c, M/D/c or M/G/c.
    cv : float
        Coefficient of variation of the lognormal service time (ignored otherwise).
    jobs : int
        Number of jobs to simulate (the run ends when the last one leaves).
    seed : int
        Seed of the numpy Generator (>= 0): same seed, same result, on both backends.
    backend : {"compiled", "python"}, optional
        Force a kernel (e.g. to time the speed-up); default: the active backend.

    Returns
    -------
    QueueResult
    """
    servers, arrival_rate, service_rate, service, cv, jobs, seed = validate_queue(
        servers, arrival_rate, service_rate, service, cv, jobs, seed)
    name = active_backend() if backend is None else check_choice("backend", backend, tuple(_KERNELS))
    run_kernel = kernel(name).simulate_fifo  # import before the clock starts

    start = time.perf_counter()
    rng = default_rng(seed)
    interarrival_s = distributions.exponential(rng, arrival_rate, jobs)
    service_s = distributions.service_times(rng, service, 1.0 / service_rate, cv, jobs)
    horizon_ns = (interarrival_s.sum() + service_s.sum()) * distributions.NS_PER_S
    if not horizon_ns < MAX_HORIZON_NS:  # the makespan is at most this sum (NaN fails too)
        raise ParameterError(
            "jobs", f"= {jobs} at these rates spans about {horizon_ns / 1e9:.3g} s, beyond the "
            f"int64-nanosecond clock (< {MAX_HORIZON_NS / 1e9:.3g} s); use fewer jobs or higher rates")
    # overwrite: the draws are ours and not kept, so they become the ns arrays in place
    out = run_kernel(distributions.to_ns(interarrival_s, overwrite=True),
                     distributions.to_ns(service_s, overwrite=True), servers)
    return summarize(out, servers=servers, arrival_rate=arrival_rate, service_rate=service_rate,
                     service=service, cv=cv, seed=seed, backend=name, started=start)


def summarize(out: dict[str, Any], *, started: float, **params: Any) -> QueueResult:
    """Turn a kernel's output dict into a :class:`QueueResult`."""
    wait_ns, tis_ns = out["wait"], out["time_in_system"]
    jobs = int(tis_ns.size)
    tis_mean = metrics.mean_s(tis_ns)
    little = metrics.littles_law(out["area_ns"], out["makespan_ns"], jobs, tis_mean)
    p50, p95, p99 = metrics.percentiles_s(tis_ns)
    wait_ns.flags.writeable = tis_ns.flags.writeable = False
    return QueueResult(
        jobs=jobs,
        events=int(out["events"]),
        wait_mean=metrics.mean_s(wait_ns),
        time_in_system_mean=tis_mean,
        p_wait=float(np.count_nonzero(wait_ns) / jobs),
        utilization=metrics.utilization(out["busy_ns"], params["servers"], out["makespan_ns"]),
        p50=p50, p95=p95, p99=p99,
        mean_in_system=little.mean_in_system,
        littles_law_error=little.relative_error,
        makespan=out["makespan_ns"] / metrics.NS_PER_S,
        wait_ns=wait_ns,
        time_in_system_ns=tis_ns,
        wall_s=time.perf_counter() - started,
        **params,
    )
