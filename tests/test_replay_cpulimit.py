"""The CPU cap of a policy call without the POSIX timer (the watchdog thread Windows uses):
an endless ``schedule()`` is stopped and named, a real Ctrl-C stays a KeyboardInterrupt, and a
call within its time is untouched."""
from __future__ import annotations

import _thread
import threading
import time

import pytest

from magnum_lib.base.validate import ParameterError
from magnum_lib.replay import Policy, ReplayCluster, cpulimit, event_loop, make_jobs, replay


@pytest.fixture(params=[False, True], ids=["watchdog", "itimer"])
def mechanism(request, monkeypatch):
    if request.param and not hasattr(__import__("signal"), "ITIMER_VIRTUAL"):
        pytest.skip("no POSIX CPU timer here")
    monkeypatch.setattr(cpulimit, "USE_ITIMER", request.param)
    monkeypatch.setattr(event_loop, "POLICY_CPU_S", 0.3)
    return request.param


class _Spins(Policy):
    name = "spinner"

    def schedule(self, view):
        while True:
            try:
                pass
            except Exception:  # a policy's own handler does not swallow the cap
                pass


class _Greedy(Policy):
    name = "greedy"

    def schedule(self, view):
        p = view.plan()
        for j in view.queue:
            p.start(j)
        return p


def test_endless_schedule_is_stopped_and_named(mechanism):
    jobs = make_jobs([0, 0, 5], [100, 30, 50], [2, 4, 1])
    t0 = time.process_time()
    with pytest.raises(ParameterError, match=r"'spinner': schedule\(\) took more than 0.3 s of CPU"):
        replay(jobs, ReplayCluster.uniform(1, 4), _Spins())
    assert time.process_time() - t0 < 5
    # the next replay in the same process is not disturbed by a late interrupt
    assert replay(jobs, ReplayCluster.uniform(1, 4), _Greedy()).summary()["jobs"] == 3


def test_watchdog_leaves_a_real_ctrl_c_alone(monkeypatch):
    monkeypatch.setattr(cpulimit, "USE_ITIMER", False)
    threading.Timer(0.1, _thread.interrupt_main).start()   # Ctrl-C, well within the CPU limit
    with pytest.raises(KeyboardInterrupt):
        with cpulimit.cpu_limit(30.0):
            time.sleep(5)


def test_watchdog_quick_block_passes(monkeypatch):
    monkeypatch.setattr(cpulimit, "USE_ITIMER", False)
    with cpulimit.cpu_limit(30.0):
        x = sum(range(1000))
    assert x == 499500
    assert not [t for t in threading.enumerate() if t.name == "cpu-limit watchdog"]


def _spin():
    while True:
        pass


def test_session_blocks_each_get_their_own_budget(mechanism):
    """In one session a block past its time is stopped, and the blocks after it run normally
    (the replay's case: thousands of short calls, one runaway)."""
    with cpulimit.session():
        with cpulimit.cpu_limit(5.0):
            assert sum(range(1000)) == 499500
        t0 = time.process_time()
        with pytest.raises(cpulimit.CpuLimit):
            with cpulimit.cpu_limit(0.2):
                _spin()
        assert time.process_time() - t0 < 3
        for _ in range(200):   # no late interrupt from the stopped block reaches these
            with cpulimit.cpu_limit(5.0):
                x = sum(range(100))
    assert x == 4950


def test_session_sets_the_mechanism_up_once_and_tears_it_down(mechanism):
    import signal

    watchdogs = lambda: [t for t in threading.enumerate() if t.name == "cpu-limit watchdog"]  # noqa: E731
    before = signal.getsignal(signal.SIGVTALRM) if hasattr(signal, "SIGVTALRM") else None
    with cpulimit.session():
        for _ in range(50):
            with cpulimit.cpu_limit(5.0):
                pass
        assert len(watchdogs()) == (0 if mechanism else 1)
    assert not watchdogs()
    if before is not None:
        assert signal.getsignal(signal.SIGVTALRM) is before
        assert signal.getitimer(signal.ITIMER_VIRTUAL) == (0.0, 0.0)


def test_a_replay_opens_one_session(mechanism, monkeypatch):
    """The replay loop sets the mechanism up once, not at every policy call."""
    made = []
    real = cpulimit.session

    def counting():
        made.append(1)
        return real()

    monkeypatch.setattr(event_loop, "_cpu_session", counting)
    jobs = make_jobs([0, 0, 5, 9, 12], [100, 30, 50, 20, 7], [2, 4, 1, 1, 2])
    assert replay(jobs, ReplayCluster.uniform(1, 4), _Greedy()).summary()["jobs"] == 5
    assert made == [1]


def test_watchdog_stops_an_endless_call_where_sigint_is_ignored(monkeypatch):
    # A process started in the background by a non-interactive shell (or nohup) ignores
    # SIGINT: an interrupt built on it would never arrive and the loop would spin forever.
    import signal

    monkeypatch.setattr(cpulimit, "USE_ITIMER", False)
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        t0 = time.process_time()
        with pytest.raises(cpulimit.CpuLimit):
            with cpulimit.cpu_limit(0.2):
                while time.process_time() - t0 < 10:  # bounded, so a regression fails, not hangs
                    pass
        assert time.process_time() - t0 < 5
    finally:
        signal.signal(signal.SIGINT, old)


def test_watchdog_firing_as_the_block_ends_refuses_the_call_and_leaves_nothing_pending(monkeypatch):
    # The block ends just after its time is up: the call is refused, and no CpuLimit surfaces
    # later in unrelated code.
    monkeypatch.setattr(cpulimit, "USE_ITIMER", False)
    with pytest.raises(cpulimit.CpuLimit):
        with cpulimit.cpu_limit(0.05):
            c0 = time.process_time()
            while time.process_time() - c0 < 0.05:
                pass
            time.sleep(0.2)  # C code: the exception waits for the next bytecode
    for _ in range(200_000):  # pure Python bytecode: a pending exception would surface here
        pass


def test_a_fired_watchdog_leaves_the_interpreter_sound():
    """After the watchdog has stopped blocks, a traced call (coverage, Hypothesis, debuggers)
    still returns. Cancelling an async exception with NULL leaves CPython 3.11's eval breaker
    set, and a traced call then loops on its first instruction forever: run in a child with a
    timeout, so that fails instead of hanging."""
    import subprocess
    import sys

    script = """
import sys
from magnum_lib.replay import cpulimit
cpulimit.USE_ITIMER = False
for seconds in (0.05, 0.05):
    try:
        with cpulimit.cpu_limit(seconds):
            while True:
                pass
    except cpulimit.CpuLimit:
        pass
def tracer(frame, event, arg):
    return tracer
def f(n):
    return sum(range(n))
sys.settrace(tracer)
print(f(10))
sys.settrace(None)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "45", out.stderr[-2000:]
