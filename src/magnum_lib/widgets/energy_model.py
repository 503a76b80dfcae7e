"""Model behind the energy explorer (notebook 09): downclocking by SLA slack (claim C46).

No widget code: the explorer, notebook 09, the tests and the benchmark call
:func:`evaluate`. A request's compute time over its memory time at the top clock is
``compute_ratio`` (> 1: compute-bound, < 1: memory-bound); it takes 1 unit of time at the
top clock (the larger of the two, by the roofline); the SLA allows ``slack`` times that
(the article's C46: 10 ms instead of 5 ms is a slack of 2).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from magnum_lib.energy import DvfsModel


@dataclass(frozen=True)
class EnergyScenario:
    """One setting: curves over the clock and the two clocks a scheduler would pick."""

    compute_ratio: float
    static_fraction: float
    slack: float
    clocks: np.ndarray        # fraction of the top clock
    power_ratio: np.ndarray   # average power / top-clock power
    time_ratio: np.ndarray    # run time / top-clock run time
    energy_ratio: np.ndarray  # energy / top-clock energy
    sla_clock: float          # the slowest clock that meets the SLA
    sla_power_ratio: float
    sla_energy_saving: float
    optimal_clock: float      # the clock of least energy (may miss the SLA)
    optimal_energy_saving: float


def _work(compute_ratio: float) -> tuple[float, float]:
    """Compute and memory time of a request that takes 1 at the top clock (roofline max)."""
    r = float(compute_ratio)
    if not 1e-3 <= r <= 1e3:
        raise ValueError(f"compute_ratio must be in [0.001, 1000], got {compute_ratio!r}")
    return (1.0, 1.0 / r) if r >= 1.0 else (r, 1.0)


def evaluate(compute_ratio: float = 4.0, static_fraction: float = 0.3, slack: float = 2.0,
             n: int = 121) -> EnergyScenario:
    """Curves and picks for one setting (``compute_ratio`` compute time / memory time)."""
    model = DvfsModel(static_fraction=static_fraction)
    compute, memory = _work(compute_ratio)
    f = model.clocks(n)
    p0 = float(model.power_w(1.0, compute, memory))
    t0 = float(model.runtime(1.0, compute, memory))
    power = model.power_w(f, compute, memory) / p0
    time = model.runtime(f, compute, memory) / t0
    energy = power * time
    pick = model.sla_downclock(float(slack) * t0, compute, memory)
    f_opt = model.optimal_clock(compute, memory)
    return EnergyScenario(float(compute_ratio), float(static_fraction), float(slack), f, power, time, energy,
                          pick["clock"], pick["power_ratio"], pick["energy_saving"], f_opt,
                          1.0 - model.energy_ratio(f_opt, compute, memory))
