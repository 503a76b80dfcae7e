"""The shipped policies, written against the same plug-in API as yours.

Each is short and readable; the event-driven ones (``fast`` attribute) also have a
compiled twin in ``_fastloop.pyx`` used on pooled clusters, checked for identical
results in tests/test_replay_parity.py.

=============  =====================================================================
fifo-strict    FIFO, head of line blocks: start waiting jobs in submit order and stop
               at the first that does not fit (Tiresias' ``fifo``).
fifo-skip      FIFO with skip-ahead: later jobs start when the head does not fit
               (Tiresias' ``fjf``, "fit job first").
sjf            Shortest job first, non-preemptive, oracle durations; skip-ahead in
               (duration, id) order. Options ``by`` ("duration", "gpus", "gpu_time") and
               ``preemptive``; ``SJF(by="gpus", preemptive=True)`` is Tiresias' ``sjf``
               (smallest GPU count first, preemptive; Tiresias has no SJF by duration).
srtf           Shortest remaining time first, preemptive, oracle durations: every event
               the jobs (running or not) are ranked by (remaining work, id) and given
               GPUs in that order, skip-ahead; running jobs left out are preempted
               (Tiresias' ``shortest``; ``by="gpu_time"``: remaining time x GPUs,
               Tiresias' ``shortest-gpu``).
las            Tiresias' discretized 2D-LAS (Gu et al., NSDI 2019; ``dlas-gpu``):
               see :class:`TiresiasLAS`.
gavel          Gavel's heterogeneity-aware max-min fairness (Narayanan et al., OSDI
               2020), LP on the throughput matrix with HiGHS, 360 s rounds.
gavel-blind    The same mechanism with every GPU type treated as equal.
ftf            Themis-style finish-time fairness (Mahajan et al., NSDI 2020), rounds.
=============  =====================================================================

Gavel's policies under the exact round mechanism of Gavel's simulator (for agreement
with it, not in the table above): :mod:`magnum_lib.replay.gavel_rounds`.
"""
from __future__ import annotations

from magnum_lib.base.validate import ParameterError, check_choice, excerpt
from magnum_lib.replay.api import Policy

__all__ = ["FifoStrict", "FifoSkip", "SJF", "SRTF", "TiresiasLAS"]


class FifoStrict(Policy):
    """FIFO; the head of the line blocks every job behind it."""

    name = "fifo-strict"
    fast = ("fifo-strict",)

    def schedule(self, view):
        plan = view.plan()
        for job in view.queue:          # submit order, then id
            if not plan.start(job):
                break
        return plan


class FifoSkip(Policy):
    """FIFO with skip-ahead: every waiting job that fits starts, in submit order."""

    name = "fifo-skip"
    fast = ("fifo-skip",)

    def schedule(self, view):
        plan = view.plan()
        for job in view.queue:
            plan.start(job)
        return plan


def _work_key(view, by):
    """Exact integer rank key of a job by its oracle work: ``by`` = "duration" (work ns),
    "gpus" (GPU count) or "gpu_time" (work ns x GPUs)."""
    work = view.jobs.work_ns
    if by == "duration":
        return lambda j: (int(work[j.id]), j.id)
    if by == "gpus":
        return lambda j: (j.num_gpus, j.id)
    return lambda j: (int(work[j.id]) * j.num_gpus, j.id)


class SJF(Policy):
    """Shortest job first (oracle), skip-ahead in (key, id) order.

    ``by``: "duration" (run time, default), "gpus" (GPU count: smallest first) or
    "gpu_time" (run time x GPUs). ``preemptive=False`` (default): only waiting jobs are
    ranked and running jobs keep their GPUs. ``preemptive=True``: every event all jobs,
    running or not, are ranked and given GPUs in that order; running jobs left out are
    preempted. ``SJF(by="gpus", preemptive=True)`` is Tiresias' ``sjf``
    (``smallest_first_sim_jobs``: a stable sort of all runnable jobs by ``num_gpu``, so ties
    in arrival order), job for job (tests/test_replay_peers.py).
    """

    oracle = True       # ranks by each job's duration from the trace
    BY = ("duration", "gpus", "gpu_time")

    def __init__(self, by: str = "duration", preemptive: bool = False):
        self.by = check_choice("by", by, self.BY)
        if not isinstance(preemptive, bool):
            raise ParameterError("preemptive", f"must be True or False, got {excerpt(preemptive)}")
        self.preemptive = preemptive
        default = by == "duration" and not preemptive
        self.name = "sjf" if default else f"sjf(by={by}{', preemptive' if preemptive else ''})"
        self.fast = ("sjf",) if default else ("sjf", by, preemptive)

    def schedule(self, view):
        plan = view.plan()
        key = _work_key(view, self.by)
        if self.preemptive:
            _give_in_order(view, sorted(view.running + view.queue, key=key), plan)
        else:
            for job in sorted(view.queue, key=key):
                plan.start(job)
        return plan


def _give_in_order(view, order, plan):
    """Preemptive pass: jobs in ``order`` get GPUs while they fit (GPU count, skip-ahead);
    running jobs that do not are preempted. Returns the kept/started jobs in order."""
    budget = view.free_gpus + sum(j.num_gpus for j in view.running)
    chosen = []
    for job in order:
        if job.num_gpus <= budget:
            budget -= job.num_gpus
            chosen.append(job)
            if budget == 0:     # every job needs a GPU at least: no later one fits
                break
    keep = {j.id for j in chosen}
    for job in view.running:
        if job.id not in keep:
            plan.preempt(job)
    for job in chosen:
        if not job.running:
            plan.start(job)
    return chosen


class SRTF(Policy):
    """Shortest remaining time first (oracle), preemptive (Tiresias' ``shortest``).

    ``by="gpu_time"`` ranks by remaining time x GPUs instead (Tiresias' ``shortest-gpu``).
    ``ties``: "id" (default, lowest id first) or "previous": equal keys keep the order of
    the previous pass, new jobs after them in id order, as Tiresias' stable sort of the
    list it keeps. The two differ when two jobs' keys meet (by GPU-time they fall at
    different rates): on Tiresias' 60-job trace on 4x4 GPUs, ``shortest-gpu`` agrees with
    ties "previous" for all 60 jobs and with ties "id" for 58. Ties "previous" run in the
    Python loop only (``result.backend == "python"``).
    """

    oracle = True       # ranks by each job's remaining work
    BY = ("time", "gpu_time")

    def __init__(self, by: str = "time", ties: str = "id"):
        self.by = check_choice("by", by, self.BY)
        self.ties = check_choice("ties", ties, ("id", "previous"))
        opts = ([f"by={by}"] if by != "time" else []) + (["ties=previous"] if ties != "id" else [])
        self.name = f"srtf({', '.join(opts)})" if opts else "srtf"
        self.fast = None if ties == "previous" else (("srtf",) if by == "time" else ("srtf", by))

    def reset(self, jobs, cluster):
        self._order = []

    def _key(self, j):
        return j.remaining_ns if self.by == "time" else j.remaining_ns * j.num_gpus

    def schedule(self, view):
        plan = view.plan()
        jobs = view.running + view.queue
        if self.ties == "id":
            order = sorted(jobs, key=lambda j: (self._key(j), j.id))
        else:
            alive = {j.id: j for j in jobs}
            kept = [i for i in self._order if i in alive]
            known = set(kept)
            self._order = kept + sorted(i for i in alive if i not in known)
            self._order.sort(key=lambda i: self._key(alive[i]))      # stable
            order = [alive[i] for i in self._order]
        _give_in_order(view, order, plan)
        return plan


class TiresiasLAS(Policy):
    """Tiresias' discretized two-dimensional least-attained-service (``dlas-gpu``).

    Semantics (as Tiresias' simulator, ``dlas_sim_jobs(gputime=True)``):

    * Attained service is GPU-time: run time x GPUs. A new job enters queue 0; a
      running job moves to queue k+1 the instant its attained GPU-time since its last
      promotion reaches ``thresholds_gpu_s[k]`` (appended at that queue's end).
      Default thresholds (3250, 7200) GPU-seconds: three queues, Tiresias' code.
    * Every event, queues are scanned in priority order, each in its order, and jobs
      get GPUs while they fit (GPU count, skip-ahead); running jobs left out are
      preempted. Within a queue, after each pass, the jobs running come first (in
      scan order), then the rest (preempted ones first), as Tiresias moves pending
      jobs to the end of each queue (a job demoted this instant and preempted stays at
      the end of its new queue).
    * Starvation avoidance (``promote_knob`` = Tiresias' ``solve_starvation``, 0 =
      off as in ``dlas-gpu``): a waiting job in queue > 0 that has run since its last
      promotion returns to the end of queue 0 once its accumulated waiting time
      reaches ``promote_knob`` x its run time since that promotion; both reset then.
    * Tiresias' simulator wakes for the next demotion at ``now + int(math.ceil((limit -
      executed_time) / num_gpu))`` seconds, with the run time in seconds where GPU-seconds
      are meant, so multi-GPU jobs are demoted later than their threshold (at the first
      event after it). By default we wake exactly at the threshold; ``tiresias_jump=True``
      follows the published program, for job-for-job agreement: its README requires
      Python 2.7 and ``run_sim.py`` has no ``from __future__ import division``, so on its
      integers (whole-second ``executed_time``, integer limits and GPU counts) ``/`` is
      floor division and ``math.ceil`` changes nothing: the wake-up is ``now + floor((limit
      - executed_s) / gpus)`` whole seconds (e.g. threshold 500, 8 GPUs, 10 s run: 61 s
      later, not 62; a non-whole threshold would be a float there: true division, rounded
      up). Times are whole seconds, as in Tiresias. A wake-up that lands on ``now`` (floor 0; Tiresias' loop would not
      advance there) is dropped: the job is checked at the next event.
    """

    name = "las"

    def __init__(self, thresholds_gpu_s=(3250.0, 7200.0), promote_knob: float = 0.0,
                 tiresias_jump: bool = False):
        th = [float(x) for x in thresholds_gpu_s]
        if any(not (x > 0) for x in th) or th != sorted(th) or len(set(th)) != len(th):
            raise ParameterError("thresholds_gpu_s", f"must be increasing numbers > 0, got {excerpt(th)}")
        if max(th, default=0) > 9e9:  # kept in int64 ns: 9e9 GPU-s is 285 GPU-years
            raise ParameterError("thresholds_gpu_s", f"must be at most 9e9 GPU-seconds, got {max(th):.6g}")
        if not (promote_knob >= 0) or promote_knob != promote_knob:
            raise ParameterError("promote_knob", f"must be >= 0, got {excerpt(promote_knob)}")
        self.thresholds_ns = [round(x * 1e9) for x in th]
        self.promote_knob = float(promote_knob)
        self.tiresias_jump = bool(tiresias_jump)
        self.fast = ("las", tuple(self.thresholds_ns), self.promote_knob, self.tiresias_jump)

    def reset(self, jobs, cluster):
        n = len(jobs)
        self.q = [0] * n            # queue of each job
        self.seq = [0] * n          # order inside its queue (smaller first)
        self.base = [0] * n         # attained_ns at the last promotion
        self.starve = [0] * n       # waiting ns accumulated since the last promotion
        self.known = [False] * n
        self.counter = 0            # appends go to the end: increasing
        self.front = 0              # pass renumbering goes to the front: decreasing
        self.last_ns = 0

    def _append(self, j, q):
        self.q[j] = q
        self.seq[j] = self.counter
        self.counter += 1

    def schedule(self, view):
        now, dt = view.now_ns, view.now_ns - self.last_ns
        self.last_ns = now
        limits, knob = self.thresholds_ns, self.promote_knob
        q, seq = self.q, self.seq
        # view.queue and view.running are each in id order. Appends go to a queue's end in
        # the order made; demotions (to queue >= 1) and promotions (to queue 0) never meet in
        # one queue, so they need no common order.
        for j in view.queue:                            # arrivals first (a new job waits), id order
            if not self.known[j.id]:
                self.known[j.id] = True
                self._append(j.id, 0)
        for j in view.running:                          # then demotions, id order
            i = j.id
            if q[i] < len(limits) and (j.attained_ns - self.base[i]) * j.num_gpus >= limits[q[i]]:
                self._append(i, q[i] + 1)
        if knob > 0:
            for j in view.queue:                        # and promotions, id order
                i = j.id
                ran = j.attained_ns - self.base[i]
                if ran > 0:
                    self.starve[i] += dt                # Tiresias' last_pending_time
                    if q[i] > 0 and self.starve[i] >= _ceil_mul(knob, ran):
                        self.starve[i] = 0
                        self.base[i] = j.attained_ns
                        self._append(i, 0)
        jobs = view.running + view.queue
        order = sorted(jobs, key=lambda j: (q[j.id], seq[j.id]))   # (queue, seq): unique per job
        plan = view.plan()
        chosen = _give_in_order(view, order, plan)
        # Tiresias moves the waiting jobs of each queue behind the running ones, in their
        # order: give the jobs running after this pass new keys in front, in scan order.
        front = [j.id for j in chosen]     # (chosen keeps the scan order)
        self.front -= len(front)
        for k, i in enumerate(front):
            seq[i] = self.front + k
        # Wake-ups: the next demotion of a running job, the next promotion of a waiting one.
        for j in chosen:
            i = j.id
            if q[i] < len(limits):
                ran = j.attained_ns - self.base[i]
                if self.tiresias_jump:      # their formula: run seconds, not GPU-seconds
                    wake = now + _tiresias_jump_s(limits[q[i]], ran, j.num_gpus) * 10**9
                    if wake > now:
                        plan.wake_at_ns(wake)
                else:
                    left = limits[q[i]] - ran * j.num_gpus
                    plan.wake_at_ns(now + -(-left // j.num_gpus))
        if knob > 0:
            kept = set(front)
            for j in jobs:
                i = j.id
                ran = j.attained_ns - self.base[i]
                if i not in kept and q[i] > 0 and ran > 0:
                    plan.wake_at_ns(now + max(_ceil_mul(knob, ran) - self.starve[i], 1))
        return plan


def _tiresias_jump_s(limit_ns: int, ran_ns: int, gpus: int) -> int:
    """Whole seconds to Tiresias' next demotion check, as Python 2.7 computes
    ``int(math.ceil((limit - executed_time) / num_gpu))``: on integers (its limits are
    integer constants) ``/`` floors and the ceil does nothing; a non-integer limit (a float
    there) divides truly and is rounded up."""
    left, per = limit_ns - ran_ns, gpus * 10**9
    return left // per if limit_ns % 10**9 == 0 else -(-left // per)


def _ceil_mul(knob: float, ns: int) -> int:
    """``ceil(knob * ns)`` in float64, exactly as the compiled loop computes it."""
    import math
    return int(math.ceil(knob * ns))
