"""Heterogeneity-aware allocation (Gavel, Narayanan et al., OSDI 2020) against a blind one.

An allocation ``X[j, k]`` is the fraction of time job ``j`` spends on a device of type
``k``. It is feasible when every row sums to at most 1 (a job runs on one device at a
time) and every column to at most ``count[k]`` (no type is oversubscribed). Job ``j``'s
effective throughput is ``sum_k T[j, k] * X[j, k]`` with ``T`` its measured throughput on
each type (steps/s).

* ``"throughput"`` objective: maximise the total *normalised* throughput
  ``sum_j sum_k X[j, k] * T[j, k] / max_k T[j, k]`` (each job counted in units of its
  best device, so fast and slow models weigh the same) - a linear program, solved with
  SciPy's HiGHS as Gavel does with cvxpy.
* ``"maxmin"`` objective (Gavel's LAS policy): maximise the least
  ``throughput_j / throughput_j(blind)``, the speed-up over the blind share.

The *heterogeneity-blind* allocation treats devices as interchangeable: each job gets the
same share ``s = min(1, N / J)`` of device time, spread over the types in proportion to
their counts (``X[j, k] = s * count[k] / N``, ``N`` devices, ``J`` jobs).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog

from magnum_lib.base.validate import ParameterError, check_choice, check_int
from magnum_lib.hardware import Catalog, UnknownAcceleratorError, cost_matrix, default_catalog

__all__ = ["ThroughputMatrix", "Allocation", "parse_cluster", "gavel_matrix", "roofline_matrix",
           "blind_allocation", "allocate", "compare"]

GAVEL_TYPES = ("k80", "p100", "v100")
ROOFLINE_TYPES = ("h100_sxm", "mi300x", "mtia_v2")
OBJECTIVES = ("throughput", "maxmin")


@dataclass(frozen=True, eq=False)
class ThroughputMatrix:
    """Throughput of each job on each device type.

    Attributes
    ----------
    jobs : tuple[str, ...]
        Job (model) names, one per row.
    types : tuple[str, ...]
        Device types (catalog keys), one per column.
    steps_per_s : float64 array, shape (J, K)
        Positive throughputs.
    source : str
    """

    jobs: tuple
    types: tuple
    steps_per_s: np.ndarray
    source: str

    def __post_init__(self):
        # A zero, negative or NaN throughput would make ``normalised`` and every total
        # meaningless (a negative one reported a total of 2.0): refused where it is built.
        t = np.asarray(self.steps_per_s)
        want = (len(self.jobs), len(self.types))
        if t.shape != want or t.dtype.kind not in "iuf":
            raise ParameterError("steps_per_s", f"must be a {want[0]} x {want[1]} array of numbers (jobs x types), "
                                                f"got {t.dtype} of shape {t.shape}")
        bad = ~(np.isfinite(t) & (t > 0))
        if bad.any():
            j, k = np.argwhere(bad)[0]
            raise ParameterError("steps_per_s", f"must be finite and > 0, got {float(t[j, k])!r} for job "
                                                f"{self.jobs[j]!r} on {self.types[k]}")

    @property
    def normalised(self) -> np.ndarray:
        """Each row divided by its maximum (1 on the job's best type)."""
        return self.steps_per_s / self.steps_per_s.max(axis=1, keepdims=True)


def parse_cluster(text, catalog: Catalog | None = None) -> dict:
    """``"v100:16,p100:16,k80:16"`` -> ``{"v100": 16, "p100": 16, "k80": 16}`` (catalog keys).

    Raises ParameterError (name ``cluster``) naming the bad entry.
    """
    if isinstance(text, dict):
        items = list(text.items())
    elif isinstance(text, str) and text.strip():
        items = []
        for part in text.split(","):
            m = re.fullmatch(r"\s*([^:\s]+)\s*:\s*(\S+)\s*", part)
            if m is None:
                raise ParameterError("cluster", f"entry {part!r} is not TYPE:COUNT, e.g. 'v100:16'")
            items.append((m.group(1), m.group(2)))
    else:
        raise ParameterError("cluster", f"must be 'TYPE:COUNT,...' such as 'v100:16,p100:16', got {text!r}")
    catalog = catalog or default_catalog()
    counts: dict[str, int] = {}
    for name, count in items:
        try:
            key = catalog.resolve(str(name).replace("-", "_"))
        except UnknownAcceleratorError:
            raise ParameterError("cluster", f"unknown device type {name!r}; known: {', '.join(catalog)}") from None
        if key in counts:
            raise ParameterError("cluster", f"device type {name!r} is given twice")
        try:
            n = int(count)
        except (TypeError, ValueError):
            n = -1
        if n < 1 or str(count).strip() != str(n):
            raise ParameterError("cluster", f"count of {name!r} must be an integer >= 1, got {count!r}")
        counts[key] = n
    return counts


def _draw(names, n, seed):
    """``n`` job indices: all names once (in order) when ``n`` is None, else a seeded draw."""
    if n is None:
        return np.arange(len(names))
    n = check_int("jobs", n, 1)
    return np.random.default_rng(check_int("seed", seed, 0)).integers(0, len(names), n)


def gavel_matrix(jobs: int | None = None, seed: int = 0, types=GAVEL_TYPES, gavel=None) -> ThroughputMatrix:
    """Gavel's measured single-GPU throughputs (26 models) for ``jobs`` jobs.

    ``jobs=None`` takes each model once; otherwise models are drawn uniformly with ``seed``.
    ``gavel`` is a loaded :class:`~magnum_lib.workload.traces.GavelThroughputs` (default:
    load it from the shared data, FileNotFoundError when absent).
    """
    if gavel is None:
        from magnum_lib.workload.traces import load_gavel_throughputs
        gavel = load_gavel_throughputs()
    models, types, table = gavel.matrix(1, tuple(types))
    where = f"{gavel.path}: " if getattr(gavel, "path", None) else ""
    if len(models) == 0:
        raise ValueError(f"{where}the Gavel table has no single-GPU model measured on all of {', '.join(types)}")
    pick = _draw(models, jobs, seed)
    rows = table[pick]
    bad = np.flatnonzero(np.isnan(rows).any(axis=1) | (rows <= 0).any(axis=1))
    if bad.size:
        i = int(pick[bad[0]])
        t = int(np.flatnonzero(~(table[i] > 0))[0])
        raise ValueError(f"{where}the Gavel table lacks a positive throughput: model {models[i]!r} on "
                         f"{types[t]} is {table[i, t]!r} (first of {bad.size} drawn jobs)")
    return ThroughputMatrix(tuple(models[i] for i in pick), tuple(types), rows, "gavel")


def roofline_matrix(jobs: int | None = 26, seed: int = 0, types=ROOFLINE_TYPES, precision: str = "bf16",
                    efficiency=1.0, catalog: Catalog | None = None) -> ThroughputMatrix:
    """Synthetic throughputs from the catalog's roofline (``hardware.cost_matrix``).

    Each job is one training/inference step of ``flops`` operations (log-uniform 1e11-1e14)
    at an arithmetic intensity log-uniform in 1-1000 FLOP/byte, so memory-bound and
    compute-bound jobs both occur; throughput = 1 / roofline time.
    """
    n = check_int("jobs", 26 if jobs is None else jobs, 1)
    rng = np.random.default_rng(check_int("seed", seed, 0))
    flops = 10.0 ** rng.uniform(11, 14, n)
    intensity = 10.0 ** rng.uniform(0, 3, n)
    cm = cost_matrix(list(types), flops, flops / intensity, precision, efficiency, catalog=catalog)
    names = tuple(f"job{i} ({intensity[i]:.0f} FLOP/B)" for i in range(n))
    return ThroughputMatrix(names, cm.device_keys, 1.0 / cm.time_s, "roofline")


@dataclass(frozen=True, eq=False)
class Allocation:
    """Time fractions ``x[j, k]`` and what they give.

    Attributes
    ----------
    x : float64 array, shape (J, K)
    job_throughput : float64 array, shape (J,)
        ``sum_k T[j, k] x[j, k]``, steps/s.
    normalised_total : float
        ``sum_j job_throughput[j] / max_k T[j, k]`` (the throughput objective).
    """

    name: str
    x: np.ndarray
    job_throughput: np.ndarray
    normalised_total: float


def _allocation(name: str, tm: ThroughputMatrix, x: np.ndarray) -> Allocation:
    thr = (tm.steps_per_s * x).sum(axis=1)
    return Allocation(name, x, thr, float((tm.normalised * x).sum()))


def _counts(tm: ThroughputMatrix, counts) -> np.ndarray:
    missing = [t for t in tm.types if t not in counts]
    extra = [t for t in counts if t not in tm.types]
    if missing or extra:
        raise ParameterError("cluster", f"types must match the throughput table's {', '.join(tm.types)}; "
                                        f"missing {missing}, not measured {extra}")
    return np.array([counts[t] for t in tm.types], dtype=np.float64)


def blind_allocation(tm: ThroughputMatrix, counts: dict) -> Allocation:
    """Devices as interchangeable: an equal share of each type for every job."""
    c = _counts(tm, counts)
    share = min(1.0, c.sum() / len(tm.jobs))
    return _allocation("blind", tm, np.tile(share * c / c.sum(), (len(tm.jobs), 1)))


def allocate(tm: ThroughputMatrix, counts: dict, objective: str = "throughput") -> Allocation:
    """The heterogeneity-aware allocation: an LP solved with HiGHS (see the module docstring)."""
    check_choice("objective", objective, OBJECTIVES)
    c = _counts(tm, counts)
    n_jobs, n_types = tm.steps_per_s.shape
    nv = n_jobs * n_types
    rows = np.zeros((n_jobs, nv))          # sum_k x[j, k] <= 1
    for j in range(n_jobs):
        rows[j, j * n_types:(j + 1) * n_types] = 1.0
    cols = np.tile(np.eye(n_types), n_jobs)  # sum_j x[j, k] <= count[k]
    a_ub, b_ub = np.vstack((rows, cols)), np.concatenate((np.ones(n_jobs), c))
    if objective == "throughput":
        res = linprog(-tm.normalised.ravel(), A_ub=a_ub, b_ub=b_ub, bounds=(0.0, 1.0), method="highs")
        x = res.x if res.status == 0 else None
    else:
        # Variables [x, z]: maximise z with z <= throughput_j / blind_throughput_j for every j.
        base = blind_allocation(tm, counts).job_throughput
        fair = np.zeros((n_jobs, nv + 1))
        for j in range(n_jobs):
            fair[j, j * n_types:(j + 1) * n_types] = -tm.steps_per_s[j] / base[j]
        fair[:, -1] = 1.0
        a = np.vstack((np.hstack((a_ub, np.zeros((a_ub.shape[0], 1)))), fair))
        b = np.concatenate((b_ub, np.zeros(n_jobs)))
        cost = np.zeros(nv + 1)
        cost[-1] = -1.0
        res = linprog(cost, A_ub=a, b_ub=b, bounds=[(0.0, 1.0)] * nv + [(0.0, None)], method="highs")
        x = res.x[:-1] if res.status == 0 else None
    if x is None:
        raise RuntimeError(f"HiGHS did not solve the allocation LP: {res.message}")
    # Clip solver round-off (1e-12 beyond a bound) so the result is feasible as stated.
    return _allocation(objective, tm, np.clip(x.reshape(n_jobs, n_types), 0.0, 1.0))


def compare(tm: ThroughputMatrix, counts: dict, objective: str = "throughput") -> dict:
    """Aware against blind: a JSON-ready summary.

    ``speedup`` is the ratio of total normalised throughputs (``"throughput"``) or of the
    least per-job speed-up over the blind share (``"maxmin"``, the blind value is 1).
    """
    aware, blind = allocate(tm, counts, objective), blind_allocation(tm, counts)
    if objective == "throughput":
        a, b = aware.normalised_total, blind.normalised_total
    else:
        a, b = float((aware.job_throughput / blind.job_throughput).min()), 1.0
    return {
        "trace": tm.source, "objective": objective, "jobs": len(tm.jobs),
        "cluster": {t: int(n) for t, n in zip(tm.types, _counts(tm, counts), strict=True)},
        "throughput_aware": a, "throughput_blind": b, "speedup": a / b,
        "normalised_total_aware": aware.normalised_total, "normalised_total_blind": blind.normalised_total,
        "time_share_by_type": {t: float(v) for t, v in zip(tm.types, aware.x.sum(axis=0), strict=True)},
    }
