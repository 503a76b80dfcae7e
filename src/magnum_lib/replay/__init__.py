"""Job-level replay of real cluster traces under pluggable scheduling policies.

Model
-----
Jobs (:class:`ReplayJobs`) arrive at their submit time, wait, run as a gang on all
their GPUs at once (one GPU type per job), may be preempted and resumed (paying
``restore_s`` of checkpoint-restore time without progress at each resume), and
finish when their work is done. Time is int64 ns inside; results are in seconds.

Semantics (the same in the Python loop and the compiled one)
------------------------------------------------------------
* Event order at one instant ``t``: (1) every job whose work is done at ``t``
  finishes and its GPUs are free at once, (2) every job submitted at ``t`` joins
  the queue (trace order), (3) the policy is called once and its decision applied
  (preemptions first, then starts in the order given). So a job submitted at the
  instant another finishes can take its GPUs; this is Tiresias' order (end events,
  then start events, then the scheduling pass) and Gavel's for finished jobs.
* Event-driven policies (``round_s is None``) are called at every instant where a
  job arrives or finishes, or where the policy asked to be woken (a LAS demotion).
  Round-based policies (Gavel, FTF; ``round_s``, default 360 s as Gavel) are called
  only at ``0, round_s, 2 round_s, ...``: GPUs freed mid-round stay idle until then,
  and a job arriving mid-round waits for the next round.
* Ties: jobs are numbered by submit time, ties in trace order; every ranking a
  built-in policy makes breaks ties by that number (lowest first); jobs finishing
  at the same instant are released lowest id first.
* Placement (``pooled``, ``consolidated``, ``spread``, ``random``; see
  :mod:`~magnum_lib.replay.placement`) turns "start job j" into GPU ids. ``pooled`` is
  GPU counting (Tiresias' ``count``, Gavel's simulator), the only one the compiled
  loop handles; the others run in the Python loop.
* Speed: a job on GPU type t progresses at ``speed[j, t]`` (1.0 without a matrix).

Agreement with the published simulators (tests/test_replay_peers.py, on their code)
------------------------------------------------------------------------------
* Tiresias (``run_sim.py --scheme=count``): its event order is ours (ends, then
  arrivals, then one pass; whole seconds). Job for job: ``fifo`` = fifo-strict, ``fjf`` =
  fifo-skip, ``shortest`` = srtf, ``dlas-gpu`` = las (``tiresias_jump=True`` for its
  demotion wake-up formula as run under Python 2.7, floor division; CLI
  ``--las-tiresias-jump``), ``sjf`` = ``SJF(by="gpus", preemptive=True)`` (Tiresias'
  "sjf" is smallest GPU count first, preemptive; it has no SJF by duration, so our
  default sjf is checked against tests/replay_oracle.py only), ``shortest-gpu`` =
  ``SRTF(by="gpu_time", ties="previous")`` (Tiresias keeps equal keys in their previous
  order, a stable sort; ties by id differ on 2 of its 60 jobs on 4x4 GPUs).
* Gavel's simulator (``Scheduler.simulate``) is not our round model: its rounds end when
  their last micro-task ends (``min(360 s, remaining)`` in whole steps), jump to the next
  arrival when idle, recompute the allocation at most every 1920 s (GPUs a finished job
  frees may idle until then), and rank (job, type) pairs by time-based priorities per GPU
  type. :class:`~magnum_lib.replay.gavel_rounds.GavelRounds` is that mechanism (an
  event-driven policy keeping Gavel's clock): with Gavel's FIFO (``GavelFIFO``) it agrees
  job for job; with the max-min LP it agrees job for job when fed Gavel's own LP code, and
  with our HiGHS LP it reaches the same optimum of every LP but, where X is not unique,
  another X (avg JCT within 1% on a Gavel-style trace). Our ``gavel`` / ``gavel-blind``
  (fixed 360 s rounds, round-count priorities) solve the same LP as Gavel's
  ``MaxMinFairnessPolicyWithPerf`` / ``MaxMinFairnessPolicy`` (same optimum; same per-job
  throughput where the optimum fixes it) but schedule it more simply.

Backends: built-in event-driven policies with pooled placement run in the compiled
loop (``_fastloop.pyx``) unless ``MAGNUM_PUREPYTHON=1`` or ``backend="python"``;
``GavelRounds`` / ``GavelFIFO`` with pooled placement and whole GPUs (no type mask) run in
their own compiled loop (``_gavel_rounds.pyx``: the engine loop with Gavel's rounds inlined,
calling Python only for the LP at allocation resets), under the same switches;
everything else (and every user policy, subclasses included) runs in ``event_loop.py``.
Both give the same numbers (tests/test_replay_parity.py, tests/test_replay_gavel_fast.py).
"""
from __future__ import annotations

import time

import numpy as np

from magnum_lib.base.validate import ParameterError, check_choice, check_int
from magnum_lib.replay.api import Decision, JobView, OracleError, Plan, Policy, PolicyError, View, as_policy
from magnum_lib.replay.budget import DEFAULT_MAX_MEMORY, DEFAULT_MAX_WALL_S, check_budget, estimate
from magnum_lib.replay.cluster import ReplayCluster, check_replay_inputs
from magnum_lib.replay.jobs import ReplayJobs, make_jobs
from magnum_lib.replay.metrics import ReplayResult
from magnum_lib.replay.placement import PLACEMENTS
from magnum_lib.replay.policies import SJF, SRTF, FifoSkip, FifoStrict, TiresiasLAS
from magnum_lib.replay.registry import BUILTIN, make_policy

__all__ = ["replay", "ReplayJobs", "make_jobs", "ReplayCluster", "ReplayResult", "Policy",
           "PolicyError", "OracleError", "Decision", "View", "JobView", "Plan", "as_policy", "make_policy",
           "BUILTIN", "PLACEMENTS"]

NS = 1_000_000_000
_FAST_CLASSES = (FifoStrict, FifoSkip, SJF, SRTF, TiresiasLAS)   # the compiled loop's policies


def _isolated_s(jobs, cluster):
    """Run time of each job alone on its fastest allowed GPU type (seconds)."""
    if jobs.speed is None:
        return jobs.work_ns / NS
    best = jobs.speed.max(axis=1)
    return jobs.work_ns / NS / np.where(best > 0, best, np.nan)


def _compiled(module: str, backend):
    """The compiled ``module`` for this call, or None for the Python path.

    ``backend="compiled"`` insists on it (it wins over MAGNUM_PUREPYTHON, as in every
    layer); None follows the active backend as ``_backend.pick`` does (MAGNUM_REQUIRE_COMPILED
    turns a missing extension into an ImportError)."""
    import importlib
    import os

    from magnum_lib import _backend

    if backend == "compiled":
        try:
            return importlib.import_module(module)
        except ImportError:
            raise ImportError(f"backend='compiled' but {module} is not built") from None
    if _backend.backend() != "compiled":
        return None
    try:
        return importlib.import_module(module)
    except ImportError:
        if os.environ.get(_backend._REQUIRE_ENV, "").strip() not in ("", "0"):
            raise
        return None


def _gavel_kernel(pol, jobs, placement, backend):
    """The compiled Gavel-rounds kernel when it can run ``pol`` (else None: the Python loop)."""
    from magnum_lib.replay.gavel_rounds import GavelFIFO, GavelRounds

    if (type(pol) not in (GavelRounds, GavelFIFO) or placement != "pooled" or backend == "python"
            or not jobs.whole_gpus or jobs.type_mask is not None):
        return None
    return _compiled("magnum_lib.replay._gavel_rounds", backend)


def _check_replay_args(jobs, cluster, placement, seed, restore_s, backend) -> int:
    """Check :func:`replay`'s inputs (jobs, cluster, placement, restore_s in s, backend); return the seed."""
    check_replay_inputs(jobs, cluster)
    if len(jobs) == 0:  # every figure would be a mean of nothing (NaN)
        raise ParameterError("jobs", "is empty: nothing to replay (a trace with only its header, or "
                                     "filters that keep no job?)")
    check_choice("placement", placement, PLACEMENTS)
    seed = check_int("seed", seed, 0, 2**63 - 1)
    if not (isinstance(restore_s, (int, float)) and 0 <= restore_s <= 1e6):
        raise ParameterError("restore_s", f"must be seconds in [0, 1e6], got {restore_s!r}")
    if backend not in (None, "compiled", "python"):
        raise ParameterError("backend", f"must be None, 'compiled' or 'python', got {backend!r}")
    return seed


def _fast_loop(pol, jobs, cluster, placement, backend):
    """The fast-loop module for this replay (compiled, else its Python adapter), or None for the readable loop."""
    # Only the shipped classes themselves: a subclass may change schedule(), so it runs in
    # the readable loop (as every user policy does).
    use_fast = (type(pol) in _FAST_CLASSES and getattr(pol, "fast", None) is not None and placement == "pooled"
                and len(cluster.type_names) == 1 and jobs.whole_gpus and jobs.speed is None
                and jobs.type_mask is None and backend != "python")
    if not use_fast:
        return None
    from magnum_lib.replay import fastloop_adapter

    return _compiled("magnum_lib.replay._fastloop", backend) or fastloop_adapter


def replay(jobs: ReplayJobs, cluster: ReplayCluster, policy="fifo-strict", *,
           placement: str = "pooled", seed: int = 0, restore_s: float = 0.0,
           backend: str | None = None, progress: bool | None = None,
           max_memory: float | None = DEFAULT_MAX_MEMORY, max_wall_s: float | None = DEFAULT_MAX_WALL_S,
           clock: list | None = None) -> ReplayResult:
    """Replay ``jobs`` on ``cluster`` under ``policy``.

    Parameters
    ----------
    policy : str, Policy, class or function
        A built-in name (``sorted(BUILTIN)``) or your policy (see :mod:`.api`).
    placement : str
        One of ``PLACEMENTS``.
    seed : int
        For ``random`` placement and randomized policies.
    restore_s : float
        Checkpoint-restore time paid at every resume after a preemption (>= 0).
    backend : None, "compiled" or "python"
        None: compiled when available and the policy has a fast path.
    progress : bool or None
        A tqdm bar over finished jobs; None = only for more than 20,000 jobs.
    max_memory, max_wall_s : float or None
        Refuse (ParameterError) a replay estimated (:mod:`.budget`) to need more bytes or
        seconds, before anything is allocated; None: no limit.
    clock : list or None
        A one-item list kept at the simulated seconds reached (Python loop; what an
        interrupted replay reports).
    """
    seed = _check_replay_args(jobs, cluster, placement, seed, restore_s, backend)
    pol = make_policy(policy) if isinstance(policy, str) else as_policy(policy)
    from magnum_lib.replay import event_loop
    event_loop.check_fits(jobs, cluster)
    gavel = _gavel_kernel(pol, jobs, placement, backend)
    fast = _fast_loop(pol, jobs, cluster, placement, backend)
    round_s = None if pol.round_s is None else event_loop.check_round_s(pol.name, pol.round_s)
    est = estimate(jobs, cluster, round_s, fast=fast is not None or gavel is not None,
                   lp=round_s is not None and pol.name.startswith("gavel"))
    check_budget(est, max_memory, max_wall_s)
    n = len(jobs)
    show = (n > 20_000 or est.wall_s > 10) if progress is None else bool(progress)
    bar = None
    if show and fast is None and gavel is None:
        from tqdm.auto import tqdm

        # A bar that can reach the end is not a bound: say up front what the replay will take.
        bar = tqdm(total=n, desc=f"replay {pol.name}, {est.describe()}", unit="job", leave=False)
    t0 = time.perf_counter()
    try:
        if gavel is not None:
            from magnum_lib.replay.gavel_rounds import run_compiled

            out = run_compiled(gavel, jobs, cluster, pol, restore_s)
            name = "compiled"
        elif fast is not None:
            out = fast.run_fast(jobs.submit_ns, jobs.work_ns, jobs.num_gpus, cluster.total_gpus,
                                pol.fast, round(restore_s * NS))
            name = "compiled" if fast.__name__.endswith("_fastloop") else "python"
        else:
            out = event_loop.run(jobs, cluster, pol, placement, seed, restore_s, bar, clock)
            name = "python"
    finally:
        if bar is not None:
            bar.close()
    wall = time.perf_counter() - t0
    result = ReplayResult(pol.name, placement, name, jobs, cluster, jobs.submit_ns / NS,
                          out["first_start"] / NS, out["finish"] / NS, _isolated_s(jobs, cluster),
                          out["preemptions"], out["util_t"] / NS, out["util_busy"], wall, seed,
                          held_s=out["held"] / NS)
    if "frag" in out:
        result.frag = out["frag"]
        result.extra["gpu_fragmentation"] = result.time_average(out["frag"])
    return result
