"""Run untrusted code (a policy plug-in's whole replay) in a child process with limits.

A plug-in can crash the interpreter (``ctypes.string_at(0)``, ``os.abort()``), leak memory
or run forever inside ``schedule()``; in-process checks cannot stop all of that. The arena,
``faux-magnum replay --isolate`` and an autograder call :func:`run_isolated`: the function
runs in a fresh interpreter (multiprocessing's *spawn* context, the same on every OS), and
every way it can end comes back to this process as its result or one
:class:`~magnum_lib.base.validate.ParameterError`:

- it returns: its (picklable) result;
- it raises ParameterError (a bad decision, a budget refusal): the same error;
- it raises anything else, MemoryError included: one error naming it;
- the child dies (a signal, ``os._exit``): :class:`IsolationError` saying how;
- it runs past ``timeout_s`` of wall-clock time: the child is killed, IsolationError.

Memory: on POSIX the child's address space is capped (``RLIMIT_AS``) at what it uses after
start-up plus ``max_memory`` bytes, so a leak ends in MemoryError inside the child. Windows has
no such limit in the standard library: there only the time limit applies.
"""
from __future__ import annotations

import multiprocessing
import os

from magnum_lib.base.validate import ParameterError, excerpt

__all__ = ["IsolationError", "run_isolated"]


class IsolationError(ParameterError):
    """The isolated child crashed, ran past its time or was stopped."""

    def __init__(self, name: str, label: str, detail: str):
        super().__init__(name, f"{label} {detail}")


def run_isolated(fn, args=(), *, max_memory: float | None = None, timeout_s: float | None = None,
                 name: str = "policy", label: str = "the policy"):
    """``fn(*args)`` in a child process, its result returned here (see the module docstring).

    ``fn`` must be importable (a module-level function) and ``args`` and the result picklable.
    Errors are ParameterErrors of argument ``name`` whose text starts with ``label`` (e.g.
    ``"'p.py:P'"``). Ctrl-C kills the child and raises KeyboardInterrupt here.
    """
    ctx = multiprocessing.get_context("spawn")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, fn, args, max_memory, name, label), daemon=True)
    proc.start()
    send.close()  # the child holds the only writer: its death is an EOF here
    try:
        if not recv.poll(timeout_s):
            raise IsolationError(name, label, f"ran past the time limit of {timeout_s:g} s and was stopped")
        try:
            kind, payload = recv.recv()
        except EOFError:
            proc.join()
            raise IsolationError(name, label, _death(proc.exitcode)) from None
    finally:
        recv.close()
        if proc.is_alive():
            proc.kill()
        proc.join()
    if kind == "ok":
        return payload
    if kind == "interrupted":
        raise KeyboardInterrupt
    raise ParameterError(*payload)


def _death(code) -> str:
    """How a child that sent nothing ended, in words."""
    import signal

    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = " (killed: out of memory?)" if name == "SIGKILL" else ""
        return f"crashed the Python interpreter ({name}){hint}"
    return f"ended its process with exit status {code} before returning"


def _child(conn, fn, args, max_memory, name, label) -> None:
    """The child's side: limit memory, run, send one (kind, payload) message."""
    _limit_memory(max_memory)
    try:
        msg = ("ok", fn(*args))
    except ParameterError as exc:
        msg = ("error", (exc.name, exc.detail))
    except KeyboardInterrupt:
        msg = ("interrupted", None)
    except MemoryError:
        msg = ("error", (name, f"{label} needed more memory than the limit of {max_memory / 2**30:.3g} GiB "
                               f"(MemoryError; a leak?)" if max_memory else f"{label} ran out of memory"))
    except BaseException as exc:  # noqa: BLE001 - the untrusted code's error, told in one line
        msg = ("error", (name, f"{label} raised {type(exc).__name__}: {excerpt(str(exc))}"))
    try:
        conn.send(msg)
    except Exception as exc:  # noqa: BLE001 - e.g. a result that does not pickle
        conn.send(("error", (name, f"{label} returned a result that cannot be sent back "
                                       f"({type(exc).__name__}: {excerpt(str(exc))})")))
    conn.close()


def _limit_memory(max_memory) -> None:
    """Cap this process' address space at its current size plus ``max_memory`` (POSIX)."""
    try:
        import resource
    except ImportError:  # Windows: no RLIMIT_AS
        return
    if not max_memory or not hasattr(resource, "RLIMIT_AS"):
        return
    try:  # the address space already mapped (Linux); elsewhere a generous 2 GiB allowance
        with open("/proc/self/statm", encoding="utf-8") as f:
            used = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        used = 2 * 2**30
    limit = int(used + max_memory)
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ValueError, OSError):  # e.g. macOS refuses RLIMIT_AS: only the time limit applies
        pass
