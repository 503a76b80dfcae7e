"""Gavel's policies under the round mechanism of Gavel's own simulator, for job-for-job agreement.

Our round-based policies (``round_s``) decide at ``0, 360, 720, ...`` s. Gavel's simulator
(``scheduler.Scheduler.simulate``, stanford-futuredata/gavel) runs rounds differently, and
:class:`GavelRounds` reproduces it (an event-driven policy that keeps Gavel's clock
itself) with Gavel's FIFO (:class:`GavelFIFO`) or max-min fairness LP allocation:

* **Round clock.** A round starts at time T; each job chosen runs a micro-task of
  ``min(360 s, its remaining time)`` (Gavel: ``min(int(360 x steps/s), remaining steps)``
  steps); the next round starts when the *last* micro-task ends, so a round whose jobs
  all finish early is short. Jobs finishing mid-round are done (and timed) then, but
  their GPUs stay idle until the round ends. If a round chooses nothing, time jumps to
  the next arrival. The first round starts at the first arrival.
* **Arrivals** mid-round join at the next round (Gavel adds jobs with arrival <= T).
* **Allocation resets** (``_update_priorities``): the allocation is recomputed only
  when a job arrived or finished since the last computation *and* at least
  ``reset_interval_s`` (Gavel's ``minimum_time_between_allocation_resets``, 1920 s) passed
  since the last reset, or the last reset was at time 0, or the cluster ran nothing last
  round with no arrival to come (Gavel then forces ``_last_reset_time = 0``). Until then a
  new job has priority 0 and waits even on idle GPUs, and GPUs freed by a finished job
  stay idle.
* **FIFO allocation** (``FIFOPolicy.get_allocation``, base mode): the allocation (job ->
  GPU type) persists between computations; each job that finished is replaced by the
  head of the queue (arrival order) on its type if it fits in the GPUs of that type
  counted so far, in id order of the finished jobs, *before* the still-running jobs with
  higher ids are counted (Gavel's order: this can over-commit the GPUs); then jobs are
  allocated from the head of the queue while some type with idle GPUs fits them (head of
  line blocks). With several types Gavel draws one of the fitting types with its own
  ``random.Random`` (seed 0, as our Gavel driver seeds the policy) but then uses its loop
  variable, the *last* type with idle GPUs in name order (fitting or not: another
  over-commit), and when that type's count reaches 0 drops the drawn type from its list;
  all of it reproduced here.
* **Max-min fairness allocation** (``allocation="maxmin"`` / ``"maxmin-blind"``, Gavel's
  ``MaxMinFairnessPolicyWithPerf`` / ``MaxMinFairnessPolicy``): the LP of
  :func:`~magnum_lib.replay.fairness.maxmin_allocation` on the jobs' steps/s (blind: on
  ones), recomputed at resets as above; ``lp`` may replace the solver (the peer test plugs
  in Gavel's own cvxpy code: the LP's optimum is unique, its solution X often is not).
  On one GPU type the default (``solver="auto"``) is no LP at all:
  :func:`~magnum_lib.replay.fairness.maxmin_waterfill`, the LP's max-min fair solution
  (the unique X where the capacity binds, the lexicographic max-min X where X is not
  unique). On Philly VC 0e4a51 it agrees with Gavel's simulator at least as well as HiGHS
  (more finish times within 10 us, avg JCT closer: ``gavel_las`` in
  benchmarks/bench_replay.py; on a 150-job slice of VC 103959 more finish times, avg JCT
  1.4% apart against HiGHS's 0.55%: neither reproduces cvxpy's X where it is not unique);
  ``solver="highs"`` keeps the LP.
* **Round choice** (``_schedule_jobs_on_workers_helper``, no global queue): for each GPU
  type in the order v100, p100, k80 (shuffled each round by ``random.Random(5)`` for the
  blind policy, as Gavel seeds it), the (job, type) pairs are ranked by (priority,
  deficit, allocation), largest first, ties in arrival order, and the types' lists are
  scanned one after the other; a job is taken on a type while its GPU count fits there
  (skip-ahead) and once per round; priority = allocation / (time run on that type since
  the last reset, counted from 180 s = ``time_per_iteration / 2``, over the sum of those);
  deficits accumulate at each reset. FIFO takes only jobs with priority > 0; the LP
  policies take the rest too when GPUs remain, but a job that arrived after the last
  reset holds its GPUs in the count and does not run (Gavel assigns workers only to jobs
  in the allocation). Each job's run time is counted from the round's start as Gavel
  counts it (``finish - current_round_start_time``, where the start is the previous
  round's end even across an idle gap).
* **Whole steps** (``steps_per_s``, each job's steps/s ``r``): a micro-task is
  ``int(360 r)`` steps, ``int(360 r) / r`` s, shorter than 360 s; a job whose micro-task
  ends before the round's last one idles in Gavel for the rest of the round: here it is
  paused (preempted, counted in ``preemptions``; use ``restore_s=0``) and resumed when the
  next round chooses it again.

Agreement (tests/test_replay_peers.py): FIFO with whole-second jobs at one step per
second (``steps_per_s=None``): finish times equal Gavel's exactly; FIFO with Gavel's
measured throughputs, and the LP policies on v100/p100/k80 fed Gavel's own LP code: to a
few microseconds (our clock is whole ns, Gavel's float seconds); FIFO on v100/p100/k80 with
Gavel's matrix: to 13 us on the traces tested.

Two forms. This class is the readable reference: it runs in the Python replay loop
(``event_loop.py``) with ``backend="python"``, ``MAGNUM_PUREPYTHON=1``, a subclass, a
placement other than ``pooled``, shared GPUs or a type mask. Otherwise :func:`~magnum_lib.replay.replay`
runs :func:`run_compiled`: ``replay/_gavel_rounds.pyx`` inlines this policy into the replay
loop in one nogil kernel, with the same arithmetic in the same order, and calls back into
Python only for the LP (``lp`` or HiGHS, at allocation resets) and for the blind policy's
``random.Random(5)`` type orders on several types (in batches, in the order this class
draws them; on one type shuffling ``[0]`` draws nothing, so nothing is called). FIFO and
the waterfill allocation on one type are computed in the kernel: no Python at all. Each
type's ranked list is built by merging the last round's ranking (still in order, checked)
with the jobs that ran or arrived since, which gives the sort's order exactly. Parity
(tests/test_replay_gavel_fast.py): finish and start times to the ns, preemptions and the
utilization step function are identical on Philly VC slices, Tiresias' 60 jobs, Gavel-style
heterogeneous traces (unit and measured steps) and random small traces.
"""
from __future__ import annotations

import math
import random

import numpy as np

from magnum_lib.base.validate import ParameterError, check_choice, check_positive
from magnum_lib.replay.api import Policy, check_round
from magnum_lib.replay.contract import LAG_NS
from magnum_lib.replay.contract import NS_S as NS

__all__ = ["GavelFIFO", "GavelRounds", "run_compiled"]

_TYPE_ORDER = ("v100", "p100", "k80")      # Gavel's _schedule_jobs_on_workers


class GavelRounds(Policy):
    """Gavel's simulator's round mechanism with a Gavel allocation (see the module docstring).

    Parameters
    ----------
    allocation : "fifo", "maxmin" or "maxmin-blind"
    round_s : float
        Gavel's ``time_per_iteration`` (360 s).
    reset_interval_s : float
        Gavel's ``minimum_time_between_allocation_resets`` (1920 s).
    steps_per_s : array or None
        Each job's steps/s on each cluster GPU type (jobs x types; 1-D for one type); a
        micro-task on type t lasts ``int(round_s x r) / r`` s (Gavel's whole steps), and a
        job's step count is its work times its steps/s over its speed. None: one step per
        second on the reference type (speed 1).
    lp : callable or None
        ``lp(thr, scale, gpus_by_type) -> X`` for the max-min allocations (default: ours).
    solver : "auto", "highs" or "waterfill"
        Our max-min allocation: Gavel's LP solved by HiGHS, or (one GPU type only) its
        max-min fair solution by progressive filling,
        :func:`~magnum_lib.replay.fairness.maxmin_waterfill` (same optimum; where the LP's
        X is not unique, the max-min fair one). "auto": waterfill on one GPU type, HiGHS on
        several (waterfill agrees with Gavel's simulator at least as well as HiGHS on
        Philly VC 0e4a51: benchmarks/bench_replay.py ``gavel_las``).
    """

    round_s = None      # called at every event; the policy keeps Gavel's round clock
    oracle = True       # Gavel's simulator knows each job's total steps (its micro-task lengths)

    def __init__(self, allocation: str = "fifo", round_s: float = 360.0, reset_interval_s: float = 1920.0,
                 steps_per_s=None, lp=None, solver: str = "auto"):
        self.allocation = check_choice("allocation", allocation, ("fifo", "maxmin", "maxmin-blind"))
        self.name = {"fifo": "gavel-fifo", "maxmin": "gavel-rounds", "maxmin-blind": "gavel-rounds-blind"}[allocation]
        self.iteration_s = check_round(round_s)
        self.reset_s = check_positive("reset_interval_s", reset_interval_s)
        self.rate = None
        if steps_per_s is not None:
            self.rate = np.array(steps_per_s, dtype=np.float64)
            if self.rate.ndim == 1:
                self.rate = self.rate[:, None]
            if self.rate.ndim != 2 or not np.all(np.isfinite(self.rate)) or np.any(self.rate < 0):
                raise ParameterError("steps_per_s", "must be finite numbers >= 0 (jobs x GPU types)")
        if lp is not None and not callable(lp):
            raise ParameterError("lp", "must be a function lp(thr, scale, gpus_by_type) -> X")
        self.lp = lp
        self.solver = check_choice("solver", solver, ("auto", "highs", "waterfill"))
        if self.solver == "waterfill" and (lp is not None or self.allocation == "fifo"):
            raise ParameterError("solver", "'waterfill' is a max-min allocation without an lp hook "
                                           f"(allocation={allocation!r}, lp={'given' if lp else None})")

    def reset(self, jobs, cluster):
        T = len(cluster.type_names)
        speed = jobs.speed if jobs.speed is not None else np.ones((len(jobs), T))
        if self.rate is None:
            rate = speed.copy()
        else:
            rate = self.rate
            if rate.shape != (len(jobs), T):
                raise ParameterError("steps_per_s", f"needs shape {(len(jobs), T)} (jobs x GPU types), "
                                                    f"got {rate.shape}")
        if self.solver == "waterfill" and T != 1:
            raise ParameterError("solver", f"'waterfill' is for one GPU type, the cluster has {T} "
                                           "(use 'highs' or 'auto')")
        # Our max-min allocation in closed form (one type, no lp hook), else HiGHS / the hook.
        self.waterfill = (self.allocation != "fifo" and self.lp is None
                          and (self.solver == "waterfill" or (self.solver == "auto" and T == 1)))
        self.names = cluster.type_names
        self.N = [cluster.gpus_of_type(t) for t in range(T)]
        order = [cluster.type_names.index(n) for n in _TYPE_ORDER if n in cluster.type_names]
        self.type_order = order + [t for t in range(T) if t not in order]
        self.shuffler = random.Random(5) if self.allocation == "maxmin-blind" else None
        self.gpus = jobs.num_gpus.tolist()
        self.thr = rate.tolist()
        best = np.argmax(speed, axis=1)
        k = np.arange(len(jobs))
        steps = jobs.duration_s * rate[k, best] / speed[k, best]     # work x steps/s / speed
        self.steps_left = (np.round(steps) if self.rate is not None else steps).tolist()
        self.last_submit = int(jobs.submit_ns[-1]) if len(jobs) else 0
        self.round_end = None       # ns; None: no round in progress
        self.round_jobs = {}        # job -> end of its micro-task (ns, our clock)
        self.round_steps = {}       # job -> (type, steps, end in Gavel's float seconds)
        self.last = set()           # jobs whose micro-task this round is their last
        # Gavel's bookkeeping runs on its own float-seconds clock, with its own operations,
        # so that ties between jobs (equal run times) stay exact ties as in Gavel.
        self.round_start = 0.0      # Gavel's current_round_start_time / _end_time (s)
        self.round_stop = None
        self.half = self.iteration_s / 2.0
        self.active = []            # jobs Gavel knows, in arrival order
        self.ran = {}               # _job_time_so_far: job -> [s per type]
        self.ran_all = [0.0] * T    # _worker_time_so_far
        self.deficit = {}           # job -> [per type]
        self.alloc = {}             # the scheduler's _allocation: job -> [share per type]
        self.fifo = {}              # FIFOPolicy._allocation: job -> type (persists between computations)
        self.fifo_rng = random.Random(0)    # FIFOPolicy's own, seeded 0 (our Gavel driver's seed)
        self.need_update = True
        self.last_reset = 0.0

    # ----------------------------------------------------------------- allocations
    def _fifo_allocation(self):
        """``FIFOPolicy.get_allocation`` (base mode) on the active jobs: ``{job: [share per type]}``."""
        self._fifo_update()
        T = len(self.N)
        return {j: [1.0 if self.fifo.get(j) == t else 0.0 for t in range(T)] for j in self.active}

    def _fifo_x(self, ids):
        """The FIFO allocation as X (``len(ids)`` x types) for the active jobs ``ids`` (ascending)."""
        ids = np.asarray(ids, dtype=np.int64)
        self.active = ids.tolist()
        self._fifo_update()
        X = np.zeros((len(ids), len(self.N)))
        if self.fifo:                             # (its jobs are all active after the update)
            X[np.searchsorted(ids, list(self.fifo)), list(self.fifo.values())] = 1.0
        return X

    def _fifo_update(self):
        """Gavel's FIFO allocation step on ``self.fifo`` (job -> type) for the active jobs."""
        active = set(self.active)
        queue = sorted(j for j in self.active if j not in self.fifo)
        free = list(self.N)                       # Gavel's available_workers, by type
        for s in sorted(self.fifo):
            t = self.fifo[s]
            if s not in active:                   # finished: its slot goes to the head
                if queue and self.gpus[queue[0]] <= free[t] and self.thr[queue[0]][t] > 0.0:
                    h = queue.pop(0)
                    self.fifo[h] = t
                    free[t] -= self.gpus[h]
                del self.fifo[s]
            else:
                free[t] -= self.gpus[s]
        avail = sorted((t for t in range(len(free)) if free[t] > 0), key=lambda t: self.names[t])
        while queue and avail:
            h = queue.pop(0)
            fits = [i for i, t in enumerate(avail) if free[t] >= self.gpus[h]]
            if not fits:
                break
            pick = fits[self.fifo_rng.randrange(len(fits))]
            t = avail[-1]     # Gavel's base mode: the type is its loop variable, the last available
            if self.thr[h][t] > 0.0:
                self.fifo[h] = t
                free[t] -= self.gpus[h]
                if free[t] == 0:
                    avail.pop(pick)               # (Gavel's: the drawn type's slot goes)

    def _maxmin_allocation(self):
        ids = sorted(self.active)
        if not ids:
            return {}
        X = self._maxmin_x(ids)
        return {j: X[r].tolist() for r, j in enumerate(ids)}

    def _maxmin_x(self, ids):
        """The max-min LP's X (``len(ids)`` x types) for jobs ``ids`` (ascending)."""
        thr = np.array([self.thr[j] for j in ids])
        if self.allocation == "maxmin-blind":
            thr = np.ones_like(thr)
        scale = [self.gpus[j] for j in ids]
        if self.lp is not None:
            X = np.asarray(self.lp(thr, scale, dict(zip(self.names, self.N, strict=True))), dtype=np.float64)
        elif self.waterfill:
            from magnum_lib.replay.fairness import maxmin_waterfill
            X = maxmin_waterfill(scale, self.N[0], thr[:, 0])[:, None]
        else:
            from magnum_lib.replay.fairness import maxmin_allocation
            X = maxmin_allocation(thr, scale, self.N)
        return X

    # ----------------------------------------------------------------- Gavel's round
    def _choose(self, T):
        """One call of Gavel's ``_schedule_jobs_on_workers``: ``[(job, type, runs)]``."""
        elapsed = T - self.last_reset
        types = range(len(self.N))
        if self.need_update and (elapsed >= self.reset_s or self.last_reset == 0):
            for t in types:                       # _reset_time_run_so_far
                self.ran_all[t] = 0.0
                for j in self.active:
                    a = self.alloc[j][t] if j in self.alloc else 0.0
                    self.deficit[j][t] += a * elapsed - (self.ran[j][t] - self.half)
                    self.ran[j][t] = self.half
                    self.ran_all[t] += self.half
            self.last_reset = T
            self.alloc = self._fifo_allocation() if self.allocation == "fifo" else self._maxmin_allocation()
            self.need_update = False
        order = list(self.type_order)
        if self.shuffler is not None:
            self.shuffler.shuffle(order)
        queue = []
        for t in order:                           # _update_priorities, then one list per type
            entries = []
            for j in self.active:
                a = self.alloc[j][t] if j in self.alloc else None
                if a is None or a == 0.0 or self.thr[j][t] == 0:
                    p = 0.0
                else:
                    frac = 0.0 if self.ran_all[t] == 0.0 else self.ran[j][t] / self.ran_all[t]
                    p = a / frac if frac > 0.0 else a * 1e9
                entries.append((j, t, p, self.deficit[j][t], 0.0 if a is None else a))
            entries.sort(key=lambda e: (e[2], e[3], e[4]), reverse=True)   # stable: ties by arrival
            queue += entries
        left, taken, chosen = list(self.N), set(), []
        for j, t, p, _, _ in queue:
            if left[t] == 0 or j in taken or self.thr[j][t] <= 0:
                continue
            if (self.allocation == "fifo" and p <= 0.0) or self.gpus[j] > left[t]:
                continue
            left[t] -= self.gpus[j]
            taken.add(j)
            chosen.append((j, t, j in self.alloc))
        return chosen

    def _micro_task(self, j, t, T, view_job, speed, restore_ns):
        """Gavel's micro-task of job ``j`` on type ``t`` from ``T`` (s): ``(steps, end s, ns)``;
        ``restore_ns``: the restore time the job pays first (its start now, or what is left)."""
        r = self.thr[j][t]
        full = float(int(r * self.iteration_s))
        steps = min(full, self.steps_left[j])
        if steps == self.steps_left[j]:           # its last: ends with its work on our clock
            rem = view_job.remaining_ns
            length = restore_ns + (rem if speed == 1.0 else math.ceil(rem / speed))
        else:
            length = round(full / r * NS)
        return steps, T + steps / r, length

    # ----------------------------------------------------------------- the policy
    def schedule(self, view):
        now = view.now_ns
        plan = view.plan()
        if self.round_end is not None and now < self.round_end:
            # Mid-round: nothing starts; a job whose micro-task is over (but not its work)
            # pauses until the round ends, as its GPUs idle in Gavel.
            for j in view.running:
                if self.round_jobs.get(j.id, now + 1) <= now and j.id not in self.last:
                    plan.preempt(j)
            self._wake(plan, now)
            return plan
        present = {j.id: j for j in view.running + view.queue}
        lag = [j for j in self.last if j in present and present[j].running]
        if lag:
            # Done in Gavel's steps with a few ns of work left on our clock (the engine
            # truncates progress at a speed != 1 to whole ns): its finish comes next and
            # is the round boundary; Gavel's clock below is unaffected.
            if max(present[j].remaining_ns for j in lag) > LAG_NS:
                raise RuntimeError("GavelRounds: a job outlived its last micro-task (internal error)")
            self.round_end = now
            return plan
        T = now / NS
        if self.round_jobs:                       # the round that ends now: Gavel's accounting
            T = max(end for _, _, end in self.round_steps.values())   # Gavel's clock
            if self.round_stop is not None:
                self.round_start = self.round_stop
            self.round_stop = T
            for j, (t, steps, end) in self.round_steps.items():
                run = end - self.round_start
                self.ran[j][t] += run
                self.ran_all[t] += run
                self.steps_left[j] -= steps
            for j in sorted(self.round_jobs):
                if j not in present:              # finished in this round
                    self.active.remove(j)
                    del self.ran[j], self.deficit[j]
                    self.need_update = True
        self.round_jobs, self.round_steps, self.round_end, self.last = {}, {}, None, set()
        known = set(self.active)
        n_types = len(self.N)
        for j in sorted(present):                 # arrivals up to now, in arrival order
            if j not in known:
                self.active.append(j)
                self.ran[j] = [self.half] * n_types
                self.deficit[j] = [0.0] * n_types
                self.need_update = True
        chosen = self._choose(T)
        if not any(runs for _, _, runs in chosen) and self.active and now >= self.last_submit:
            self.last_reset = 0.0                 # Gavel forces a reset on an idle, drained queue
            chosen = self._choose(T)
        run = {j: t for j, t, runs in chosen if runs}
        for j in view.running:
            if run.get(j.id) is None or self.names[run[j.id]] != j.gpu_type:
                plan.preempt(j)
        speed = view.jobs.speed
        for j, t in run.items():
            job = present[j]
            starts = not job.running or self.names[t] != job.gpu_type
            if starts and not plan.start(job, gpu_type=self.names[t]):
                raise RuntimeError(f"GavelRounds: job {j} does not fit on {self.names[t]} (internal error)")
            # The restore time ahead of its work (our engine's; Gavel's simulator has none): a
            # start pays it when the job ran before (running now, or preempted since).
            if starts:
                restore = view.restore_ns if job.running or job.preemptions > 0 else 0
            else:
                restore = job.restore_left_ns
            sp = 1.0 if speed is None else float(speed[j, t])
            steps, end, length = self._micro_task(j, t, T, job, sp, restore)
            self.round_steps[j] = (t, steps, end)
            self.round_jobs[j] = now + length
            if steps == self.steps_left[j]:
                self.last.add(j)                  # its last micro-task: it finishes
        if run:
            self.round_end = max(self.round_jobs.values())
            self._wake(plan, now)
        return plan

    def _wake(self, plan, now):
        """Wake at the round's end and at each micro-task end before it."""
        for end in self.round_jobs.values():
            if end > now:
                plan.wake_at_ns(end)


class GavelFIFO(GavelRounds):
    """Gavel's FIFO (base mode) under Gavel's simulator's rounds (see the module docstring).

    ``steps_per_s``: each job's steps/s (1-D for one type, jobs x types) or None (one step
    per second on the reference type).
    """

    def __init__(self, round_s: float = 360.0, reset_interval_s: float = 1920.0, steps_per_s=None):
        super().__init__("fifo", round_s, reset_interval_s, steps_per_s)


def run_compiled(kernel, jobs, cluster, policy: GavelRounds, restore_s: float = 0.0) -> dict:
    """``policy`` replayed by the compiled kernel (``_gavel_rounds.run_gavel_rounds``).

    Same numbers as ``event_loop.run(jobs, cluster, policy, "pooled", ...)`` (pooled GPUs,
    whole GPUs, no type mask; :func:`magnum_lib.replay.replay` checks that): the policy's
    ``reset`` validates and derives the inputs (steps/s, step counts, type order), the
    kernel runs the loop, and calls back here for the LP at allocation resets and for the
    blind policy's type orders (``random.Random(5)``, drawn in the Python form's order).
    """
    from magnum_lib.replay.api import PolicyError, policy_inputs

    policy.reset(*policy_inputs(jobs, cluster, policy))     # the same read-only inputs as the loop
    n, T = len(jobs), len(policy.N)
    speed = jobs.speed if jobs.speed is not None else np.ones((n, T))
    permute = None
    if policy.shuffler is not None and T > 1:      # (one type: shuffling [0] draws nothing)
        shuffler, base = policy.shuffler, list(policy.type_order)

        def permute(k):
            out = []
            for _ in range(k):
                order = list(base)
                shuffler.shuffle(order)
                out.append(order)
            return out

    thr = np.array(policy.thr, dtype=np.float64).reshape(n, T)
    waterfill_thr = None
    if policy.waterfill:                 # the kernel's own max-min allocation (one type): the LP's thr
        allocate = None
        waterfill_thr = np.ones(n) if policy.allocation == "maxmin-blind" else thr[:, 0]
    elif policy.allocation != "fifo":
        allocate = lambda ids: policy._maxmin_x(ids.tolist())      # noqa: E731
    elif T > 1:          # Gavel's multi-type FIFO draws from its own random.Random: Python's
        allocate = policy._fifo_x
    else:
        allocate = None  # one type: the kernel's own FIFO allocation
    try:
        return kernel.run_gavel_rounds(jobs.submit_ns, jobs.work_ns, jobs.num_gpus, speed, thr,
                                       policy.steps_left, policy.N, policy.type_order,
                                       policy.allocation == "fifo", policy.iteration_s, policy.reset_s,
                                       round(restore_s * NS), allocate, permute, waterfill_thr)
    except kernel.Stuck as e:
        raise PolicyError(policy.name, f"left {e.waiting} job(s) waiting on an idle cluster with no "
                                       f"arrival or wake-up to come (first: job {e.first})") from None
