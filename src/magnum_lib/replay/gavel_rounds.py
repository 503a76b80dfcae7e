"""Gavel's FIFO under the round mechanism of Gavel's own simulator, for job-for-job agreement.

Our round-based policies (``round_s``) decide at ``0, 360, 720, ...`` s. Gavel's simulator
(``scheduler.Scheduler.simulate``, stanford-futuredata/gavel) runs rounds differently, and
:class:`GavelFIFO` reproduces it (an event-driven policy that keeps Gavel's clock itself):

* **Round clock.** A round starts at time T; each job chosen runs a micro-task of
  ``min(360 s, its remaining time)`` (Gavel: ``min(int(360 x steps/s), remaining steps)``
  steps); the next round starts when the *last* micro-task ends, so a round whose jobs
  all finish early is short. Jobs finishing mid-round are done (and timed) then, but
  their GPUs stay idle until the round ends. If a round chooses nothing, time jumps to
  the next arrival. The first round starts at the first arrival.
* **Arrivals** mid-round join at the next round (Gavel adds jobs with arrival <= T).
* **Allocation resets** (``_update_priorities``): the FIFO allocation is recomputed only
  when a job arrived or finished since the last computation *and* at least
  ``reset_interval_s`` (Gavel's ``minimum_time_between_allocation_resets``, 1920 s) passed
  since the last reset, or the last reset was at time 0, or the cluster ran nothing last
  round with no arrival to come (Gavel then forces ``_last_reset_time = 0``). Until then a
  new job has priority 0 and waits even on idle GPUs, and GPUs freed by a finished job
  stay idle.
* **FIFO allocation** (``FIFOPolicy.get_allocation``, base mode, one GPU type): the
  allocation persists between computations; each job that finished is replaced by the
  head of the queue (arrival order) if it fits in the GPUs counted so far, in id order of
  the finished jobs, *before* the still-running jobs with higher ids are counted (Gavel's
  order: this can over-commit the GPUs); then jobs are allocated from the head of the
  queue while they fit (head of line blocks).
* **Round choice** (``_schedule_jobs_on_workers_helper``): jobs with allocation 1 are
  ranked by (priority, deficit, allocation), largest first, ties in arrival order, and
  taken while their GPU count fits (skip-ahead); priority = allocation / (time run since the
  last reset, counted from 180 s = ``time_per_iteration / 2``, over the sum of those), as
  Gavel; deficits accumulate at each reset. Each job's run time is counted from the round's
  start as Gavel counts it (``finish - current_round_start_time``, where the start is the
  previous round's end even across an idle gap).

* **Whole steps** (``steps_per_s``, each job's steps/s ``r``): a micro-task is
  ``int(360 r)`` steps, ``int(360 r) / r`` s, shorter than 360 s; a job whose micro-task
  ends before the round's last one idles in Gavel for the rest of the round: here it is
  paused (preempted, counted in ``preemptions``; use ``restore_s=0``) and resumed when the
  next round chooses it again.

Agreement (tests/test_replay_peers.py): with whole-second jobs at one step per second
(``steps_per_s=None``) finish times equal Gavel's exactly; with Gavel's measured
throughputs, to a microsecond (our clock is whole ns, Gavel's float seconds). One GPU
type only (Gavel's base FIFO picks types at random).
"""
from __future__ import annotations

import numpy as np

from magnum_lib.engine.errors import ParameterError, check_positive
from magnum_lib.replay.api import Policy

__all__ = ["GavelFIFO"]

NS = 1_000_000_000


class GavelFIFO(Policy):
    """Gavel's FIFO with the round mechanism of Gavel's simulator (see the module docstring).

    Parameters
    ----------
    round_s : float
        Gavel's ``time_per_iteration`` (360 s).
    reset_interval_s : float
        Gavel's ``minimum_time_between_allocation_resets`` (1920 s).
    steps_per_s : array or None
        Each job's steps/s on the cluster's GPU type; a micro-task then lasts
        ``int(round_s x r) / r`` s (Gavel's whole steps). None: one step per second.
    """

    name = "gavel-fifo"
    round_s = None      # called at every event; the policy keeps Gavel's round clock

    def __init__(self, round_s: float = 360.0, reset_interval_s: float = 1920.0, steps_per_s=None):
        self.iteration_s = check_positive("round_s", round_s)
        self.reset_s = check_positive("reset_interval_s", reset_interval_s)
        self.rate = None
        if steps_per_s is not None:
            self.rate = np.asarray(steps_per_s, dtype=np.float64).reshape(-1)
            if not np.all(np.isfinite(self.rate)) or np.any(self.rate <= 0):
                raise ParameterError("steps_per_s", "must be finite numbers > 0 (one per job)")

    def reset(self, jobs, cluster):
        if len(cluster.type_names) != 1:
            raise ParameterError("cluster", "GavelFIFO models Gavel's FIFO on one GPU type")
        if self.rate is not None and self.rate.size != len(jobs):
            raise ParameterError("steps_per_s", f"needs {len(jobs)} values (one per job), "
                                                f"got {self.rate.size}")
        self.gpus = jobs.num_gpus.tolist()
        self.last_submit = int(jobs.submit_ns[-1]) if len(jobs) else 0
        self.G = cluster.total_gpus
        self.round_end = None       # ns; None: no round in progress
        self.round_jobs = {}        # job -> end of its micro-task (ns, our clock)
        self.round_steps = {}       # job -> (steps, end in Gavel's float seconds)
        # Gavel's bookkeeping runs on its own float-seconds clock, with its own operations,
        # so that ties between jobs (equal run times) stay exact ties as in Gavel.
        r = np.ones(len(jobs)) if self.rate is None else self.rate
        self.r = r.tolist()
        steps = jobs.duration_s * r
        self.steps_left = (np.round(steps) if self.rate is not None else steps).tolist()
        self.round_start = 0.0      # Gavel's current_round_start_time / _end_time (s)
        self.round_stop = None
        self.half = self.iteration_s / 2.0
        self.active = []            # jobs Gavel knows, in arrival order
        self.ran = {}               # _job_time_so_far (s)
        self.ran_all = 0.0          # _worker_time_so_far (s)
        self.deficit = {}
        self.alloc = {}             # the scheduler's _allocation: job -> 1.0 or 0.0
        self.fifo = set()           # FIFOPolicy._allocation (persists between computations)
        self.need_update = True
        self.last_reset = 0.0

    # ----------------------------------------------------------------- Gavel's steps
    def _micro_task(self, j, T, remaining_ns):
        """Gavel's micro-task of job ``j`` from ``T`` (s): ``(steps, end s, length ns)``."""
        r = self.r[j]
        full = float(int(r * self.iteration_s))
        steps = min(full, self.steps_left[j])
        # Its last micro-task ends with its work on our clock (no ns drift between the two).
        length = remaining_ns if steps == self.steps_left[j] else round(full / r * NS)
        return steps, T + steps / r, length

    def _fifo_allocation(self):
        """``FIFOPolicy.get_allocation`` (base mode, one type) on the active jobs."""
        active = set(self.active)
        queue = sorted(j for j in self.active if j not in self.fifo)
        free = self.G
        for s in sorted(self.fifo):
            if s not in active:                   # finished: its slot goes to the head
                if queue and self.gpus[queue[0]] <= free:
                    h = queue.pop(0)
                    self.fifo.add(h)
                    free -= self.gpus[h]
                self.fifo.discard(s)
            else:
                free -= self.gpus[s]
        while queue and free > 0:
            h = queue.pop(0)
            if self.gpus[h] > free:
                break
            self.fifo.add(h)
            free -= self.gpus[h]
        return {j: (1.0 if j in self.fifo else 0.0) for j in self.active}

    def _choose(self, T):
        """One call of Gavel's ``_schedule_jobs_on_workers``: the jobs run this round."""
        elapsed = T - self.last_reset
        if self.need_update and (elapsed >= self.reset_s or self.last_reset == 0):
            self.ran_all = 0.0                    # _reset_time_run_so_far
            for j in self.active:
                should = self.alloc.get(j, 0.0) * elapsed
                self.deficit[j] = self.deficit.get(j, 0.0) + should - (self.ran[j] - self.half)
                self.ran[j] = self.half
                self.ran_all += self.half
            self.last_reset = T
            self.alloc = self._fifo_allocation()
            self.need_update = False
        entries = []
        for j in self.active:                     # _update_priorities
            a = self.alloc.get(j)
            if a is None or a == 0.0:
                p = 0.0
            else:
                frac = 0.0 if self.ran_all == 0.0 else self.ran[j] / self.ran_all
                p = a / frac if frac > 0.0 else a * 1e9
            entries.append((j, p, self.deficit[j], 0.0 if a is None else a))
        entries.sort(key=lambda e: (e[1], e[2], e[3]), reverse=True)   # stable: ties by arrival
        left, chosen = self.G, []
        for j, p, _, _ in entries:
            if left == 0 or p <= 0.0 or self.gpus[j] > left:
                continue
            left -= self.gpus[j]
            chosen.append(j)
        return chosen

    # ----------------------------------------------------------------- the policy
    def schedule(self, view):
        now = view.now_ns
        plan = view.plan()
        if self.round_end is not None and now < self.round_end:
            # Mid-round: nothing starts; a job whose micro-task is over (but not its work)
            # pauses until the round ends, as its GPUs idle in Gavel.
            for j in view.running:
                if self.round_jobs.get(j.id, now + 1) <= now:
                    plan.preempt(j)
            self._wake(plan, now)
            return plan
        T = now / NS
        present = {j.id: j for j in view.running + view.queue}
        if self.round_jobs:                       # the round that ends now: Gavel's accounting
            T = max(end for _, end in self.round_steps.values())   # Gavel's clock
            if self.round_stop is not None:
                self.round_start = self.round_stop
            self.round_stop = T
            for j, (steps, end) in self.round_steps.items():
                run = end - self.round_start
                self.ran[j] += run
                self.ran_all += run
                self.steps_left[j] -= steps
            for j in sorted(self.round_jobs):
                if j not in present:              # finished in this round
                    self.active.remove(j)
                    del self.ran[j], self.deficit[j]
                    self.need_update = True
        self.round_jobs, self.round_steps, self.round_end = {}, {}, None
        known = set(self.active)
        for j in sorted(present):                 # arrivals up to now, in arrival order
            if j not in known:
                self.active.append(j)
                self.ran[j] = self.half
                self.deficit[j] = 0.0
                self.need_update = True
        chosen = self._choose(T)
        if not chosen and self.active and now >= self.last_submit:
            self.last_reset = 0.0                 # Gavel forces a reset on an idle, drained queue
            chosen = self._choose(T)
        keep = set(chosen)
        for j in view.running:
            if j.id not in keep:
                plan.preempt(j)
        for j in chosen:
            if not present[j].running:
                plan.start(present[j])
            steps, end, length = self._micro_task(j, T, present[j].remaining_ns)
            self.round_steps[j] = (steps, end)
            self.round_jobs[j] = now + length
        if chosen:
            self.round_end = max(self.round_jobs.values())
            self._wake(plan, now)
        return plan

    def _wake(self, plan, now):
        """Wake at the round's end and at each micro-task end before it."""
        for end in self.round_jobs.values():
            if end > now:
                plan.wake_at_ns(end)
