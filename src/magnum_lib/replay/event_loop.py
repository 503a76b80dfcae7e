"""The readable replay loop in pure Python: any policy, any placement, any cluster.

See :mod:`magnum_lib.replay` for the semantics (event order at one instant, when
GPUs become free, ties). The compiled loop in ``_fastloop.pyx`` runs the built-in
event-driven policies on pooled clusters and must give the same numbers.
"""
from __future__ import annotations

import math
import time

import numpy as np

from magnum_lib.base.validate import ParameterError, excerpt
from magnum_lib.replay import placement as _placement
from magnum_lib.replay.api import MAX_ROUND_S, MIN_ROUND_S, JobView, PolicyError, View, normalize, policy_inputs
from magnum_lib.replay.contract import JOB_DONE, JOB_RUN, JOB_WAIT
from magnum_lib.replay.contract import NS_S as NS
from magnum_lib.replay.cpulimit import CpuLimit as _CpuLimit
from magnum_lib.replay.cpulimit import cpu_limit as _cpu_limit  # POSIX timer, or a watchdog thread
from magnum_lib.replay.cpulimit import session as _cpu_session


class _State:
    def __init__(self, jobs, cluster, place_name, seed, restore_ns, policy=None):
        n = len(jobs)
        self.jobs, self.cluster = jobs, cluster
        # What the policy is given: read-only copies, durations only for a declared oracle
        # (JobView and JobsView read ``oracle`` and ``policy_name`` to say who broke the rule).
        self.oracle = True if policy is None else getattr(policy, "oracle", False) is True
        self.policy_name = "policy" if policy is None else policy.name
        pol = policy if policy is not None else _AnyOracle()
        self.policy_jobs, self.policy_cluster = policy_inputs(jobs, cluster, pol)
        self.gpu_type = cluster.gpu_type
        self.gpu_node = cluster.gpu_node
        self.free = np.full(cluster.total_gpus, 1000, dtype=np.int64)
        self._place = _placement.FUNCTIONS[place_name]
        self.rng = np.random.default_rng(seed)
        # Per-job state in plain lists: the loop reads and writes single items, which is
        # several times faster on lists of Python ints than on NumPy arrays.
        self.gpus_l = jobs.num_gpus.tolist()
        self.milli_l = jobs.gpu_milli.tolist()
        self.status = np.zeros(n, np.int8)   # JOB_* codes (contract.py), all JOB_NEW
        self.alloc = [[] for _ in range(n)]
        self.rem = jobs.work_ns.tolist()
        self.overhead = [0] * n
        self.rate = [1.0] * n
        self.first_start = [-1] * n
        self.finish = [-1] * n
        self.preemptions = [0] * n
        self.attained = [0] * n
        self.restore_ns = int(restore_ns)
        self.now = 0
        ntypes = len(cluster.type_names)
        self.type_gpus = [np.flatnonzero(self.gpu_type == t) for t in range(ntypes)]
        # Types each job may use, fastest first (ties: cluster order).
        self.type_order = []
        for j in range(n):
            ok = [t for t in range(ntypes) if self.allowed(j, t)]
            ok.sort(key=lambda t: (-self.speed(j, t), t))
            self.type_order.append(ok)
        # One JobView per job, made once: it reads the changing numbers from this state.
        self.views = [JobView(self, j) for j in range(n)]

    def speed(self, j, t) -> float:
        sp = self.jobs.speed
        return 1.0 if sp is None else float(sp[j, t])

    def allowed(self, j, t) -> bool:
        m = self.jobs.type_mask
        if m is not None and m[j] and not (int(m[j]) >> t) & 1:
            return False
        return self.speed(j, t) > 0

    def place(self, j, free, gtype=None, probe=False):
        """GPU ids for job ``j`` on ``free`` (type ``gtype`` or the fastest that fits), or None."""
        g, milli = self.gpus_l[j], self.milli_l[j]
        if gtype is not None:
            t = self.cluster.type_names.index(gtype)
            types = [t] if self.allowed(j, t) else []
        else:
            types = self.type_order[j]
        for t in types:
            got = self._place(free, self.gpu_node, self.type_gpus[t], g, milli, self.rng)
            if got is not None:
                return got
        return None

    # ------------------------------------------------------------------ time
    def advance(self, t, running):
        dt = t - self.now
        if dt > 0:
            views = self.views
            for j in running:
                o = min(self.overhead[j], dt)
                self.overhead[j] -= o
                prog = dt - o
                self.rem[j] -= prog if self.rate[j] == 1.0 else int(prog * self.rate[j])
                self.attained[j] += dt
                views[j]._att = self.attained[j]
        self.now = t

    def finish_time(self, j) -> int:
        r = max(self.rem[j], 0)
        run = r if self.rate[j] == 1.0 else math.ceil(r / self.rate[j])
        return self.now + int(self.overhead[j]) + max(run, 0)

    def view(self, waiting, running):
        v = self.views
        return View(self, tuple([v[j] for j in waiting]), tuple([v[j] for j in running]))

    def apply(self, d, waiting, running):
        for j in d.preempt:
            _placement.release(self.free, self.alloc[j], self.milli_l[j])
            self.alloc[j] = []
            self.status[j] = JOB_WAIT
            self.preemptions[j] += 1
            self.views[j]._run = False
            running.discard(j)
            waiting.add(j)
        for j, gpus in d.start:
            _placement.reserve(self.free, gpus, self.milli_l[j])
            self.alloc[j] = list(gpus)
            self.status[j] = JOB_RUN
            self.views[j]._run = True
            self.rate[j] = self.speed(j, int(self.gpu_type[gpus[0]]))
            if self.first_start[j] < 0:
                self.first_start[j] = self.now
            elif self.restore_ns:
                self.overhead[j] = self.restore_ns
            waiting.discard(j)
            running.add(j)


class _AnyOracle:
    """Stands for the policy when a state is built without one (tests): sees everything."""

    oracle = True
    name = "policy"


#: The CPU seconds one call of a policy may take (a plug-in that loops forever must not
#: stall a workshop); a replay's own policies take microseconds to milliseconds a call.
POLICY_CPU_S = 5.0
#: Wake-ups a policy may ask for: this many per simulated second on average, plus a start
#: allowance (a policy asking to be woken every nanosecond never finishes otherwise).
WAKE_PER_SIM_S, WAKE_ALLOWANCE = 100, 10_000


def call(name, what, method, *args):
    """``method(*args)`` of policy ``name``; an exception inside it becomes one PolicyError.

    The policy's own error is chained (``__cause__``), so a notebook still shows where it
    happened; the CLI prints the one line. A PolicyError (an invalid decision, an oracle
    read) or a ParameterError (the policy's own option check) passes unchanged. SystemExit
    inside a policy is an error too, not an exit 0. A call past :data:`POLICY_CPU_S` of CPU
    time is stopped and refused.
    """
    c0 = time.process_time()
    try:
        with _cpu_limit(POLICY_CPU_S):
            out = method(*args)
        if time.process_time() - c0 > POLICY_CPU_S:
            raise _CpuLimit
        return out
    except _CpuLimit:
        raise PolicyError(name, f"{what}() took more than {POLICY_CPU_S:g} s of CPU time in one call "
                                f"(an endless loop?)") from None
    except ParameterError:
        raise
    except RecursionError:
        raise PolicyError(name, f"{what}() recursed too deeply (RecursionError)") from None
    except (Exception, SystemExit) as exc:
        raise PolicyError(name, f"{what}() raised {type(exc).__name__}: {excerpt(str(exc))}") from exc


def check_fits(jobs, cluster):
    """Raise ParameterError if some job can never run on the cluster (before any work)."""
    from magnum_lib.base.validate import ParameterError

    largest = np.array([cluster.gpus_of_type(t) for t in range(len(cluster.type_names))])
    for j in np.flatnonzero(jobs.num_gpus > largest.max()).tolist()[:1]:
        raise ParameterError("jobs", f"job {j} needs {int(jobs.num_gpus[j])} GPUs but the cluster's "
                                     f"largest GPU type has {int(largest.max())}; filter the trace "
                                     f"(e.g. --gpu-counts) or give a bigger cluster")
    if jobs.speed is not None and jobs.speed.shape[1] != len(cluster.type_names):
        raise ParameterError("jobs", f"speed has {jobs.speed.shape[1]} GPU types, the cluster "
                                     f"{len(cluster.type_names)}")


def check_round_s(name, round_s) -> float:
    """A policy's ``round_s``: seconds in [MIN_ROUND_S, MAX_ROUND_S] (PolicyError naming the policy)."""
    ok = isinstance(round_s, (int, float, np.integer, np.floating)) and not isinstance(round_s, bool)
    if not (ok and math.isfinite(round_s) and MIN_ROUND_S <= round_s <= MAX_ROUND_S):
        raise PolicyError(name, f"round_s must be None or seconds in [{MIN_ROUND_S:g}, {MAX_ROUND_S:g}], "
                                f"got {excerpt(round_s)}")
    return float(round_s)


class _Loop:
    """The replay loop's own state between events: queues, arrival cursor, wake-up, samples."""

    def __init__(self, st, policy, round_ns, progress):
        self.st, self.policy, self.name, self.round_ns, self.bar = st, policy, policy.name, round_ns, progress
        self.n = len(st.jobs)
        self.submit = st.jobs.submit_ns
        self.waiting, self.running = set(), set()
        self.i, self.done = 0, 0
        self.wake = None
        self.util_t, self.util_busy = [], []
        self.shared = not st.jobs.whole_gpus
        self.frag = []   # shared GPUs: fraction of the free capacity stranded on partly used GPUs
        self.idle_rounds = 0
        self.wakes = 0

    def next_time(self) -> int:
        """Step 1: the next instant (arrival, finish, wake-up or round boundary); drop a due wake-up."""
        st, waiting, running, round_ns = self.st, self.waiting, self.running, self.round_ns
        cands = []
        if self.i < self.n:
            cands.append(int(self.submit[self.i]))
        if running:
            cands.append(min(st.finish_time(j) for j in running))
        if self.wake is not None:
            cands.append(self.wake)
        if round_ns is not None and (waiting or running):
            cands.append((st.now // round_ns + 1) * round_ns)
        if not cands:
            raise PolicyError(self.name, f"left {len(waiting)} job(s) waiting on an idle cluster with no "
                                         f"arrival or wake-up to come (first: job {min(waiting)})")
        t = min(cands)
        if self.wake is not None and self.wake <= t:
            self.wake = None
        return t

    def finish_due(self, t) -> None:
        """Step 2: free the GPUs of every running job whose work is done at ``t`` (job order)."""
        st, running = self.st, self.running
        for j in sorted(j for j in running if st.rem[j] <= 0):
            _placement.release(st.free, st.alloc[j], st.milli_l[j])
            st.alloc[j] = []
            st.status[j] = JOB_DONE
            st.views[j]._run = False
            st.finish[j] = t
            running.discard(j)
            self.done += 1
            if self.bar is not None:
                self.bar.update(1)

    def admit(self, t) -> None:
        """Step 3: every job submitted at ``t`` joins the waiting set."""
        st, submit, n = self.st, self.submit, self.n
        while self.i < n and submit[self.i] == t:
            st.status[self.i] = JOB_WAIT
            self.waiting.add(self.i)
            self.i += 1

    def decide(self, t) -> None:
        """Step 4: call the policy, apply its decision, keep its wake-up; refuse a runaway or stuck policy."""
        st, name, waiting, running, round_ns = self.st, self.name, self.waiting, self.running, self.round_ns
        w, r = sorted(waiting), sorted(running)
        d = normalize(name, call(name, "schedule", self.policy.schedule, st.view(w, r)), st)
        st.apply(d, waiting, running)
        # The latest decision's wake-up replaces any earlier one (the policy recomputes
        # it at every call; a stale earlier wake-up would add a call it did not ask for).
        wake = self.wake = int(d.wake_ns) if d.wake_ns is not None and d.wake_ns > t else None
        if wake is not None:
            self.wakes += 1
            if self.wakes > WAKE_ALLOWANCE + WAKE_PER_SIM_S * t / NS:
                raise PolicyError(name, f"asked to be woken {self.wakes:,} times in {t / NS:.6g} simulated s "
                                        f"(at most {WAKE_ALLOWANCE:,} + {WAKE_PER_SIM_S} per simulated "
                                        f"second): wake it only when something changes")
        if round_ns is not None:
            stuck = waiting and not running and self.i >= self.n and wake is None
            self.idle_rounds = self.idle_rounds + 1 if stuck else 0
            if self.idle_rounds > 2:
                raise PolicyError(name, f"left {len(waiting)} job(s) waiting on an idle cluster "
                                        f"round after round (first: job {min(waiting)})")

    def sample(self, t) -> None:
        """Step 5: record the busy GPUs (and stranded capacity) at ``t`` if they changed."""
        st, util_t, util_busy = self.st, self.util_t, self.util_busy
        busy = (1000 * st.free.size - int(st.free.sum())) / 1000.0   # GPUs' worth of milli in use
        if util_t and util_t[-1] == t:     # (cannot happen: one call per instant)
            util_busy[-1] = busy
        elif not util_busy or util_busy[-1] != busy:   # the step function's change points
            util_t.append(t)
            util_busy.append(busy)
            if self.shared:
                f = st.free
                total = int(f.sum())
                self.frag.append(int(f[(f > 0) & (f < 1000)].sum()) / total if total else 0.0)

    def result(self) -> dict:
        """The raw per-job arrays and the utilization step function."""
        st = self.st
        out = dict(first_start=np.array(st.first_start, np.int64), finish=np.array(st.finish, np.int64),
                   preemptions=np.array(st.preemptions, np.int64), held=np.array(st.attained, np.int64),
                   util_t=np.array(self.util_t, np.int64), util_busy=np.array(self.util_busy))
        if self.shared:
            out["frag"] = np.array(self.frag)
        return out


def run(jobs, cluster, policy, placement="pooled", seed=0, restore_s=0.0, progress=None, clock=None):
    """Replay ``jobs`` on ``cluster`` under ``policy``; return raw per-job arrays (dict)."""
    check_fits(jobs, cluster)
    st = _State(jobs, cluster, placement, seed, round(restore_s * NS), policy)
    with _cpu_session():   # the CPU cap's timer or watchdog set up once, not at every call
        return _run(st, policy, progress, clock)


def _run(st, policy, progress, clock):
    """The loop of :func:`run` on a built state (steps 1-5 at every instant until all jobs finish)."""
    name = policy.name
    call(name, "reset", policy.reset, st.policy_jobs, st.policy_cluster)
    round_ns = None if policy.round_s is None else round(check_round_s(name, policy.round_s) * NS)
    loop = _Loop(st, policy, round_ns, progress)
    while loop.done < loop.n:
        t = loop.next_time()
        st.advance(t, loop.running)
        if clock is not None:
            clock[0] = t / NS
        loop.finish_due(t)
        loop.admit(t)
        if round_ns is None or t % round_ns == 0:
            loop.decide(t)
        loop.sample(t)
    return loop.result()
