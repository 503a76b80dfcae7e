"""Speculative leases against the classic alternatives, in one seeded round-based simulation.

Modes (:data:`MODES`), each with ``schedulers`` concurrent schedulers over the same nodes:

``speculative``
    Each scheduler places from its own :class:`~magnum_lib.regional.scheduler.StaleView`
    (refreshed every ``staleness``) and issues leases unchecked; the nodes validate them
    in arrival order, preempting strictly lower-priority jobs or refusing. A refused job
    tries again next round. Decision latency per attempt: ``decision + rtt``.
``pessimistic``
    Check, lock, place: decisions are serialised behind one lock held for
    ``decision + rtt`` each, on the true state, so no conflicts - but the k-th decision of a
    round waits for the k-1 before it: latency grows with concurrency.
``optimistic``
    Omega-style shared state: every scheduler places from a fresh snapshot and commits;
    a commit that no longer fits fails (a conflict) and the scheduler retries at once from
    a refreshed snapshot, up to ``retries`` times per round; each attempt costs
    ``decision + rtt``. No preemption.

Jobs arrive as a Poisson stream (offered ``load`` of the devices), need 1, 2, 4 or 8
devices for an exponential duration, and carry a priority in ``0..priorities-1``. Every
job is always in exactly one state of :data:`JOB_STATES`. A preempted job is
checkpointed (its memory per device / ``checkpoint_bandwidth``) and requeued with the work
since its last periodic checkpoint added back. The checkpoint is simulated time: the
preempting job holds the devices but starts (and ends) only once the victim's memory is
saved. Wasted work is device time inside the run: devices checkpointing, plus the work
since the victim's last periodic checkpoint (redone later); ``utilization`` counts only
devices doing useful work, so utilization + wasted work never exceeds the capacity.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass

import numpy as np

from magnum_lib.base.validate import ParameterError, check_choice, check_int
from magnum_lib.regional.lease import as_ns
from magnum_lib.regional.scheduler import POLICIES, RegionalScheduler, StaleView
from magnum_lib.regional.validator import DEFAULT_CHECKPOINT_BANDWIDTH, NodeState

__all__ = ["MODES", "JOB_STATES", "BaselineResult", "JobTable", "simulate_scheduling", "compare"]

MODES = ("speculative", "pessimistic", "optimistic")
JOB_STATES = ("queued", "running", "preempted", "completed", "rejected")
QUEUED, RUNNING, PREEMPTED, COMPLETED, REJECTED = range(5)
_SIZES = np.array([1, 2, 4, 8], dtype=np.int32)
_SIZE_P = np.array([0.4, 0.3, 0.2, 0.1])


class JobTable:
    """Every job's state (one of :data:`JOB_STATES`), size, priority and remaining work."""

    def __init__(self):
        self.state = np.zeros(0, dtype=np.int8)
        self.count = np.zeros(0, dtype=np.int32)
        self.prio = np.zeros(0, dtype=np.int32)
        self.remaining_ns = np.zeros(0, dtype=np.int64)
        self.attempts = np.zeros(0, dtype=np.int32)
        self.reason: dict[int, str] = {}  # rejected job -> why

    def add(self, count, prio, duration_ns) -> None:
        n = len(count)
        self.state = np.concatenate([self.state, np.full(n, QUEUED, np.int8)])
        self.count = np.concatenate([self.count, count.astype(np.int32)])
        self.prio = np.concatenate([self.prio, prio.astype(np.int32)])
        self.remaining_ns = np.concatenate([self.remaining_ns, duration_ns.astype(np.int64)])
        self.attempts = np.concatenate([self.attempts, np.zeros(n, np.int32)])

    def pending(self) -> np.ndarray:
        """Jobs waiting for a placement (queued, or preempted and requeued), oldest first."""
        return np.flatnonzero((self.state == QUEUED) | (self.state == PREEMPTED))

    def counts(self) -> dict:
        return {name: int((self.state == i).sum()) for i, name in enumerate(JOB_STATES)}

    def check(self, nodes: NodeState) -> None:
        """Raise AssertionError unless the running jobs are exactly the jobs holding slots."""
        held = np.sort(nodes.running())
        assert np.array_equal(held, np.flatnonzero(self.state == RUNNING)), "running != held"
        assert set(self.reason) == set(np.flatnonzero(self.state == REJECTED).tolist())
        assert ((self.state >= 0) & (self.state < len(JOB_STATES))).all()


@dataclass(frozen=True)
class BaselineResult:
    """Summary of one :func:`simulate_scheduling` run (times in seconds)."""

    mode: str
    schedulers: int
    decisions: int
    decision_latency_mean_s: float
    decision_latency_p99_s: float
    utilization: float
    conflicts: int
    preemptions: int
    wasted_work_device_s: float     # checkpointing + lost work, device-seconds inside the run
    checkpoint_s_total: float       # sum of the checkpoints' durations (may run past the end)
    held_utilization: float         # devices held, useful or checkpointing
    capacity_device_s: float        # devices x simulated time
    jobs: dict
    wall_s: float

    def to_dict(self) -> dict:
        return asdict(self)


def simulate_scheduling(mode: str = "speculative", nodes: int = 64, devices: int = 8,
                        schedulers: int = 8, rounds: int = 300, tick="1ms", load: float = 0.9,
                        mean_duration="20ms", priorities: int = 3, staleness="2ms",
                        policy: str = "two-choices", decision="20us", rtt="100us",
                        retries: int = 3, max_attempts: int = 1000,
                        checkpoint_bandwidth=DEFAULT_CHECKPOINT_BANDWIDTH,
                        checkpoint_interval: float = 0.005, seed: int = 0,
                        check_invariants: bool = False) -> BaselineResult:
    """Run one mode for ``rounds`` rounds of ``tick`` each; see the module docstring.

    ``check_invariants=True`` asserts the job/slot invariants after every round (tests).
    """
    mode = check_choice("mode", mode, MODES)
    policy = check_choice("policy", policy, POLICIES[:3])
    n_sched = check_int("schedulers", schedulers, 1)
    rounds = check_int("rounds", rounds, 1)
    check_int("priorities", priorities, 1)
    retries, max_attempts = check_int("retries", retries, 0), check_int("max_attempts", max_attempts, 1)
    tick_ns, dur_ns = as_ns("tick", tick), as_ns("mean_duration", mean_duration)
    step_ns = as_ns("decision", decision) + as_ns("rtt", rtt)
    if tick_ns <= 0 or dur_ns <= 0:
        raise ParameterError("tick" if tick_ns <= 0 else "mean_duration", "must be > 0")
    if isinstance(load, bool) or not isinstance(load, (int, float)) or not 0 < load < math.inf:
        raise ParameterError("load", f"must be a number > 0, got {load!r}")
    state = NodeState.uniform(nodes, "h100_sxm", devices, checkpoint_bandwidth=checkpoint_bandwidth,
                              checkpoint_interval=checkpoint_interval)
    rng = np.random.default_rng(check_int("seed", seed, 0))
    run = _Run(mode, state, rng, n_sched, staleness, policy, step_ns)
    rate = load * state.node_devices.sum() / (float(_SIZES @ _SIZE_P) * dur_ns / 1e9)
    start = time.perf_counter()
    for step in range(rounds):
        now = step * tick_ns
        pending = run.arrive(now, rng.poisson(rate * tick_ns / 1e9), priorities, dur_ns, devices)
        for v in run.views:
            v.refresh(now, force=mode != "speculative")
        if mode == "pessimistic":
            run.decide_serialised(pending, now)
        else:
            run.decide_concurrent(pending, now, retries if mode == "optimistic" else 0, max_attempts)
        run.account_round(now, tick_ns)
        if check_invariants:
            state.check()
            run.jobs.check(state)
    return run.result(rounds, tick_ns, time.perf_counter() - start)


class _Run:
    """One run's nodes, schedulers, jobs and running totals; one method per step of a round."""

    def __init__(self, mode, state, rng, n_sched, staleness, policy, step_ns):
        self.mode, self.state, self.rng, self.n_sched, self.step_ns = mode, state, rng, n_sched, step_ns
        self.views = [StaleView(state, staleness if mode == "speculative" else 0) for _ in range(n_sched)]
        self.scheds = [RegionalScheduler(v, policy, region=i, seed=int(rng.integers(2**31)))
                       for i, v in enumerate(self.views)]
        self.ic = state.ic_code(state.ic_names[state.node_ic[0]])
        self.mem = int(state.node_mem[0])
        self.jobs = JobTable()
        self.latencies: list[np.ndarray] = []
        self.conflicts = self.preemptions = 0
        self.wasted = self.ckpt_total = self.util_sum = self.held_sum = 0.0
        self.total_devices = float(state.node_devices.sum())

    def arrive(self, now, k, priorities, dur_ns, devices) -> np.ndarray:
        """Reap jobs finished by ``now`` (ns), add ``k`` arrivals; return the placeable pending jobs."""
        jobs, rng = self.jobs, self.rng
        jobs.state[self.state.reap(now)] = COMPLETED
        jobs.add(rng.choice(_SIZES, k, p=_SIZE_P), rng.integers(0, priorities, k),
                 np.maximum(1, rng.exponential(dur_ns, k)).astype(np.int64))
        pending = jobs.pending()
        too_big = pending[jobs.count[pending] > devices]
        jobs.state[too_big] = REJECTED
        jobs.reason.update({int(j): "insufficient_devices" for j in too_big})
        return pending[jobs.count[pending] <= devices]

    def place(self, j, who) -> np.ndarray:
        """Node chosen for each job ``j`` by its scheduler ``who`` (-1: none fits)."""
        out = np.full(len(j), -1, dtype=np.int64)
        for s in range(self.n_sched):
            mine = who == s
            if mine.any():
                c = len(j[mine])
                out[mine] = self.scheds[s].place_arrays(np.zeros(c), self.jobs.count[j[mine]],
                                                        np.full(c, self.mem), np.full(c, self.ic))
        return out

    def commit(self, j, node, allow_preempt, now) -> np.ndarray:
        """The nodes validate the leases of jobs ``j`` at ``now`` (ns); return which were granted."""
        jobs, n = self.jobs, len(j)
        out = self.state.validate_arrays(node, np.zeros(n), jobs.count[j], np.full(n, self.mem),
                                         np.full(n, self.ic), now + jobs.remaining_ns[j],
                                         jobs.prio[j], j, now, preempt=allow_preempt)
        ok = out["code"] <= 1
        jobs.state[j[ok]] = RUNNING
        if len(out["pre_job"]):
            self._preempt(out, n, now)
        return ok

    def _preempt(self, out, n, now) -> None:
        """Requeue the victims in ``out`` with their lost work (ns); delay their preemptors by the checkpoint."""
        jobs, victims = self.jobs, out["pre_job"]
        # A victim still waiting for an earlier checkpoint (start in the future) has
        # done nothing yet: no progress, nothing lost, and its wait carries over.
        progress = np.maximum(0, now - out["pre_start"])
        lost_ns = np.where(progress > 0, (out["lost_work_s"] * 1e9).round(), 0).astype(np.int64)
        # Remaining work: what was left at its placement, minus progress since then,
        # plus the work lost since its last checkpoint (redone after the restart).
        jobs.remaining_ns[victims] = np.maximum(1, jobs.remaining_ns[victims] - progress + lost_ns)
        jobs.state[victims] = PREEMPTED
        self.preemptions += len(victims)
        self.wasted += float((out["pre_count"] * lost_ns).sum()) / 1e9
        self.ckpt_total += float(out["checkpoint_s"].sum())
        # The checkpoint is simulated time: the preemptor's work starts (and ends)
        # once every victim's memory is saved (devices save in parallel).
        ckpt_ns = np.maximum((out["checkpoint_s"] * 1e9).round().astype(np.int64),
                             out["pre_start"] - now)
        wait = np.zeros(n, dtype=np.int64)
        np.maximum.at(wait, out["pre_by"], ckpt_ns)
        slot = out["slot"][wait > 0]
        self.state.slot_start[slot] += wait[wait > 0]
        self.state.slot_expiry[slot] += wait[wait > 0]

    def decide_serialised(self, pending, now) -> None:
        """Pessimistic round at ``now`` (ns): one lock, decisions in a random order, each on the truth."""
        order = pending[self.rng.permutation(len(pending))]
        node = self.place(order, np.zeros(len(order), dtype=np.int64)) if len(order) else order
        placed = node >= 0
        self.commit(order[placed], node[placed], False, now)
        self.latencies.append(self.step_ns * (1 + np.arange(int(placed.sum()))))

    def decide_concurrent(self, pending, now, retries, max_attempts) -> None:
        """Speculative or optimistic round at ``now`` (ns): every scheduler places, the nodes validate."""
        jobs, mode = self.jobs, self.mode
        node = self.place(pending, pending % self.n_sched)  # jobs are dealt to schedulers by id
        tried = pending[node >= 0]
        node = node[node >= 0]
        for _ in range(1 + retries):
            if not len(tried):
                break
            perm = self.rng.permutation(len(tried))  # arrival order at the nodes
            tried, node = tried[perm], node[perm]
            jobs.attempts[tried] += 1
            ok = self.commit(tried, node, mode == "speculative", now)
            self.conflicts += int((~ok).sum())
            # Time spent deciding: every attempt so far, this round and earlier ones.
            self.latencies.append(self.step_ns * jobs.attempts[tried[ok]].astype(np.int64))
            jobs.attempts[tried[ok]] = 0
            tried = tried[~ok]
            if mode == "optimistic" and len(tried):
                for v in self.views:
                    v.refresh(now, force=True)
                node = self.place(tried, tried % self.n_sched)
                tried, node = tried[node >= 0], node[node >= 0]
        stuck = np.flatnonzero((jobs.attempts >= max_attempts) & (jobs.state == QUEUED))
        jobs.state[stuck] = REJECTED
        jobs.reason.update({int(j): "too_many_conflicts" for j in stuck})

    def account_round(self, now, tick_ns) -> None:
        """Add the device time of the round [now, now + tick_ns) (ns): held, checkpointing, useful."""
        # Held slots whose work has not started yet are checkpointing their victims' memory.
        state = self.state
        held = state.slot_job >= 0
        ckpt_dev_ns = float((state.slot_count[held] * np.clip(state.slot_start[held] - now, 0, tick_ns)).sum())
        self.wasted += ckpt_dev_ns / 1e9
        self.held_sum += state.utilization()
        self.util_sum += state.utilization() - ckpt_dev_ns / (tick_ns * self.total_devices)

    def result(self, rounds, tick_ns, wall_s) -> BaselineResult:
        """The summary of ``rounds`` rounds of ``tick_ns`` (ns); latencies in seconds."""
        lat = np.concatenate(self.latencies) / 1e9 if self.latencies else np.zeros(0)
        return BaselineResult(
            mode=self.mode, schedulers=self.n_sched, decisions=len(lat),
            decision_latency_mean_s=float(lat.mean()) if len(lat) else 0.0,
            decision_latency_p99_s=float(np.quantile(lat, 0.99)) if len(lat) else 0.0,
            utilization=self.util_sum / rounds, conflicts=self.conflicts, preemptions=self.preemptions,
            wasted_work_device_s=self.wasted, checkpoint_s_total=self.ckpt_total,
            held_utilization=self.held_sum / rounds, capacity_device_s=self.total_devices * rounds * tick_ns / 1e9,
            jobs=self.jobs.counts(), wall_s=wall_s)


def compare(**kwargs) -> dict:
    """Run every mode with the same arguments; return ``{mode: result.to_dict()}``."""
    return {m: simulate_scheduling(mode=m, **kwargs).to_dict() for m in MODES}
