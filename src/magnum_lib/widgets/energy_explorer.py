"""Energy explorer (notebook 09): what downclocking by SLA slack saves (claim C46).

UI only: every number comes from :func:`magnum_lib.widgets.energy_model.evaluate`.

    explorer = energy_explorer()
    explorer.widget                          # display it
    explorer.controls["slack"].value = 2.0   # in a test
    explorer.scenario.sla_energy_saving
"""
from __future__ import annotations

import ipywidgets as widgets

from magnum_lib.energy import C46_POWER, C46_SAVING
from magnum_lib.widgets import energy_model, style
from magnum_lib.widgets._base import BlittedExplorer, new_figure, slider

_POWER, _TIME, _ENERGY, _MARK = style.colors(("power", "time", "energy", "sla-clock"))


class EnergyExplorer(BlittedExplorer):
    """Sliders: compute / memory time, static power share, SLA slack; one panel of
    power, time and energy against the clock, with the SLA's clock and the optimum."""

    css_class = "magnum-energy-explorer"

    def __init__(self, compute_ratio: float = 4.0, static_fraction: float = 0.3, slack: float = 2.0):
        controls = {
            # log scale: 1/4 (memory-bound) .. 4 (compute-bound), 1 = the roofline's ridge
            "compute_ratio": slider(widgets.FloatLogSlider, "compute / memory time", value=compute_ratio,
                                    base=2, min=-2, max=2, step=0.125, readout_format=".2f"),
            "static_fraction": slider(widgets.FloatSlider, "static power share", value=static_fraction,
                                      min=0.0, max=0.8, step=0.025, readout_format=".3f"),
            "slack": slider(widgets.FloatSlider, "SLA slack (x run time)", value=slack,
                            min=1.0, max=3.0, step=0.1, readout_format=".1f"),
        }
        super().__init__(controls, new_figure(7.5, 4.8))
        ax = self._ax = self.figure.add_subplot()
        self.figure.subplots_adjust(left=0.1, right=0.97, bottom=0.33, top=0.9)
        (self._power,) = ax.plot([], [], color=_POWER, lw=2.5, label="power")
        (self._time,) = ax.plot([], [], color=_TIME, lw=2.5, ls="--", label="run time")
        (self._energy,) = ax.plot([], [], color=_ENERGY, lw=3, label="energy = power x time")
        self._sla = ax.axvline(1.0, color=_MARK, lw=2, ls=":", label="slowest clock meeting the SLA")
        ax.axhline(1.0 - C46_SAVING, color=style.color("article"), lw=1.5, ls="-.", label="C46: 40% saved")
        ax.set_xlabel("clock (fraction of the top clock)", fontsize=style.FONT_PT)
        ax.set_ylabel("ratio to the top clock", fontsize=style.FONT_PT)
        ax.tick_params(labelsize=style.SMALL_PT)
        ax.set_xlim(0.45, 1.02)
        ax.set_ylim(0.0, 3.1)
        # Under the axes: the SLA's clock line sweeps the whole width (up to the top clock, 1.0).
        style.legend(ax, below=0.2, framealpha=0.95)
        # Fixed axes: only the curves, the SLA line and the title change (blitted).
        self._title = ax.text(0.5, 1.02, "", transform=ax.transAxes, ha="center", va="bottom",
                              fontsize=style.FONT_PT + 1)
        self._axes = [ax]
        self._animated = [self._power, self._time, self._energy, self._sla, self._title]
        for artist in self._animated:
            artist.set_animated(True)
        self.update()

    def evaluate(self) -> energy_model.EnergyScenario:
        c = self.controls
        return energy_model.evaluate(c["compute_ratio"].value, c["static_fraction"].value, c["slack"].value)

    def draw(self, sc: energy_model.EnergyScenario) -> None:
        self._power.set_data(sc.clocks, sc.power_ratio)
        self._time.set_data(sc.clocks, sc.time_ratio)
        self._energy.set_data(sc.clocks, sc.energy_ratio)
        self._sla.set_xdata([sc.sla_clock, sc.sla_clock])
        self._title.set_text(f"at the SLA's clock: {sc.sla_power_ratio:.0%} power, "
                           f"{sc.sla_energy_saving:.0%} energy saved")

    def readout_html(self, sc: energy_model.EnergyScenario) -> str:
        return ("<div class='magnum-readout' style='font-size:13px'>"
                f"<b>slowest clock meeting the SLA</b>: {sc.sla_clock:.2f}<br>"
                f"power there: {sc.sla_power_ratio:.0%} of top-clock power<br>"
                f"energy saved: <b>{sc.sla_energy_saving:.1%}</b> "
                f"(article, C46: {C46_POWER:.0%} power, {C46_SAVING:.0%} saved)<br>"
                f"least-energy clock: {sc.optimal_clock:.2f}, saving {sc.optimal_energy_saving:.1%}</div>")


def energy_explorer(**initial) -> EnergyExplorer:
    """Build the notebook-09 explorer; display ``.widget``. Optional starting values:
    ``compute_ratio``, ``static_fraction``, ``slack``."""
    return EnergyExplorer(**initial)


# (control, value) changes that benchmarks/bench_widgets.py replays.
BENCH_STEPS = [("slack", 1.5), ("compute_ratio", 0.5), ("static_fraction", 0.2), ("slack", 2.0),
               ("compute_ratio", 4.0), ("static_fraction", 0.3)]
