"""Build the Cython fast paths.

Every ``src/magnum_lib/**/_*.pyx`` becomes an extension module. Environment:

- ``MAGNUM_CYTHON_DEBUG=1`` turns bounds checking and wraparound back on (a debugging
  build). Switching between debug and release regenerates every module by itself: the
  last build's mode is remembered in ``build/magnum-cython-mode``.
- ``MAGNUM_CYTHON_FORCE=1`` regenerates every module regardless.
- ``MAGNUM_NO_EXTENSIONS=1`` declares no extensions: ``make`` uses it for the editable
  install, which then only links the source tree, so the one compile is ``make build``
  (in place, incremental afterwards).
- ``MAGNUM_BUILD_JOBS`` (default 2): modules compiled in parallel.
"""
import os
from pathlib import Path

from setuptools import Extension, setup

DEBUG = os.environ.get("MAGNUM_CYTHON_DEBUG") == "1"
MODE = "debug" if DEBUG else "release"
MODE_FILE = Path("build", "magnum-cython-mode")

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
    # The directives are not part of Cython's timestamp check, so a change of mode must
    # regenerate every .c file (which then recompiles every module).
    previous = MODE_FILE.read_text().strip() if MODE_FILE.is_file() else MODE
    force = os.environ.get("MAGNUM_CYTHON_FORCE") == "1" or previous != MODE
    built = cythonize(modules, compiler_directives=directives, quiet=True, force=force)
    MODE_FILE.parent.mkdir(exist_ok=True)
    MODE_FILE.write_text(MODE + "\n")
    return built


NO_EXTENSIONS = os.environ.get("MAGNUM_NO_EXTENSIONS") == "1"
JOBS = int(os.environ.get("MAGNUM_BUILD_JOBS", "2") or 1)

setup(
    ext_modules=[] if NO_EXTENSIONS else extensions(),
    options={"build_ext": {"parallel": JOBS}},
)
