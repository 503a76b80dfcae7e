"""Argument checks shared by the compiled kernels' ``def`` wrappers and their references.

A kernel's nogil core trusts its arguments; its check function (in the ``*_ref`` module,
called by both backends) uses these to refuse, before any C conversion or allocation, a
non-integer (TypeError: nothing is truncated) or an out-of-range value (ValueError).
"""
from __future__ import annotations

import numpy as np
import numpy.typing as npt


def int_scalar(name: str, value: object, minimum: int, maximum: int) -> int:
    """``value`` as a Python int in ``[minimum, maximum]`` (bools are not integers here)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if not minimum <= value <= maximum:
        raise ValueError(f"{name} must be an integer in [{minimum}, {maximum}], got {int(value)}")
    return int(value)


def int_array(name: str, value: npt.ArrayLike, length: int | None = None, minimum: int | None = None,
              maximum: int | None = None) -> npt.NDArray[np.int64]:
    """``value`` as a C-contiguous 1-D int64 array (of ``length``, values in range if given).

    Only integer dtypes that cast safely to int64 are accepted: a float (NaN, 1.5) or a
    uint64 array is a TypeError, never truncated or wrapped.
    """
    a = np.asarray(value)
    if a.dtype.kind not in "iu" or not np.can_cast(a.dtype, np.int64, casting="safe"):
        raise TypeError(f"{name} must be an integer array, got dtype {a.dtype}")
    if a.ndim != 1 or (length is not None and a.shape[0] != length):
        want = "1-D" if length is None else f"1-D of length {length}"
        raise ValueError(f"{name} must be {want}, got shape {a.shape}")
    if a.size and ((minimum is not None and a.min() < minimum) or (maximum is not None and a.max() > maximum)):
        raise ValueError(f"{name} must lie in [{minimum}, {maximum}], got values in "
                         f"[{int(a.min())}, {int(a.max())}]")
    return np.ascontiguousarray(a, dtype=np.int64)
