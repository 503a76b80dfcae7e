"""Choose between the compiled Cython fast paths and the pure-Python references.

Every hot kernel exists twice (see docs/ARCHITECTURE.md, "Two forms of every algorithm"):
``pkg/_name.pyx`` (compiled) and ``pkg/name_ref.py`` style readable reference with the
same signatures. ``pick`` returns the compiled module unless ``MAGNUM_PUREPYTHON=1``
is set or the extension is not built, in which case it returns the reference.

A source checkout may run without building (the references stand in). An installed
copy (a wheel) is built: if one of its extensions is missing, the install is broken, and
``backend()`` says so once with a ``RuntimeWarning`` naming the missing modules. The one
exception is a copy installed where compiling failed (no C compiler): setup.py then
ships no extension and a marker file saying why (:func:`installed_without_compiler`),
and that copy runs the references quietly, as intended.
"""
from __future__ import annotations

import functools
import importlib
import importlib.machinery
import os
import warnings
from pathlib import Path
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


PACKAGE_DIR = Path(__file__).resolve().parent


def is_source_checkout() -> bool:
    """True when the package runs from its source tree (``<repo>/src/magnum_lib``)."""
    return PACKAGE_DIR.parent.name == "src" and (PACKAGE_DIR.parents[1] / "pyproject.toml").is_file()


#: Written by setup.py into a copy installed without extensions (its content: why).
PURE_MARKER = "_pure_python_install.txt"


@functools.cache
def installed_without_compiler() -> str | None:
    """Why this copy was installed without compiled extensions (None if it was not)."""
    try:
        return (PACKAGE_DIR / PURE_MARKER).read_text(encoding="utf-8").strip() or "compiling failed"
    except OSError:
        return None


@functools.cache
def extension_names() -> tuple[str, ...]:
    """Every compiled module the package should have: one per shipped ``_*.pyx``."""
    return tuple(sorted(
        "magnum_lib." + ".".join(p.relative_to(PACKAGE_DIR).with_suffix("").parts)
        for p in PACKAGE_DIR.rglob("_*.pyx")))


def _is_built(name: str) -> bool:
    # A file check, not an import: importing would run every subpackage's __init__.
    stem = PACKAGE_DIR.joinpath(*name.split(".")[1:])
    return any(stem.with_name(stem.name + suffix).is_file()
               for suffix in importlib.machinery.EXTENSION_SUFFIXES)


@functools.cache
def missing_extensions() -> tuple[str, ...]:
    """The modules of :func:`extension_names` with no compiled file beside their .pyx."""
    return tuple(name for name in extension_names() if not _is_built(name))


@functools.cache
def _warn_broken_install() -> None:
    missing = missing_extensions()
    if missing and not is_source_checkout() and installed_without_compiler() is None:
        warnings.warn(
            f"magnum_lib installed at {PACKAGE_DIR} lacks {len(missing)} compiled extension(s): "
            f"{', '.join(missing)}; their pure-Python references run instead (slower). "
            "Reinstall it where a C compiler is available: pip install --force-reinstall <the checkout>",
            RuntimeWarning, stacklevel=3)


def describe() -> str:
    """One line: the active backend, where the package was imported from, what is missing."""
    text = f"backend: {backend()}, {PACKAGE_DIR}"
    missing = missing_extensions()
    if installed_without_compiler() is not None and not pure_python_forced():
        text += " (installed without a C compiler: pure Python; `faux-magnum doctor` says how to compile)"
    elif missing and not pure_python_forced():
        text += f" (missing compiled: {', '.join(m.rsplit('.', 1)[1] for m in missing)})"
    return text


def backend() -> str:
    """``"compiled"`` when the Cython fast paths are in use, else ``"python"``."""
    if pure_python_forced():
        return "python"
    _warn_broken_install()
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
