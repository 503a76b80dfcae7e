"""The simulator's large arrays on ordinary 4 KiB pages, not transparent huge pages.

numpy advises the kernel to back every array of 4 MiB or more with 2 MiB huge pages
(``madvise(MADV_HUGEPAGE)``). Where transparent huge pages are ``madvise`` with
``defrag=madvise`` (this shared VM), each first touch of such an array then pays a
compacting, 2 MiB-zeroing fault. Measured here: six 70 MB ``np.full`` arrays took 0.80 s
CPU with the advice and 0.18 s without; the region preset over 10 simulated s (1.4 GB of
per-request arrays, most of them first touched by the core) 9.9 s CPU with it and 7.6 s
without. The core reads per-request arrays near the arrival order, so small pages cost it
no measurable TLB time.

:func:`small_pages` turns the advice off for the arrays allocated inside it and restores
numpy's setting afterwards (the setting is process-wide: a thread allocating meanwhile
gets small pages too, which changes speed only, never values).
"""
from __future__ import annotations

import contextlib
import functools

try:  # numpy >= 2
    from numpy._core.multiarray import _set_madvise_hugepage
except ImportError:  # pragma: no cover - numpy 1.x
    try:
        from numpy.core.multiarray import _set_madvise_hugepage
    except ImportError:
        _set_madvise_hugepage = None

__all__ = ["small_pages", "on_small_pages"]


@contextlib.contextmanager
def small_pages():
    """Arrays allocated inside are not advised onto huge pages (no-op where numpy cannot)."""
    if _set_madvise_hugepage is None:
        yield
        return
    old = _set_madvise_hugepage(False)
    try:
        yield
    finally:
        _set_madvise_hugepage(old)


def on_small_pages(f):
    """Decorator: run ``f`` inside :func:`small_pages`."""
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        with small_pages():
            return f(*args, **kwargs)
    return wrapper
