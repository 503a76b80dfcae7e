"""The debug build checks every index it claims to (``make test-debug``).

Bounds checking, wraparound and initialization checks are set once, in ``setup.py``, by
``MAGNUM_CYTHON_DEBUG``. A ``# cython: boundscheck=False`` header or a
``@cython.boundscheck(False)`` decorator in a ``.pyx`` would override it silently (it did,
in two kernels), so none is allowed; and the debug build's generated C must contain index
checks for every module that indexes a memoryview.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYX = sorted((ROOT / "src" / "magnum_lib").rglob("*.pyx"))
OVERRIDE = re.compile(r"(boundscheck|wraparound|initializedcheck)\s*[=(]\s*(False|True)")
# A typed memoryview declaration: `double[::1] x`, `const int64_t[:] y`, `[:, ::1]`.
MEMORYVIEW = re.compile(r"\w\[\s*:[:\s,1]*\]\s+\w")
INDEX_CHECK = "__Pyx_RaiseBufferIndexError"


@pytest.mark.parametrize("pyx", PYX, ids=lambda p: p.name)
def test_no_kernel_overrides_the_build_directives(pyx):
    found = [f"{pyx.name}:{i}: {line.strip()}" for i, line in
             enumerate(pyx.read_text(encoding="utf-8").splitlines(), 1) if OVERRIDE.search(line)]
    assert not found, "set these in setup.py (MAGNUM_CYTHON_DEBUG), not in the kernel: " + "; ".join(found)


def _debug_c(pyx: Path) -> Path:
    base = Path(os.environ["MAGNUM_DEBUG_BUILD"])
    return base / "c" / pyx.relative_to(ROOT).with_suffix(".c")


@pytest.mark.skipif(not os.environ.get("MAGNUM_DEBUG_BUILD"),
                    reason="needs the debug build's C (make test-debug sets MAGNUM_DEBUG_BUILD)")
@pytest.mark.parametrize("pyx", PYX, ids=lambda p: p.name)
def test_the_debug_build_checks_indices(pyx):
    c = _debug_c(pyx)
    assert c.is_file(), f"no debug C for {pyx.name} at {c}"
    checks = _index_checks(c)
    if MEMORYVIEW.search(pyx.read_text(encoding="utf-8")):
        # the release C (beside the .pyx, from `make build`) has none beyond the helper itself
        release = _index_checks(pyx.with_suffix(".c")) if pyx.with_suffix(".c").is_file() else 0
        assert checks > max(release, 2), f"{pyx.name} indexes memoryviews: {checks} index checks " \
                                         f"in its debug C, {release} in the release C"


def _index_checks(c: Path) -> int:
    return c.read_text(encoding="utf-8", errors="replace").count(INDEX_CHECK + "(")
