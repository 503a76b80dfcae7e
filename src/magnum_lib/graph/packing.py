"""Time-division packing of reserved graphs on one accelerator, and what it is compared with.

Three policies run the same jobs through one kernel (model: ``packing_ref.py``):

``"packed"``
    The article's MTIA scheme: each job is admitted with its whole static reservation,
    several jobs are resident at once while their reservations fit, and their layers are
    interleaved back to back; statically compiled graphs switch for free.
``"exclusive"``
    One job at a time holds the device (``max_resident = 1``): while its output crosses
    the interconnect the device idles.
``"dynamic"``
    Dynamic, elastic scheduling as on an H100: no static reservation (a job holds only its
    largest layer's memory, allocated as it goes), kernels of any resident job run
    whenever the device is free (work-conserving), and every change of job costs
    ``switch_s`` (default 25 us: context switch plus allocator work, an assumption).

The comparison isolates the policy: the same layer times on the same device.
Utilization is useful compute time over the makespan (switch overhead is not useful).
"""
from __future__ import annotations

import time as _time
from dataclasses import dataclass

import numpy as np

from magnum_lib._backend import pick
from magnum_lib.base.validate import ParameterError, check_choice, check_int, check_positive, excerpt
from magnum_lib.engine.distributions import to_ns
from magnum_lib.graph import packing_ref as _ref  # the bounds both kernels enforce
from magnum_lib.graph.manifest import Manifest
from magnum_lib.graph.reserve import layer_timing, transfer_ns
from magnum_lib.hardware import Catalog, default_catalog

__all__ = ["JobSet", "PackResult", "POLICIES", "make_inference_graphs", "jobs_from_manifests",
           "pack", "compare_policies", "utilization_vs_load"]

_impl = pick("magnum_lib.graph._packing", "magnum_lib.graph.packing_ref")

POLICIES = ("packed", "exclusive", "dynamic")
DEFAULT_DYNAMIC_SWITCH_S = 25e-6
DEFAULT_WINDOW = 8
_MEDIAN_LAYER_NS = 500_000  # 500 us: the article's layers run for hundreds of microseconds
_MAX_SWITCH_NS = 10**9  # switch_s < 1 s
#: Upper bounds of make_inference_graphs (checked before anything is allocated): about
#: 200 bytes per layer, so the largest call stays near 1 GB.
MAX_GRAPHS = 1_000_000
MAX_LAYERS_PER_GRAPH = 10_000
MAX_TOTAL_LAYERS = 5_000_000
LOAD_RANGE = (1e-3, 100.0)


@dataclass(frozen=True, eq=False)
class JobSet:
    """Jobs to pack, as flat arrays (structure of arrays; layers of job j are
    ``layer_ptr[j]:layer_ptr[j + 1]``).

    Attributes
    ----------
    device : str
        Canonical catalog key; ``capacity_bytes`` is its memory.
    arrival_ns, reserve_bytes, largest_layer_bytes : int64 arrays, shape (J,)
        Arrival, static reservation (held while resident) and largest single layer.
    layer_ptr : int64 array, shape (J + 1,)
    runtime_ns, transfer_ns, link : int64 arrays, shape (L,)
        Time the layer holds the device (from manifests: stretched where link-bound, as
        :func:`~magnum_lib.graph.reserve.reserve` does), transfer time after the layer,
        link index into ``link_names`` (-1 none).
    job_ids : tuple[str, ...]
    """

    device: str
    capacity_bytes: int
    arrival_ns: np.ndarray
    reserve_bytes: np.ndarray
    largest_layer_bytes: np.ndarray
    layer_ptr: np.ndarray
    runtime_ns: np.ndarray
    transfer_ns: np.ndarray
    link: np.ndarray
    link_names: tuple
    job_ids: tuple

    def __len__(self) -> int:
        return len(self.job_ids)

    @property
    def layer_job(self) -> np.ndarray:
        """Job index of every layer."""
        return np.repeat(np.arange(len(self)), np.diff(self.layer_ptr))


def _link_codes(names) -> tuple[np.ndarray, tuple]:
    link_names = tuple(sorted({n for n in names if n}))
    codes = np.array([link_names.index(n) if n else -1 for n in names], dtype=np.int64)
    return codes, link_names


def make_inference_graphs(n: int, seed: int = 0, runtime_spread: float = 0.5, memory_pressure: float = 0.1,
                          device: str = "mtia_v2", layers: tuple = (4, 12), comm: float = 0.5,
                          load: float | None = None, catalog: Catalog | None = None) -> JobSet:
    """Seeded synthetic inference graphs for one device type.

    Parameters
    ----------
    n : int in [1, MAX_GRAPHS]
        Number of jobs (graphs); ``n x layers[1]`` is at most ``MAX_TOTAL_LAYERS``.
    seed : int in [0, 2^128)
        Seed of the one numpy Generator every draw comes from.
    runtime_spread : float >= 0
        Sigma of the lognormal layer runtimes (median 500 us); 0 makes every layer equal.
    memory_pressure : float in (0, 1]
        Mean static reservation of a job as a fraction of device memory (uniform in
        0.5x-1.5x of it, capped at the device): 0.1 lets about ten jobs be resident.
    device : str
        Catalog key or alias; its memory is the capacity, its interconnect the link.
    layers : (int, int)
        Inclusive range of layers per graph, within [1, MAX_LAYERS_PER_GRAPH].
    comm : float >= 0
        Each layer, with probability 1/2, sends its output over the device's interconnect
        afterwards, taking ``uniform(0, 2 * comm) * runtime`` (drawn as bytes at the link's
        per-direction bandwidth); 0 turns transfers off.
    load : float in [1e-3, 100], optional
        None: every job arrives at t = 0 (a batch). Else Poisson arrivals offering this
        much compute per unit time (0.8 = the device 80% busy with useful work).
    """
    n = check_int("n", n, 1, MAX_GRAPHS)
    seed = check_int("seed", seed, 0, 2**128 - 1)
    if isinstance(runtime_spread, bool) or not isinstance(runtime_spread, (int, float)) \
            or not 0 <= runtime_spread <= 3:
        raise ParameterError("runtime_spread", f"must be a number in [0, 3], got {runtime_spread!r}")
    memory_pressure = check_positive("memory_pressure", memory_pressure, maximum=1.0)
    if isinstance(comm, bool) or not isinstance(comm, (int, float)) or not 0 <= comm <= 10:
        raise ParameterError("comm", f"must be a number in [0, 10], got {comm!r}")
    if not (isinstance(layers, (tuple, list)) and len(layers) == 2):
        raise ParameterError("layers", f"must be a pair (min, max), got {layers!r}")
    lo = check_int("layers[0]", layers[0], 1, MAX_LAYERS_PER_GRAPH)
    hi = check_int("layers[1]", layers[1], lo, MAX_LAYERS_PER_GRAPH)
    if n * hi > MAX_TOTAL_LAYERS:
        raise ParameterError("n", f"times the most layers per graph ({hi}) must be <= "
                                  f"{MAX_TOTAL_LAYERS} layers, got {n} graphs ({n * hi} layers)")
    if load is not None:
        load = check_positive("load", load, LOAD_RANGE[1])
        if load < LOAD_RANGE[0]:
            raise ParameterError("load", f"must be in [{LOAD_RANGE[0]:g}, {LOAD_RANGE[1]:g}], got {load!r}")
    acc = (catalog or default_catalog())[device]

    rng = np.random.default_rng(seed)
    n_layers = rng.integers(lo, hi + 1, n)
    ptr = np.concatenate(([0], np.cumsum(n_layers))).astype(np.int64)
    total = int(ptr[-1])
    runtime = np.maximum(1, np.rint(_MEDIAN_LAYER_NS * rng.lognormal(0.0, runtime_spread, total))).astype(np.int64)
    job_of = np.repeat(np.arange(n), n_layers)
    target = np.minimum(memory_pressure * acc.memory_bytes * rng.uniform(0.5, 1.5, n), acc.memory_bytes)
    weight = rng.exponential(1.0, total)
    share = weight / np.bincount(job_of, weight)[job_of]
    memory = np.maximum(1, np.floor(target[job_of] * share)).astype(np.int64)
    sends = rng.random(total) < 0.5
    fraction = rng.uniform(0.0, 2.0 * comm, total)
    nbytes = np.where(sends, np.rint(runtime / 1e9 * fraction * acc.interconnect.per_direction_Bps), 0)
    names = [acc.interconnect.name if b > 0 else None for b in nbytes]
    xfer = transfer_ns(nbytes.astype(np.int64), names)
    if load is None:
        arrival = np.zeros(n, np.int64)
    else:
        mean_work = runtime.sum() / n
        gaps = rng.exponential(mean_work / load, n)
        arrival_f = np.rint(np.concatenate(([0.0], np.cumsum(gaps)[:-1])))
        if arrival_f[-1] + runtime.sum(dtype=np.float64) >= _ref.MAX_HORIZON_NS / 2:
            raise ParameterError("load", f"{load!r} spreads {n} arrivals past the int64 ns clock; "
                                         "use a higher load or fewer graphs")
        arrival = arrival_f.astype(np.int64)
    link, link_names = _link_codes(names)
    reserve = np.bincount(job_of, memory, minlength=n).astype(np.int64)
    largest = np.maximum.reduceat(memory, ptr[:-1]).astype(np.int64)
    return JobSet(acc.key, acc.memory_bytes, arrival, reserve, largest, ptr, runtime, xfer, link, link_names,
                  tuple(f"job{i}" for i in range(n)))


def jobs_from_manifests(manifests, device=None, arrivals_s=None, catalog: Catalog | None = None) -> JobSet:
    """A :class:`JobSet` from validated manifests (default device: the first one's ``gpu_type``).

    ``arrivals_s`` (seconds, one per manifest) defaults to all at 0. Layer times are the
    device's, by the rule :func:`~magnum_lib.graph.reserve.reserve` uses
    (:func:`~magnum_lib.graph.reserve.layer_timing`): a layer whose bandwidth demand
    exceeds the device's link holds it longer, and a transfer crosses the link the device
    has; so one graph packed alone runs exactly as it is reserved.
    """
    manifests = list(manifests)
    if not manifests:
        raise ParameterError("manifests", "must hold at least one manifest, got none")
    bad = next((m for m in manifests if not isinstance(m, Manifest)), None)
    if bad is not None:
        raise ParameterError("manifests", f"must be Manifests (see parse_manifest), got {type(bad).__name__}")
    acc = (catalog or default_catalog())[device or manifests[0].gpu_type]
    arrivals = np.zeros(len(manifests)) if arrivals_s is None else np.asarray(arrivals_s, dtype=np.float64)
    if arrivals.shape != (len(manifests),) or not np.all(np.isfinite(arrivals)) or np.any(arrivals < 0):
        raise ParameterError("arrivals_s", f"must be {len(manifests)} finite seconds >= 0, got {excerpt(arrivals_s)}")
    try:
        timings = [layer_timing(m.layers, acc) for m in manifests]
    except ValueError as exc:  # "device: on <key> layer <name> would run past 2^62 ns"
        raise ParameterError("device", str(exc).removeprefix("device: ")) from None
    xfer = np.concatenate([t.transfer_ns for t in timings])
    links = [name for t in timings for name in t.links]
    link, link_names = _link_codes([name if x else None for name, x in zip(links, xfer, strict=True)])
    return JobSet(
        acc.key, acc.memory_bytes, to_ns(arrivals),
        np.array([m.peak_memory_bytes for m in manifests], np.int64),
        np.array([max(layer.memory_bytes for layer in m.layers) for m in manifests], np.int64),
        np.concatenate(([0], np.cumsum([len(m.layers) for m in manifests]))).astype(np.int64),
        np.concatenate([t.runtime_ns for t in timings]), xfer, link, link_names,
        tuple(m.job_id for m in manifests))


@dataclass(frozen=True, eq=False)
class PackResult:
    """A schedule of every layer of a :class:`JobSet` under one policy.

    Times are int64 ns arrays; ``*_s`` properties are seconds. A Gantt chart draws one bar
    per layer: row ``jobs.layer_job``, from ``start_ns`` to ``end_ns``.
    """

    policy: str
    jobs: JobSet
    start_ns: np.ndarray
    end_ns: np.ndarray
    xfer_start_ns: np.ndarray
    xfer_end_ns: np.ndarray
    admit_ns: np.ndarray
    done_ns: np.ndarray
    held_bytes: np.ndarray
    switch_ns: int
    backend: str
    wall_s: float

    @property
    def makespan_ns(self) -> int:
        """From the first arrival to the last release."""
        return int(self.done_ns.max() - self.jobs.arrival_ns.min())

    @property
    def busy_ns(self) -> int:
        """Useful compute time (sum of layer runtimes)."""
        return int(self.jobs.runtime_ns.sum())

    @property
    def utilization(self) -> float:
        return self.busy_ns / self.makespan_ns

    @property
    def latency_s(self) -> np.ndarray:
        """Per job, arrival to release, seconds."""
        return (self.done_ns - self.jobs.arrival_ns) / 1e9

    def memory_timeline(self) -> tuple[np.ndarray, np.ndarray]:
        """``(t_ns, bytes)``: memory held from ``t_ns[i]`` until ``t_ns[i + 1]``.

        Releases at an instant are applied before admissions at that instant, as the packer does.
        """
        t = np.concatenate((self.done_ns, self.admit_ns))
        delta = np.concatenate((-self.held_bytes, self.held_bytes))
        order = np.lexsort((delta, t))
        return t[order], np.cumsum(delta[order])

    @property
    def peak_memory_bytes(self) -> int:
        return int(self.memory_timeline()[1].max())

    def gantt(self) -> dict:
        """Bars for a Gantt chart, seconds: ``ax.broken_barh`` or ``ax.barh(job, duration_s, left=start_s)``.

        ``job``, ``start_s``, ``duration_s`` per layer; ``xfer_job``, ``xfer_start_s``,
        ``xfer_duration_s`` per transfer.
        """
        has = self.xfer_start_ns >= 0
        return {"job": self.jobs.layer_job, "start_s": self.start_ns / 1e9,
                "duration_s": (self.end_ns - self.start_ns) / 1e9, "xfer_job": self.jobs.layer_job[has],
                "xfer_start_s": self.xfer_start_ns[has] / 1e9,
                "xfer_duration_s": (self.xfer_end_ns - self.xfer_start_ns)[has] / 1e9}

    def to_dict(self) -> dict:
        """JSON-ready scalars."""
        lat = self.latency_s
        return {
            "policy": self.policy, "device": self.jobs.device, "jobs": len(self.jobs),
            "layers": int(self.jobs.runtime_ns.size), "utilization": self.utilization,
            "makespan_s": self.makespan_ns / 1e9, "p50_latency_s": float(np.percentile(lat, 50)),
            "p99_latency_s": float(np.percentile(lat, 99)), "mean_latency_s": float(lat.mean()),
            "peak_memory_bytes": self.peak_memory_bytes, "device_memory_bytes": self.jobs.capacity_bytes,
            "switch_s": self.switch_ns / 1e9, "backend": self.backend,
        }


_INT_FIELDS = ("arrival_ns", "reserve_bytes", "largest_layer_bytes", "layer_ptr", "runtime_ns",
               "transfer_ns", "link")


def _check_jobset(jobs: JobSet) -> None:
    """The kernels trust their arrays (no bounds checks): check a hand-built JobSet once here.

    Integer arrays only (a NaN or a float is refused, not truncated), consistent lengths,
    runtimes of at least 1 ns, and a horizon that keeps every time inside int64 ns.
    """
    n = len(jobs.job_ids)
    problems = []
    for name in _INT_FIELDS:
        a = getattr(jobs, name)
        if not isinstance(a, np.ndarray) or a.dtype.kind not in "iu" \
                or not np.can_cast(a.dtype, np.int64, casting="safe") or a.ndim != 1:
            problems.append(f"{name} must be a 1-D int64 array, got "
                            f"{getattr(a, 'dtype', type(a).__name__)} {getattr(a, 'shape', '')}")
    if isinstance(jobs.capacity_bytes, bool) or not isinstance(jobs.capacity_bytes, (int, np.integer)) \
            or not 0 < jobs.capacity_bytes <= _ref.MAX_CAPACITY_BYTES:
        problems.append(f"capacity_bytes must be an integer in [1, {_ref.MAX_CAPACITY_BYTES}], "
                        f"got {excerpt(jobs.capacity_bytes)}")
    if problems:
        raise ParameterError("jobs", "; ".join(problems))
    n_layers, ptr = jobs.runtime_ns.size, jobs.layer_ptr
    if n == 0:
        problems.append("has no jobs")
    for name in ("arrival_ns", "reserve_bytes", "largest_layer_bytes"):
        if getattr(jobs, name).shape != (n,):
            problems.append(f"{name} must have one entry per job ({n})")
    for name in ("transfer_ns", "link"):
        if getattr(jobs, name).shape != (n_layers,):
            problems.append(f"{name} must have one entry per layer ({n_layers})")
    if ptr.shape != (n + 1,) or ptr[0] != 0 or ptr[-1] != n_layers or (np.diff(ptr) < 1).any():
        problems.append("layer_ptr must rise from 0 to the layer count, at least one layer per job")
    if not problems:
        if (jobs.arrival_ns < 0).any() or (jobs.transfer_ns < 0).any() \
                or (jobs.reserve_bytes < 0).any() or (jobs.largest_layer_bytes < 0).any():
            problems.append("times and sizes must be >= 0")
        if (jobs.runtime_ns < 1).any():
            problems.append("runtime_ns must be >= 1 ns for every layer")
        if ((jobs.link < -1) | (jobs.link >= len(jobs.link_names))).any() or \
                ((jobs.transfer_ns > 0) & (jobs.link < 0)).any():
            problems.append("link must index link_names (-1 only for layers without a transfer)")
    if not problems:
        horizon = (float(jobs.arrival_ns.max()) + jobs.runtime_ns.sum(dtype=np.float64)
                   + jobs.transfer_ns.sum(dtype=np.float64) + n_layers * _MAX_SWITCH_NS)
        if horizon >= _ref.MAX_HORIZON_NS:
            problems.append(f"would run past {_ref.MAX_HORIZON_NS} ns (int64 clock): last arrival + "
                            f"runtimes + transfers + switches = {horizon:.3g} ns")
    if problems:
        raise ParameterError("jobs", "; ".join(problems))


def pack(jobs: JobSet, policy: str = "packed", window: int = DEFAULT_WINDOW, switch_s: float | None = None,
         kernel=None) -> PackResult:
    """Schedule ``jobs`` on one device of their type under ``policy`` (see the module docstring).

    Parameters
    ----------
    jobs : JobSet
    policy : {"packed", "exclusive", "dynamic"}
    window : int >= 1
        Waiting jobs examined per admission round (first-fit backfilling within it).
    switch_s : float >= 0, optional
        Overhead per change of job, seconds; default 0, or 25 us for ``"dynamic"``.
    kernel : module, optional
        ``packing_ref`` or the compiled ``_packing``; default the active backend.
    """
    if not isinstance(jobs, JobSet):
        raise TypeError(f"jobs must be a JobSet (make_inference_graphs / jobs_from_manifests), "
                        f"got {type(jobs).__name__}")
    _check_jobset(jobs)
    check_choice("policy", policy, POLICIES)
    window = check_int("window", window, 1)
    if switch_s is None:
        switch_s = DEFAULT_DYNAMIC_SWITCH_S if policy == "dynamic" else 0.0
    if isinstance(switch_s, bool) or not isinstance(switch_s, (int, float)) or not 0 <= switch_s < 1:
        raise ParameterError("switch_s", f"must be seconds in [0, 1), got {excerpt(switch_s)}")
    held = jobs.largest_layer_bytes if policy == "dynamic" else jobs.reserve_bytes
    too_big = np.flatnonzero(held > jobs.capacity_bytes)
    if too_big.size:
        j = int(too_big[0])
        raise ParameterError("jobs", f"job {jobs.job_ids[j]!r} needs {int(held[j])} bytes, more than "
                                     f"{jobs.device}'s {jobs.capacity_bytes}")
    kernel = kernel or _impl
    switch_ns = int(round(switch_s * 1e9))
    started = _time.perf_counter()
    out = kernel.pack_kernel(jobs.arrival_ns, held, jobs.layer_ptr, jobs.runtime_ns, jobs.transfer_ns,
                             jobs.link, len(jobs.link_names), jobs.capacity_bytes,
                             1 if policy == "exclusive" else len(jobs), window, switch_ns)
    wall = _time.perf_counter() - started
    name = "python" if kernel.__name__.endswith("_ref") else "compiled"
    return PackResult(policy, jobs, *out, held_bytes=held, switch_ns=switch_ns, backend=name, wall_s=wall)


def utilization_vs_load(loads, n: int = 200, seed: int = 0, **graph_kwargs) -> dict:
    """Utilization and p99 latency of every policy at each offered ``load`` (one seed).

    Returns ``{"load": array, "<policy>_utilization": array, "<policy>_p99_latency_s": array}``;
    ``graph_kwargs`` go to :func:`make_inference_graphs`.
    """
    loads = np.asarray(loads, dtype=np.float64)
    out = {"load": loads}
    rows = [compare_policies(make_inference_graphs(n, seed, load=float(x), **graph_kwargs)) for x in loads]
    for p in POLICIES:
        out[f"{p}_utilization"] = np.array([r[p].utilization for r in rows])
        out[f"{p}_p99_latency_s"] = np.array([r[p].to_dict()["p99_latency_s"] for r in rows])
    return out


def compare_policies(jobs: JobSet, window: int = DEFAULT_WINDOW,
                     dynamic_switch_s: float = DEFAULT_DYNAMIC_SWITCH_S) -> dict:
    """``{policy: PackResult}`` for the same jobs under all three policies."""
    return {p: pack(jobs, p, window, dynamic_switch_s if p == "dynamic" else 0.0) for p in POLICIES}
