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
    views = [StaleView(state, staleness if mode == "speculative" else 0) for _ in range(n_sched)]
    scheds = [RegionalScheduler(v, policy, region=i, seed=int(rng.integers(2**31)))
              for i, v in enumerate(views)]
    ic = state.ic_code(state.ic_names[state.node_ic[0]])
    mem = int(state.node_mem[0])
    jobs = JobTable()
    rate = load * state.node_devices.sum() / (float(_SIZES @ _SIZE_P) * dur_ns / 1e9)
    latencies: list[np.ndarray] = []
    conflicts = preemptions = 0
    wasted = ckpt_total = util_sum = held_sum = 0.0
    total_devices = float(state.node_devices.sum())
    start = time.perf_counter()

    for step in range(rounds):
        now = step * tick_ns
        jobs.state[state.reap(now)] = COMPLETED
        k = rng.poisson(rate * tick_ns / 1e9)
        jobs.add(rng.choice(_SIZES, k, p=_SIZE_P), rng.integers(0, priorities, k),
                 np.maximum(1, rng.exponential(dur_ns, k)).astype(np.int64))
        pending = jobs.pending()
        too_big = pending[jobs.count[pending] > devices]
        jobs.state[too_big] = REJECTED
        jobs.reason.update({int(j): "insufficient_devices" for j in too_big})
        pending = pending[jobs.count[pending] <= devices]
        owner = pending % n_sched  # jobs are dealt to schedulers by id
        for v in views:
            v.refresh(now, force=mode != "speculative")

        def place(j, who):
            out = np.full(len(j), -1, dtype=np.int64)
            for s in range(n_sched):
                mine = who == s
                if mine.any():
                    c = len(j[mine])
                    out[mine] = scheds[s].place_arrays(np.zeros(c), jobs.count[j[mine]],
                                                       np.full(c, mem), np.full(c, ic))
            return out

        def commit(j, node, allow_preempt, now=now):   # this round's time, bound here
            nonlocal preemptions, wasted, ckpt_total
            out = state.validate_arrays(node, np.zeros(len(j)), jobs.count[j], np.full(len(j), mem),
                                        np.full(len(j), ic), now + jobs.remaining_ns[j],
                                        jobs.prio[j], j, now, preempt=allow_preempt)
            ok = out["code"] <= 1
            jobs.state[j[ok]] = RUNNING
            victims = out["pre_job"]
            if len(victims):
                # A victim still waiting for an earlier checkpoint (start in the future) has
                # done nothing yet: no progress, nothing lost, and its wait carries over.
                progress = np.maximum(0, now - out["pre_start"])
                lost_ns = np.where(progress > 0, (out["lost_work_s"] * 1e9).round(), 0).astype(np.int64)
                # Remaining work: what was left at its placement, minus progress since then,
                # plus the work lost since its last checkpoint (redone after the restart).
                jobs.remaining_ns[victims] = np.maximum(1, jobs.remaining_ns[victims] - progress + lost_ns)
                jobs.state[victims] = PREEMPTED
                preemptions += len(victims)
                wasted += float((out["pre_count"] * lost_ns).sum()) / 1e9
                ckpt_total += float(out["checkpoint_s"].sum())
                # The checkpoint is simulated time: the preemptor's work starts (and ends)
                # once every victim's memory is saved (devices save in parallel).
                ckpt_ns = np.maximum((out["checkpoint_s"] * 1e9).round().astype(np.int64),
                                     out["pre_start"] - now)
                wait = np.zeros(len(j), dtype=np.int64)
                np.maximum.at(wait, out["pre_by"], ckpt_ns)
                slot = out["slot"][wait > 0]
                state.slot_start[slot] += wait[wait > 0]
                state.slot_expiry[slot] += wait[wait > 0]
            return ok

        if mode == "pessimistic":
            # One lock: decisions in a random order, each on the truth as left by the last.
            order = pending[rng.permutation(len(pending))]
            node = place(order, np.zeros(len(order), dtype=np.int64)) if len(order) else order
            placed = node >= 0
            commit(order[placed], node[placed], False)
            latencies.append(step_ns * (1 + np.arange(int(placed.sum()))))
        else:
            node = place(pending, owner)
            tried = pending[node >= 0]
            node = node[node >= 0]
            for _ in range(1 + (retries if mode == "optimistic" else 0)):
                if not len(tried):
                    break
                perm = rng.permutation(len(tried))  # arrival order at the nodes
                tried, node = tried[perm], node[perm]
                jobs.attempts[tried] += 1
                ok = commit(tried, node, mode == "speculative")
                conflicts += int((~ok).sum())
                # Time spent deciding: every attempt so far, this round and earlier ones.
                latencies.append(step_ns * jobs.attempts[tried[ok]].astype(np.int64))
                jobs.attempts[tried[ok]] = 0
                tried = tried[~ok]
                if mode == "optimistic" and len(tried):
                    for v in views:
                        v.refresh(now, force=True)
                    node = place(tried, tried % n_sched)
                    tried, node = tried[node >= 0], node[node >= 0]
            stuck = np.flatnonzero((jobs.attempts >= max_attempts) & (jobs.state == QUEUED))
            jobs.state[stuck] = REJECTED
            jobs.reason.update({int(j): "too_many_conflicts" for j in stuck})
        # Device time of the round [now, now + tick): held slots whose work has not started
        # yet are checkpointing their victims' memory; the rest do useful work.
        held = state.slot_job >= 0
        ckpt_dev_ns = float((state.slot_count[held] * np.clip(state.slot_start[held] - now, 0, tick_ns)).sum())
        wasted += ckpt_dev_ns / 1e9
        held_sum += state.utilization()
        util_sum += state.utilization() - ckpt_dev_ns / (tick_ns * total_devices)
        if check_invariants:
            state.check()
            jobs.check(state)

    lat = np.concatenate(latencies) / 1e9 if latencies else np.zeros(0)
    return BaselineResult(
        mode=mode, schedulers=n_sched, decisions=len(lat),
        decision_latency_mean_s=float(lat.mean()) if len(lat) else 0.0,
        decision_latency_p99_s=float(np.quantile(lat, 0.99)) if len(lat) else 0.0,
        utilization=util_sum / rounds, conflicts=conflicts, preemptions=preemptions,
        wasted_work_device_s=wasted, checkpoint_s_total=ckpt_total, held_utilization=held_sum / rounds,
        capacity_device_s=total_devices * rounds * tick_ns / 1e9, jobs=jobs.counts(),
        wall_s=time.perf_counter() - start)


def compare(**kwargs) -> dict:
    """Run every mode with the same arguments; return ``{mode: result.to_dict()}``."""
    return {m: simulate_scheduling(mode=m, **kwargs).to_dict() for m in MODES}
