"""Stop a block of Python code after a number of CPU seconds (a policy call that never returns).

Two mechanisms, the same contract (:class:`CpuLimit` raised inside the block):

- POSIX: the ``ITIMER_VIRTUAL`` timer, whose ``SIGVTALRM`` handler raises in the main thread
  once the process has used that much CPU time;
- elsewhere (Windows), or with :data:`USE_ITIMER` False: a watchdog thread that polls the
  process' CPU time and raises CpuLimit in the main thread (CPython's
  ``PyThreadState_SetAsyncExc``). Not ``_thread.interrupt_main``: that simulates a SIGINT
  and does nothing where SIGINT is ignored (a process started in the background by a
  non-interactive shell, ``nohup``), so an endless policy would run on.

Both interrupt Python code only (a loop in C ends first), and both need the main thread: in
another thread the block runs unbounded and the caller checks the time after it returns.

A replay calls its policy thousands of times, and setting a mechanism up costs more than a
short call (a signal handler swapped twice, ~11 us; a watchdog thread started and joined).
Inside ``with session():`` the handler is installed, or the one watchdog thread started,
once; each :func:`cpu_limit` block then only arms and disarms it. Blocks do not nest.
"""
from __future__ import annotations

import contextlib
import ctypes
import threading
import time

__all__ = ["CpuLimit", "cpu_limit", "session", "USE_ITIMER"]

#: Use the POSIX CPU timer where the OS has it (False: the watchdog thread everywhere; tests).
USE_ITIMER = True
#: How often the watchdog reads the CPU clock, s.
POLL_S = 0.02


class CpuLimit(BaseException):
    """Raised inside the block when its CPU time is up (BaseException: the block's own
    ``except Exception`` cannot swallow it)."""


def _raise(signum, frame):
    raise CpuLimit


class _Timer:
    """The POSIX CPU timer: the SIGVTALRM handler is ours while the session is open."""

    def __init__(self, timer):
        import signal

        self.signal, self.timer = signal, timer
        self.old = signal.signal(signal.SIGVTALRM, _raise)

    def close(self) -> None:
        self.signal.setitimer(self.timer, 0)
        self.signal.signal(self.signal.SIGVTALRM, self.old)

    def block(self, seconds: float) -> _Timer:
        """The block's context manager: the timer armed for ``seconds`` inside it."""
        self.seconds = seconds
        return self

    def __enter__(self) -> None:   # (a class, not a generator: the fast path, one syscall each way)
        self.signal.setitimer(self.timer, self.seconds)

    def __exit__(self, *exc) -> None:
        self.signal.setitimer(self.timer, 0)


def _raise_in(thread_id, exc) -> None:
    """Raise ``exc`` in thread ``thread_id`` at its next bytecode check.

    Never called with NULL to cancel: CPython (3.11) then keeps its eval breaker set, and a
    traced call (Hypothesis, coverage, a debugger) loops on its first instruction forever."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(exc))


class _Watchdog:
    """One thread that polls the process' CPU time and raises CpuLimit in the main thread
    once a block's deadline has passed (armed only inside a block)."""

    def __init__(self):
        self.lock, self.done = threading.Lock(), threading.Event()
        self.deadline: float | None = None
        self.fired = False
        self.target = threading.main_thread().ident
        self.thread = threading.Thread(target=self._watch, name="cpu-limit watchdog", daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        while not self.done.wait(POLL_S):
            with self.lock:
                if self.deadline is not None and time.process_time() > self.deadline:
                    self.deadline, self.fired = None, True
                    _raise_in(self.target, CpuLimit)

    def close(self) -> None:
        self.done.set()
        self.thread.join()

    @contextlib.contextmanager
    def block(self, seconds: float):
        with self.lock:
            self.deadline, self.fired = time.process_time() + seconds, False
        raised = False
        try:
            yield
        except CpuLimit:
            raised = True
            raise
        finally:
            with self.lock:
                self.deadline = None
                fired, self.fired = self.fired, False
        if fired and not raised:
            # It fired as the block ended: take the CpuLimit still pending here (bytecode
            # runs between the sleeps), so it cannot surface later, then refuse the block.
            try:
                for _ in range(1000):
                    time.sleep(0.001)
            except CpuLimit:
                pass
            raise CpuLimit


_active: _Timer | _Watchdog | None = None   # the open session's mechanism (main thread only)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def session():
    """Set the mechanism up once for the :func:`cpu_limit` blocks inside (see the module);
    yields it. Inside another session it yields that one's; outside the main thread, None."""
    global _active
    if _active is not None or not _main_thread():
        yield _active if _main_thread() else None
        return
    import signal

    timer = getattr(signal, "ITIMER_VIRTUAL", None) if USE_ITIMER else None
    mechanism = _Timer(timer) if timer is not None else _Watchdog()
    _active = mechanism
    try:
        yield mechanism
    finally:
        _active = None
        mechanism.close()


def cpu_limit(seconds: float):
    """A context manager: raise :class:`CpuLimit` inside the block after ``seconds`` of CPU
    time (see the module)."""
    if not _main_thread():
        return contextlib.nullcontext()
    if _active is not None:
        return _active.block(seconds)
    return _alone(seconds)


@contextlib.contextmanager
def _alone(seconds: float):
    """A block outside any session: its own session around it."""
    with session() as mechanism:   # (the main thread's: cpu_limit checked that)
        with mechanism.block(seconds):
            yield
