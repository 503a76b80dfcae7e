"""How fast do the explorers answer a slider change? Prints one JSON object.

Every module ``magnum_lib/widgets/<name>_explorer.py`` is found and driven headlessly:
its factory function ``<name>_explorer()`` builds the explorer with its defaults, and its
``BENCH_STEPS`` list of ``(control, value)`` changes is replayed ``N`` times, each timed
from setting ``control.value`` until the model has run, the figure is redrawn and its PNG
is in the Image widget (what the browser then shows), with ``style.apply()`` in force as
in the notebooks. Ours is the active (compiled)
backend; the peer figure beside it is the same run on the pure-Python reference
(``MAGNUM_PUREPYTHON=1`` in a subprocess, so the two never share a process).

Usage: ``python benchmarks/bench_widgets.py [--changes N] [--only NAME]``;
target: median <= 150 ms per change.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import pkgutil
import subprocess
import sys
import time

import numpy as np

TARGET_MS = 150.0


def explorer_modules(only: str | None = None) -> dict:
    """``{name: module}`` for every ``magnum_lib.widgets.<name>_explorer`` module."""
    import magnum_lib.widgets as pkg

    found = {}
    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name.endswith("_explorer") and (only is None or info.name == only):
            found[info.name] = importlib.import_module(f"magnum_lib.widgets.{info.name}")
    return found


def drive(explorer, steps, changes: int) -> dict:
    """Replay ``steps`` ``changes`` times after one warm-up change; each change timed in wall
    and in CPU time of this process (what a quiet laptop would wait, on a shared machine too).
    A change a smaller slider clamps to its current value runs nothing: counted, not timed."""
    name, value = steps[0]
    explorer.controls[name].value = value  # warm-up (imports, font cache)
    wall, cpu, idle = [], [], 0
    for k in range(changes):
        name, value = steps[(k + 1) % len(steps)]
        before = explorer.updates
        w0, c0 = time.perf_counter(), time.process_time()
        explorer.controls[name].value = value
        if explorer.updates == before:
            idle += 1
            continue
        cpu.append((time.process_time() - c0) * 1e3)
        wall.append((time.perf_counter() - w0) * 1e3)
    w, c = np.asarray(wall), np.asarray(cpu)
    return {"changes": changes, "median_ms": round(float(np.median(w)), 2),
            "p90_ms": round(float(np.percentile(w, 90)), 2), "max_ms": round(float(w.max()), 2),
            "cpu_median_ms": round(float(np.median(c)), 2), "cpu_p90_ms": round(float(np.percentile(c, 90)), 2),
            "cpu_max_ms": round(float(c.max()), 2), "timed_changes": len(wall), "changes_without_update": idle}


def measure(changes: int, only: str | None = None) -> dict:
    """Time every explorer on the active backend, with the suite's figure style applied first
    (as every notebook does before it builds its explorer)."""
    import magnum_lib
    from magnum_lib.widgets import style

    style.apply()
    out = {"backend": magnum_lib.backend()}
    for name, module in explorer_modules(only).items():
        factory = getattr(module, name)
        out[name] = drive(factory(), module.BENCH_STEPS, changes)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=30, help="slider changes per explorer (default 30)")
    parser.add_argument("--only", default=None, help="one explorer module, e.g. queue_explorer")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.changes < 1:
        parser.error(f"--changes must be >= 1, got {args.changes}")
    if args.worker:
        print(json.dumps(measure(args.changes, args.only)))
        return 0

    ours = measure(args.changes, args.only)
    cmd = [sys.executable, __file__, "--worker", "--changes", str(args.changes)]
    if args.only:
        cmd += ["--only", args.only]
    proc = subprocess.run(cmd, env=dict(os.environ, MAGNUM_PUREPYTHON="1"),
                          capture_output=True, text=True, check=True)
    peer = json.loads(proc.stdout)
    result = {"target_median_ms": TARGET_MS, "ours": ours, "peer_pure_python": peer}
    for name in ours:
        if name == "backend":
            continue
        result[f"{name}_meets_target"] = ours[name]["median_ms"] <= TARGET_MS
        result[f"{name}_speedup_median"] = round(peer[name]["median_ms"] / ours[name]["median_ms"], 2)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
