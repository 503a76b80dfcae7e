"""System explorer (notebooks 07 and 08): the whole simulator's main knobs on the classroom cluster.

UI only: every number comes from :func:`magnum_lib.widgets.system_model.evaluate`, i.e.
from :func:`magnum_lib.sim.simulate` (0.3 simulated s on 32 nodes per change).

Usage in a notebook::

    from magnum_lib.widgets.system_explorer import system_explorer
    explorer = system_explorer()
    explorer.widget                     # display it

and in a test (no browser)::

    explorer.controls["rtt_us"].value = 1000
    explorer.result["decision_latency_ms"]["p95"]   # the latest simulator summary
"""
from __future__ import annotations

import html
import math

import ipywidgets as widgets
import numpy as np
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from magnum_lib import backend
from magnum_lib.sim.evolution import ARTICLE_FIGURES_MS
from magnum_lib.widgets import style, system_model
from magnum_lib.widgets._base import BUTTON_LAYOUT, SLIDER_STYLE, BlittedExplorer, new_figure, slider

_PARTS = ("round_wait", "scheduling", "rtt", "validation", "retries", "dispatch_wait")
_QS = ("p50", "p95", "p99", "p999")
_WARN = style.color("article")
_FLOOR_MS = 0.01   # the percentile panel's floor (log axis)
_TYPES = ("h100_sxm", "mi300x", "mtia_v2")   # the classroom cluster's device types, in its order

_BELOW = 0.22   # legends sit this far (axes heights) under their panel, below the x label


class SystemExplorer(BlittedExplorer):
    """A preset menu and sliders for load, gossip interval, RTT, schedulers and hedging; three panels.

    Panels: the mean decision latency split into its parts (round wait, scheduling work,
    RTT, validation, retries, dispatch wait); the decision latency's percentiles (p50 to
    p99.9) beside the article's figure for the preset (C39-C43); utilization per device
    type over the run (training and inference). The button re-runs the setting on five more
    seeds (about half a second compiled) and adds the spread of the p95 to the readout.

    Attributes
    ----------
    widget, controls, readout, figure, image
        As for every explorer. Controls: ``"preset"``, ``"load"``, ``"gossip_ms"``,
        ``"rtt_us"``, ``"schedulers"``, ``"hedge"``.
    result : dict or None
        The latest simulator summary (None when the setting is invalid).
    seeds_button, presets_button : ipywidgets.Button
    spread : numpy.ndarray or None
        The p95 over five more seeds after the button was pressed (reset by any change).
    others : dict or None
        ``{preset: (p50, p95, p99, p99.9) ms}`` of every preset at the current setting after
        the presets button was pressed (grey lines in the middle panel; reset by any change).
    """

    css_class = "magnum-system-explorer"

    def __init__(self, seed: int = 0, *, preset: str = "magnum_v2", load: float = 0.8, gossip_ms: float = 1.0,
                 rtt_us: float = 100.0, schedulers: int = 2, hedge: float = 2.0, css_class: str | None = None):
        self.seed = int(seed)
        if css_class:
            self.css_class = css_class
        self.spread = None
        self.others = None
        controls = {
            "preset": widgets.Dropdown(description="preset", options=list(system_model.PRESET_NAMES),
                                       value=preset, style=SLIDER_STYLE),
            "load": slider(widgets.FloatSlider, "load", value=load, min=0.1, max=1.5, step=0.05,
                           readout_format=".2f"),
            "gossip_ms": slider(widgets.FloatSlider, "gossip interval (ms)", value=gossip_ms, min=0.5, max=50.0,
                                step=0.5, readout_format=".1f"),
            "rtt_us": slider(widgets.IntSlider, "RTT (µs)", value=int(rtt_us), min=0, max=5000, step=50),
            "schedulers": slider(widgets.IntSlider, "schedulers", value=schedulers, min=1, max=16),
            "hedge": slider(widgets.FloatSlider, "hedge at x expected (0 off)", value=hedge, min=0.0, max=5.0,
                            step=0.25, readout_format=".2f"),
        }
        super().__init__(controls, new_figure(11.0, 4.4))   # legends under the axes
        self.seeds_button = widgets.Button(description="p95 over 5 more seeds", tooltip="slower: ~5 runs",
                                           layout=widgets.Layout(**BUTTON_LAYOUT))
        self.seeds_button.on_click(self._on_seeds)
        self.presets_button = widgets.Button(description="all presets here", tooltip="slower: 5 runs",
                                             layout=widgets.Layout(**BUTTON_LAYOUT))
        self.presets_button.on_click(self._on_presets)
        self.widget.children = (widgets.HBox([self.widget.children[0].children[0],
                                              widgets.VBox([self.readout, widgets.HBox([self.seeds_button, self.presets_button])])]),
                                self.image)
        self.figure.subplots_adjust(left=0.11, right=0.975, bottom=0.31, top=0.92, wspace=0.4)
        self._ax_budget, self._ax_pct, self._ax_util = self.figure.subplots(1, 3)
        self._axes = (self._ax_budget, self._ax_pct, self._ax_util)
        self._init_artists()
        self.update()

    @property
    def result(self):
        """The latest simulator summary, or None when the setting is invalid."""
        return None if self.scenario is None else self.scenario.result

    def _init_artists(self) -> None:
        ax = self._ax_budget
        # Direct labels: each bar is named by its tick label (no legend needed).
        self._bars = ax.barh(np.arange(len(_PARTS)), np.zeros(len(_PARTS)), color=style.colors(_PARTS),
                             edgecolor=style.color("theory"), linewidth=0.5, animated=True)
        ax.set_yticks(np.arange(len(_PARTS)), [p.replace("_", " ") for p in _PARTS], fontsize=style.SMALL_PT)
        ax.invert_yaxis()
        ax.set_xlabel("mean ms of decision latency", fontsize=style.FONT_PT)
        ax.xaxis.set_major_locator(MaxNLocator(4))
        ax.set_xlim(0, 5)
        ax = self._ax_pct
        (self._pct_line,) = ax.plot(np.arange(4), np.ones(4), "o-", lw=2, color=style.OKABE_ITO["blue"],
                                    animated=True, label="this preset")
        self._article = ax.axhline(3.7, color=style.color("article"), ls="--", lw=1.5, animated=True,
                                   label="article (C39-C43)")
        self._other_lines = [ax.plot(np.arange(4), np.ones(4), "-", lw=1, color=style.color("other"), animated=True,
                                     visible=False)[0] for _ in system_model.PRESET_NAMES]
        ax.set_xticks(np.arange(4), ["p50", "p95", "p99", "p99.9"])
        style.log_axis(ax, [0.01, 0.1, 1, 10, 100, 1000])
        ax.set_ylim(_FLOOR_MS, 5000)
        ax.set_ylabel("decision latency (ms)", fontsize=style.FONT_PT)
        # Under the axes: inside, no corner stays empty (at low load every percentile sits
        # near the floor, at high load near the top). A proxy for the grey lines: they are
        # hidden until the presets button is pressed.
        others = Line2D([], [], lw=1, color=style.color("other"), label="other presets")
        style.legend(ax, handles=[self._pct_line, self._article, others], below=_BELOW, ncol=1,
                     borderpad=0.3, labelspacing=0.25)
        ax = self._ax_util
        self._util_lines = [ax.plot([], [], lw=1.5, color=style.color(t), animated=True, label=t)[0] for t in _TYPES]
        ax.set_ylim(0, 1.05)
        ax.set_xlim(0, system_model.EXPLORER_DURATION_S)
        ax.set_xlabel("simulated time (s)", fontsize=style.FONT_PT)
        ax.set_ylabel("devices busy", fontsize=style.FONT_PT)
        ax.yaxis.set_major_locator(MaxNLocator(3))
        ax.xaxis.set_major_locator(MaxNLocator(3))
        # Under the axes: at low load the lines stay near the bottom.
        style.legend(ax, below=_BELOW, borderpad=0.3, labelspacing=0.25)
        self._titles = [a.set_title("", fontsize=style.FONT_PT) for a in self._axes]
        for t in self._titles:
            t.set_animated(True)
        self._animated = [*self._bars, *self._other_lines, self._pct_line, self._article, *self._util_lines,
                          *self._titles]

    def _on_change(self, _change) -> None:
        self.spread = None
        self.others = None
        self.update()

    def _on_presets(self, _button=None) -> None:
        """Run every preset at the current knobs and draw their percentiles in grey."""
        sc = self.scenario
        if sc is None or not sc.ok:
            return
        self.others = {}
        for p in system_model.PRESET_NAMES:
            o = sc if p == sc.preset else system_model.evaluate(p, sc.load, sc.gossip_interval_ms, sc.rtt_us,
                                                               sc.schedulers, sc.hedge_factor, seed=self.seed)
            self.others[p] = tuple(o.pct(q) for q in _QS)
        self.draw(sc)
        self.readout.value = self.readout_html(sc)
        self.image.value = self._render()

    def _on_seeds(self, _button=None) -> None:
        if self.scenario is None or not self.scenario.ok:
            return
        self.spread = system_model.seed_spread(self.scenario, seeds=range(self.seed + 1, self.seed + 6))
        self.readout.value = self.readout_html(self.scenario)

    def evaluate(self) -> system_model.SystemScenario:
        c = self.controls
        return system_model.evaluate(c["preset"].value, c["load"].value, c["gossip_ms"].value, c["rtt_us"].value,
                                     c["schedulers"].value, c["hedge"].value, seed=self.seed)

    def readout_html(self, sc: system_model.SystemScenario) -> str:
        return readout_html(sc, self.spread, self.others)

    def draw(self, sc: system_model.SystemScenario) -> None:
        for a in self._animated:
            a.set_visible(sc.ok)
        for t in self._titles:
            t.set_visible(True)
        if not sc.ok:
            self._titles[0].set_text("invalid setting (see the readout)")
            self._titles[1].set_text("")
            self._titles[2].set_text("")
            return
        r = sc.result
        parts = system_model.budget(r)
        means = np.array([parts[p]["mean"] or 0.0 for p in _PARTS])
        for bar, v in zip(self._bars, means, strict=True):
            bar.set_width(v)
        total = parts["total"]["mean"] or 0.0
        self._ax_budget.set_xlim(0, _nice(max(means.max(), 1e-3) * 1.15))
        self._titles[0].set_text(f"mean latency {total:.2f} ms")
        ms = np.array([sc.pct(q) for q in _QS])
        self._pct_line.set_data(np.arange(4), np.where(np.isfinite(ms), np.maximum(ms, _FLOOR_MS), np.nan))
        art = ARTICLE_FIGURES_MS.get(sc.preset, 3.7)
        self._article.set_ydata([art, art])
        for line, p in zip(self._other_lines, system_model.PRESET_NAMES, strict=True):
            ms_p = None if self.others is None or p == sc.preset else self.others.get(p)
            line.set_visible(ms_p is not None)
            if ms_p is not None:
                line.set_ydata(np.maximum(np.asarray(ms_p, dtype=float), _FLOOR_MS))
        self._titles[1].set_text(f"{sc.preset}: p95 {sc.pct('p95'):.3g} ms")
        series = r["utilization_series"]
        for line, k in zip(self._util_lines, _TYPES, strict=True):
            line.set_visible(k in series)
            if k in series:
                line.set_data(series["t_s"], series[k])
        mean_u = np.mean([v for v in r["utilization_with_training"].values() if v is not None])
        self._titles[2].set_text(f"busy devices, mean {mean_u:.0%}")


def _nice(x: float) -> float:
    """An axis limit >= x from a few decades (5, 50, 500 ... ms): the blitted background
    is redrawn (~150 ms) only when the limit changes, so it must change rarely."""
    lim = 5.0
    while lim < x:
        lim *= 10
    return lim


def _fmt(v, unit: str = "", digits: int = 2) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "n/a"
    return f"{v:.{digits}f}{unit}"


def readout_html(sc: system_model.SystemScenario, spread=None, others=None) -> str:
    """The readout as HTML: the setting, decision latency, leases, SLA, hedges."""
    head = (f"<b>{html.escape(sc.preset)}</b>, load {sc.load:.2f}, gossip {sc.gossip_interval_ms:g} ms, "
            f"RTT {sc.rtt_us:g} µs, {sc.schedulers} schedulers, hedge {sc.hedge_factor:g} "
            f"&nbsp; <i>({html.escape(backend())} backend)</i>")
    if not sc.ok:
        return (f"<div class='magnum-readout'>{head}<br><b style='color:{_WARN}'>invalid: "
                f"{html.escape(sc.message)}</b></div>")
    r = sc.result
    lat = ", ".join(f"{q} {_fmt(sc.pct(q), ' ms')}" for q in _QS)
    lat += f" (article's figure for {html.escape(sc.preset)}: {ARTICLE_FIGURES_MS.get(sc.preset, 3.7):g} ms)"
    req = r["requests"]
    sla = ", ".join(f"{k} {v:.0%}" for k, v in r["sla_attainment"].items() if v is not None)
    started = ("" if sc.started_fraction > 0.99 else
               f"<br><b style='color:{_WARN}'>only {sc.started_fraction:.0%} of requests started: "
               "percentiles are over those, and grow with the run</b>")
    extra = ""
    if spread is not None:
        extra = (f"<br>p95 over seeds {', '.join(_fmt(v, digits=2) for v in spread)} ms: "
                 f"mean {_fmt(float(np.nanmean(spread)), ' ms')}, sd {_fmt(float(np.nanstd(spread)), ' ms')}")
    if others:
        extra += "<br>p95 of every preset here (grey lines): " + ", ".join(
            f"{html.escape(p)} {_fmt(v[1], ' ms')}" for p, v in others.items())
    return (f"<div class='magnum-readout'>{head}<br>"
            f"decision latency: {lat}<br>"
            f"requests {req['total']:,} ({req['done']:,} done, {req['in_flight']:,} in flight, "
            f"{req['dropped']:,} dropped); lease failure rate {r['lease_failure_rate']:.2%} of "
            f"{r['leases']['issued']:,} leases<br>"
            f"SLA met: {sla}<br>hedges {r['hedges']['issued']:,}, micro-preemptions "
            f"{r['preemptions']['micro']:,}, checkpoint preemptions {r['preemptions']['checkpoint']:,}; "
            f"energy {r['energy_per_request_j']:.1f} J/request{started}{extra}</div>")


def system_explorer(seed: int = 0, **initial) -> SystemExplorer:
    """Build the system explorer; display ``.widget``.

    Parameters
    ----------
    seed : int
        Simulation seed; the same setting always gives the same run.
    **initial
        Optional starting values: ``preset``, ``load``, ``gossip_ms``, ``rtt_us``,
        ``schedulers``, ``hedge``; and ``css_class`` (notebook 08 uses
        ``"magnum-evolution-explorer"``).
    """
    return SystemExplorer(seed=seed, **initial)


# (control, value) changes that benchmarks/bench_widgets.py replays.
BENCH_STEPS = [("load", 1.0), ("rtt_us", 1000), ("gossip_ms", 10.0), ("schedulers", 8), ("hedge", 0.0),
               ("preset", "magnum_v1"), ("preset", "cheetah"), ("preset", "magnum_v2"), ("load", 0.8),
               ("rtt_us", 100), ("gossip_ms", 1.0), ("schedulers", 2), ("hedge", 2.0)]
