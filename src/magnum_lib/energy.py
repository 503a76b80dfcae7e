"""Energy-proportional scheduling: a DVFS model of one accelerator (claim C46).

Dynamic voltage and frequency scaling trades clock for power. The model, per unit of
work, with the clock ``f`` as a fraction of the top clock (``f_min_ratio <= f <= 1``):

* voltage rises linearly with the clock: ``V(f) = v_min + (1 - v_min) (f - f_min) / (1 - f_min)``
  (relative to the voltage at the top clock);
* power is a static part (leakage, memory, board: does not scale with the core clock)
  plus a dynamic part ``~ f V(f)^2`` while the cores are busy:
  ``P(f) = tdp (s + (1 - s) f V(f)^2 busy(f))``;
* run time follows the roofline: a request with compute time ``c`` and memory time ``m``
  at the top clock takes ``t(f) = max(c / f, m)`` (memory bandwidth does not scale with
  the core clock), and the cores are busy for ``busy(f) = (c / f) / t(f)`` of it;
* energy is power times time: ``E(f) = P(f) t(f)``.

The article's C46 ("a job that tolerates 10 ms instead of 5 ms runs at 60% power, saving
40% energy") equates a power saving with an energy saving: that holds only when the run
does not get longer, i.e. for memory-bound work. For compute-bound work the run
stretches as the clock falls and the energy saving is far smaller.

The three shape parameters are ours, chosen to be typical of a 700 W-class GPU, not
measured: ``static_fraction`` 0.3 of the top-clock power, a lowest clock of half the top
clock, and a voltage at that lowest clock of 0.65 of the top voltage. They are parameters
so that a notebook can move them; every conclusion is shown as a function of them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from magnum_lib.base.validate import ParameterError, check_positive

__all__ = ["DvfsModel", "clock_for_deadline", "C46_FULL_SLA_MS", "C46_RELAXED_SLA_MS", "C46_POWER", "C46_SAVING"]

#: The article's C46 figures: a job that tolerates 10 ms instead of 5 ms runs "at 60%
#: power, saving 40% energy".
C46_FULL_SLA_MS = 5.0
C46_RELAXED_SLA_MS = 10.0
C46_POWER = 0.60
C46_SAVING = 0.40


def _fraction(name: str, value, lo: float, hi: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ParameterError(name, f"must be a number in [{lo:g}, {hi:g}], got {value!r}")
    value = float(value)
    if not (math.isfinite(value) and lo <= value <= hi):
        raise ParameterError(name, f"must be in [{lo:g}, {hi:g}], got {value!r}")
    return value


@dataclass(frozen=True)
class DvfsModel:
    """One accelerator under DVFS; see the module docstring for the equations.

    Parameters
    ----------
    tdp_w : float
        Power at the top clock with the cores fully busy, in watts (0 < tdp_w <= 10,000).
    static_fraction : float
        Share of ``tdp_w`` that does not scale with the core clock (0 to 0.95; ours: 0.3).
    f_min_ratio : float
        Lowest clock as a fraction of the top clock (0.05 to 1; ours: 0.5).
    v_min_ratio : float
        Voltage at the lowest clock relative to the voltage at the top clock (0.3 to 1;
        ours: 0.65).
    """

    tdp_w: float = 700.0
    static_fraction: float = 0.3
    f_min_ratio: float = 0.5
    v_min_ratio: float = 0.65

    def __post_init__(self):
        object.__setattr__(self, "tdp_w", check_positive("tdp_w", self.tdp_w, maximum=10_000.0))
        object.__setattr__(self, "static_fraction", _fraction("static_fraction", self.static_fraction, 0.0, 0.95))
        object.__setattr__(self, "f_min_ratio", _fraction("f_min_ratio", self.f_min_ratio, 0.05, 1.0))
        object.__setattr__(self, "v_min_ratio", _fraction("v_min_ratio", self.v_min_ratio, 0.3, 1.0))

    # -- the equations, vectorized over the clock --------------------------------------
    def _clock(self, f) -> np.ndarray:
        f = np.asarray(f, dtype=float)
        if f.size and (not np.all(np.isfinite(f)) or f.min() < self.f_min_ratio - 1e-12 or f.max() > 1 + 1e-12):
            raise ParameterError("clock", f"must be in [{self.f_min_ratio:g}, 1] (fraction of the top clock)")
        return f

    def voltage(self, f) -> np.ndarray:
        """V(f) relative to the voltage at the top clock."""
        f = self._clock(f)
        if self.f_min_ratio == 1.0:
            return np.ones_like(f)
        return self.v_min_ratio + (1.0 - self.v_min_ratio) * (f - self.f_min_ratio) / (1.0 - self.f_min_ratio)

    def runtime(self, f, compute: float = 1.0, memory: float = 0.0) -> np.ndarray:
        """Run time at clock ``f``, in the units of ``compute``/``memory`` (time at top clock)."""
        compute, memory = _work(compute, memory)
        return np.maximum(compute / self._clock(f), memory)

    def power_w(self, f, compute: float = 1.0, memory: float = 0.0) -> np.ndarray:
        """Average power at clock ``f`` while running the request, in watts."""
        compute, memory = _work(compute, memory)
        f = self._clock(f)
        busy = (compute / f) / np.maximum(compute / f, memory)
        dynamic = f * self.voltage(f) ** 2 * busy
        return self.tdp_w * (self.static_fraction + (1.0 - self.static_fraction) * dynamic)

    def energy_j(self, f, compute: float = 1.0, memory: float = 0.0) -> np.ndarray:
        """Energy of the request at clock ``f`` (W x time unit; joules when time is in s)."""
        return self.power_w(f, compute, memory) * self.runtime(f, compute, memory)

    # -- the questions a scheduler asks ------------------------------------------------
    def clocks(self, n: int = 201) -> np.ndarray:
        """``n`` clocks evenly spaced from the lowest to the top clock."""
        return np.linspace(self.f_min_ratio, 1.0, int(n))

    def optimal_clock(self, compute: float = 1.0, memory: float = 0.0, n: int = 2001) -> float:
        """The clock that minimizes energy per request (searched on an ``n``-point grid)."""
        f = self.clocks(n)
        return float(f[int(np.argmin(self.energy_j(f, compute, memory)))])

    def slowest_clock_within(self, deadline: float, compute: float = 1.0, memory: float = 0.0) -> float:
        """The lowest clock whose run time still meets ``deadline`` (same unit as the work).

        Raises ParameterError when even the top clock misses the deadline.
        """
        compute, memory = _work(compute, memory)
        deadline = check_positive("deadline", deadline)
        if max(compute, memory) > deadline * (1 + 1e-12):
            raise ParameterError("deadline", f"{deadline:g} is shorter than the run at the top clock")
        if compute == 0.0:
            return self.f_min_ratio
        return float(min(1.0, max(self.f_min_ratio, compute / deadline)))

    def clock_at_power(self, power_ratio: float, compute: float = 1.0, memory: float = 0.0) -> float:
        """The clock at which the average power is ``power_ratio`` of the top-clock power.

        Power rises monotonically with the clock, so bisection finds it; a ratio below the
        lowest clock's power is refused (the static part cannot be clocked away).
        """
        power_ratio = _fraction("power_ratio", power_ratio, 0.0, 1.0)
        p_top = float(self.power_w(1.0, compute, memory))
        lo, hi = self.f_min_ratio, 1.0
        if float(self.power_w(lo, compute, memory)) > power_ratio * p_top:
            floor = float(self.power_w(lo, compute, memory)) / p_top
            raise ParameterError("power_ratio", f"{power_ratio:g} is below the lowest clock's {floor:.3f}")
        for _ in range(80):
            mid = 0.5 * (lo + hi)
            if float(self.power_w(mid, compute, memory)) < power_ratio * p_top:
                lo = mid
            else:
                hi = mid
        return 0.5 * (lo + hi)

    def energy_ratio(self, f, compute: float = 1.0, memory: float = 0.0) -> float:
        """Energy per request at clock ``f`` over the energy at the top clock."""
        return float(self.energy_j(f, compute, memory) / self.energy_j(1.0, compute, memory))

    def sla_downclock(self, deadline: float, compute: float = 1.0, memory: float = 0.0) -> dict:
        """Run as slowly as the deadline allows: clock, power and energy against the top clock.

        Returns a dict with ``clock``, ``power_ratio`` (average power / power at the top
        clock), ``time_ratio`` and ``energy_saving`` (1 - energy / energy at the top clock).
        """
        f = self.slowest_clock_within(deadline, compute, memory)
        p0, p = self.power_w(1.0, compute, memory), self.power_w(f, compute, memory)
        t0, t = self.runtime(1.0, compute, memory), self.runtime(f, compute, memory)
        return {"clock": f, "power_ratio": float(p / p0), "time_ratio": float(t / t0),
                "energy_saving": float(1.0 - (p * t) / (p0 * t0))}


def clock_for_deadline(model: DvfsModel, compute: float, memory: float, deadline: float) -> float:
    """The clock an energy-aware scheduler picks for one request: the slowest that meets
    ``deadline``, but never below the least-energy clock (slower than that, static power
    makes the run cost more energy, not less); the top clock if even it misses the deadline.
    """
    compute, memory = _work(compute, memory)
    if max(compute, memory) > deadline:
        return 1.0
    return max(model.slowest_clock_within(deadline, compute, memory), model.optimal_clock(compute, memory))


def _work(compute, memory) -> tuple[float, float]:
    compute = _fraction("compute", compute, 0.0, 1e12)
    memory = _fraction("memory", memory, 0.0, 1e12)
    if compute == 0.0 and memory == 0.0:
        raise ParameterError("compute", "and memory are both 0: a request needs some work")
    return compute, memory
