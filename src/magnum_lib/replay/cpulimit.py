"""Stop a block of Python code after a number of CPU seconds (a policy call that never returns).

Two mechanisms, the same contract (:class:`CpuLimit` raised inside the block):

- POSIX: the ``ITIMER_VIRTUAL`` timer, whose ``SIGVTALRM`` handler raises in the main thread
  once the process has used that much CPU time;
- elsewhere (Windows), or with :data:`USE_ITIMER` False: a watchdog thread that polls the
  process' CPU time and interrupts the main thread with :func:`_thread.interrupt_main`; the
  KeyboardInterrupt that arrives is turned into CpuLimit.

Both interrupt Python code only (a loop in C ends first), and both need the main thread: in
another thread the block runs unbounded and the caller checks the time after it returns.
"""
from __future__ import annotations

import contextlib
import threading
import time

__all__ = ["CpuLimit", "cpu_limit", "USE_ITIMER"]

#: Use the POSIX CPU timer where the OS has it (False: the watchdog thread everywhere; tests).
USE_ITIMER = True
#: How often the watchdog reads the CPU clock, s.
POLL_S = 0.02


class CpuLimit(BaseException):
    """Raised inside the block when its CPU time is up (BaseException: the block's own
    ``except Exception`` cannot swallow it)."""


def _raise(signum, frame):
    raise CpuLimit


@contextlib.contextmanager
def cpu_limit(seconds: float):
    """Raise :class:`CpuLimit` inside the block after ``seconds`` of CPU time (see the module)."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    timer = getattr(signal, "ITIMER_VIRTUAL", None) if USE_ITIMER else None
    if timer is not None:
        old = signal.signal(signal.SIGVTALRM, _raise)
        signal.setitimer(timer, seconds)
        try:
            yield
        finally:
            signal.setitimer(timer, 0)
            signal.signal(signal.SIGVTALRM, old)
        return
    with _watchdog(seconds) as dog:
        try:
            yield
        except KeyboardInterrupt:
            if dog.fired:
                raise CpuLimit from None
            raise  # a real Ctrl-C


class _Dog:
    def __init__(self, seconds: float):
        self.seconds, self.fired, self.armed = seconds, False, True
        self.lock, self.done = threading.Lock(), threading.Event()
        self.c0 = time.process_time()

    def watch(self) -> None:
        import _thread

        while not self.done.wait(POLL_S):
            if time.process_time() - self.c0 > self.seconds:
                with self.lock:
                    if self.armed:
                        self.fired = True
                        _thread.interrupt_main()
                return


@contextlib.contextmanager
def _watchdog(seconds: float):
    dog = _Dog(seconds)
    thread = threading.Thread(target=dog.watch, name="cpu-limit watchdog", daemon=True)
    thread.start()
    try:
        yield dog
    finally:
        with dog.lock:
            dog.armed = False
        dog.done.set()
        thread.join()
    if dog.fired:  # it fired as the block ended: take the interrupt here, then refuse the call
        try:
            for _ in range(1000):
                time.sleep(0.001)
        except KeyboardInterrupt:
            pass
        raise CpuLimit
