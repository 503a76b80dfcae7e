"""The per-node dispatcher: priority classes, a decision quantum and micro-preemption.

``dispatch(workload, devices=8, quantum="250us", ...)`` runs the active backend's loop
(``_dispatcher.pyx`` or the readable ``dispatcher_ref.py``, which explains the model) and
summarizes it in a frozen :class:`DispatchResult`. ``mixed_workload`` draws the classic
mix: Poisson latency-critical inference requests (class 0) and batch jobs (class 1).

Example
-------
>>> w = mixed_workload(duration="1s", seed=1)
>>> with_p, without = dispatch(w), dispatch(w, preemption=False)
>>> with_p.per_class[0].wait_mean_s <= without.per_class[0].wait_mean_s
True
"""
from __future__ import annotations

import importlib
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from magnum_lib._backend import backend as active_backend
from magnum_lib.base.validate import ParameterError, check_choice, check_int, check_positive
from magnum_lib.engine.distributions import NS_PER_S
from magnum_lib.units import parse_duration

__all__ = ["Workload", "make_workload", "mixed_workload", "dispatch", "DispatchResult",
           "ClassStats", "Accounting", "check_conservation", "kernel"]

_KERNELS = {"compiled": "magnum_lib.node._dispatcher", "python": "magnum_lib.node.dispatcher_ref"}
MAX_CLASSES = 64
MAX_TIME_NS = 2**61  # arrivals + work stay far below the loop's 2^62 "no horizon"
MAX_REQUESTS = 1e8  # about 3 GB of arrays: more is a mistake here
MAX_COST_NS = 3600 * NS_PER_S  # quantum, pause and resume costs: at most an hour each


def kernel(name: str | None = None):
    """The dispatcher loop module for backend ``name`` (default: the active backend)."""
    name = active_backend() if name is None else check_choice("backend", name, tuple(_KERNELS))
    return importlib.import_module(_KERNELS[name])


def _ns(name: str, value, *, allow_zero: bool = True, maximum: int = MAX_COST_NS) -> int:
    """A duration (seconds or "250us") as int ns in [0 or 1, maximum], errors naming ``name``."""
    try:
        ns = parse_duration(value, field=name)
    except TypeError:
        raise ParameterError(name, f"must be a duration such as '250us' or seconds, got {value!r}") from None
    if ns < 0 or (ns == 0 and not allow_zero):
        raise ParameterError(name, f"must be {'>=' if allow_zero else '>'} 0, got {value!r}")
    if ns > maximum:  # keeps every sum of times inside the int64 clock
        raise ParameterError(name, f"must be at most {maximum / NS_PER_S:g} s, got {value!r}")
    return ns


# ---------------------------------------------------------------------------
# Workloads
# ---------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Workload:
    """Requests for one node, in arrival order; all times int64 ns, arrays read-only.

    ``work_ns`` is the service demand on one device; ``sla_ns`` is the latency target
    (0 = none); ``priority`` 0 is the most urgent class.
    """

    arrival_ns: np.ndarray
    work_ns: np.ndarray
    priority: np.ndarray
    sla_ns: np.ndarray

    def __len__(self) -> int:
        return int(self.arrival_ns.size)

    @property
    def n_classes(self) -> int:
        return int(self.priority.max()) + 1 if len(self) else 1

    def offered_work_s(self) -> float:
        """Total work in device-seconds (divide by devices x span for the load)."""
        return float(self.work_ns.sum()) / NS_PER_S


def _int_array(name: str, values, n: int | None) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1 or (n is not None and arr.size != n):
        raise ParameterError(name, f"must be 1-D{'' if n is None else f' of length {n}'}, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ParameterError(name, f"must hold integers (ns or class numbers), got dtype {arr.dtype}")
    return arr.astype(np.int64)


def make_workload(arrival_ns, work_ns, priority, sla_ns=None) -> Workload:
    """Check and freeze request arrays (int ns) into a :class:`Workload`.

    Arrivals must be sorted and >= 0, work >= 1 ns, classes in ``0 .. 63``, SLAs >= 0.
    """
    arrival = _int_array("arrival_ns", arrival_ns, None)
    n = arrival.size
    if n == 0:
        raise ParameterError("arrival_ns", "is empty; give at least one request")
    work = _int_array("work_ns", work_ns, n)
    prio = _int_array("priority", priority, n)
    sla = np.zeros(n, np.int64) if sla_ns is None else _int_array("sla_ns", sla_ns, n)
    for name, arr, lo in (("arrival_ns", arrival, 0), ("work_ns", work, 1), ("priority", prio, 0),
                          ("sla_ns", sla, 0)):
        if arr.min() < lo:
            j = int(np.argmin(arr))
            raise ParameterError(name, f"must be >= {lo}, got {arr[j]} at index {j}")
    if prio.max() >= MAX_CLASSES:
        raise ParameterError("priority", f"must be < {MAX_CLASSES} (class 0 is most urgent), got {prio.max()}")
    if np.any(np.diff(arrival) < 0):
        j = int(np.argmax(np.diff(arrival) < 0)) + 1
        raise ParameterError("arrival_ns", f"must be sorted; index {j} ({arrival[j]}) comes before "
                                           f"index {j - 1} ({arrival[j - 1]})")
    if int(arrival[-1]) + int(work.sum()) >= MAX_TIME_NS:
        raise ParameterError("work_ns", f"last arrival + total work must stay below {MAX_TIME_NS} ns")
    for arr in (arrival, work, prio, sla):
        arr.flags.writeable = False
    return Workload(arrival, work, prio, sla)


def mixed_workload(duration="1s", inference_rate: float = 2000.0, inference_work="1ms",
                   inference_sla="10ms", batch_rate: float = 60.0, batch_work="50ms",
                   seed: int = 0) -> Workload:
    """Poisson inference requests (class 0) mixed with Poisson batch jobs (class 1).

    Work is exponential with the given means (at least 1 ns). Draw order from one
    ``numpy.random.Generator(seed)``: inference count, times, work; then batch likewise.
    Default load on 8 devices: (2000 x 1 ms + 60 x 50 ms) / 8 = 0.625.

    Parameters
    ----------
    duration : str or float
        Arrival window ("1s", or seconds).
    inference_rate, batch_rate : float
        Arrivals per second (> 0; a batch rate of 0 gives inference only).
    inference_work, batch_work : str or float
        Mean work per request on one device.
    inference_sla : str or float
        Latency target of inference requests; batch jobs have none.
    """
    span = _ns("duration", duration, allow_zero=False, maximum=MAX_TIME_NS)
    seed = check_int("seed", seed, 0)
    rng = np.random.default_rng(seed)
    parts = []
    for cls, rate, mean, sla in ((0, inference_rate, inference_work, inference_sla),
                                 (1, batch_rate, batch_work, 0)):
        name = "inference" if cls == 0 else "batch"
        if cls == 1 and rate == 0:
            continue
        rate = check_positive(f"{name}_rate", rate, 1e8)
        mean_ns = _ns(f"{name}_work", mean, allow_zero=False, maximum=MAX_TIME_NS)
        if rate * span / NS_PER_S > MAX_REQUESTS:
            raise ParameterError("duration", f"x {name}_rate gives about {rate * span / NS_PER_S:.3g} "
                                             f"requests; at most {MAX_REQUESTS:g} are allowed")
        count = int(rng.poisson(rate * span / NS_PER_S))
        at = np.sort(rng.integers(0, span, count))  # Poisson points: uniform given the count
        work = np.maximum(np.rint(rng.exponential(mean_ns, count)), 1).astype(np.int64)
        sla_ns = _ns("inference_sla", sla) if cls == 0 else 0
        parts.append((at, work, np.full(count, cls), np.full(count, sla_ns)))
    arrival, work, prio, sla = (np.concatenate(cols) for cols in zip(*parts, strict=True))
    order = np.argsort(arrival, kind="stable")  # ties: inference before batch
    return make_workload(arrival[order], work[order], prio[order], sla[order])


# ---------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class ClassStats:
    """Latency of one priority class (seconds; nan when nothing in it finished)."""

    priority: int
    requests: int
    completed: int
    latency_mean_s: float
    latency_p50_s: float
    latency_p99_s: float
    wait_mean_s: float  # arrival to first useful work
    sla_attainment: float  # among requests with an SLA: finished within it (nan if none)


@dataclass(frozen=True)
class Accounting:
    """Conservation of work (int ns): ``work_in == work_done + work_remaining``.

    ``work_in`` counts the requests that arrived by the end; ``violations`` is the number
    of audited decision points where the loop's own recount disagreed (0 when correct).
    """

    work_in_ns: int
    work_done_ns: int
    work_remaining_ns: int
    audited: int
    violations: int

    @property
    def ok(self) -> bool:
        return self.work_in_ns == self.work_done_ns + self.work_remaining_ns and self.violations == 0


@dataclass(frozen=True, eq=False)
class DispatchResult:
    """Summary of one dispatcher run. Times in seconds unless named ``_ns``."""

    backend: str
    devices: int
    quantum_s: float
    preemption: bool
    requests: int
    completed: int
    per_class: tuple[ClassStats, ...]
    preemptions: int
    pause_overhead_s: float
    resume_overhead_s: float
    utilization: float  # busy device time (overheads included) / (devices x end)
    useful_utilization: float  # work done / (devices x end)
    decisions: int  # quantum boundaries at which something was assigned or paused
    ticks: int  # quantum boundaries from 0 to the end (what a real loop wakes for)
    visited: int  # boundaries the simulation looked at (it skips idle ones)
    events: int  # arrivals + starts + completions + pauses
    end_s: float
    wall_s: float  # wall-clock time of the loop alone
    accounting: Accounting
    latency_s: np.ndarray = field(repr=False)  # per request, nan if unfinished
    pauses: np.ndarray = field(repr=False)  # per request

    def to_dict(self) -> dict:
        """Plain JSON-ready numbers (no per-request arrays)."""
        out = {k: v for k, v in asdict(self).items() if k not in ("latency_s", "pauses")}
        out["accounting"]["ok"] = self.accounting.ok
        for row in out["per_class"]:  # strict JSON has no NaN
            row.update({k: None for k, v in row.items() if v != v})
        return out


def check_conservation(out: dict, workload: Workload) -> Accounting:
    """Account for the work of a kernel output dict (or a :class:`DispatchResult`).

    Work in is recounted from the workload (requests admitted by the end), work
    remaining from the per-request ``remaining_ns``; work done is the loop's counter.
    """
    if isinstance(out, DispatchResult):
        return out.accounting
    admitted = int(out["admitted"])
    return Accounting(work_in_ns=int(workload.work_ns[:admitted].sum()),
                      work_done_ns=int(out["work_done_ns"]),
                      work_remaining_ns=int(out["remaining_ns"][:admitted].sum()),
                      audited=int(out["audited"]), violations=int(out["violations"]))


def _class_stats(k: int, w: Workload, latency_ns: np.ndarray, wait_ns: np.ndarray) -> ClassStats:
    mine = w.priority == k
    lat = latency_ns[mine]
    done = lat[lat >= 0]
    started = wait_ns[mine]
    started = started[started >= 0]
    sla = w.sla_ns[mine]
    has_sla = sla > 0
    met = (lat[has_sla] >= 0) & (lat[has_sla] <= sla[has_sla])
    nan = float("nan")
    p50, p99 = (np.percentile(done, (50, 99)) / NS_PER_S) if done.size else (nan, nan)
    return ClassStats(
        priority=k, requests=int(mine.sum()), completed=int(done.size),
        latency_mean_s=float(done.mean()) / NS_PER_S if done.size else nan,
        latency_p50_s=float(p50), latency_p99_s=float(p99),
        wait_mean_s=float(started.mean()) / NS_PER_S if started.size else nan,
        sla_attainment=float(met.mean()) if met.size else nan)


# ---------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------

def dispatch(workload: Workload, devices: int = 8, quantum="250us", pause_cost="20us",
             resume_cost="20us", preemption: bool = True, horizon=None, n_classes: int | None = None,
             audit: bool = False, backend: str | None = None) -> DispatchResult:
    """Run the node's decision loop over ``workload``.

    Parameters
    ----------
    workload : Workload
        From :func:`mixed_workload` or :func:`make_workload`.
    devices : int
        Identical devices on the node (>= 1).
    quantum : str or float
        Decision period ("250us" or seconds, > 0; kept as int ns).
    pause_cost, resume_cost : str or float
        Device time spent pausing / resuming an item (>= 0).
    preemption : bool
        Micro-preemption on or off.
    horizon : str or float, optional
        Stop at the last quantum boundary before this time; default: run until all done.
    n_classes : int, optional
        Number of priority classes (default: highest class in the workload + 1).
    audit : bool
        Recount the conservation of work at every decision point (slower; for tests).
    backend : {"compiled", "python"}, optional
        Force a loop; default: the active backend.
    """
    if not isinstance(workload, Workload):
        raise TypeError("workload must be a Workload (mixed_workload / make_workload), "
                        f"got {type(workload).__name__}")
    devices = check_int("devices", devices, 1, 1_000_000)
    q = _ns("quantum", quantum, allow_zero=False)
    pause_ns, resume_ns = _ns("pause_cost", pause_cost), _ns("resume_cost", resume_cost)
    horizon_ns = -1 if horizon is None else _ns("horizon", horizon, maximum=MAX_TIME_NS)
    n_classes = workload.n_classes if n_classes is None else check_int(
        "n_classes", n_classes, workload.n_classes, MAX_CLASSES)
    if not isinstance(preemption, (bool, np.bool_)):
        raise ParameterError("preemption", f"must be True or False, got {preemption!r}")
    name = active_backend() if backend is None else check_choice("backend", backend, tuple(_KERNELS))
    run = kernel(name).run_dispatch

    started = time.perf_counter()
    out = run(workload.arrival_ns, workload.work_ns, workload.priority, devices, q, pause_ns,
              resume_ns, bool(preemption), n_classes, horizon_ns, bool(audit))
    wall = time.perf_counter() - started

    w = workload
    finished = out["finish_ns"] >= 0
    latency_ns = np.where(finished, out["finish_ns"] - w.arrival_ns, -1)
    wait_ns = np.where(out["start_ns"] >= 0, out["start_ns"] - w.arrival_ns, -1)
    end = int(out["end_ns"])
    capacity = devices * end
    latency_s = np.where(finished, latency_ns / NS_PER_S, np.nan)
    latency_s.flags.writeable = False
    return DispatchResult(
        backend=name, devices=devices, quantum_s=q / NS_PER_S, preemption=bool(preemption),
        requests=len(w), completed=int(finished.sum()),
        per_class=tuple(_class_stats(k, w, latency_ns, wait_ns) for k in range(n_classes)),
        preemptions=int(out["preemptions"]),
        pause_overhead_s=out["pause_overhead_ns"] / NS_PER_S,
        resume_overhead_s=out["resume_overhead_ns"] / NS_PER_S,
        utilization=float(out["busy_ns"].sum()) / capacity if capacity else 0.0,
        useful_utilization=out["work_done_ns"] / capacity if capacity else 0.0,
        decisions=int(out["decisions"]), ticks=end // q + 1, visited=int(out["visited"]),
        events=int(out["events"]), end_s=end / NS_PER_S, wall_s=wall,
        accounting=check_conservation(out, w), latency_s=latency_s, pauses=out["pauses"])
