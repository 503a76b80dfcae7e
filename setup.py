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
- ``MAGNUM_REQUIRE_COMPILED=1`` makes a failed compile an error. Without it, a machine
  that cannot compile (no C compiler, no Python headers, no Cython) still installs: the
  package then runs its pure-Python references (same results, slower) and says so in
  ``faux-magnum --version`` and ``faux-magnum doctor`` (see :class:`OptionalBuildExt`).
"""
import os
import re
import sys
import tempfile
import threading
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py
from setuptools.errors import CCompilerError, CompileError, ExecError, LinkError, PlatformError

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


# What "cannot compile here" looks like: no compiler or linker (CompileError, LinkError,
# ExecError), no MSVC on Windows (PlatformError), no Cython or numpy (ImportError).
BUILD_ERRORS = (CCompilerError, CompileError, LinkError, ExecError, PlatformError, ImportError, OSError)
REQUIRE_COMPILED = os.environ.get("MAGNUM_REQUIRE_COMPILED", "").strip() not in ("", "0")
# Written into an installed copy built without extensions; magnum_lib/_backend.py reads it.
PURE_MARKER = ("magnum_lib", "_pure_python_install.txt")
HOW_TO_COMPILE = ("for the compiled one, install a C compiler (gcc or clang; Xcode command line tools "
                  "on macOS; Visual Studio Build Tools on Windows) and the Python headers, then "
                  "`pip install --force-reinstall --no-cache-dir <the kit>`")


def _say(line: str) -> None:
    # stderr: pip shows it with -v, and `make build` filters it out of its quiet log.
    print(f"magnum-build: {line}", file=sys.stderr, flush=True)


def _reason(exc: BaseException) -> str:
    """A short cause: a failed command is named by its program, not its 40 flags."""
    text = " ".join(str(exc).split())
    failed = re.match(r"Command '\['([^']*)'.*'\]' (.*)$", text)
    if failed:
        text = f"{failed.group(1)} {failed.group(2).rstrip('.')}"
    return f"{type(exc).__name__}: {text}"[:200]


def pending_extensions():
    """One not-yet-cythonized Extension per ``_*.pyx``: the names setup() needs at once.

    Cythonizing (half a minute) waits for :meth:`OptionalBuildExt.build_extensions`, after
    the compiler probe, so a machine without a compiler never pays for it and
    ``setup.py --version`` stays instant.
    """
    return [Extension(str(p.relative_to("src").with_suffix("")).replace(os.sep, "."), [str(p)])
            for p in sorted(Path("src", "magnum_lib").rglob("*.pyx"))]


class OptionalBuildExt(build_ext):
    """Compile the Cython extensions with progress, or install without them.

    Before anything slow: a probe compiles and links a one-line C file with Python.h.
    When that or any later step fails with :data:`BUILD_ERRORS`, no compiled module is
    kept (a half-compiled install is never made), a marker file records why, and ONE
    line says the pure-Python backend was installed and how to get the compiled one.
    ``MAGNUM_REQUIRE_COMPILED=1`` turns the failure into an error instead.
    """

    def run(self):
        inplace = self.inplace  # setuptools' run() clears it while building, and an error skips the reset
        try:
            super().run()
        except BUILD_ERRORS as exc:
            self.inplace = False
            self._fall_back(exc, marker=not inplace)
            self.inplace = inplace
        else:
            self._marker().unlink(missing_ok=True)

    def build_extensions(self):
        self._probe_compiler()
        _say(f"compiling {len(self.extensions)} Cython extensions: the first build takes several "
             "minutes (about a minute per module per core); where compiling fails, the "
             "pure-Python backend is installed instead (same results, slower)")
        # Cythonize now (the .c files, with the mode's directives). Their settings go into the
        # pending objects, which finalize_options already prepared (setuptools' private fields).
        cythonized = {ext.name: ext for ext in extensions()}
        for ext in self.extensions:
            vars(ext).update({k: v for k, v in vars(cythonized[ext.name]).items() if not k.startswith("_")})
        self._progress, self._lock = 0, threading.Lock()
        super().build_extensions()

    def build_extension(self, ext):
        from setuptools.modified import newer_group

        stale = self.force or newer_group(sorted(ext.sources) + ext.depends, self.get_ext_fullpath(ext.name), "newer")
        with self._lock:  # the modules build in parallel threads (MAGNUM_BUILD_JOBS)
            self._progress += 1
            _say(f"[{self._progress}/{len(self.extensions)}] {'compiling' if stale else 'up to date:'} {ext.name}")
        super().build_extension(ext)

    def _probe_compiler(self):
        with tempfile.TemporaryDirectory(prefix="magnum-probe-") as tmp:
            source = Path(tmp, "probe.c")
            source.write_text("#include <Python.h>\nint magnum_probe(void) { return 0; }\n", encoding="utf-8")
            objects = self.compiler.compile([str(source)], output_dir=tmp, include_dirs=self.include_dirs)
            self.compiler.link_shared_object(objects, str(Path(tmp, "probe" + self.get_ext_filename("x")[1:])))

    def _marker(self) -> Path:
        return Path(self.build_lib, *PURE_MARKER)

    def _fall_back(self, exc: BaseException, marker: bool):
        reason = _reason(exc)
        if REQUIRE_COMPILED:
            raise SystemExit(f"magnum-build: compiling failed ({reason}) and MAGNUM_REQUIRE_COMPILED=1 demands it")
        for ext in self.extensions:  # nothing half-built ships: every module or none
            Path(self.get_ext_fullpath(ext.name)).unlink(missing_ok=True)
        # Nothing for install (or --inplace) to copy. Rebound, not emptied: the distribution
        # still declares extensions, so the wheel keeps its platform tag and root layout.
        self.extensions = []
        if marker:  # not for --inplace: a checkout runs the references anyway
            self._marker().parent.mkdir(parents=True, exist_ok=True)
            self._marker().write_text(reason + "\n", encoding="utf-8")
        _say(f"cannot compile here ({reason}): installed the pure-Python backend "
             f"(same results, slower); {HOW_TO_COMPILE}")


# The notebooks, their solutions and the JupyterLab settings, shipped inside the package
# (magnum_lib/_notebooks) for `faux-magnum lab`. notebooks/ at the root stays the source of
# truth; an editable install or a checkout reads it directly (magnum_lib/_kit.py).
KIT_FILES = ["notebooks/*.ipynb", "notebooks/*.md", "notebooks/solutions/*.py", "lab-settings/overrides.json"]


class BuildPyWithNotebooks(build_py):
    """build_py, plus a copy of :data:`KIT_FILES` into ``magnum_lib/_notebooks``."""

    def run(self):
        super().run()
        if self.editable_mode:  # the editable install reads the checkout's notebooks/
            return
        kit = Path(self.build_lib, "magnum_lib", "_notebooks")
        for pattern in KIT_FILES:
            for source in sorted(Path().glob(pattern)):
                rel = source.relative_to(source.parts[0])  # notebooks/x -> x, lab-settings/x -> x
                target = kit / ("lab-settings" if source.parts[0] == "lab-settings" else "") / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                self.copy_file(str(source), str(target))


NO_EXTENSIONS = os.environ.get("MAGNUM_NO_EXTENSIONS") == "1"

setup(
    ext_modules=[] if NO_EXTENSIONS else pending_extensions(),
    cmdclass={"build_ext": OptionalBuildExt, "build_py": BuildPyWithNotebooks},
    options={"build_ext": {"parallel": JOBS}},
)
