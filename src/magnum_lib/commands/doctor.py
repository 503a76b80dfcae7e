"""``faux-magnum doctor``: the set-up check a learner runs before the workshop day.

It reports, one line each, what is installed and whether it works: Python, the library
and its backend, every compiled extension, the required and optional packages, the data
the library ships, the public traces (optional), Chromium (only the browser tests need
it), and a two-second smoke run of the queue simulator against queueing theory.

Exit status: 0 when everything the notebooks need works (warnings are fine), 1 when
something required is missing or wrong.
"""
from __future__ import annotations

import importlib
import math
import pkgutil
import shutil
import sys
from dataclasses import asdict, dataclass

from magnum_lib.commands._common import json_text

OK, WARN, FAIL = "ok", "warn", "fail"

#: Needed by the library and the notebooks (pyproject's dependencies and the lab extra).
REQUIRED = ("numpy", "scipy", "matplotlib", "ipywidgets", "yaml", "tqdm", "jupyterlab")
#: Needed only for sweeps on Dask, the test suite or the benchmarks' peers.
OPTIONAL = ("dask", "distributed", "pytest", "hypothesis", "nbval", "playwright", "simpy")


#: How to get the compiled backend on a pure-Python install.
COMPILE_HINT = ("For the compiled backend: install a C compiler (gcc or clang; Xcode command line "
                "tools on macOS; Visual Studio Build Tools on Windows), then "
                "`pip install --force-reinstall --no-cache-dir magnum_lib`")


@dataclass
class Check:
    name: str
    status: str
    detail: str


def add(subparsers) -> None:
    p = subparsers.add_parser(
        "doctor", help="check that this machine is ready for the workshop",
        description="Report what is installed and whether it works (library, compiled "
                    "extensions, packages, shipped data, public traces, Chromium) and run "
                    "a short simulation against theory. Exit 1 if something required fails.")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=_run_doctor)


def _version(module) -> str:
    return str(getattr(module, "__version__", "installed"))


def _check_packages(names, missing_status) -> list[Check]:
    checks = []
    for name in names:
        try:
            module = importlib.import_module(name)
        except Exception as exc:  # any import failure is a finding, not a crash
            checks.append(Check(name, missing_status, f"not importable ({type(exc).__name__})"))
        else:
            checks.append(Check(name, OK, _version(module)))
    return checks


def _compiled_modules() -> list[str]:
    """Names of the extension modules the package ships (every ``_*.pyx`` beside its .py)."""
    import magnum_lib

    names = []
    for info in pkgutil.walk_packages(magnum_lib.__path__, "magnum_lib."):
        leaf = info.name.rsplit(".", 1)[1]
        if leaf.startswith("_") and not leaf.startswith("__"):
            names.append(info.name)
    return names


def _check_library() -> list[Check]:
    import magnum_lib
    from magnum_lib import _backend

    checks = [Check("magnum_lib", OK, f"{magnum_lib.__version__} at {magnum_lib.__path__[0]}")]
    backend = magnum_lib.backend()
    if backend == "compiled":
        checks.append(Check("backend", OK, "compiled (Cython fast paths)"))
    elif _backend.pure_python_forced():
        checks.append(Check("backend", WARN, "python (forced by MAGNUM_PUREPYTHON)"))
    elif (why := _backend.installed_without_compiler()) is not None:
        checks.append(Check("backend", WARN, f"python: installed without compiled extensions ({why}); "
                                              "the notebooks run, slower. " + COMPILE_HINT))
    else:
        checks.append(Check("backend", FAIL, "python: the Cython extensions are not built "
                                              "(run `make build`)"))
    compiled, broken = [], []
    for name in _compiled_modules():
        try:
            module = importlib.import_module(name)
        except ImportError:
            broken.append(name)
            continue
        if str(getattr(module, "__file__", "")).endswith((".so", ".pyd")):
            compiled.append(name)
    if broken:
        checks.append(Check("extensions", FAIL if backend == "compiled" else WARN,
                            f"{len(broken)} not importable: {', '.join(broken)}"))
    elif not compiled:
        checks.append(Check("extensions", WARN, "none built: the pure-Python references run"))
    else:
        checks.append(Check("extensions", OK, f"{len(compiled)} compiled modules import"))
    return checks


def _check_data() -> list[Check]:
    from magnum_lib._resources import data_path
    from magnum_lib.hardware import load_catalog
    from magnum_lib.workload.jobs import load_sample_workload

    checks = []
    try:
        catalog = load_catalog()
        checks.append(Check("hardware catalog", OK, f"{len(catalog)} devices"))
    except Exception as exc:
        checks.append(Check("hardware catalog", FAIL, f"{type(exc).__name__}: {exc}"[:200]))
    manifests = sorted(p.stem for p in data_path("manifests").glob("*.yaml"))
    checks.append(Check("manifests", OK if manifests else FAIL, ", ".join(manifests) or "none shipped"))
    try:
        sample = load_sample_workload()
        checks.append(Check("sample workload", OK, f"{len(sample):,} jobs"))
    except Exception as exc:
        checks.append(Check("sample workload", FAIL, f"{type(exc).__name__}: {exc}"[:200]))
    return checks


def _check_traces() -> list[Check]:
    """Every trace file a notebook or command reads (the shipped manifest), by size and SHA-256."""
    from magnum_lib.workload import traces
    from magnum_lib.workload.fetch import verify

    root = traces.shared_data_dir()
    results = verify(root)
    bad = [(r, p) for r, p in results if p]
    if len(bad) == len(results):
        return [Check("public traces", WARN, f"none of the {len(results)} files in {root}; fetch them with "
                                             f"`faux-magnum data fetch` (only the trace notebooks and "
                                             f"`replay`/`hetero` need them)")]
    checks = [Check("public traces", OK if not bad else WARN,
                    f"{len(results) - len(bad)}/{len(results)} files intact (size and SHA-256) in {root}")]
    checks += [Check(f"  {r.file}", WARN, f"{p}; `faux-magnum data fetch` restores it") for r, p in bad]
    return checks


def _check_browser() -> list[Check]:
    path = shutil.which("chromium")
    if path:
        return [Check("chromium", OK, path)]
    return [Check("chromium", WARN, "not installed; only the browser tests need it "
                                    "(apt-get install chromium)")]


def _check_smoke() -> list[Check]:
    """M/M/2 at load 0.5 for 20,000 jobs: the mean time in system within 10% of theory."""
    from magnum_lib.engine import simulate_queue
    from magnum_lib.engine.theory import mmc_time_in_system_mean

    result = simulate_queue(servers=2, arrival_rate=1.0, service_rate=1.0, jobs=20_000, seed=1)
    theory = mmc_time_in_system_mean(2, 1.0, 1.0)
    error = abs(result.time_in_system_mean - theory) / theory
    status = OK if math.isfinite(error) and error < 0.10 else FAIL
    return [Check("smoke: M/M/2", status,
                  f"mean time in system {result.time_in_system_mean:.3f} s vs theory "
                  f"{theory:.3f} s ({error:.1%} off, {result.backend} backend)")]


def diagnose() -> list[Check]:
    """Every check, in the order a person reads them."""
    checks = [Check("python", OK if sys.version_info >= (3, 10) else FAIL, sys.version.split()[0])]
    checks += _check_library()
    checks += _check_packages(REQUIRED, FAIL)
    checks += _check_packages(OPTIONAL, WARN)
    checks += _check_data()
    checks += _check_traces()
    checks += _check_browser()
    checks += _check_smoke()
    return checks


def _run_doctor(args) -> int:
    checks = diagnose()
    failed = [c for c in checks if c.status == FAIL]
    if args.json:
        print(json_text({"ok": not failed, "checks": [asdict(c) for c in checks]}))
    else:
        width = max(len(c.name) for c in checks)
        for c in checks:
            print(f"[{c.status:>4}] {c.name:<{width}}  {c.detail}")
        print("ready for the workshop" if not failed else
              f"{len(failed)} required check(s) failed: {', '.join(c.name for c in failed)}")
    return 1 if failed else 0
