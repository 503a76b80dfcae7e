"""Is the pure-Python backend good enough for a workshop day? Prints one JSON object.

Every explorer is driven headlessly as ``benchmarks/bench_widgets.py`` drives it (its
``BENCH_STEPS`` replayed, each change timed from setting the control until the PNG is in
the Image widget, the suite's style applied), once on the pure-Python backend
(``MAGNUM_PUREPYTHON=1``) and once on the compiled one, each in its own subprocess, one
after the other in the same run. Each change is timed in wall-clock and in CPU time of
the process (on a machine shared with other work the CPU time is what a quiet laptop would
wait). Target (issue 20, section 4): median <= 300 ms per slider change on the pure-Python
backend.

An explorer whose sizes are smaller on the pure-Python backend says so on screen and in
its ``pure_python_note()``; the JSON reports that note beside the figures, so a smaller
size is never mistaken for a faster kernel. A step that a smaller slider clamps to the
value it already has runs nothing: it is counted (``changes_without_update``), not timed.

With ``--notebooks`` it also runs every notebook top to bottom under nbval on the
pure-Python backend (``MAGNUM_NB_SOLUTIONS=1 pytest --nbval-lax --nbval-current-env``, one
process per notebook) and reports each wall time; target <= 180 s per notebook.

Usage: ``python benchmarks/bench_purepython.py [--changes N] [--only NAME] [--notebooks [GLOB]]``
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TARGET_MS = 300.0
NOTEBOOK_TARGET_S = 180.0


def measure(changes: int, only: str | None) -> dict:
    """Every explorer on the active backend, defaults as a student gets them (worker side)."""
    sys.path.insert(0, str(HERE))
    import bench_widgets

    import magnum_lib
    from magnum_lib.widgets import style

    style.apply()
    out = {"backend": magnum_lib.backend()}
    for name, module in bench_widgets.explorer_modules(only).items():
        explorer = getattr(module, name)()
        out[name] = bench_widgets.drive(explorer, module.BENCH_STEPS, changes)
        note = getattr(module, "pure_python_note", None)
        out[name]["note"] = note() if note else ""
    return out


def _explorers(backend_env: dict, changes: int, only: str | None) -> dict:
    """:func:`measure` in a fresh process with ``backend_env`` (the backend is chosen at import)."""
    cmd = [sys.executable, __file__, "--worker", "--changes", str(changes)]
    if only:
        cmd += ["--only", only]
    env = {k: v for k, v in os.environ.items() if k != "MAGNUM_PUREPYTHON"}
    env.update(MPLBACKEND="Agg", **backend_env)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


def _children_cpu_s() -> float | None:
    """User + system CPU seconds of this process' finished children (pytest and its kernel);
    None where the platform has no ``resource`` module (Windows)."""
    try:
        import resource
    except ImportError:
        return None
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def _notebooks(pattern: str) -> dict:
    """Wall time of each notebook under nbval on the pure-Python backend (one pytest per notebook)."""
    out = {}
    env = dict(os.environ, MAGNUM_PUREPYTHON="1", MAGNUM_NB_SOLUTIONS="1", MPLBACKEND="Agg")
    for nb in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        if not fnmatch.fnmatch(nb.name, pattern):
            continue
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval-lax",
               "--nbval-current-env", nb.name]
        c0 = _children_cpu_s()
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=nb.parent, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        cpu = _children_cpu_s() - c0 if c0 is not None else None
        tail = (proc.stdout.strip().splitlines() or [""])[-1]
        out[nb.name] = {"wall_s": round(wall, 1), "cpu_s": None if cpu is None else round(cpu, 1),
                        "passed": proc.returncode == 0, "pytest": tail[:200],
                        "meets_target": proc.returncode == 0 and wall <= NOTEBOOK_TARGET_S,
                        "meets_target_in_cpu_time": proc.returncode == 0 and cpu is not None
                        and cpu <= NOTEBOOK_TARGET_S}
        print(f"{nb.name}: {out[nb.name]}", file=sys.stderr, flush=True)   # progress, one line each
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=20, help="slider changes per explorer (default 20)")
    parser.add_argument("--only", default=None, help="one explorer module, e.g. bouncer_explorer")
    parser.add_argument("--notebooks", nargs="?", const="*", default=None, metavar="GLOB",
                        help="also time the notebooks matching GLOB (default: all) under nbval")
    parser.add_argument("--no-explorers", action="store_true", help="only the notebooks")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.changes < 1:
        parser.error(f"--changes must be >= 1, got {args.changes}")
    if args.worker:
        print(json.dumps(measure(args.changes, args.only)))
        return 0

    result: dict = {"target_median_ms": TARGET_MS}
    if not args.no_explorers:
        python = _explorers({"MAGNUM_PUREPYTHON": "1"}, args.changes, args.only)
        compiled = _explorers({}, args.changes, args.only)
        explorers = {}
        for name, figures in python.items():
            if name == "backend":
                continue
            explorers[name] = {
                "pure_python_median_ms": figures["median_ms"], "pure_python_cpu_median_ms": figures["cpu_median_ms"],
                "pure_python_p90_ms": figures["p90_ms"], "pure_python_cpu_p90_ms": figures["cpu_p90_ms"],
                "pure_python_cpu_max_ms": figures["cpu_max_ms"], "pure_python_timed_changes": figures["timed_changes"],
                "pure_python_changes_without_update": figures["changes_without_update"],
                "compiled_median_ms": compiled[name]["median_ms"], "compiled_cpu_median_ms": compiled[name]["cpu_median_ms"],
                "meets_target": figures["median_ms"] <= TARGET_MS,
                "meets_target_in_cpu_time": figures["cpu_median_ms"] <= TARGET_MS,
                "pure_python_note": figures["note"],
            }
        result["backends"] = {"pure_python": python["backend"], "compiled": compiled["backend"]}
        result["changes"] = args.changes
        result["explorers"] = explorers
    if args.notebooks is not None:
        result["notebook_target_s"] = NOTEBOOK_TARGET_S
        result["notebooks_pure_python"] = _notebooks(args.notebooks)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
