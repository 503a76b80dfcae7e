"""Soft hints for request streams: which nodes each stream (class) should prefer until the next plan.

A latency-critical stream is not one job but a steady demand of devices (its rate x its
service time). The Oracle turns the demand of stream ``c`` into pending jobs of
``job_demand`` devices each (a hint is a soft reservation of that many of a node's free
devices for the stream), enough for ``devices[c]`` devices, and places
every stream's jobs at once with :func:`~magnum_lib.planner.plan.plan` (``"flow"``: the
optimum over the snapshot; one job per node, so the hinted node sets of the streams are
disjoint). The hints of stream ``c`` are the nodes its jobs got.

Equal nodes cost the same to the planner, and :func:`~magnum_lib.planner.classes.unroll`
hands a node class's nodes out in index order, which would hint the first cell (or the
first region of a fleet) only. The snapshot's nodes are therefore presented in a seeded
random order and the chosen nodes mapped back, so ties fall anywhere in the fleet.
"""
from __future__ import annotations

import numpy as np

from magnum_lib.base.validate import ParameterError
from magnum_lib.planner.snapshot import Snapshot

__all__ = ["stream_hints", "jobs_for_devices"]


def jobs_for_devices(devices, job_demand: int, max_jobs: int) -> np.ndarray:
    """Pending jobs per stream: ``ceil(devices / job_demand)``, at most ``max_jobs`` each."""
    d = np.asarray(devices, dtype=np.float64)
    if d.ndim != 1 or not np.all(np.isfinite(d)) or (d.size and d.min() < 0):
        raise ParameterError("devices", "must be a 1-D array of finite device counts >= 0")
    return np.minimum(np.ceil(d / job_demand), max_jobs).astype(np.int64)


def stream_hints(node_group, node_type, node_capacity, node_free, group_bandwidth, jobs, stream_type,
                 stream_priority, job_demand: int, seed: int = 0, type_keys=(), time_s: float = 0.0):
    """Per stream, the nodes the planner hints (int64 arrays, the caller's node numbers).

    ``jobs[c]`` pending jobs of ``job_demand`` devices on ``stream_type[c]`` (-1: any type)
    at priority ``stream_priority[c]`` are planned on the snapshot (nodes permuted by
    ``seed``). Also returns the :class:`~magnum_lib.planner.plan.Plan`.
    """
    from magnum_lib.planner.plan import plan

    jobs = np.asarray(jobs, dtype=np.int64)
    if jobs.ndim != 1 or (jobs.size and jobs.min() < 0):
        raise ParameterError("jobs", "must be a 1-D array of job counts >= 0")
    stream_type = np.asarray(stream_type, dtype=np.int64)
    stream_priority = np.asarray(stream_priority, dtype=np.int64)
    if stream_type.shape != jobs.shape or stream_priority.shape != jobs.shape:
        raise ParameterError("stream_type", f"and stream_priority must have {jobs.size} entries like jobs")
    if isinstance(job_demand, bool) or not isinstance(job_demand, (int, np.integer)) or job_demand < 1:
        raise ParameterError("job_demand", f"must be an integer >= 1, got {job_demand!r}")
    n = len(node_group)
    perm = np.random.default_rng([seed, 17]).permutation(n)
    snap = Snapshot(node_group=np.asarray(node_group)[perm], node_type=np.asarray(node_type)[perm],
                    node_capacity=np.asarray(node_capacity)[perm],
                    node_free=np.minimum(np.maximum(np.asarray(node_free)[perm], 0), np.asarray(node_capacity)[perm]),
                    group_bandwidth=group_bandwidth, job_demand=np.full(int(jobs.sum()), job_demand, dtype=np.int64),
                    job_type=np.repeat(stream_type, jobs), job_comm=np.zeros(int(jobs.sum())),
                    job_priority=np.repeat(np.maximum(stream_priority, 1), jobs), type_keys=tuple(type_keys),
                    time_s=float(time_s))
    p = plan(snap, "flow")
    owner = np.repeat(np.arange(jobs.size), jobs)
    chosen = p.job_node
    out = [perm[chosen[(owner == c) & (chosen >= 0)]].astype(np.int64) for c in range(jobs.size)]
    return out, p

