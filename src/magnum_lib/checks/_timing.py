"""Which kernel a timing check measures."""
from __future__ import annotations

import importlib
from types import ModuleType


def fastest(compiled: str, reference: str) -> ModuleType:
    """The compiled kernel when it is built, whatever the active backend, else the reference.

    A claim about speed is about the fast path: under ``MAGNUM_PUREPYTHON=1`` the check of
    C7 still times the Cython kernel (both forms give the same answers).
    """
    try:
        return importlib.import_module(compiled)
    except ImportError:
        return importlib.import_module(reference)
