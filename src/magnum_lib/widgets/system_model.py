"""Model behind the whole-system explorer (notebook 07): one short simulation per setting.

:func:`evaluate` runs the simulator on the ``classroom`` cluster (32 nodes, 256 devices)
for ``duration_s`` simulated seconds and returns the summary plus the per-request decision
latencies (for the CDF). UI-free, so tests and benchmarks call it directly.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from magnum_lib.engine.errors import ParameterError
from magnum_lib.sim import make_config
from magnum_lib.sim.run import run_config

PRESETS = ("borg_like", "borg_plus", "cheetah", "magnum_v1", "magnum_v2")
DEFAULT_DURATION_S = 0.25


@dataclass(frozen=True)
class SystemScenario:
    preset: str
    knobs: dict
    summary: dict | None
    latency_ms: np.ndarray
    error: str | None = None


def evaluate(preset: str = "magnum_v2", *, load: float = 0.8, schedulers: int = 2, round_ms: float = 3.7,
             rtt_us: float = 100.0, gossip_loss: float = 0.01, seed: int = 0,
             duration_s: float = DEFAULT_DURATION_S) -> SystemScenario:
    """Simulate ``preset`` on the classroom cluster with these knobs (invalid: ``error`` set)."""
    knobs = dict(load=float(load), round_s=float(round_ms) / 1e3, rtt_s=float(rtt_us) / 1e6,
                 gossip_loss=float(gossip_loss), seed=int(seed), duration_s=float(duration_s))
    if not preset.startswith("borg"):
        knobs["schedulers"] = int(schedulers)
    try:
        out, runs = run_config(make_config(preset, "classroom", **knobs), keep=True)
    except ParameterError as exc:
        return SystemScenario(preset, knobs, None, np.zeros(0), str(exc))
    A = runs[0].A
    ok = A["start"] >= 0
    return SystemScenario(preset, knobs, out, np.sort((A["start"] - A["arr"])[ok]) / 1e6)
