"""Policy plug-ins: oracle-free views, read-only inputs, checked decisions, hostile policy files."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from magnum_lib.replay import Decision, Policy, PolicyError, ReplayCluster, make_jobs, replay
from magnum_lib.replay.api import OracleError
from magnum_lib.replay.policies import SJF, SRTF, FifoSkip, TiresiasLAS


def _jobs():
    # 6 jobs on 4 GPUs: enough contention that every policy is called with a queue.
    return make_jobs([0, 0, 5, 10, 10, 20], [100, 30, 50, 10, 60, 5], [2, 4, 1, 1, 2, 1])


CLUSTER = ReplayCluster.uniform(1, 4)


# ------------------------------------------------------------------ oracle-free views
class ReadsRemainingInALambda(Policy):
    """The case that fooled exercise 1's co_names check: the read is inside a lambda."""

    name = "lambda-remaining"

    def schedule(self, view):
        plan = view.plan()
        for job in sorted(view.queue, key=lambda j: j.remaining_s):
            plan.start(job)
        return plan


class ReadsDuration(Policy):
    name = "reads-duration"

    def schedule(self, view):
        plan = view.plan()
        for job in sorted(view.queue, key=lambda j: (j.duration_s, j.id)):
            plan.start(job)
        return plan


class ReadsWorkArray(Policy):
    name = "reads-work-array"

    def schedule(self, view):
        work = view.jobs.work_ns
        plan = view.plan()
        for job in sorted(view.queue, key=lambda j: work[j.id]):
            plan.start(job)
        return plan


class ReadsWorkInReset(Policy):
    name = "reads-work-in-reset"

    def reset(self, jobs, cluster):
        self.d = jobs.duration_s

    def schedule(self, view):
        return [j.id for j in view.queue if j.num_gpus <= view.free_gpus][:1]


class EmptyLAS(TiresiasLAS):
    """Exercise 1's other loophole: a built-in under a new name (LAS reads no duration)."""


@pytest.mark.parametrize("cls, attribute", [(ReadsRemainingInALambda, "job.remaining_s"),
                                            (ReadsDuration, "job.duration_s"),
                                            (ReadsWorkArray, "jobs.work_ns"),
                                            (ReadsWorkInReset, "jobs.duration_s")])
def test_non_oracle_policy_cannot_read_durations(cls, attribute):
    with pytest.raises(OracleError) as exc:
        replay(_jobs(), CLUSTER, cls())
    msg = str(exc.value)
    assert cls.name in msg and attribute in msg and "oracle = True" in msg


def test_function_policy_is_not_an_oracle():
    def peek(view):
        return [j.id for j in sorted(view.queue, key=lambda j: j.remaining_ns)][:1]

    with pytest.raises(OracleError, match="peek.*job.remaining_ns"):
        replay(_jobs(), CLUSTER, peek)


def test_declared_oracle_may_read_and_matches_builtin():
    class MySJF(ReadsDuration):
        name = "my-sjf"
        oracle = True

    mine = replay(_jobs(), CLUSTER, MySJF())
    ref = replay(_jobs(), CLUSTER, "sjf", backend="python")
    assert np.array_equal(mine.finish_s, ref.finish_s)


def test_builtin_oracles_declare_it_and_las_does_not():
    from magnum_lib.replay import BUILTIN, make_policy

    oracles = {n for n in BUILTIN if getattr(make_policy(n), "oracle", False)}
    assert oracles == {"sjf", "srtf", "ftf", "gavel-fifo", "gavel-rounds", "gavel-rounds-blind"}
    assert SJF.oracle and SRTF.oracle and not TiresiasLAS.oracle


def test_empty_las_subclass_runs_in_the_readable_loop_with_las_results():
    # A subclass may override schedule(): it must never be run by the compiled loop's
    # built-in twin. An empty one gives LAS's numbers (it reads no duration, so it is legal).
    mine = replay(_jobs(), CLUSTER, EmptyLAS())
    ref = replay(_jobs(), CLUSTER, "las")
    assert mine.backend == "python"
    assert np.array_equal(mine.finish_s, ref.finish_s)

    class NotFifo(FifoSkip):
        name = "not-fifo"

        def schedule(self, view):           # smallest gang first instead of submit order
            plan = view.plan()
            for job in sorted(view.queue, key=lambda j: (j.num_gpus, j.id)):
                plan.start(job)
            return plan

    r = replay(_jobs(), CLUSTER, NotFifo())
    assert r.backend == "python" and r.policy == "not-fifo"


# ------------------------------------------------------------------ read-only inputs
def _writer(action):
    class Writer(Policy):
        name = "writer"

        def schedule(self, view):
            action(view)
            return [j.id for j in view.queue if j.num_gpus <= view.free_gpus][:1]

    return Writer()


@pytest.mark.parametrize("action", [
    lambda v: v.jobs.num_gpus.__setitem__(slice(None), 1),
    lambda v: v.jobs.submit_ns.__setitem__(slice(None), 0),
    lambda v: v.jobs.gpu_milli.__setitem__(0, 1),
    lambda v: v.cluster.node_gpus.__setitem__(0, 1000),
    lambda v: v.free_milli.__setitem__(0, 0),
], ids=["num_gpus", "submit_ns", "gpu_milli", "node_gpus", "free_milli"])
def test_views_are_read_only(action):
    with pytest.raises(PolicyError, match="writer.*read-only"):
        replay(_jobs(), CLUSTER, _writer(action))


@pytest.mark.parametrize("attr, value", [("num_gpus", 1), ("id", 0), ("running", True),
                                         ("attained_ns", 10**12), ("submit_s", 0.0)])
def test_job_views_cannot_be_assigned(attr, value):
    with pytest.raises(PolicyError, match="writer.*AttributeError"):
        replay(_jobs(), CLUSTER, _writer(lambda v: setattr(v.queue[0], attr, value) if v.queue else None))


def test_a_policy_that_forces_writes_cannot_change_results():
    # Even after making its own copy writeable, nothing the engine reads changes.
    def vandal(view):
        for a in (view.jobs.num_gpus, view.jobs.submit_ns):
            a.setflags(write=True)
            a[:] = 1
        return [j.id for j in view.queue if j.num_gpus <= view.free_gpus][:1]

    def plain(view):
        return [j.id for j in view.queue if j.num_gpus <= view.free_gpus][:1]

    a, b = replay(_jobs(), CLUSTER, vandal), replay(_jobs(), CLUSTER, plain)
    assert np.array_equal(a.finish_s, b.finish_s) and np.array_equal(a.submit_s, b.submit_s)


# ------------------------------------------------------------------ decisions of the wrong type
@pytest.mark.parametrize("decision, words", [
    (Decision(start=3), "Decision.start must be a list"),
    (Decision(start="0"), "Decision.start must be a list"),
    (Decision(preempt=1), "Decision.preempt must be a list"),
    (Decision(start=[1.5]), "job id must be an integer"),
    (Decision(start=[(0, 7)]), "GPU ids must be integers"),
    (Decision(wake_s=float("nan")), "wake_s must be a time"),
    (Decision(wake_s=1e300), "wake_s must be a time"),
    (Decision(wake_ns="soon"), "wake_ns must be an integer"),
    (42, "must return a Plan, a Decision"),
])
def test_wrong_decision_types_name_the_policy(decision, words):
    def bad(view):
        return decision

    with pytest.raises(PolicyError) as exc:
        replay(_jobs(), CLUSTER, bad)
    assert "bad" in str(exc.value) and words in str(exc.value)


@pytest.mark.parametrize("body, words", [
    ("1 / 0", "schedule() raised ZeroDivisionError"),
    ("raise SystemExit('bye')", "schedule() raised SystemExit"),
    ("view.plan().wake_at(float('nan'))", "plan.wake_at"),
])
def test_errors_inside_schedule_become_one_policy_error(body, words):
    ns = {}
    exec(f"def boom(view):\n    {body}\n", ns)
    with pytest.raises(PolicyError) as exc:
        replay(_jobs(), CLUSTER, ns["boom"])
    assert "boom" in str(exc.value) and words in str(exc.value)


def test_recursion_inside_schedule_is_one_policy_error():
    def deep(view):
        return deep(view)

    with pytest.raises(PolicyError, match="deep.*recursed too deeply"):
        replay(_jobs(), CLUSTER, deep)


# ------------------------------------------------------------------ hostile --policy-file
def _cli(*args):
    return subprocess.run([sys.executable, "-m", "magnum_lib", *args], capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("source, words", [
    ("import sys\nsys.exit(3)\n", "called sys.exit(3)"),
    ("raise RuntimeError('no')\n", "RuntimeError"),
    ("def f():\n    return f()\nf()\n", "recursed too deeply"),
    ("def (:\n", "SyntaxError"),
    ("class P:\n    def __init__(self):\n        1 / 0\n    def schedule(self, view):\n        return None\n",
     "ZeroDivisionError"),
    ("def P(view):\n    return {'start': 3}\n", "must return a Plan"),
    ("from magnum_lib.replay import Decision\ndef P(view):\n    return Decision(start=3)\n",
     "Decision.start must be a list"),
    ("def P(view):\n    return sorted(view.queue, key=lambda j: j.remaining_s)[0].id\n", "oracle"),
])
def test_hostile_policy_file_is_one_line_exit_2(tmp_path, source, words):
    f = tmp_path / "bad_policy.py"
    f.write_text(source + ("\nP = None\n" if "P" not in source else ""))
    out = _cli("replay", "--trace", "sample", "--nodes", "8", "--policy-file", f"{f}:P")
    assert out.returncode == 2, (out.returncode, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    assert words in lines[0], lines[0]
    if "sys.exit" in source or "RuntimeError" in source or "recursed" in words or "Syntax" in words:
        assert "bad_policy.py" in lines[0]
