"""Bouncer explorer (notebook 04): load balancing, hedging and device choice on one node.

UI only: every number comes from :func:`magnum_lib.widgets.bouncer_model.evaluate`.

Usage in a notebook::

    from magnum_lib.widgets.bouncer_explorer import bouncer_explorer
    explorer = bouncer_explorer()
    explorer.widget                     # display it

and in a test (no browser)::

    explorer.controls["choices"].value = 1
    explorer.scenario.mean_ms            # ms, the latest BouncerScenario
"""
from __future__ import annotations

import html
import math

import ipywidgets as widgets
import numpy as np
from matplotlib.ticker import FixedLocator, MaxNLocator, NullLocator

from magnum_lib import backend
from magnum_lib.node.balance_ref import TAIL_LEVELS
from magnum_lib.widgets import bouncer_model, style
from magnum_lib.widgets._base import (
    SLIDER_LAYOUT,
    SLIDER_STYLE,
    BlittedExplorer,
    new_figure,
    pure_python,
    size_note,
    slider,
)

JOBS = 100_000
PURE_PYTHON_JOBS = 20_000
"""Requests per supermarket run on the pure-Python backend: 100,000 cost about 1 s of CPU
there (a few ms compiled), and each slider change must answer in 0.3 s."""


def pure_python_note() -> str:
    """What the explorer says on screen about its size on the pure-Python backend ('' compiled)."""
    return size_note("requests per run", PURE_PYTHON_JOBS, JOBS) if pure_python() else ""


_DECADES = [1.0, 1e-2, 1e-4]
_TAIL_FLOOR = 1e-5   # the queue-tail panel's lowest fraction
_CDF_XMAX_MS = 25.0


def _plain_log_axis(ax) -> None:
    """Log y axis with fixed decade ticks in plain text: mathtext tick labels and minor
    ticks made each render several times slower."""
    ax.yaxis.set_major_locator(FixedLocator(_DECADES))
    ax.yaxis.set_major_formatter(lambda v, _pos: style.decade_label(v))
    ax.yaxis.set_minor_locator(NullLocator())


def _few_ticks(ax) -> None:
    """At most 4 x ticks: every tick label is a text render on each change."""
    ax.xaxis.set_major_locator(MaxNLocator(4))


_BELOW = 0.2   # legends sit this far (axes heights) under each panel, below the x label
_POLICY_STYLE = {"cheapest_meeting_sla": (style.color("cheapest_meeting_sla"), "o"),
                 "fastest_first": (style.color("fastest_first"), "s"), "random": (style.color("random"), "^")}


class BouncerExplorer(BlittedExplorer):
    """Sliders for load, d, hedge delay, SLA and the device mix; three panels, one figure.

    Panels: the latency CDF's tail ``P(latency > t)`` without and with hedging (the M/M/1
    line is d = 1); the queue-length tail beside Mitzenmacher's closed form; energy per
    request against SLA attainment for the three built-in placement policies.

    Attributes
    ----------
    widget, controls, readout, figure, image
        As for every explorer. Controls: ``"load"``, ``"choices"`` (d), ``"hedge_ms"``,
        ``"sla_ms"``, ``"mix"`` (a key of :data:`bouncer_model.MIXES`).
    scenario : bouncer_model.BouncerScenario
        The latest evaluated setting.
    result : magnum_lib.node.balance.SupermarketResult
        The latest supermarket run.
    """

    css_class = "magnum-bouncer-explorer"

    def __init__(self, *, servers: int = 300, jobs: int | None = None, requests: int = 200, seed: int = 0,
                 load: float = 0.9, choices: int = 2, hedge_ms: float = 5.0, sla_ms: float = 20.0,
                 mix: str = bouncer_model.DEFAULT_MIX):
        if jobs is None:   # the default size: smaller on the pure-Python backend (the readout says so)
            jobs = PURE_PYTHON_JOBS if pure_python() else JOBS
        self.sizes = {"servers": int(servers), "jobs": int(jobs), "requests": int(requests), "seed": int(seed)}
        # continuous_update=False (slider()): one evaluation per release, not per pixel dragged.
        controls = {
            "load": slider(widgets.FloatSlider, "load", value=load, min=0.1, max=0.98, step=0.02,
                           readout_format=".2f"),
            "choices": slider(widgets.IntSlider, "choices d", value=choices, min=1, max=6),
            "hedge_ms": slider(widgets.FloatSlider, "hedge delay (ms)", value=hedge_ms, min=0.0, max=20.0,
                               step=0.5, readout_format=".1f"),
            "sla_ms": slider(widgets.FloatSlider, "SLA (ms)", value=sla_ms, min=1.0, max=50.0, step=1.0,
                             readout_format=".0f"),
            "mix": widgets.Dropdown(options=list(bouncer_model.MIXES), value=mix, description="device mix",
                                    style=SLIDER_STYLE, layout=widgets.Layout(**SLIDER_LAYOUT)),
        }
        fig = new_figure(12.5, 4.9)   # legends under the axes: the curves fill every corner
        fig.subplots_adjust(left=0.07, right=0.98, bottom=0.3, top=0.9, wspace=0.32)
        super().__init__(controls, fig)
        self._axes = fig.subplots(1, 3)
        self._init_artists()
        self.update()

    @property
    def result(self):
        """The latest SupermarketResult."""
        return None if self.scenario is None else self.scenario.market

    def _init_artists(self) -> None:
        ax_cdf, ax_tail, ax_energy = self._axes
        (self._plain,) = ax_cdf.plot([], [], color=style.color("two-choices"), lw=2, label="power of d")
        (self._hedged,) = ax_cdf.plot([], [], color=style.OKABE_ITO["sky"], lw=2.5, ls="--", label="+ hedge")
        (self._mm1,) = ax_cdf.plot([], [], color=style.color("random"), lw=1.5, ls=":", label="random (theory)")
        self._hedge_line = ax_cdf.axvline(0.0, color=style.OKABE_ITO["sky"], lw=1.5, alpha=0.8, label="hedge delay")
        self._hedge_text = ax_cdf.text(0.5, 0.5, bouncer_model.HEDGE_ALL_MESSAGE, transform=ax_cdf.transAxes,
                                       ha="center", va="center", color=style.color("article"), fontsize=style.SMALL_PT,
                                       visible=False, bbox={"facecolor": "white", "edgecolor": style.color("article")})
        ax_cdf.set(yscale="log", xlabel="latency (ms)", ylabel="P(latency > t)", title="latency CDF (tail)")
        _plain_log_axis(ax_cdf)
        _few_ticks(ax_cdf)
        style.legend(ax_cdf, below=_BELOW)

        levels = np.arange(1, TAIL_LEVELS + 1)
        (self._tail_sim,) = ax_tail.plot(levels, np.ones(TAIL_LEVELS), "o", color=style.color("two-choices"), label="simulated")
        (self._tail_theory,) = ax_tail.plot(levels, np.ones(TAIL_LEVELS), "-", color=style.color("theory"),
                                            label="theory (Mitzenmacher)")
        (self._tail_random,) = ax_tail.plot(levels, np.ones(TAIL_LEVELS), ":", color=style.color("random"), label="d = 1: load^i")
        ax_tail.set(yscale="log", xlabel="i (requests queued)", ylabel="servers with ≥ i",
                    title="queue-length tail", ylim=(_TAIL_FLOOR, 1.5), xticks=[1, 4, 7, 10])
        _plain_log_axis(ax_tail)
        style.legend(ax_tail, below=_BELOW)

        self._points = {}
        for name, (color, marker) in _POLICY_STYLE.items():
            (self._points[name],) = ax_energy.plot([], [], marker, color=color, ms=9, label=name.replace("_", " "))
        self._sla_text = ax_energy.text(0.5, 0.5, bouncer_model.NO_SLA_MESSAGE, transform=ax_energy.transAxes,
                                        ha="center", va="center", color=style.color("article"), fontsize=style.SMALL_PT,
                                        visible=False, bbox={"facecolor": "white", "edgecolor": style.color("article")})
        ax_energy.set(xlabel="SLA attainment", ylabel="energy per request (J)", xlim=(-0.02, 1.05),
                      title="device choice")
        _few_ticks(ax_energy)
        ax_energy.yaxis.set_major_locator(MaxNLocator(4))
        style.legend(ax_energy, below=_BELOW)
        self._animated = [self._plain, self._hedged, self._mm1, self._hedge_line, self._hedge_text,
                          self._tail_sim, self._tail_theory, self._tail_random, *self._points.values(),
                          self._sla_text, *(ax.title for ax in self._axes)]
        for artist in self._animated:
            artist.set_animated(True)

    def evaluate(self) -> bouncer_model.BouncerScenario:
        c = self.controls
        return bouncer_model.evaluate(c["load"].value, c["choices"].value, c["hedge_ms"].value,
                                      c["sla_ms"].value, c["mix"].value, **self.sizes)

    def readout_html(self, sc: bouncer_model.BouncerScenario) -> str:
        return readout_html(sc)

    def draw(self, sc: bouncer_model.BouncerScenario) -> None:
        ax_cdf, ax_tail, ax_energy = self._axes
        t, tail = bouncer_model.ccdf_points(sc.latency_ms)
        th, tail_h = bouncer_model.ccdf_points(sc.hedged_ms)
        self._plain.set_data(t, tail)
        self._hedged.set_data(th, tail_h)
        # A fixed range (a d = 1 tail runs off it, which is the point) so that most
        # changes reuse the cached background.
        xmax = _CDF_XMAX_MS
        xs = np.linspace(0.0, xmax, 100)
        rate = (1.0 - sc.load) / bouncer_model.SERVICE_MS  # M/M/1 time in system ~ Exp(mu - lambda)
        self._mm1.set_data(xs, np.exp(-rate * xs))
        self._hedge_line.set_xdata([sc.hedge_ms, sc.hedge_ms])
        self._hedge_text.set_visible(sc.hedge_ms == 0)
        ax_cdf.set_xlim(0.0, xmax)
        ax_cdf.set_ylim(1e-5, 1.5)
        ax_cdf.set_title(f"latency: p99 {sc.p99_ms:.2f} → {sc.p99_hedged_ms:.2f} ms hedged", fontsize=style.FONT_PT)

        sim = np.asarray(sc.queue_tail, dtype=float)
        # A level below the axis floor (never reached, or for under 1e-5 of the time: a
        # smaller run, as on the pure-Python backend) gets no point, rather than one off the axes.
        self._tail_sim.set_ydata(np.where(sim >= _TAIL_FLOOR, sim, np.nan))
        self._tail_theory.set_ydata(np.maximum(np.asarray(sc.theory_tail), 1e-6))
        self._tail_random.set_ydata([sc.load ** i for i in range(1, TAIL_LEVELS + 1)])
        ax_tail.set_title(f"queue tail: load {sc.load:.2f}, d = {sc.choices}", fontsize=style.FONT_PT)

        energies = []
        for name, artist in self._points.items():
            p = sc.placements[name]
            artist.set_data([p.sla_attainment], [p.energy_per_request_j])
            energies.append(p.energy_per_request_j)
        ax_energy.set_ylim(0.0, 0.5 * math.ceil(2.5 * max(energies)))
        self._sla_text.set_visible(not sc.sla_feasible)
        ax_energy.set_title(f"{sc.mix}, SLA {sc.sla_ms:g} ms", fontsize=style.FONT_PT)


def _row(name: str, *cells) -> str:
    return f"<tr><td>{name}</td>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def readout_html(sc: bouncer_model.BouncerScenario) -> str:
    """The readout: simulated beside theory, hedging's price, the placement table."""
    head = (f"<b>load</b> {sc.load:.2f}, <b>d</b> = {sc.choices}, {sc.market.servers} servers "
            f"&nbsp; <i>({html.escape(backend())} backend)</i>")
    if pure_python_note() and sc.market.jobs < JOBS:
        head += f"<br><small>{html.escape(pure_python_note())}</small>"
    balance_rows = (_row("mean time in system (ms)", f"{sc.mean_ms:.2f}", f"{sc.theory_mean_ms:.2f}")
                    + _row("servers with ≥ 2 queued", f"{sc.queue_tail[1]:.3f}", f"{sc.theory_tail[1]:.3f}")
                    + _row("random (d = 1) mean (ms)", "", f"{sc.random_mean_ms:.2f}"))
    hedge = (f"hedge after {sc.hedge_ms:g} ms: <b>+{sc.extra_load:.1%}</b> load, "
             f"p99 {sc.p99_ms:.2f} → {sc.p99_hedged_ms:.2f} ms")
    if sc.hedge_ms == 0:
        hedge += f"<br><b style='color:crimson'>{html.escape(bouncer_model.HEDGE_ALL_MESSAGE)}</b>"
    rows = "".join(_row(name.replace("_", " "), f"{p.sla_attainment:.1%}", f"{p.energy_per_request_j:.2f}",
                        f"{p.latency_p99_s * 1e3:.1f}") for name, p in sc.placements.items())
    sla = "" if sc.sla_feasible else f"<br><b style='color:crimson'>{html.escape(bouncer_model.NO_SLA_MESSAGE)}</b>"
    return (f"<div class='magnum-readout'>{head}"
            f"<table cellpadding=2><tr><th></th><th>simulated</th><th>theory</th></tr>{balance_rows}</table>"
            f"{hedge}<br><b>{html.escape(sc.mix)}</b>, SLA {sc.sla_ms:g} ms, best: "
            f"{sc.best_policy.replace('_', ' ')}"
            f"<table cellpadding=2><tr><th>policy</th><th>SLA met</th><th>J/request</th><th>p99 ms</th></tr>"
            f"{rows}</table>{sla}</div>")


def bouncer_explorer(**kwargs) -> BouncerExplorer:
    """Build the notebook-04 explorer; display ``.widget``.

    Keyword arguments: sizes ``servers`` (300), ``jobs`` (100,000; 20,000 on the pure-Python
    backend, which says so on screen), ``requests`` (200) and
    ``seed``, kept small so a change answers in well under 150 ms; starting values ``load``,
    ``choices``, ``hedge_ms``, ``sla_ms``, ``mix``.
    """
    return BouncerExplorer(**kwargs)


# (control, value) changes that benchmarks/bench_widgets.py replays.
BENCH_STEPS = [("choices", 1), ("load", 0.8), ("hedge_ms", 2.0), ("sla_ms", 10.0), ("mix", "4 H100"),
               ("choices", 2), ("load", 0.9), ("hedge_ms", 5.0), ("sla_ms", 20.0),
               ("mix", bouncer_model.DEFAULT_MIX)]
