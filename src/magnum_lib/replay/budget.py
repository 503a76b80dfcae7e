"""How much memory and time a replay will take, estimated before its loop allocates anything.

A replay's work is its events (about three per job: arrival, start, finish), the
policy's rounds for a round-based policy (the trace's span / ``round_s``), and per event
the Python loop's pass over every GPU (its utilization sample). Constants were measured on
the build machine (2 shared cores) with ``faux-magnum replay --trace tiresias ... --json``;
they are rough (a factor of two either way), which is what refusing a run that would need
8 GiB or a day needs. :func:`check_budget` raises one ParameterError naming the flag to lower.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from magnum_lib.base.validate import ParameterError

__all__ = ["ReplayEstimate", "estimate", "check_budget", "DEFAULT_MAX_MEMORY", "DEFAULT_MAX_WALL_S",
           "GENERATE_JOB_S", "READ_BYTES_S"]

DEFAULT_MAX_MEMORY = 4 * 2**30
DEFAULT_MAX_WALL_S = 600.0
NS = 1_000_000_000

BASE_BYTES = 100e6
JOB_BYTES = 400  # the job arrays, the policy's read-only copies, one JobView each, results
GPU_BYTES = 48  # the loop's per-GPU arrays (free capacity, owner, type) and the fast loop's scratch
EVENT_BYTES = 16  # the utilization series
PY_EVENT_S = 60e-6  # the Python loop: 2,000 Gavel-style jobs under fifo-strict took 1.1 s
PY_GPU_S = 1e-9  # per GPU per event (the busy-GPU sum)
FAST_EVENT_S = 1e-6  # the compiled loops
FAST_GPU_S = 2e-9  # the compiled loop's scratch, once
ROUND_S = 200e-6  # a round of a round-based policy in the Python loop (ftf, 1 s rounds: 175 us)
LP_S = 10e-3  # an LP a Gavel round solves when the jobs changed (gavel, 10 s rounds: 9 ms a round)
GENERATE_JOB_S = 30e-6  # generating a Gavel-style job (100 k jobs in 2.6 s)
READ_BYTES_S = 11e6  # reading and checking a CSV trace (a 16 MB Philly file: 1.43 s of CPU)


@dataclass(frozen=True)
class ReplayEstimate:
    jobs: int
    gpus: int
    events: float
    rounds: float
    memory_bytes: float
    wall_s: float

    def describe(self) -> str:
        from magnum_lib.units import format_duration, format_size

        return (f"about {format_size(self.memory_bytes, binary=True, digits=1)} and "
                f"{format_duration(int(min(self.wall_s, 1e12) * 1e9), digits=1)} ({self.jobs:,} jobs, "
                f"{self.gpus:,} GPUs" + (f", {self.rounds:.3g} rounds)" if self.rounds else ")"))


def span_s(jobs, gpus: int) -> float:
    """A lower estimate of the replay's makespan: the last arrival plus the GPU-time / GPUs."""
    if len(jobs) == 0:
        return 0.0
    work = float(np.sum(jobs.work_ns.astype(np.float64) * jobs.num_gpus)) / NS
    return float(jobs.submit_ns.max()) / NS + work / max(gpus, 1) + float(jobs.work_ns.max()) / NS


def estimate(jobs, cluster, round_s: float | None, fast: bool, lp: bool = False) -> ReplayEstimate:
    """Estimate a replay of ``jobs`` on ``cluster`` (``round_s``: the policy's; ``fast``: a compiled
    loop runs it; ``lp``: each round may solve an LP, as Gavel's policies do)."""
    n, g = len(jobs), cluster.total_gpus
    events = 3.0 * n
    rounds = span_s(jobs, g) / round_s if round_s else 0.0
    if fast:
        wall = events * FAST_EVENT_S + g * FAST_GPU_S
    else:
        wall = (events + rounds) * (PY_EVENT_S + g * PY_GPU_S) + rounds * ROUND_S
    if lp:
        wall += min(rounds, 2 * n) * LP_S
    memory = BASE_BYTES + n * JOB_BYTES + g * GPU_BYTES + (events + rounds) * EVENT_BYTES
    return ReplayEstimate(n, g, events, rounds, memory, wall)


def check_budget(est: ReplayEstimate, max_memory=DEFAULT_MAX_MEMORY, max_wall_s=DEFAULT_MAX_WALL_S) -> None:
    """Raise ParameterError naming what to lower if ``est`` passes a limit (None: no limit)."""
    from magnum_lib.units import format_duration, format_size

    if max_memory is not None and est.memory_bytes > max_memory:
        knob = "nodes" if est.gpus * GPU_BYTES > est.jobs * JOB_BYTES else "max_jobs"
        limit, opt = f"the limit is {format_size(max_memory, binary=True, digits=1)}", "max_memory"
    elif max_wall_s is not None and est.wall_s > max_wall_s:
        knob = "round_s" if est.rounds > est.events else ("nodes" if est.gpus > 100_000 else "max_jobs")
        limit, opt = f"the limit is {format_duration(int(max_wall_s * 1e9), digits=1)}", "max_wall_s"
    else:
        return
    what = {"round_s": "raise round_s", "nodes": "lower nodes or gpus_per_node",
            "max_jobs": "keep fewer jobs (max_jobs)"}[knob]
    raise ParameterError(knob, f"makes a replay needing {est.describe()}; {limit}: {what}, or raise {opt}")
