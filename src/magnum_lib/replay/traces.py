"""Trace files -> :class:`~magnum_lib.replay.jobs.ReplayJobs`, through the workload loaders.

* :func:`philly_jobs`: Philly (``vc``, ``min_duration_s``, ``gpu_counts`` filters;
  arrivals relative to the first kept job; 0-s durations raised to 1 s).
* :func:`tiresias_jobs`: Tiresias' 60-job trace (model names kept).
* :func:`alibaba_pods`: Alibaba openb GPU pods (shared GPUs in ``gpu_milli``).
* :func:`gavel_jobs`: Gavel-style jobs, models and scale factors from its throughput
  matrix, speeds relative to V100 (Gavel's ``generate_job``: 80 % of run times
  10^U(1.5, 3) minutes, 20 % 10^U(3, 4) minutes; Poisson arrivals).
* :func:`sample_jobs`: the project's generated sample workload.
"""
from __future__ import annotations

import numpy as np

from magnum_lib.base.validate import ParameterError, check_int, check_positive, excerpt
from magnum_lib.replay.jobs import make_jobs

__all__ = ["philly_jobs", "tiresias_jobs", "alibaba_pods", "gavel_jobs", "sample_jobs", "TRACES"]


def philly_jobs(vc=None, min_duration_s: float = 0.0, gpu_counts=None, max_gpus=None, path=None,
                max_jobs: int | None = None):
    """Philly jobs (all VCs, or one), filtered; the group label is the VC.

    ``max_jobs``: keep the first ``max_jobs`` rows of the file (file order) that pass the
    filters, and stop reading there (a file at its size limit costs only those rows). The
    public list is not in submit order, so these are not its earliest jobs; without
    ``max_jobs`` every row is read and checked.
    """
    from magnum_lib.workload.traces import load_philly

    keep, seen = None, set[str]()
    if max_jobs is not None:
        keep = _philly_row_filter(vc, min_duration_s, gpu_counts, max_gpus, seen)
    p = load_philly(path, keep, max_jobs)
    if len(p) == 0 and not seen:
        raise ValueError(f"{p.path}: no job rows after the header")
    if vc is not None and str(vc) not in (seen or p.vc_names):
        raise ParameterError("vc", f"must be one of the trace's VCs ({', '.join(sorted(seen or p.vc_names))}), "
                                   f"got {excerpt(vc)}")
    keep = np.ones(len(p), bool)
    if vc is not None:
        keep &= p.vc_code == p.vc_names.index(str(vc))
    if min_duration_s:
        keep &= p.duration_s >= float(min_duration_s)
    if gpu_counts is not None:
        keep &= np.isin(p.num_gpus, np.asarray(list(gpu_counts), dtype=np.int64))
    if max_gpus is not None:
        keep &= p.num_gpus <= int(max_gpus)
    idx = np.flatnonzero(keep)
    if idx.size == 0:
        raise ParameterError("vc", "and the filters keep no job of the Philly trace")
    sub = p.submit_s[idx]
    return make_jobs(sub - sub[0], np.maximum(p.duration_s[idx], 1.0), p.num_gpus[idx],
                     group=np.asarray(p.vc_names, dtype=object)[p.vc_code[idx]],
                     name=f"philly{'-' + str(vc) if vc is not None else ''}")


def _philly_row_filter(vc, min_duration_s, gpu_counts, max_gpus, seen: set):
    """``keep(row)`` for :func:`load_philly`: the filters on a row's strings (VCs met go into
    ``seen``). A value that does not parse is kept, so the loader's check names it."""
    counts = None if gpu_counts is None else {int(g) for g in gpu_counts}
    lo = float(min_duration_s or 0.0)

    def keep(row) -> bool:
        seen.add(row[4])
        if vc is not None and row[4] != str(vc):
            return False
        try:
            if lo and float(row[1]) < lo:
                return False
            g = int(row[2])
        except ValueError:
            return True
        return (counts is None or g in counts) and (max_gpus is None or g <= int(max_gpus))

    return keep


def tiresias_jobs(path=None):
    """Tiresias' 60-job trace (``60_job.csv``), or a trace file in its format at ``path``;
    model names as the group, named ``tiresias-<jobs>``."""
    from magnum_lib.workload.jobtraces import load_tiresias_jobs

    t = load_tiresias_jobs(path)
    order = np.argsort(t.submit_s, kind="stable")
    if not np.array_equal(order, np.arange(len(t))):
        raise ParameterError("path", "Tiresias trace must list jobs in submit order")
    return make_jobs(t.submit_s, t.duration_s, t.num_gpu, group=list(t.model_name),
                     model=list(t.model_name), name=f"tiresias-{len(t)}")


def alibaba_pods(cluster=None, path=None, inflate=None, seed: int = 0):
    """Alibaba openb GPU pods: submit = creation, duration = deletion - creation (>= 1 s).

    CPU-only pods (``num_gpu == 0``) are left out. ``gpu_spec`` (e.g. ``"V100M16|V100M32"``)
    restricts a pod to those GPU models when ``cluster`` (the openb nodes) is given.
    ``inflate`` (e.g. 1.3): the FGD paper's workload instead, requesting that many times
    the GPUs of ``cluster`` (default: the openb nodes), drawn with ``seed``
    (:mod:`magnum_lib.workload.inflate`); its pods arrive 1 s apart in the shuffled
    order (for :func:`magnum_lib.replay.fill.fill`, where only the order counts).
    """
    from magnum_lib.workload.traces import load_alibaba_pods

    p = load_alibaba_pods(path)
    if inflate is not None:
        from magnum_lib.workload.inflate import inflate as _inflate
        from magnum_lib.workload.traces import load_alibaba_nodes

        cap = cluster.total_gpus if cluster is not None else int(load_alibaba_nodes().gpu.sum())
        p = _inflate(p, cap, inflate, seed)
    idx = np.flatnonzero(p.num_gpu > 0)
    mask = None
    if cluster is not None:
        names = list(cluster.type_names)
        bits = []
        for code in p.gpu_spec_code[idx]:
            spec = p.gpu_spec_names[code]
            m = 0
            for part in filter(None, spec.split("|")):
                if part in names:
                    m |= 1 << names.index(part)
            bits.append(m)
        mask = np.array(bits, dtype=np.int64)
    sub = p.creation_s[idx]
    dur = np.maximum(p.deletion_s[idx] - sub, 1.0)
    qos = np.asarray(p.qos_names, dtype=object)[p.qos_code[idx]]
    arrive = sub - sub.min() if inflate is None else np.arange(idx.size, dtype=np.float64)
    return make_jobs(arrive, dur, p.num_gpu[idx], gpu_milli=p.gpu_milli[idx], type_mask=mask,
                     group=qos, name="alibaba-openb" if inflate is None else f"alibaba-openb-x{inflate:g}")


def gavel_jobs(n: int = 100, jobs_per_hour: float = 10.0, seed: int = 0,
               gpu_types=("v100", "p100", "k80"), path=None):
    """Gavel-style jobs: model and scale factor drawn from the matrix, speeds per type."""
    from magnum_lib.workload.traces import load_gavel_throughputs

    n = check_int("n", n, 1, 10_000_000)
    rate = check_positive("jobs_per_hour", jobs_per_hour)
    thr = load_gavel_throughputs(path)
    types = tuple(gpu_types)
    for t in types:
        if t not in thr.gpu_types:
            raise ParameterError("gpu_types", f"unknown type {t!r} (matrix has {', '.join(thr.gpu_types)})")
    kinds = sorted({(m, g) for (m, g, t) in thr.isolated
                    if all(thr.isolated.get((m, g, u), 0) > 0 for u in types)})
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, len(kinds), size=n)
    long = rng.random(n) >= 0.8
    minutes = np.where(long, 10 ** rng.uniform(3, 4, n), 10 ** rng.uniform(1.5, 3, n))
    arrivals = np.cumsum(rng.exponential(3600.0 / rate, n))
    arrivals -= arrivals[0]
    ref = types[0]
    speed = np.array([[thr.isolated[(kinds[k][0], kinds[k][1], t)] / thr.isolated[(kinds[k][0], kinds[k][1], ref)]
                       for t in types] for k in pick])
    models = [kinds[k][0] for k in pick]
    gpus = np.array([kinds[k][1] for k in pick], dtype=np.int64)
    return make_jobs(arrivals, minutes * 60.0, gpus, speed=speed, model=models, group=models,
                     name=f"gavel-{n}")


def sample_jobs(path=None):
    """The project's generated sample workload (data/sample_workload.csv)."""
    from magnum_lib.workload.jobs import load_sample_workload

    w = load_sample_workload(path)
    return make_jobs(w.submit_s, w.duration_s, w.num_gpus, name="sample")


TRACES = ("philly", "tiresias", "alibaba", "gavel", "sample")
