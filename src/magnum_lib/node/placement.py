"""Heterogeneity-aware device choice: the cheapest device that still meets the SLA.

A node (or cell) holds devices of several catalog types. Each request needs ``flops``
operations and moves ``bytes_moved`` bytes; the roofline model of
:func:`magnum_lib.hardware.cost_matrix` gives its service time and energy on every type.
Requests arrive in order and are placed at arrival, each device serving its own FIFO
line: on device ``d`` a request would start at ``max(arrival, free_at[d])`` and finish at
``start + time[type(d)]``. Policies:

``cheapest_meeting_sla``
    Among devices whose predicted finish meets the request's SLA, the one with the lowest
    cost: energy (J) by default, or ``price[type] x service time`` when a price per
    device-second is given. Ties go to the earlier finish, then the lower index. When no
    device can meet the SLA the documented fallback is ``fastest_first`` (the request
    counts as a miss and as a ``fallback``).
``fastest_first``
    The device that finishes the request soonest (ties: lower index).
a function ``policy(finish_s, cost, arrival_s, sla_s) -> device index``
    Your own rule (a notebook exercise): it gets each device's predicted finish time and
    cost for the request (arrays, one entry per device) and must return an index.
``random``
    A device drawn uniformly (from ``numpy.random.default_rng(seed)``), ignoring queues,
    among those whose type supports the precision.

Energy counts busy time only (the catalog's TDP while serving); idle draw is left out.
Service times are rounded to integer ns so the schedule is exact.

>>> stream = request_stream({"h100": 2, "mtia_v2": 4}, requests=500, load=0.4, seed=1)
>>> r = compare_policies(stream, {"h100": 2, "mtia_v2": 4})
>>> r["cheapest_meeting_sla"].energy_j < r["fastest_first"].energy_j
True
"""
from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

import numpy as np

from magnum_lib.base.validate import ParameterError, check_choice, check_int, check_positive, excerpt
from magnum_lib.engine.distributions import NS_PER_S, to_ns
from magnum_lib.hardware import UnknownAcceleratorError, cost_matrix, default_catalog
from magnum_lib.units import parse_duration

__all__ = ["POLICIES", "RequestStream", "make_stream", "request_stream", "node_devices", "place",
           "compare_policies", "PlacementResult", "TypeStats"]

POLICIES = ("cheapest_meeting_sla", "fastest_first", "random")
MAX_DEVICES = 100_000  # devices on one simulated node pool (a list of keys is built)


# ---------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------

def node_devices(devices, catalog=None) -> tuple[str, ...]:
    """One canonical catalog key per device.

    ``devices`` is a mapping of type -> count (``{"h100": 2, "mtia": 4}``) or a list of
    types (``["h100", "h100", "mtia_v2"]``); names are resolved through the catalog.
    """
    cat = catalog or default_catalog()
    if isinstance(devices, Mapping):
        items = [(name, check_int(f"devices[{excerpt(name)}]", count, 0, MAX_DEVICES))
                 for name, count in devices.items()]
    elif isinstance(devices, str) or not hasattr(devices, "__iter__"):
        raise ParameterError("devices", f"must be a mapping type -> count or a list of types, got {devices!r}")
    else:
        items = [(name, 1) for name in devices]
    if sum(count for _, count in items) > MAX_DEVICES:  # checked before the list is built
        raise ParameterError("devices", f"must total at most {MAX_DEVICES} devices")
    keys = []
    for name, count in items:
        try:
            keys += [cat.resolve(name)] * count
        except UnknownAcceleratorError as exc:
            raise ParameterError("devices", f"has an unknown device type: {exc}") from None
    if not keys:
        raise ParameterError("devices", f"holds no device, got {devices!r}")
    return tuple(keys)


@dataclass(frozen=True, eq=False)
class RequestStream:
    """Requests in arrival order: seconds, operations, bytes; arrays read-only."""

    arrival_s: np.ndarray
    flops: np.ndarray
    bytes_moved: np.ndarray
    sla_s: np.ndarray

    def __len__(self) -> int:
        return int(self.arrival_s.size)


def _float_array(name: str, values, n: int | None) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError(name, f"must be an array of numbers, got {values!r}") from None
    if n is not None and arr.ndim == 0:
        arr = np.full(n, float(arr))
    if arr.ndim != 1 or (n is not None and arr.size != n):
        raise ParameterError(name, f"must be 1-D{'' if n is None else f' of length {n}'}, got shape {arr.shape}")
    bad = ~np.isfinite(arr) | (arr < 0)
    if bad.any():
        j = int(np.argmax(bad))
        raise ParameterError(name, f"must be finite and >= 0, got {arr[j]!r} at index {j}")
    return arr


def make_stream(arrival_s, flops, bytes_moved, sla_s) -> RequestStream:
    """Check and freeze a request stream; ``flops``, ``bytes_moved``, ``sla_s`` may be scalars.

    Arrivals must be sorted and >= 0; SLAs > 0 seconds (strings such as "10ms" accepted
    for a scalar SLA).
    """
    arrival = _float_array("arrival_s", arrival_s, None)
    n = arrival.size
    if n == 0:
        raise ParameterError("arrival_s", "is empty; give at least one request")
    if np.any(np.diff(arrival) < 0):
        raise ParameterError("arrival_s", "must be sorted in arrival order")
    if isinstance(sla_s, str):
        sla_s = parse_duration(sla_s, field="sla") / NS_PER_S
    sla = _float_array("sla", sla_s, n)
    if (sla <= 0).any():
        raise ParameterError("sla", f"must be > 0 seconds, got {sla[np.argmin(sla)]!r}")
    arrays = (arrival, _float_array("flops", flops, n), _float_array("bytes_moved", bytes_moved, n), sla)
    for arr in arrays:
        arr.flags.writeable = False
    return RequestStream(*arrays)


def request_stream(devices, requests: int = 2000, load: float = 0.5, flops: float = 2e12,
                   bytes_moved: float = 2e9, cv: float = 1.0, sla="20ms", precision: str = "bf16",
                   seed: int = 0, catalog=None) -> RequestStream:
    """A seeded Poisson stream of requests sized for ``load`` on ``devices``.

    Request sizes are lognormal with means ``flops`` and ``bytes_moved`` and coefficient
    of variation ``cv`` (independent). The arrival rate is ``load`` times the node's
    capacity for the mean request, ``sum over devices of 1 / time(mean request, type)``.
    Draw order from one Generator: interarrivals, flops, bytes.
    """
    keys = node_devices(devices, catalog)
    requests = check_int("requests", requests, 1, 10_000_000)
    load = check_positive("load", load, 10.0)
    cv = check_positive("cv", cv, 100.0)
    seed = check_int("seed", seed, 0)
    mean = cost_matrix(keys, [check_positive("flops", flops)], [check_positive("bytes_moved", bytes_moved)],
                       precision=precision, missing="inf", catalog=catalog)
    capacity = float(np.sum(1.0 / mean.time_s[0]))  # requests/s; a type lacking the precision adds 0
    if capacity == 0:
        raise ParameterError("precision", f"{precision!r} is supported by none of the node's types {set(keys)}")
    rate = load * capacity
    rng = np.random.default_rng(seed)
    arrival = np.cumsum(rng.exponential(1.0 / rate, requests))
    s2 = np.log1p(cv * cv)  # lognormal with the given mean and cv
    f = rng.lognormal(np.log(flops) - s2 / 2, np.sqrt(s2), requests)
    b = rng.lognormal(np.log(bytes_moved) - s2 / 2, np.sqrt(s2), requests)
    return make_stream(arrival, f, b, sla)


# ---------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class TypeStats:
    """One device type's share of the work."""

    device_type: str
    devices: int
    requests: int
    utilization: float  # busy time / (devices x makespan)
    energy_j: float


@dataclass(frozen=True, eq=False)
class PlacementResult:
    """Summary of one placement run (seconds, joules)."""

    policy: str
    requests: int
    sla_attainment: float  # fraction finished within their SLA
    energy_j: float  # busy energy, TDP x service time, summed
    cost: float  # energy_j, or price x device-seconds when a price was given
    fallbacks: int  # requests no device could serve within the SLA (cheapest_meeting_sla)
    latency_mean_s: float
    latency_p50_s: float
    latency_p99_s: float
    makespan_s: float
    per_type: tuple[TypeStats, ...]
    wall_s: float
    device: np.ndarray = field(repr=False)  # index of the device each request ran on
    latency_s: np.ndarray = field(repr=False)

    @property
    def energy_per_request_j(self) -> float:
        return self.energy_j / self.requests

    def to_dict(self) -> dict:
        """Plain JSON-ready numbers (no per-request arrays)."""
        return {k: v for k, v in asdict(self).items() if k not in ("device", "latency_s")}


# ---------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------

def _prices(price, kinds: tuple[str, ...], catalog) -> np.ndarray | None:
    if price is None or (isinstance(price, str) and price == "energy"):
        return None
    if not isinstance(price, Mapping):
        raise ParameterError("price", "must be 'energy' or a mapping device type -> price per "
                                      f"device-second, got {price!r}")
    cat = catalog or default_catalog()
    given = {}
    for name, value in price.items():
        try:
            key = cat.resolve(name)
        except UnknownAcceleratorError as exc:
            raise ParameterError("price", f"has an unknown device type: {exc}") from None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
            raise ParameterError("price", f"[{name!r}] must be a finite number >= 0, got {value!r}")
        given[key] = float(value)
    missing = [k for k in kinds if k not in given]
    if missing:
        raise ParameterError("price", f"lacks a price for device types {missing}; give every type of the node")
    return np.array([given[k] for k in kinds])


def _custom_choice(policy, finish_s, cost, arrival_s, sla_s, able) -> int:
    d = policy(finish_s, cost, float(arrival_s), float(sla_s))
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or not 0 <= d < able.size or not able[d]:
        raise ParameterError("policy", f"function returned {d!r}; it must return the index (0 to "
                                       f"{able.size - 1}) of a device able to run the request")
    return int(d)


_NEVER = np.iinfo(np.int64).max // 4  # service ns of a type without the precision: never chosen


def _check_place_args(stream, devices, policy, seed, catalog):
    """Check :func:`place`'s arguments; return the device keys, the custom policy (or None), its name, the seed."""
    if not isinstance(stream, RequestStream):
        raise TypeError("stream must be a RequestStream (request_stream / make_stream), "
                        f"got {type(stream).__name__}")
    keys = node_devices(devices, catalog)
    custom = policy if callable(policy) else None
    policy = getattr(custom, "__name__", "custom") if custom else check_choice("policy", policy, POLICIES)
    return keys, custom, policy, check_int("seed", seed, 0)


def _service_and_cost(stream, kinds, prices, precision, efficiency, catalog):
    """Each request's cost matrix over ``kinds``, its service time (int64 ns, ``_NEVER`` if unable) and cost."""
    cm = cost_matrix(kinds, stream.flops, stream.bytes_moved, precision=precision,
                     efficiency=efficiency, missing="inf", catalog=catalog)
    if not np.isfinite(cm.time_s).any(axis=1).all():
        raise ParameterError("precision", f"{precision!r} is supported by none of the node's types {kinds}")
    svc = np.where(np.isfinite(cm.time_s), np.maximum(np.rint(cm.time_s * NS_PER_S), 1), _NEVER).astype(np.int64)
    cost = cm.energy_j if prices is None else cm.time_s * prices[None, :]
    return cm, svc, cost


def _per_type(kinds, kind_of, kind_j, busy, energy, makespan) -> tuple:
    """Devices, requests, utilization (busy ns over ``makespan`` ns) and energy (J) of each device type."""
    return tuple(
        TypeStats(device_type=k, devices=int((kind_of == t).sum()), requests=int((kind_j == t).sum()),
                  utilization=float(busy[kind_of == t].sum()) / ((kind_of == t).sum() * makespan),
                  energy_j=float(energy[kind_j == t].sum()))
        for t, k in enumerate(kinds))


def place(stream: RequestStream, devices, policy: str = "cheapest_meeting_sla", price="energy",
          precision: str = "bf16", efficiency=1.0, seed: int = 0, catalog=None) -> PlacementResult:
    """Place every request of ``stream`` on a device of the node with ``policy``.

    Parameters
    ----------
    stream : RequestStream
        From :func:`request_stream` or :func:`make_stream`.
    devices : mapping type -> count, or list of types
        The node's devices (catalog keys or aliases).
    policy : {"cheapest_meeting_sla", "fastest_first", "random"} or callable
        A callable is called as ``policy(finish_s, cost, arrival_s, sla_s)`` per request
        (``finish_s``, ``cost``: arrays over devices; ``inf`` where a device cannot run
        it) and returns the device index.
    price : "energy" or mapping type -> price per device-second
        What "cheapest" minimizes.
    precision, efficiency : as in :func:`magnum_lib.hardware.cost_matrix`.
    seed : int
        Seed of the random policy's draws.
    """
    keys, custom, policy, seed = _check_place_args(stream, devices, policy, seed, catalog)
    kinds = tuple(dict.fromkeys(keys))  # device types, first-seen order
    kind_of = np.array([kinds.index(k) for k in keys])
    prices = _prices(price, kinds, catalog)
    started = time.perf_counter()
    cm, svc, cost = _service_and_cost(stream, kinds, prices, precision, efficiency, catalog)
    arrival = to_ns(stream.arrival_s)
    sla = to_ns(stream.sla_s)
    draws = np.random.default_rng(seed).random(len(stream))  # random policy: one uniform per request

    n, order = len(stream), np.arange(len(keys))
    free_at = np.zeros(len(keys), np.int64)
    chosen = np.empty(n, np.int64)
    finish = np.empty(n, np.int64)
    fallbacks = 0
    for j in range(n):
        ends = np.maximum(free_at, arrival[j]) + svc[j, kind_of]
        if custom is not None:
            able = svc[j, kind_of] < _NEVER
            d = _custom_choice(custom, np.where(able, ends / NS_PER_S, np.inf),
                               np.where(able, cost[j, kind_of], np.inf), stream.arrival_s[j],
                               stream.sla_s[j], able)
        elif policy == "random":  # uniform over the devices that can run the request at all
            able = np.flatnonzero(svc[j, kind_of] < _NEVER)
            d = int(able[int(draws[j] * able.size)])
        elif policy == "fastest_first":
            d = int(np.argmin(ends))  # argmin takes the lowest index on a tie
        else:
            ok = ends - arrival[j] <= sla[j]
            if ok.any():  # cheapest, then earliest finish, then lowest index
                c = np.where(ok, cost[j, kind_of], np.inf)
                d = int(np.lexsort((order, ends, c))[0])
            else:  # documented fallback: fastest
                d = int(np.argmin(ends))
                fallbacks += 1
        chosen[j], finish[j] = d, ends[d]
        free_at[d] = ends[d]
    wall = time.perf_counter() - started

    latency_ns = finish - arrival
    kind_j = kind_of[chosen]
    rows = np.arange(n)
    energy = cm.energy_j[rows, kind_j]
    busy = np.bincount(chosen, weights=svc[rows, kind_j], minlength=len(keys))
    makespan = int(finish.max())
    per_type = _per_type(kinds, kind_of, kind_j, busy, energy, makespan)
    p50, p99 = np.percentile(latency_ns, (50, 99)) / NS_PER_S
    latency_s = latency_ns / NS_PER_S
    for arr in (chosen, latency_s):
        arr.flags.writeable = False
    return PlacementResult(
        policy=policy, requests=n, sla_attainment=float(np.mean(latency_ns <= sla)),
        energy_j=float(energy.sum()), cost=float(cost[rows, kind_j].sum()), fallbacks=fallbacks,
        latency_mean_s=float(latency_ns.mean()) / NS_PER_S, latency_p50_s=float(p50),
        latency_p99_s=float(p99), makespan_s=makespan / NS_PER_S, per_type=per_type,
        wall_s=wall, device=chosen, latency_s=latency_s)


def compare_policies(stream: RequestStream, devices, policies=POLICIES, **kwargs) -> dict[str, PlacementResult]:
    """Run :func:`place` once per policy on the same stream; ``kwargs`` go to each run."""
    return {p: place(stream, devices, policy=p, **kwargs) for p in policies}
