"""Choose between the compiled Cython fast paths and the pure-Python references.

Every hot kernel exists twice (see DESIGN.md, "Two forms of every algorithm"):
``pkg/_name.pyx`` (compiled) and ``pkg/name_ref.py`` style readable reference with the
same signatures. ``pick`` returns the compiled module unless ``MAGNUM_PUREPYTHON=1``
is set or the extension is not built, in which case it returns the reference.
"""
from __future__ import annotations

import importlib
import os
from types import ModuleType

_FORCE_ENV = "MAGNUM_PUREPYTHON"
_REQUIRE_ENV = "MAGNUM_REQUIRE_COMPILED"

# The compiled module whose presence decides what backend() reports.
_PROBE = "magnum_lib.engine._heap"


def pure_python_forced() -> bool:
    """True when the environment asks for the pure-Python references."""
    return os.environ.get(_FORCE_ENV, "").strip() not in ("", "0", "false", "no")


def compiled_available() -> bool:
    """True when the Cython extensions are built and importable."""
    try:
        importlib.import_module(_PROBE)
    except ImportError:
        return False
    return True


def backend() -> str:
    """``"compiled"`` when the Cython fast paths are in use, else ``"python"``."""
    if pure_python_forced():
        return "python"
    if compiled_available():
        return "compiled"
    if os.environ.get(_REQUIRE_ENV, "").strip() not in ("", "0"):
        raise ImportError(
            f"{_REQUIRE_ENV} is set but the Cython extensions are not built; "
            "run `make build` (or `pip install --no-build-isolation -e .`)"
        )
    return "python"


def pick(compiled: str, reference: str) -> ModuleType:
    """Import and return the module for the active backend.

    Parameters
    ----------
    compiled, reference : str
        Absolute module names of the Cython fast path and the Python reference.
    """
    if backend() == "compiled":
        try:
            return importlib.import_module(compiled)
        except ImportError:
            if os.environ.get(_REQUIRE_ENV, "").strip() not in ("", "0"):
                raise
    return importlib.import_module(reference)
