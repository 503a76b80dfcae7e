"""Sweeps of the simulator over presets, seeds and knobs, on :func:`magnum_lib.sweep.sweep`."""
from __future__ import annotations

from magnum_lib.sim.config import make_config
from magnum_lib.sim.run import run_config

__all__ = ["point", "sweep_presets"]


def point(preset: str, seed: int = 0, cluster: str = "classroom", **knobs) -> dict:
    """One sweep task: the flat headline figures of one run (what a table row holds)."""
    out = run_config(make_config(preset, cluster, seed=seed, **knobs))
    d = out["decision_latency_ms"]
    return {"p50_ms": d["p50"], "p95_ms": d["p95"], "p99_ms": d["p99"], "p999_ms": d["p999"],
            "lease_failure_rate": out["lease_failure_rate"], "requests": out["requests"]["total"],
            "done": out["requests"]["done"], "energy_per_request_j": out["energy_per_request_j"],
            "sla_min": min(v for v in out["sla_attainment"].values() if v is not None)}


def sweep_presets(presets, seeds=(0,), client=None, progress: bool = False, **grid_or_knobs):
    """Every preset x seed (x any knob given as a list), as a :class:`magnum_lib.sweep.SweepResult`.

    Knobs given as lists join the grid; scalars are passed to every task. ``client`` is as in
    :func:`magnum_lib.sweep.sweep` (default: a private Dask LocalCluster).
    """
    from magnum_lib.sweep import sweep

    grid = {"preset": list(presets)}
    fixed = {}
    for k, v in grid_or_knobs.items():
        (grid if isinstance(v, (list, tuple)) else fixed)[k] = list(v) if isinstance(v, (list, tuple)) else v

    def task(**kw):
        return point(**kw, **fixed)
    return sweep(task, grid, seeds=list(seeds), client=client, progress=progress)
