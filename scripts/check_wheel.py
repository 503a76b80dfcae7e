"""Check a normal install: build the wheel, install it in a fresh venv, run the README.

Steps (each prints one line; the first failure stops the run with exit 1):

1. build the wheel with ``pip wheel --no-deps --no-build-isolation`` from a clean copy of
   the checkout's files (as from a fresh clone; this interpreter must have setuptools,
   Cython and numpy; the log goes to a file, shown on failure);
2. check its file list: every data file under ``src/magnum_lib/data``, one compiled
   module per ``_*.pyx``, no generated ``.c``;
3. create a fresh venv and ``pip install`` the wheel (dependencies from PyPI, through
   pip's cache);
4. from the repository root, ``python -m magnum_lib --version`` must report the compiled
   backend and the wheel's installed path (the source tree is not imported by accident);
5. run every command of the README's "The command line" block (extracted from README.md,
   so commands added there are covered) from a temporary directory outside the checkout,
   with ``faux-magnum`` resolved in the fresh venv. A command fails if it exits non-zero
   or prints a traceback. Commands whose README line says ``needs the public traces``
   run twice: without the traces (they must exit 2 with one line naming the missing
   file), then, when ``../shared/data`` exists beside the checkout (or above it, or
   ``$MAGNUM_SHARED_DATA`` is set), with ``MAGNUM_SHARED_DATA`` pointing there (exit 0).

``--no-compiler`` checks the fallback a laptop without a C compiler gets: the compiler is
made unavailable (``CC``, ``CXX`` and ``LDSHARED`` are ``/bin/false`` and ``gcc``, ``cc``,
``clang``... on ``PATH`` are shadowed by ``false``), an sdist is built and the wheel is
built from it (as ``pip install <sdist>`` does); the build must print setup.py's one
"cannot compile here" line, the wheel must hold no compiled module but the marker saying
why, and step 4 must report the pure-Python backend. Steps 3-5 run with the compiler still
unavailable.

``--smoke`` runs the binary wheels' smoke test (``[tool.cibuildwheel] test-command`` in
pyproject.toml: ``faux-magnum doctor`` and notebook 00 under nbval) in the fresh venv, after
installing what cibuildwheel does (the wheel's ``test-extras`` and the ``test-requires``).

``--notebooks [GLOB]`` then installs what a student does (the wheel's ``lab`` extra) and
pytest, nbval and ipykernel, copies the notebooks out of the installed package with
``faux-magnum lab --copy-only`` and runs every one (or those matching GLOB) under nbval,
one pytest run per notebook, ``--notebook-jobs`` at a time, printing each one's wall and
CPU time (its pytest's and kernel's). A one-cell probe notebook runs first: it fails
unless the kernel imports the wheel installed in the venv, with the expected backend.
Notebooks that replay the public traces (the Makefile's ``TRACE_NOTEBOOKS``) are left out
when the traces are absent.

``--venv DIR`` reuses or creates that venv instead of a temporary one (the wheel is
reinstalled with ``--force-reinstall --no-deps``; dependencies already there are kept), so
one venv can serve a compiled and then a no-compiler check. ``--reuse-deps`` installs no
dependency: the venv sees this interpreter's site-packages (after its own, so the wheel's
``magnum_lib`` is the one imported; an editable install there is not activated). Quicker,
and still a test of the wheel's code, but it cannot catch an undeclared dependency.

Usage: python scripts/check_wheel.py [--venv DIR] [--keep] [--timeout 300] [--no-compiler] [--notebooks [GLOB]]
[--notebook-jobs N] [--reuse-deps] [--smoke]
"""
from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "magnum_lib"
NEEDS_TRACES = "needs the public traces"
SECTION = "## The command line"
PURE_MARKER = "magnum_lib/_pure_python_install.txt"  # setup.py writes it when compiling fails
#: Shadowed on PATH by ``--no-compiler``: every name a build might try for C or C++.
COMPILERS = ("cc", "gcc", "c++", "g++", "clang", "clang++", "x86_64-linux-gnu-gcc", "aarch64-linux-gnu-gcc")
NOTEBOOK_TESTS = ("pytest>=8", "nbval>=0.11", "ipykernel")
#: Started first when notebooks run two at a time: on the pure-Python backend 08 takes about
#: half of all the notebooks' CPU time (146 of 293 s), so the others fill the second worker.
LONGEST_FIRST = ("08_the_evolution.ipynb",)


class CheckFailed(Exception):
    """One line saying what failed."""


def readme_commands(readme: Path = ROOT / "README.md") -> list[tuple[str, bool]]:
    """``(command, needs_traces)`` for every line of the README's command-line block.

    Backslash continuations are joined; ``# comments`` are dropped (after noting the
    ``needs the public traces`` marker).
    """
    text = readme.read_text(encoding="utf-8")
    start = text.find(SECTION)
    if start < 0:
        raise CheckFailed(f"{readme}: no {SECTION!r} section")
    block = re.search(r"```(?:bash|sh|console)?\n(.*?)```", text[start:], re.S)
    if block is None:
        raise CheckFailed(f"{readme}: no code block under {SECTION!r}")
    commands, pending = [], ""
    for line in block.group(1).splitlines():
        line = pending + line.strip()
        pending = ""
        if line.endswith("\\"):
            pending = line[:-1].rstrip() + " "
            continue
        if not line or line.startswith("#"):
            continue
        command = shlex.join(shlex.split(line, comments=True))
        commands.append((command, NEEDS_TRACES in line))
    if not commands:
        raise CheckFailed(f"{readme}: the {SECTION!r} block holds no command")
    return commands


def kit_files(root: Path = ROOT) -> list[str]:
    """What the wheel must carry in ``magnum_lib/_notebooks``: the checkout's notebooks,
    READMEs and solutions, and ``lab-settings/overrides.json`` (setup.py's KIT_FILES)."""
    notebooks = root / "notebooks"
    files = [p.relative_to(notebooks).as_posix() for pattern in ("*.ipynb", "*.md", "solutions/*.py")
             for p in notebooks.glob(pattern)]
    return sorted(files) + ["lab-settings/overrides.json"]


def wheel_problems(wheel: Path, package: Path = PACKAGE, compiled: bool = True) -> list[str]:
    """What the wheel lacks (data files, notebooks, compiled modules) or should not carry (.c).

    ``compiled=False`` (a build without a compiler): no compiled module at all, and the
    marker file naming why, instead of one module per ``_*.pyx``.
    """
    names = set(zipfile.ZipFile(wheel).namelist())
    problems = [] if "magnum_lib/py.typed" in names else ["missing magnum_lib/py.typed"]
    for f in sorted((package / "data").rglob("*")):
        rel = "magnum_lib/" + f.relative_to(package).as_posix()
        if f.is_file() and rel not in names:
            problems.append(f"missing data file {rel}")
    for pyx in sorted(package.rglob("_*.pyx")):
        stem = "magnum_lib/" + pyx.relative_to(package).with_suffix("").as_posix()
        built = any(n.startswith(stem + ".") and n.endswith((".so", ".pyd")) for n in names)
        if built != compiled:
            problems.append(f"{'no' if compiled else 'unexpected'} compiled module for {stem}.pyx")
    for rel in kit_files():
        if f"magnum_lib/_notebooks/{rel}" not in names:
            problems.append(f"missing notebook file magnum_lib/_notebooks/{rel}")
    if (PURE_MARKER in names) == compiled:
        problems.append(f"{'unexpected' if compiled else 'missing'} {PURE_MARKER}")
    problems += [f"generated C source shipped: {n}" for n in sorted(names) if n.endswith(".c")]
    return problems


def _run(cmd, log: Path, **kw) -> None:
    with log.open("w") as out:
        status = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, **kw).returncode
    if status != 0:
        raise CheckFailed(f"{shlex.join(map(str, cmd))} exited {status}; log:\n{log.read_text()[-4000:]}")


def clean_copy(dest: Path) -> Path:
    """The checkout's files (tracked, plus new ones not ignored) copied to ``dest``.

    The wheel is built from this copy, as from a fresh clone: nothing stale from the
    checkout's own ``build/`` or in-place extensions can slip into it. The one exception is
    Cython's generated C beside each ``.pyx`` (release mode only: the debug build writes
    its C under ``build/debug``), copied with its time stamp: Cython regenerates any file
    older than its ``.pyx`` or ``.pxd``, so a stale one cannot be used, and a fresh one
    saves translating every kernel again.
    """
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, capture_output=True, check=True).stdout.decode().split("\0")
    generated = [p.with_suffix(".c").relative_to(ROOT).as_posix() for p in PACKAGE.rglob("*.pyx")
                 if p.with_suffix(".c").is_file()]
    for rel in filter(None, listed + generated):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def no_compiler(env: dict, shadow: Path) -> dict:
    """``env`` with no working C compiler: CC/CXX/LDSHARED are ``false`` and every usual
    compiler name on PATH resolves to ``false`` (in ``shadow``, created here)."""
    false = shutil.which("false") or "/bin/false"
    shadow.mkdir(parents=True, exist_ok=True)
    for name in COMPILERS:
        if not (shadow / name).exists():
            (shadow / name).symlink_to(false)
    return {**env, "CC": false, "CXX": false, "LDSHARED": false,
            "PATH": f"{shadow}{os.pathsep}{env.get('PATH', '')}"}


def build_env(require_compiled: bool = True) -> dict:
    """A release build whatever this shell says (no MAGNUM_CYTHON_DEBUG, no MAGNUM_NO_EXTENSIONS);
    ``require_compiled``: a failed compile is an error, not the pure-Python fallback."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAGNUM_") or k == "MAGNUM_BUILD_JOBS"}
    return {**env, "MAGNUM_REQUIRE_COMPILED": "1"} if require_compiled else env


def build_sdist(out_dir: Path, logs: Path, source: Path, env: dict) -> Path:
    """The source distribution of ``source`` (as uploaded to an index), in ``out_dir``."""
    _run([sys.executable, "setup.py", "-q", "sdist", "-d", str(out_dir)], logs / "sdist.log", cwd=source, env=env)
    sdists = sorted(out_dir.glob("magnum_lib-*.tar.gz"))
    if len(sdists) != 1:
        raise CheckFailed(f"expected one magnum_lib sdist in {out_dir}, found {len(sdists)}")
    return sdists[0]


def build_wheel(out_dir: Path, logs: Path, source: Path, env: dict | None = None) -> Path:
    """The wheel of ``source`` (a directory or an sdist), built by pip."""
    env = build_env() if env is None else env
    cwd = source if source.is_dir() else source.parent
    # -v: the log keeps setup.py's own lines (``magnum-build: ...``), which pip hides otherwise
    _run([sys.executable, "-m", "pip", "--disable-pip-version-check", "wheel", "-v", "--no-deps",
          "--no-build-isolation", "-w", str(out_dir), str(source)], logs / "wheel.log", cwd=cwd, env=env)
    wheels = sorted(out_dir.glob("magnum_lib-*.whl"))
    if len(wheels) != 1:
        raise CheckFailed(f"expected one magnum_lib wheel in {out_dir}, found {len(wheels)}")
    return wheels[0]


def fallback_lines(build_log: Path) -> list[str]:
    """setup.py's lines saying it could not compile and installed the pure-Python backend."""
    return [line.strip() for line in build_log.read_text(encoding="utf-8", errors="replace").splitlines()
            if "magnum-build: cannot compile here" in line]


def install(wheel: Path, venv: Path, logs: Path, reuse_deps: bool = False) -> Path:
    """``pip install`` the wheel into ``venv`` (created if missing); return its python.

    ``reuse_deps``: instead of installing the dependencies, let the venv see this
    interpreter's site-packages (a ``.pth`` line, added after the venv's own, so the wheel's
    ``magnum_lib`` is the one imported; an editable install there is not activated, since
    the ``.pth`` files inside a path line are not read). Quicker, for the test suite.
    """
    if not (venv / "bin" / "python").exists():
        _run([sys.executable, "-m", "venv", str(venv)], logs / "venv.log")
    python = venv / "bin" / "python"
    _run([python, "-m", "pip", "--disable-pip-version-check", "install", "--force-reinstall",
          "--no-deps", str(wheel)], logs / "install-wheel.log")
    if reuse_deps:
        site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True, check=True).stdout.strip()
        ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
        Path(site, "zz_reused_dependencies.pth").write_text("\n".join(sorted(ours)) + "\n", encoding="utf-8")
        return python
    _run([python, "-m", "pip", "--disable-pip-version-check", "install", str(wheel)],
         logs / "install-deps.log")  # the dependencies, from PyPI or pip's cache
    return python


def clean_env(venv: Path, home: Path, shared: Path | None = None) -> dict:
    """The environment of a person who just installed the wheel: no PYTHONPATH, no MAGNUM_*."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MAGNUM_") and k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["HOME"] = str(home)
    env["MPLCONFIGDIR"] = str(home / "mpl")
    if shared is not None:
        env["MAGNUM_SHARED_DATA"] = str(shared)
    return env


def check_not_shadowed(python: Path, venv: Path, env: dict, backend: str = "compiled") -> str:
    """From the repository root, the installed wheel (with ``backend``) is what Python imports."""
    out = subprocess.run([python, "-m", "magnum_lib", "--version"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    line = out.stdout.strip()
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['platlib'])"],
                          env=env, capture_output=True, text=True, check=True).stdout.strip()
    expected = str(Path(site, "magnum_lib"))
    if out.returncode != 0 or f"backend: {backend}," not in line or expected not in line or out.stderr:
        raise CheckFailed(f"from {ROOT}, `python -m magnum_lib --version` printed {line!r} "
                          f"(stderr {out.stderr.strip()[-300:]!r}); expected the {backend} backend at {expected}")
    return line


def run_command(command: str, cwd: Path, env: dict, timeout: float):
    """``(exit status, stdout, stderr, seconds)``; a timeout counts as status -1."""
    start = time.perf_counter()
    try:
        out = subprocess.run(command, shell=True, cwd=cwd, env=env, capture_output=True,
                             text=True, timeout=timeout)
        status, stdout, stderr = out.returncode, out.stdout, out.stderr
    except subprocess.TimeoutExpired as exc:
        status, stdout, stderr = -1, str(exc.stdout or ""), f"timed out after {timeout:g} s"
    return status, stdout, stderr, time.perf_counter() - start


def judge(status: int, stdout: str, stderr: str, expected: int) -> str | None:
    """What is wrong with one command's run (None: nothing). Exit 2 must be one line."""
    if "Traceback (most recent call last)" in stdout + stderr:
        return "printed a traceback"
    if status != expected:
        return f"exited {status}, expected {expected}"
    lines = len(stderr.strip().splitlines())
    if expected == 2 and lines != 1:
        return f"printed {lines} lines on stderr, expected one"
    return None


def shared_data() -> Path | None:
    """The public traces for the checkout: ``$MAGNUM_SHARED_DATA``, else ``shared/data``
    in the checkout's parent (or a folder above it); None when absent."""
    env = os.environ.get("MAGNUM_SHARED_DATA", "").strip()
    candidates = [Path(env)] if env else [d / "shared" / "data" for d in ROOT.parents]
    return next((c for c in candidates if (c / "MANIFEST.tsv").is_file()), None)


def check_commands(venv: Path, work: Path, timeout: float, shadow: Path | None = None) -> list[str]:
    """Run the README commands; return one line per failure (and print one per command).

    ``shadow``: run them with no C compiler (see :func:`no_compiler`).
    """
    home = work / "home"
    home.mkdir(exist_ok=True)
    shared = shared_data()
    failures = []
    for command, needs_traces in readme_commands():
        runs = [("no traces", None, 2)] if needs_traces else [("", None, 0)]
        if needs_traces and shared is not None:
            runs.append((f"traces {shared}", shared, 0))
        for label, data, expected in runs:
            env = clean_env(venv, home, data)
            env = no_compiler(env, shadow) if shadow is not None else env
            status, stdout, stderr, seconds = run_command(command, work, env, timeout)
            problem = judge(status, stdout, stderr, expected)
            tag = f" [{label}]" if label else ""
            print(f"  {'FAIL' if problem else 'ok  '} {seconds:6.1f} s  {command}{tag}", flush=True)
            if problem:
                tail = (stderr.strip() or stdout.strip())[-1500:]
                failures.append(f"{command}{tag}: {problem}\n{tail}")
    return failures


def smoke_commands(pyproject: Path = ROOT / "pyproject.toml") -> list[str]:
    """cibuildwheel's smoke test (``[tool.cibuildwheel] test-command``), one command each."""
    import tomllib

    commands = tomllib.loads(pyproject.read_text(encoding="utf-8"))["tool"]["cibuildwheel"]["test-command"]
    return [commands] if isinstance(commands, str) else list(commands)


def check_smoke(python: Path, wheel: Path, venv: Path, work: Path, logs: Path, timeout: float,
                shadow: Path | None) -> list[str]:
    """Run the wheels' smoke test in the fresh venv, first installing what cibuildwheel does:
    the wheel's ``test-extras`` and the ``test-requires``."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["cibuildwheel"]
    extras = ",".join(config.get("test-extras", []))
    _run([python, "-m", "pip", "--disable-pip-version-check", "install",
          f"{wheel}[{extras}]" if extras else str(wheel), *config["test-requires"]], logs / "install-smoke.log")
    smoke = work / "smoke"
    smoke.mkdir(exist_ok=True)
    env = clean_env(venv, work / "home")
    env = no_compiler(env, shadow) if shadow is not None else env
    failures = []
    for command in smoke_commands():
        status, stdout, stderr, seconds = run_command(command, smoke, env, timeout)
        problem = judge(status, stdout, stderr, 0)
        print(f"  {'FAIL' if problem else 'ok  '} {seconds:6.1f} s  {command}", flush=True)
        if problem:
            failures.append(f"{command}: {problem}\n{(stderr.strip() or stdout.strip())[-1500:]}")
    return failures


def trace_notebooks(makefile: Path = ROOT / "Makefile") -> list[str]:
    """The notebooks that replay the public traces: the Makefile's ``TRACE_NOTEBOOKS``."""
    found = re.search(r"^TRACE_NOTEBOOKS\s*:=\s*(.*)$", makefile.read_text(encoding="utf-8"), re.M)
    return found.group(1).split() if found else []


def run_timed(cmd, log: Path, **kw) -> tuple[int, float, float | None]:
    """``(exit status, wall seconds, CPU seconds)`` of ``cmd``, its output in ``log``.

    The CPU time is the child's and its waited-for children's (pytest and its kernel), read
    with ``os.wait4``: unlike the wall time it is not inflated by a busy machine, and it stays
    each run's own when several run at once. None where ``os.wait4`` is missing (Windows).
    """
    start = time.perf_counter()
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, **kw)
        if hasattr(os, "wait4"):
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
            cpu = usage.ru_utime + usage.ru_stime
        else:
            proc.wait()
            cpu = None
    return proc.returncode, time.perf_counter() - start, cpu


#: A notebook cell that fails unless the kernel imports the installed wheel with the given backend.
KERNEL_PROBE = """import sys, sysconfig, magnum_lib
site = sysconfig.get_paths()["platlib"]
assert magnum_lib.__file__.startswith(site), (magnum_lib.__file__, site)
assert magnum_lib.backend() == {backend!r}, magnum_lib.backend()
print(sys.executable, magnum_lib.__file__, magnum_lib.backend())"""


def write_kernel_probe(path: Path, backend: str) -> Path:
    """A one-cell notebook at ``path``: under nbval it fails unless the kernel runs the wheel
    installed in its own venv (not a source tree, not another environment's copy) with ``backend``."""
    import json

    cell = {"cell_type": "code", "execution_count": None, "id": "probe", "metadata": {}, "outputs": [],
            "source": KERNEL_PROBE.format(backend=backend)}
    notebook = {"cells": [cell], "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                            "language": "python"}},
                "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(notebook, indent=1) + "\n", encoding="utf-8")
    return path


def check_notebooks(python: Path, wheel: Path, venv: Path, work: Path, logs: Path, shadow: Path | None,
                    pattern: str = "*.ipynb", backend: str = "compiled", jobs: int = 1) -> None:
    """Copy the notebooks out of the installed package and run every one (matching
    ``pattern``) under nbval, ``jobs`` at a time, after a probe notebook checks that the
    kernel imports the installed wheel with ``backend``. Installed first: what a student
    installs (the wheel's ``lab`` extra, README.md) and nbval."""
    _run([python, "-m", "pip", "--disable-pip-version-check", "install", f"{wheel}[lab]", *NOTEBOOK_TESTS],
         logs / "install-notebook-tests.log")
    shared = shared_data()
    env = clean_env(venv, work / "home", shared)
    env = no_compiler(env, shadow) if shadow is not None else env
    env["MAGNUM_NB_SOLUTIONS"] = "1"  # the exercises' check cells run our solutions
    notebooks = work / "notebooks"
    _run([venv / "bin" / "faux-magnum", "lab", "--copy-only", str(notebooks)], logs / "lab-copy.log", env=env)
    skipped = [] if shared is not None else trace_notebooks()
    chosen = sorted(p.name for p in notebooks.glob(pattern if pattern.endswith(".ipynb") else pattern + ".ipynb")
                    if p.name not in skipped)
    if not chosen:
        raise CheckFailed(f"no notebook in {notebooks} matches {pattern!r}")
    chosen.sort(key=lambda name: name not in LONGEST_FIRST)   # (a stable sort: the rest stay in order)
    nbval = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval-lax", "--nbval-current-env"]
    probe = write_kernel_probe(work / "kernel_probe.ipynb", backend)
    status, _, _ = run_timed([*nbval, probe.name], logs / "nbval-kernel-probe.log", cwd=work, env=env)
    if status != 0:
        raise CheckFailed(f"the notebooks' kernel does not run the installed {backend} backend; log:\n"
                          + (logs / "nbval-kernel-probe.log").read_text(encoding="utf-8")[-3000:])
    print(f"wheel-check: nbval on {len(chosen)} notebook(s) in {notebooks}, {jobs} at a time "
          f"(their kernel imports the installed {backend} backend)"
          f"{' (without ' + ', '.join(skipped) + ': no traces)' if skipped else ''}", flush=True)

    def one(name: str) -> str | None:  # one pytest each: its times are its own, one failure hides nothing
        log = logs / f"nbval-{Path(name).stem}.log"
        status, wall, cpu = run_timed([*nbval, name], log, cwd=notebooks, env=env)
        cpu_text = "   n/a" if cpu is None else f"{cpu:6.1f}"
        print(f"  {'FAIL' if status else 'ok  '} {wall:6.1f} s wall {cpu_text} s CPU  {name}", flush=True)
        if status:
            return f"{name}: exited {status}; log:\n{log.read_text(encoding='utf-8')[-4000:]}"
        return None

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        failures = [f for f in pool.map(one, chosen) if f]
    if failures:
        raise CheckFailed(f"{len(failures)} notebook(s) failed under nbval:\n" + "\n".join(failures))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, help="venv to use (created if missing; default: a fresh temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (printed)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per README command (default: 300)")
    parser.add_argument("--no-compiler", action="store_true",
                        help="build from the sdist with no C compiler: the pure-Python fallback")
    parser.add_argument("--notebooks", nargs="?", const="*.ipynb", metavar="GLOB",
                        help="also run every notebook (or those matching GLOB, e.g. '0[0-3]_*') under nbval")
    parser.add_argument("--notebook-jobs", type=int, default=1, metavar="N",
                        help="run N notebooks at a time (default: 1; each has its own pytest and kernel)")
    parser.add_argument("--smoke", action="store_true",
                        help="also run the binary wheels' smoke test ([tool.cibuildwheel] test-command)")
    parser.add_argument("--reuse-deps", action="store_true",
                        help="give the venv this interpreter's packages instead of installing them (quicker)")
    args = parser.parse_args(argv)
    if args.notebook_jobs < 1:
        parser.error(f"--notebook-jobs must be >= 1, got {args.notebook_jobs}")
    started = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="magnum-wheel-check-"))
    logs, work = tmp / "logs", tmp / "work"
    logs.mkdir()
    work.mkdir()
    venv = args.venv.resolve() if args.venv else tmp / "venv"
    shadow = tmp / "no-compiler" if args.no_compiler else None
    backend = "python" if args.no_compiler else "compiled"
    try:
        source = clean_copy(tmp / "source")
        if shadow is not None:
            env = no_compiler(build_env(require_compiled=False), shadow)
            source = build_sdist(tmp / "dist", logs, source, env)
            print(f"wheel-check: built {source.name} (no C compiler from here on)", flush=True)
        else:
            env = build_env()
        wheel = build_wheel(tmp / "dist", logs, source, env)
        print(f"wheel-check: built {wheel.name} ({wheel.stat().st_size / 1e6:.1f} MB, "
              f"{time.perf_counter() - started:.0f} s)", flush=True)
        said = fallback_lines(logs / "wheel.log")
        if shadow is not None and len(said) != 1:
            raise CheckFailed(f"the build printed {len(said)} 'cannot compile here' lines, expected one "
                              f"(log: {logs / 'wheel.log'})")
        if shadow is not None:
            print(f"wheel-check: the build said: {said[0][:160]}...", flush=True)
        problems = wheel_problems(wheel, compiled=shadow is None)
        if problems:
            raise CheckFailed("the wheel is incomplete: " + "; ".join(problems))
        print("wheel-check: the wheel holds every data file and notebook, "
              + ("no compiled module but the pure-Python marker" if shadow else "every compiled module")
              + ", no .c", flush=True)
        step = time.perf_counter()
        python = install(wheel, venv, logs, args.reuse_deps)
        print(f"wheel-check: installed in {venv} ({time.perf_counter() - step:.0f} s)", flush=True)
        check_env = clean_env(venv, work / "home")
        line = check_not_shadowed(python, venv, no_compiler(check_env, shadow) if shadow else check_env, backend)
        print(f"wheel-check: from the repository root: {line}", flush=True)
        print(f"wheel-check: README commands, run in {work}:", flush=True)
        step = time.perf_counter()
        failures = check_commands(venv, work, args.timeout, shadow)
        if failures:
            raise CheckFailed(f"{len(failures)} README command(s) failed:\n" + "\n".join(failures))
        print(f"wheel-check: README commands ok ({time.perf_counter() - step:.0f} s)", flush=True)
        if args.smoke:
            print("wheel-check: the wheels' smoke test:", flush=True)
            failures = check_smoke(python, wheel, venv, work, logs, args.timeout, shadow)
            if failures:
                raise CheckFailed(f"{len(failures)} smoke command(s) failed:\n" + "\n".join(failures))
        if args.notebooks:
            step = time.perf_counter()
            check_notebooks(python, wheel, venv, work, logs, shadow, args.notebooks, backend,
                            args.notebook_jobs)
            print(f"wheel-check: the notebooks passed nbval ({time.perf_counter() - step:.0f} s)", flush=True)
    except CheckFailed as exc:
        print(f"wheel-check: FAILED: {exc}", file=sys.stderr)
        if not args.keep:  # keep the logs, not the half-gigabyte venv and source copy
            for part in ("venv", "source", "dist", "work"):
                shutil.rmtree(tmp / part, ignore_errors=True)
        print(f"wheel-check: logs kept in {logs}", file=sys.stderr)
        return 1
    print(f"wheel-check: ok in {time.perf_counter() - started:.0f} s ({backend} backend)")
    if args.keep:
        print(f"wheel-check: kept {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
