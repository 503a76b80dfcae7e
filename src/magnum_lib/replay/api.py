"""The policy plug-in API: what a policy sees and what it may decide.

A policy is a class with a ``schedule(view)`` method (or a plain function
``f(view)``, wrapped by :func:`as_policy`). At every decision instant the replay
calls it with a :class:`View` and applies the :class:`Decision` it returns::

    class SmallestFirst(Policy):
        name = "smallest-first"
        def schedule(self, view):
            plan = view.plan()
            for job in sorted(view.queue, key=lambda j: (j.num_gpus, j.id)):
                plan.start(job)          # False (and nothing reserved) when it does not fit
            return plan

``view.plan()`` is a scratch copy of the free GPUs that places jobs with the replay's
placement rule, so a policy never has to pick GPU ids itself (it may:
``plan.start(job, gpus=[...])``). Returning a :class:`Decision` built by hand, or a
list of job ids to start, works as well. Every decision is checked in full before any
of it is applied: a GPU given twice, a gang started without all its GPUs, an unknown
or finished job id, a job started twice or preempted while not running raise
:class:`PolicyError` naming the policy and the offending decision, and the cluster is
left exactly as it was.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import numpy as np

from magnum_lib.base.validate import ParameterError, excerpt
from magnum_lib.replay.contract import JOB_RUN, JOB_STATUS_NAMES, JOB_WAIT
from magnum_lib.replay.contract import NS_S as NS
from magnum_lib.replay.placement import release, reserve

__all__ = ["Policy", "PolicyError", "OracleError", "Decision", "View", "JobView", "JobsView", "Plan",
           "as_policy", "is_oracle", "policy_inputs"]

#: A round-based policy's ``round_s`` bounds, seconds: a 1 ms round over a month-long trace
#: is already ~10^9 rounds; shorter ones never finish, longer ones are never reached.
MIN_ROUND_S, MAX_ROUND_S = 1e-3, 1e9


def check_round(value, name: str = "round_s") -> float:
    """``value`` as seconds in [:data:`MIN_ROUND_S`, :data:`MAX_ROUND_S`], or a ParameterError
    naming ``name`` (a policy's constructor checks its round with it)."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if not (ok and math.isfinite(value) and MIN_ROUND_S <= value <= MAX_ROUND_S):
        raise ParameterError(name, f"must be seconds in [{MIN_ROUND_S:g}, {MAX_ROUND_S:g}], got {excerpt(value)}")
    return float(value)


class PolicyError(ParameterError):
    """A policy returned an invalid decision (nothing of it was applied)."""

    def __init__(self, policy_name: str, detail: str):
        super().__init__("policy", f"{policy_name!r}: {detail}")
        self.policy = policy_name


class Policy:
    """Base class of every policy (built-in or yours).

    Attributes
    ----------
    name : str
        Shown in errors and leaderboards.
    round_s : float or None
        None: ``schedule`` is called after every event (arrival, finish, wake-up).
        A number: only at round boundaries ``0, round_s, 2 round_s, ...`` (Gavel's
        time-sliced rounds; GPUs a job frees mid-round stay idle until the next round).
    oracle : bool
        False (default): the policy sees no job's duration or remaining time (a real
        scheduler does not know them); reading ``job.duration_s``, ``job.remaining_s``,
        ``job.remaining_ns``, ``view.jobs.work_ns`` or ``view.jobs.duration_s`` raises
        :class:`OracleError`. True: it may (SJF, SRTF, FTF and Gavel's simulator declare it).
    """

    name = "policy"
    round_s: float | None = None
    oracle: bool = False

    def reset(self, jobs, cluster) -> None:
        """Called once before a replay with its :class:`~magnum_lib.replay.jobs.ReplayJobs`
        and :class:`~magnum_lib.replay.cluster.ReplayCluster` (clear per-replay state here)."""

    def schedule(self, view: View):
        raise NotImplementedError("a policy must define schedule(self, view)")

    def __repr__(self) -> str:
        return f"<policy {self.name}>"


class _FunctionPolicy(Policy):
    def __init__(self, func, name=None, round_s=None, oracle=False):
        self._func = func
        self.name = name or getattr(func, "__name__", "function")
        self.round_s = round_s
        self.oracle = oracle is True

    def schedule(self, view):
        return self._func(view)


def as_policy(obj, name=None) -> Policy:
    """A :class:`Policy` from a Policy instance, a Policy subclass or a function ``f(view)``."""
    if isinstance(obj, Policy):
        return obj
    if isinstance(obj, type) and issubclass(obj, Policy):
        return _instance(obj)
    if isinstance(obj, type) and callable(getattr(obj, "schedule", None)):
        inst = _instance(obj)
        return _FunctionPolicy(inst.schedule, name or getattr(inst, "name", obj.__name__),
                               getattr(inst, "round_s", None), getattr(inst, "oracle", False))
    if callable(getattr(obj, "schedule", None)):
        return _FunctionPolicy(obj.schedule, name or getattr(obj, "name", type(obj).__name__),
                               getattr(obj, "round_s", None), getattr(obj, "oracle", False))
    if callable(obj):
        return _FunctionPolicy(obj, name, oracle=getattr(obj, "oracle", False))
    raise ParameterError("policy", f"must be a Policy, a class with schedule(view) or a "
                                   f"function f(view), got {excerpt(obj)}")


def _instance(cls):
    """``cls()``; an error in the policy's constructor becomes one ParameterError naming it."""
    try:
        inst = cls()
        if getattr(inst, "name", None) == Policy.name:  # unnamed: errors and tables name the class
            inst.name = cls.__name__
        return inst
    except KeyboardInterrupt:
        raise
    except BaseException as exc:   # (SystemExit too: a policy does not end the replay)
        raise ParameterError("policy", f"{cls.__name__}() raised {type(exc).__name__}: "
                                       f"{excerpt(str(exc))}") from exc


@dataclass
class Decision:
    """What to do now: ``preempt`` (job ids) first, then ``start`` in order.

    ``start`` items: a job id (placed by the replay's placement rule), ``(id, [gpu ids])``
    or ``(id, "gpu type name")``. ``wake_s``: call the policy again at this absolute
    time (seconds) even if no job arrives or finishes (e.g. a LAS demotion); each
    decision's wake-up replaces the previous one (None: no wake-up).
    """

    start: list = field(default_factory=list)
    preempt: list = field(default_factory=list)
    wake_s: float | None = None
    wake_ns: int | None = None


class OracleError(PolicyError):
    """A policy that does not declare ``oracle = True`` read a job's duration or remaining time."""

    def __init__(self, policy_name: str, attribute: str):
        super().__init__(policy_name, f"read {attribute}, which only an oracle may see: a real "
                                      f"scheduler does not know a job's duration; declare "
                                      f"`oracle = True` on the policy class to use it")
        self.attribute = attribute


def _oracle_only(state, attribute: str) -> None:
    """Raise :class:`OracleError` unless the policy being replayed declared itself an oracle."""
    if not getattr(state, "oracle", True):
        raise OracleError(getattr(state, "policy_name", "policy"), attribute)


class JobView:
    """One job as a policy sees it (read-only; times in seconds unless ``_ns``).

    The replay keeps one JobView per job: it updates the attained service and the running
    flag as the job runs, and computes the others from the replay when asked, so a view is
    the job *at the current decision*: read it during the ``schedule`` call that got it.
    ``duration_s``, ``remaining_s`` and ``remaining_ns`` are the oracle's: reading one in a
    policy that does not declare ``oracle = True`` raises :class:`OracleError`.
    Attributes cannot be assigned (a policy reads the replay, it does not change it).
    """

    # The replay writes _att and _run; everything public is a read-only property.
    __slots__ = ("_st", "_id", "_submit_s", "_num_gpus", "_gpu_milli", "_model", "_group", "_att", "_run")

    def __init__(self, state, j):
        jobs = state.jobs
        self._st = state
        self._id = j
        self._submit_s = jobs.submit_ns[j] / NS
        self._num_gpus = int(jobs.num_gpus[j])
        self._gpu_milli = int(jobs.gpu_milli[j])
        self._model = jobs.model_names[jobs.model_code[j]] if jobs.model_code is not None else None
        self._group = jobs.group_names[jobs.group_code[j]] if jobs.group_code is not None else None
        self._att = int(state.attained[j])        # kept current by the replay
        self._run = bool(state.status[j] == JOB_RUN)    # kept current by the replay

    id = property(lambda self: self._id, doc="Job number (submit order, ties in trace order).")
    submit_s = property(lambda self: self._submit_s, doc="Submit time, s.")
    num_gpus = property(lambda self: self._num_gpus, doc="GPUs of the gang.")
    gpu_milli = property(lambda self: self._gpu_milli, doc="Thousandths of each GPU it uses.")
    model = property(lambda self: self._model, doc="Model name when the trace gives one.")
    group = property(lambda self: self._group, doc="Group label (VC, user) when the trace gives one.")
    attained_ns = property(lambda self: self._att, doc="Time it has held GPUs so far, ns.")
    running = property(lambda self: self._run, doc="True while it holds GPUs.")

    @property
    def attained_s(self) -> float:
        return float(self._att) / NS

    @property
    def attained_gpu_s(self) -> float:
        return self.attained_s * self._num_gpus

    @property
    def duration_s(self) -> float:
        """Run time on the reference GPU type, s (oracle only)."""
        _oracle_only(self._st, "job.duration_s")
        return self._st.jobs.work_ns[self._id] / NS

    @property
    def remaining_ns(self) -> int:
        """Work left, ns (oracle only)."""
        st = self._st
        if not st.oracle:   # (the check inline: SRTF reads this for every job at every event)
            _oracle_only(st, "job.remaining_ns")
        return max(int(st.rem[self._id]), 0)

    @property
    def restore_left_ns(self) -> int:
        """Restore time a running job still pays before its work progresses again, ns; 0 when
        it is not running (oracle only: it tells when the job will finish)."""
        st = self._st
        _oracle_only(st, "job.restore_left_ns")
        return int(st.overhead[self._id]) if self._run else 0

    @property
    def remaining_s(self) -> float:
        """Work left, s (oracle only)."""
        _oracle_only(self._st, "job.remaining_s")
        return max(int(self._st.rem[self._id]), 0) / NS

    @property
    def wait_s(self) -> float:
        st = self._st
        return (st.now - st.jobs.submit_ns[self._id] - st.attained[self._id]) / NS

    @property
    def gpus(self) -> tuple:
        return tuple(self._st.alloc[self._id])

    @property
    def gpu_type(self):
        st = self._st
        return st.cluster.type_names[st.gpu_type[st.alloc[self._id][0]]] if self._run else None

    @property
    def preemptions(self) -> int:
        return int(self._st.preemptions[self._id])

    def __repr__(self) -> str:
        state = f"running on {list(self.gpus)}" if self._run else f"waiting {self.wait_s:g} s"
        return f"JobView(id={self._id}, gpus={self._num_gpus}, {state})"


def _frozen(a):
    """A read-only copy of array ``a`` (None stays None)."""
    if a is None:
        return None
    out = np.array(a, copy=True)
    out.setflags(write=False)
    return out


class JobsView:
    """The replay's job list as a policy sees it: read-only copies of the static arrays.

    The same attributes as :class:`~magnum_lib.replay.jobs.ReplayJobs` (``submit_ns``,
    ``num_gpus``, ``gpu_milli``, ``speed``, ``type_mask``, the group and model labels).
    ``work_ns`` and ``duration_s`` (the oracle's) are there only for a policy that declares
    ``oracle = True``; reading them otherwise raises :class:`OracleError`. Writing to an
    array raises ``ValueError: assignment destination is read-only``; the replay never reads
    these copies, so nothing a policy does to them changes a result.
    """

    def __init__(self, jobs, oracle: bool, policy_name: str):
        self._oracle, self.policy_name = bool(oracle), policy_name
        self.submit_ns = _frozen(jobs.submit_ns)
        self.num_gpus = _frozen(jobs.num_gpus)
        self.gpu_milli = _frozen(jobs.gpu_milli)
        self.speed = _frozen(jobs.speed)
        self.type_mask = _frozen(jobs.type_mask)
        self.group_code, self.group_names = _frozen(jobs.group_code), tuple(jobs.group_names)
        self.model_code, self.model_names = _frozen(jobs.model_code), tuple(jobs.model_names)
        self.name = jobs.name
        self._work = _frozen(jobs.work_ns) if oracle else None

    @property
    def oracle(self) -> bool:
        return self._oracle

    @property
    def work_ns(self) -> np.ndarray:
        _oracle_only(self, "jobs.work_ns")
        return self._work

    @property
    def duration_s(self) -> np.ndarray:
        _oracle_only(self, "jobs.duration_s")
        return self._work / NS

    @property
    def submit_s(self) -> np.ndarray:
        return self.submit_ns / NS

    @property
    def whole_gpus(self) -> bool:
        return bool(np.all(self.gpu_milli == 1000))

    def __len__(self) -> int:
        return int(self.submit_ns.size)

    def __repr__(self) -> str:
        return f"JobsView({self.name!r}, {len(self)} jobs{', oracle' if self._oracle else ''})"


def policy_inputs(jobs, cluster, policy) -> tuple:
    """``(jobs view, cluster copy)`` a policy is given: read-only, durations for oracles only."""
    from magnum_lib.replay.cluster import ReplayCluster

    oracle = is_oracle(policy)
    cl = ReplayCluster(_frozen(cluster.node_gpus), _frozen(cluster.node_type), cluster.type_names,
                       cluster.name)
    for a in (cl.node_gpus, cl.node_type):   # (__post_init__ may hand back a new array)
        a.setflags(write=False)
    return JobsView(jobs, oracle, policy.name), cl


def is_oracle(policy) -> bool:
    """True when ``policy`` declares ``oracle = True`` (it may read durations)."""
    return getattr(policy, "oracle", False) is True


class View:
    """The replay as a policy sees it at ``now_s``.

    Attributes
    ----------
    now_s : float
    queue : tuple of JobView
        Waiting jobs (never started or preempted), by submit time then id (= id order).
    running : tuple of JobView
        Running jobs, in id order.
    free_gpus : int
        Whole idle GPUs (all types).
    free_by_type : dict
        Whole idle GPUs of each type name.
    free_milli : int64 array (read-only)
        Free milli-GPU of every GPU.
    cluster, jobs : read-only copies of the replay's cluster and job list (static data, e.g.
        the speed matrix; see :class:`JobsView`).
    restore_ns : int
        The replay's checkpoint-restore time, ns: a job started again after a preemption
        (or moved to other GPUs) pays it before its work progresses.
    """

    def __init__(self, state, queue, running):
        self._state = state
        self.now_ns = state.now
        self.now_s = state.now / NS
        self.queue = queue
        self.running = running
        self.cluster = state.policy_cluster
        self.jobs = state.policy_jobs
        self.free_gpus = int(np.count_nonzero(state.free == 1000))
        self.restore_ns = state.restore_ns

    @property
    def free_by_type(self) -> dict:
        st = self._state
        whole = st.free == 1000
        return {n: int((whole & (st.gpu_type == t)).sum()) for t, n in enumerate(st.cluster.type_names)}

    @property
    def free_milli(self) -> np.ndarray:
        out = self._state.free.copy()
        out.setflags(write=False)
        return out

    def plan(self) -> Plan:
        """A scratch copy of the free GPUs to build a decision in (see :class:`Plan`)."""
        return Plan(self._state)


class Plan:
    """A decision under construction; return it from ``schedule``.

    ``start(job)`` places the job with the replay's placement rule on the GPUs still
    free in this plan and returns True, or returns False and reserves nothing.
    ``preempt(job)`` frees a running job's GPUs in the plan (starting it again in the
    same plan moves it; that counts as a preemption). ``wake_at(t_s)`` asks for
    a call at that time.
    """

    def __init__(self, state):
        self._state = state
        self.free = state.free.copy()
        self._whole = int(np.count_nonzero(self.free == 1000))   # idle GPUs: a gang wanting more fails fast
        self._starts, self._preempts, self._wake = [], [], None
        self._taken = set()      # started in this plan

    @property
    def free_gpus(self) -> int:
        return self._whole

    def fits(self, job) -> bool:
        jid = job.id if isinstance(job, JobView) else job
        if self._state.milli_l[jid] == 1000 and self._state.gpus_l[jid] > self._whole:
            return False
        return self._state.place(jid, self.free, None, probe=True) is not None

    def start(self, job, gpus=None, gpu_type=None) -> bool:
        jid = job.id if isinstance(job, JobView) else job
        st = self._state
        milli = st.milli_l[jid]
        if gpus is None and milli == 1000 and st.gpus_l[jid] > self._whole:
            return False          # too few idle GPUs for any placement rule: skip the search
        if jid in self._taken or (st.status[jid] == JOB_RUN and jid not in self._preempts):
            return False
        where = st.place(jid, self.free, gpu_type) if gpus is None else list(gpus)
        if where is None:
            return False
        if gpus is not None:  # explicit GPUs: checked again when applied; here only reserve
            if any(not (0 <= g < self.free.size) or self.free[g] < milli for g in where):
                return False
        reserve(self.free, where, milli)
        self._whole = int(np.count_nonzero(self.free == 1000))
        self._starts.append((jid, where))
        self._taken.add(jid)
        return True

    def preempt(self, job) -> None:
        jid = job.id if isinstance(job, JobView) else job
        st = self._state
        if st.status[jid] == JOB_RUN and jid not in self._preempts:
            release(self.free, st.alloc[jid], st.milli_l[jid])
            self._whole = int(np.count_nonzero(self.free == 1000))
            self._preempts.append(jid)

    def wake_at(self, t_s: float) -> None:
        if isinstance(t_s, bool) or not isinstance(t_s, numbers.Real) or not 0 <= t_s <= _WAKE_MAX_NS / NS:
            raise PolicyError(getattr(self._state, "policy_name", "policy"),
                              f"plan.wake_at: a time in seconds in [0, {_WAKE_MAX_NS / NS:g}], got {excerpt(t_s)}")
        self.wake_at_ns(math.ceil(t_s * NS))

    def wake_at_ns(self, t_ns: int) -> None:
        if isinstance(t_ns, bool) or not isinstance(t_ns, numbers.Integral) or not 0 <= t_ns <= _WAKE_MAX_NS:
            raise PolicyError(getattr(self._state, "policy_name", "policy"),
                              f"plan.wake_at_ns: an integer time in ns in [0, {_WAKE_MAX_NS}], got {excerpt(t_ns)}")
        self._wake = int(t_ns) if self._wake is None else min(self._wake, int(t_ns))

    def decision(self) -> Decision:
        return Decision(list(self._starts), list(self._preempts), None, self._wake)


def _as_job_id(policy, what, value, n):
    if isinstance(value, JobView):
        value = value.id
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise PolicyError(policy, f"{what}: job id must be an integer, got {excerpt(value)}")
    value = int(value)
    if not 0 <= value < n:
        raise PolicyError(policy, f"{what}: unknown job id {value} (ids are 0..{n - 1})")
    return value


def normalize(policy: str, out, state) -> Decision:
    """Turn what ``schedule`` returned into a checked :class:`Decision` (or raise PolicyError)."""
    if out is None:
        return Decision()
    out = _as_decision(policy, out)
    n = len(state.jobs)
    free = state.free.copy()
    preempt = _checked_preempt(policy, out.preempt, state, free, n)
    seen = set(preempt)
    start, started = [], set()
    for item in out.start:
        gpus = gtype = None
        if isinstance(item, tuple) and len(item) == 2:
            item, where = item
            if isinstance(where, str):
                gtype = where
            else:
                gpus = where
        jid = _as_job_id(policy, "start", item, n)
        what = f"start job {jid}"
        if jid in started:
            raise PolicyError(policy, f"{what}: the decision already starts it")
        if state.status[jid] != JOB_WAIT and jid not in seen:  # (preempted above = moved)
            raise PolicyError(policy, f"{what}: it is not waiting ({JOB_STATUS_NAMES[state.status[jid]]})")
        started.add(jid)
        gpus = _checked_gang(policy, what, jid, gpus, gtype, state, free)
        reserve(free, gpus, int(state.jobs.gpu_milli[jid]))
        start.append((jid, gpus))
    return Decision(start, preempt, None, _checked_wake(policy, out))


def _as_decision(policy: str, out) -> Decision:
    """A Plan, a list of job ids or a Decision as a Decision whose ``start`` and ``preempt`` are lists."""
    if isinstance(out, Plan):
        out = out.decision()
    elif isinstance(out, (list, tuple)):
        out = Decision(start=list(out))
    elif not isinstance(out, Decision):
        raise PolicyError(policy, f"schedule() must return a Plan, a Decision, a list of job ids "
                                  f"or None, got {excerpt(out)}")
    for what in ("start", "preempt"):
        items = getattr(out, what)
        if not isinstance(items, (list, tuple)):
            raise PolicyError(policy, f"Decision.{what} must be a list of job ids, got "
                                      f"{type(items).__name__} {excerpt(items)}")
    return out


def _checked_preempt(policy: str, items, state, free, n: int) -> list:
    """The running jobs to preempt, each once; their GPUs' milli go back to ``free`` (in place)."""
    seen: set = set()
    preempt = []
    for item in items:
        jid = _as_job_id(policy, "preempt", item, n)
        if jid in seen:
            raise PolicyError(policy, f"preempt job {jid}: listed twice")
        if state.status[jid] != JOB_RUN:
            raise PolicyError(policy, f"preempt job {jid}: it is not running "
                                      f"({JOB_STATUS_NAMES[state.status[jid]]})")
        seen.add(jid)
        release(free, state.alloc[jid], int(state.jobs.gpu_milli[jid]))
        preempt.append(jid)
    return preempt


def _checked_gang(policy: str, what: str, jid: int, gpus, gtype, state, free) -> list:
    """Job ``jid``'s GPUs (given, or placed on ``gtype``), checked free (milli) and of one allowed type."""
    need = int(state.jobs.num_gpus[jid])
    milli = int(state.jobs.gpu_milli[jid])
    if gtype is not None and gtype not in state.cluster.type_names:
        raise PolicyError(policy, f"{what}: unknown GPU type {excerpt(gtype)} "
                                  f"(types: {', '.join(state.cluster.type_names)})")
    if gpus is None:
        gpus = state.place(jid, free, gtype)
        if gpus is None:
            raise PolicyError(policy, f"{what}: needs {need} GPU(s) of {milli} milli, "
                                      f"not free after the earlier items of this decision")
    try:
        gpus = [int(g) for g in gpus]
    except (TypeError, ValueError):
        raise PolicyError(policy, f"{what}: GPU ids must be integers, got {excerpt(gpus)}") from None
    if len(gpus) != need:
        raise PolicyError(policy, f"{what}: a gang of {need} GPU(s) needs all of them at once, "
                                  f"got {len(gpus)}")
    if len(set(gpus)) != len(gpus):
        raise PolicyError(policy, f"{what}: GPU given twice in {excerpt(gpus)}")
    for g in gpus:
        if not 0 <= g < free.size:
            raise PolicyError(policy, f"{what}: unknown GPU {g} (GPUs are 0..{free.size - 1})")
        if free[g] < milli or (milli == 1000 and free[g] != 1000):
            raise PolicyError(policy, f"{what}: GPU {g} is already given ({1000 - free[g]} "
                                      f"of 1000 milli in use)")
    types = {int(state.gpu_type[g]) for g in gpus}
    if len(types) != 1:
        raise PolicyError(policy, f"{what}: a gang must be on GPUs of one type")
    t = types.pop()
    if not state.allowed(jid, t):
        raise PolicyError(policy, f"{what}: cannot run on GPU type "
                                  f"{state.cluster.type_names[t]!r}")
    return gpus


def _checked_wake(policy: str, out: Decision):
    """The decision's wake-up time in ns (the earlier of ``wake_ns`` and ``wake_s``), or None."""
    wake = out.wake_ns
    if wake is not None:
        if isinstance(wake, bool) or not isinstance(wake, numbers.Integral) or not 0 <= wake <= _WAKE_MAX_NS:
            raise PolicyError(policy, f"wake_ns must be an integer time in ns in [0, {_WAKE_MAX_NS}], "
                                      f"got {excerpt(wake)}")
        wake = int(wake)
    if out.wake_s is not None:
        w = out.wake_s
        if isinstance(w, bool) or not isinstance(w, numbers.Real) or not 0 <= w <= _WAKE_MAX_NS / NS:
            raise PolicyError(policy, f"wake_s must be a time in seconds in [0, {_WAKE_MAX_NS / NS:g}], "
                                      f"got {excerpt(w)}")
        w = math.ceil(w * NS)
        wake = w if wake is None else min(wake, w)
    return wake


_WAKE_MAX_NS = 2**62      # about 146 years: later than any replay, far from int64's end
