"""Whole-system explorer (notebook 07): the main knobs of the simulator on the classroom cluster.

UI only: every number comes from :func:`magnum_lib.widgets.system_model.evaluate`.

    explorer = system_explorer()
    explorer.widget                          # display it
    explorer.controls["load"].value = 0.5    # in a test: drive it without a browser
    explorer.result["decision_latency_ms"]   # the latest summary
"""
from __future__ import annotations

import html

import ipywidgets as widgets
import numpy as np

from magnum_lib.sim.results import COMPONENTS
from magnum_lib.widgets import system_model
from magnum_lib.widgets._base import BlittedExplorer, new_figure, slider


class SystemExplorer(BlittedExplorer):
    """Controls: preset, load, schedulers, round (ms), RTT (us), gossip loss. Two panels:
    the decision-latency CDF (log time axis) and the share of each part of decision latency
    (fixed axes, so each change redraws only the line, the bars and the titles: blitted)."""

    css_class = "magnum-system-explorer"

    def __init__(self, seed: int = 0, *, preset: str = "magnum_v2", load: float = 0.8, schedulers: int = 2,
                 round_ms: float = 3.7, rtt_us: float = 100.0, gossip_loss: float = 0.01):
        self.seed = int(seed)
        controls = {
            "preset": widgets.Dropdown(description="preset", options=list(system_model.PRESETS), value=preset,
                                       style={"description_width": "150px"}),
            "load": slider(widgets.FloatSlider, "load", value=load, min=0.1, max=1.2, step=0.05,
                           readout_format=".2f"),
            "schedulers": slider(widgets.IntSlider, "schedulers", value=schedulers, min=1, max=16),
            "round_ms": slider(widgets.FloatSlider, "round (ms)", value=round_ms, min=0.1, max=20.0, step=0.1,
                               readout_format=".1f"),
            "rtt_us": slider(widgets.FloatSlider, "RTT (us)", value=rtt_us, min=0.0, max=5000.0, step=50.0,
                             readout_format=".0f"),
            "gossip_loss": slider(widgets.FloatSlider, "gossip loss", value=gossip_loss, min=0.0, max=0.9,
                                  step=0.05, readout_format=".2f"),
        }
        super().__init__(controls, new_figure(10.0, 3.2))
        self.figure.subplots_adjust(left=0.07, right=0.98, bottom=0.17, top=0.88, wspace=0.45)
        self._ax_cdf = self.figure.add_subplot(1, 2, 1)
        self._ax_bar = self.figure.add_subplot(1, 2, 2)
        (self._cdf,) = self._ax_cdf.plot([], [], color="tab:blue", animated=True)
        self._ax_cdf.axvline(3.7, color="crimson", ls="--", lw=1, label="article: 3.7 ms (C43)")
        self._ax_cdf.set_xscale("log")
        self._ax_cdf.set_xlim(0.01, 10_000)
        self._ax_cdf.set_ylim(0, 1)
        self._ax_cdf.set_xlabel("decision latency (ms)")
        self._ax_cdf.set_ylabel("fraction of requests")
        self._ax_cdf.legend(loc="lower right", fontsize=8)
        self._bars = list(self._ax_bar.barh(range(len(COMPONENTS)), np.zeros(len(COMPONENTS)), color="tab:orange",
                                            animated=True))
        self._ax_bar.set_yticks(range(len(COMPONENTS)), [c.replace("_", " ") for c in COMPONENTS], fontsize=8)
        self._ax_bar.set_xlim(0, 1)
        self._ax_bar.set_xlabel("share of the mean decision latency")
        self._t_cdf = self._ax_cdf.text(0.5, 1.03, "", transform=self._ax_cdf.transAxes, ha="center",
                                        fontsize=9, animated=True)
        self._t_bar = self._ax_bar.text(0.5, 1.03, "", transform=self._ax_bar.transAxes, ha="center",
                                        fontsize=9, animated=True)
        self._axes = (self._ax_cdf, self._ax_bar)
        self._animated = [self._cdf, *self._bars, self._t_cdf, self._t_bar]
        self.update()

    @property
    def result(self):
        """The latest summary dict, or None when the setting is invalid."""
        return None if self.scenario is None else self.scenario.summary

    def evaluate(self):
        c = self.controls
        return system_model.evaluate(c["preset"].value, load=c["load"].value, schedulers=c["schedulers"].value,
                                     round_ms=c["round_ms"].value, rtt_us=c["rtt_us"].value,
                                     gossip_loss=c["gossip_loss"].value, seed=self.seed)

    def draw(self, sc) -> None:
        lat = sc.latency_ms
        if sc.summary is None or lat.size == 0:
            self._cdf.set_data([], [])
            for b in self._bars:
                b.set_width(0)
            return
        self._cdf.set_data(np.maximum(lat, 0.01), np.arange(1, lat.size + 1) / lat.size)
        means = [sc.summary["decision_latency_ms"]["breakdown"][k]["mean"] or 0.0 for k in COMPONENTS]
        total = sum(means) or 1.0
        for b, m in zip(self._bars, means):
            b.set_width(m / total)
        self._t_cdf.set_text(f"{sc.preset}: decision latency CDF")
        self._t_bar.set_text(f"where the time goes (mean {total:.2f} ms)")

    def readout_html(self, sc) -> str:
        if sc.summary is None:
            return f"<div class='magnum-readout'><b>invalid setting</b>: {html.escape(sc.error or '')}</div>"
        s = sc.summary
        d = s["decision_latency_ms"]
        sla = ", ".join(f"{k} {v:.2f}" for k, v in s["sla_attainment"].items() if v is not None)
        return (f"<div class='magnum-readout'><b>{html.escape(sc.preset)}</b>, {s['requests']['total']:,} requests in "
                f"{s['sim_s']:g} s ({s['rate_per_region']:,.0f}/s)<br>"
                f"decision latency p50 {d['p50']:.2f} ms, p95 {d['p95']:.2f} ms, p99 {d['p99']:.2f} ms<br>"
                f"lease failure rate {s['lease_failure_rate']:.4f}; preemptions: micro "
                f"{s['preemptions']['micro']}, checkpoint {s['preemptions']['checkpoint']}<br>"
                f"SLA attainment: {sla}</div>")


def system_explorer(seed: int = 0, **kwargs) -> SystemExplorer:
    """Build the whole-system explorer (see :class:`SystemExplorer`)."""
    return SystemExplorer(seed=seed, **kwargs)
