"""Build the Cython fast paths.

Every ``src/magnum_lib/**/_*.pyx`` becomes an extension module. Set
``MAGNUM_CYTHON_DEBUG=1`` at build time to turn bounds checking and
wraparound back on (used by one debug test run).
"""
import os
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("MAGNUM_CYTHON_DEBUG") == "1"

directives = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
    "embedsignature": True,
}

extensions = [
    Extension(
        str(p.relative_to("src").with_suffix("")).replace(os.sep, "."),
        [str(p)],
        include_dirs=[np.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        extra_compile_args=["-O3"] if not DEBUG else ["-O0", "-g"],
    )
    for p in sorted(Path("src", "magnum_lib").rglob("*.pyx"))
]

# force: the directives are not part of the .c file's timestamp check, so switching
# between debug and release must regenerate every module.
FORCE = os.environ.get("MAGNUM_CYTHON_FORCE") == "1"

setup(ext_modules=cythonize(extensions, compiler_directives=directives, quiet=True, force=FORCE))
