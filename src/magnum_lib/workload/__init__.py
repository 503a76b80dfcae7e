"""Workloads: seeded arrival generators, heavy-tailed service times, real-trace loaders.

Generators return arrival times in float64 seconds (``unit="ns"`` for int64
nanoseconds, or :func:`to_ns` later); :class:`Workload` holds a job stream as
parallel numpy arrays; :func:`load_sample_workload` reads the shipped
Philly-calibrated sample. Trace loaders read the public files described in
``../shared/data/README.md``.
"""
from magnum_lib.workload import generators, jobs, traces
from magnum_lib.workload._validate import to_ns
from magnum_lib.workload.generators import *  # noqa: F401,F403 - names listed in generators.__all__
from magnum_lib.workload.jobs import *  # noqa: F401,F403
from magnum_lib.workload.traces import *  # noqa: F401,F403

__all__ = ["to_ns", *generators.__all__, *jobs.__all__, *traces.__all__]
