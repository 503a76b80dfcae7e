"""Build the Cython fast paths.

Every ``src/magnum_lib/**/_*.pyx`` becomes an extension module. Environment:

- ``MAGNUM_CYTHON_DEBUG=1`` turns bounds checking, wraparound and initialization checks
  back on (a debugging build). Its generated C goes to ``build/debug/c``, never beside
  the ``.pyx`` files, so a debug build never touches the release build: ``make
  test-debug`` builds the whole package into ``build/debug/lib`` (``setup.py build
  --build-base build/debug --build-lib build/debug/lib``) and tests it there.
- ``MAGNUM_CYTHON_FORCE=1`` regenerates every module regardless.
- ``MAGNUM_NO_EXTENSIONS=1`` declares no extensions: ``make`` uses it for the editable
  install, which then only links the source tree, so the one compile is ``make build``
  (in place, incremental afterwards).
- ``MAGNUM_BUILD_JOBS`` (default 2): modules translated (Cython) and compiled (C) in parallel.
"""
import os
import sys
from pathlib import Path

from setuptools import Extension, setup

DEBUG = os.environ.get("MAGNUM_CYTHON_DEBUG") == "1"
# Where Cython writes its C: beside the .pyx for the release build (the usual place),
# under build/ for the debug build, so the two never overwrite each other.
C_DIR = str(Path("build", "debug", "c")) if DEBUG else None
JOBS = int(os.environ.get("MAGNUM_BUILD_JOBS", "2") or 1)

directives = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
    "embedsignature": True,
    # With bounds checks on (debug), Cython hints "use boundscheck(False)" at every
    # memoryview index: that is the point of the debug build, so the hints are noise there.
    "show_performance_hints": not DEBUG,
}


def extensions():
    import numpy as np
    from Cython.Build import cythonize

    modules = [
        Extension(
            str(p.relative_to("src").with_suffix("")).replace(os.sep, "."),
            [str(p)],
            include_dirs=[np.get_include()],
            define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
            extra_compile_args=["-O3"] if not DEBUG else ["-O0", "-g"],
        )
        for p in sorted(Path("src", "magnum_lib").rglob("*.pyx"))
    ]
    force = os.environ.get("MAGNUM_CYTHON_FORCE") == "1"
    # Cython's own worker pool forks; elsewhere (spawn) it would re-import this file.
    threads = JOBS if sys.platform.startswith("linux") and JOBS > 1 else 0
    return cythonize(modules, compiler_directives=directives, quiet=True, force=force,
                     build_dir=C_DIR, nthreads=threads)


NO_EXTENSIONS = os.environ.get("MAGNUM_NO_EXTENSIONS") == "1"

setup(
    ext_modules=[] if NO_EXTENSIONS else extensions(),
    options={"build_ext": {"parallel": JOBS}},
)
