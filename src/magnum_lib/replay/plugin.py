"""Loading a policy (or router) plug-in file, ``path.py:Name``, as untrusted code.

The file is imported first in a child interpreter (a crash or an endless load is refused
there), then in this process, where anything it raises (``sys.exit`` too) becomes one
:class:`~magnum_lib.base.validate.ParameterError` naming the file. To run the plug-in itself
out of process, see :mod:`magnum_lib.replay.isolate`.
"""
from __future__ import annotations

from magnum_lib.base.validate import ParameterError, excerpt

__all__ = ["load_policy_file", "LOAD_TIMEOUT_S"]


def load_policy_file(spec: str):
    """``path.py:Name`` -> the object ``Name`` defined in that file."""
    import runpy
    from pathlib import Path

    path, sep, name = spec.rpartition(":")
    if not sep or not path or not name.isidentifier():
        raise ParameterError("policy_file", f"must be FILE.py:NAME, got {excerpt(spec)}")
    if not Path(path).is_file():
        raise ParameterError("policy_file", f"{excerpt(path)} is not a file")
    label = _file_label(path)
    _import_in_child(path, label)
    try:
        ns = runpy.run_path(path, run_name="__policy_file__")
    except KeyboardInterrupt:
        raise
    except RecursionError:
        raise ParameterError("policy_file", f"{label} failed to load: it recursed too "
                                            f"deeply (RecursionError)") from None
    except BaseException as exc:  # the user's file (sys.exit too): say which and why, in one line
        what = f"called sys.exit({excerpt(exc.code)})" if isinstance(exc, SystemExit) else \
            f"{type(exc).__name__}: {excerpt(str(exc))}"
        raise ParameterError("policy_file", f"{label} failed to load: {what}") from None
    if name not in ns:
        raise ParameterError("policy_file", f"{label} defines no {name!r}")
    return ns[name]


#: Seconds a plug-in file may take to load (its import runs first in a child process).
LOAD_TIMEOUT_S = 30.0


def _import_in_child(path: str, label: str) -> None:
    """Load the file once in a child interpreter: one that crashes it (a segfault, an abort)
    or never finishes loading is refused here instead of taking this process down. Errors the
    file raises are left to the in-process load, which names them."""
    import signal
    import subprocess
    import sys

    code = "import runpy, sys; runpy.run_path(sys.argv[1], run_name='__policy_file__')"
    try:
        proc = subprocess.run([sys.executable, "-c", code, path], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=LOAD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise ParameterError("policy_file", f"{label} took more than {LOAD_TIMEOUT_S:g} s to load") from None
    if proc.returncode == -getattr(signal, "SIGINT", 2):  # an uncaught KeyboardInterrupt ends Python so
        raise ParameterError("policy_file", f"{label} failed to load: it raised KeyboardInterrupt")
    if proc.returncode < 0:
        try:
            sig = signal.Signals(-proc.returncode).name
        except ValueError:
            sig = f"signal {-proc.returncode}"
        raise ParameterError("policy_file", f"{label} crashed the Python interpreter while loading ({sig})")


def _file_label(path: str) -> str:
    """``path`` for a one-line message: whole when short, else ``.../name.py`` (the file stays named)."""
    from pathlib import Path

    return repr(path) if len(path) <= 60 else f"'.../{excerpt(Path(path).name)[1:]}"
