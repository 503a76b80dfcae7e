"""Packing explorer (notebook 06): how busy does time-division packing keep one accelerator?

UI only: every number comes from :func:`magnum_lib.widgets.packing_model.evaluate`.

Usage in a notebook::

    from magnum_lib.widgets.packing_explorer import packing_explorer
    explorer = packing_explorer()
    explorer.widget                     # display it

and in a test (no browser)::

    explorer.controls["mean_gb"].value = 40.0
    explorer.result.utilization         # the packed schedule's utilization
"""
from __future__ import annotations

import html

import ipywidgets as widgets
import numpy as np
from matplotlib.collections import PolyCollection
from matplotlib.ticker import MaxNLocator

from magnum_lib import backend
from magnum_lib.graph.packing import POLICIES
from magnum_lib.widgets import packing_model, style
from magnum_lib.widgets._base import SLIDER_LAYOUT, SLIDER_STYLE, Explorer, canvas_png, new_figure, slider

_COLORS = {p: style.color(p) for p in POLICIES}
_BATCH_X = 1.75  # where the batch (all jobs at t = 0) sits on the load axis
_LOAD_OPTIONS = [(f"{x:g}", x) for x in (0.3, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0, 1.1, 1.2, 1.5)] \
    + [("batch", "batch")]
_JOB_COLORS = np.array(style.categorical(5))  # one per job, cycling (no house colour for jobs)


def _rects(x0, x1, rows, height):
    """Rectangles (PolyCollection vertices) from x0 to x1 centred on ``rows``."""
    x0, x1, y = np.asarray(x0, float), np.asarray(x1, float), np.asarray(rows, float)
    lo, hi = y - height / 2, y + height / 2
    return np.stack([np.column_stack(p) for p in ((x0, lo), (x0, hi), (x1, hi), (x1, lo))], axis=1)


class PackingExplorer(Explorer):
    """Sliders for jobs, runtime spread, memory pressure and load; device and policy pickers.

    Attributes
    ----------
    widget : ipywidgets.VBox
        The top-level box to display.
    controls : dict[str, ipywidgets.ValueWidget]
        ``"jobs"``, ``"runtime_spread"`` (lognormal sigma), ``"mean_gb"`` (GB reserved
        per job on average), ``"load"`` (offered load, or ``"batch"``: all at t = 0), ``"device"``
        (catalog key, see ``packing_model.DEVICES``), ``"policy"`` (whose Gantt is drawn).
    result : PackResult
        The drawn policy's schedule.
    scenario : packing_model.PackingScenario
        All three policies, the closed form and the utilization-against-load curve.
    figure : matplotlib.figure.Figure
        Gantt chart (left) and utilization against load (right), redrawn in place.
    """

    css_class = "magnum-packing-explorer"
    _background = None

    def __init__(self, seed: int = 0, *, jobs: int = 12, runtime_spread: float = 0.5, mean_gb: float = 8.0,
                 load="batch", device: str = "mtia_v2", policy: str = "packed",
                 curve_jobs: int = packing_model.CURVE_JOBS):
        self.seed = int(seed)
        self.curve_jobs = int(curve_jobs)
        controls = {
            "jobs": slider(widgets.IntSlider, "jobs", value=jobs, min=2, max=40),
            "runtime_spread": slider(widgets.FloatSlider, "layer runtime spread σ", value=runtime_spread,
                                     min=0.0, max=2.0, step=0.1, readout_format=".1f"),
            "mean_gb": slider(widgets.FloatSlider, "memory per job (GB)", value=mean_gb, min=1.0,
                              max=64.0, step=1.0, readout_format=".0f"),
            "load": slider(widgets.SelectionSlider, "offered load", options=_LOAD_OPTIONS, value=load),
            "device": widgets.Dropdown(options=list(packing_model.DEVICES), value=device, description="device",
                                       style=SLIDER_STYLE, layout=widgets.Layout(**SLIDER_LAYOUT)),
            "policy": widgets.ToggleButtons(options=list(POLICIES), value=policy, description="Gantt of",
                                            style={**SLIDER_STYLE, "button_width": "90px"}),
        }
        fig = new_figure(8.6, 3.9)  # every pixel and tick label costs render time
        fig.subplots_adjust(left=0.075, right=0.985, bottom=0.25, top=0.91, wspace=0.3)
        grid = fig.add_gridspec(1, 5)
        self._ax_gantt = fig.add_subplot(grid[0, :3])
        self._ax_load = fig.add_subplot(grid[0, 3:])
        super().__init__(controls, fig)
        self._init_artists()
        self.update()

    @property
    def result(self):
        """The drawn policy's PackResult."""
        return self.scenario.results[self.controls["policy"].value]

    def _init_artists(self) -> None:
        ax = self._ax_gantt
        self._layers = PolyCollection([], edgecolor="white", linewidth=0.3)
        self._xfers = PolyCollection([], facecolor=style.color("transfer"), edgecolor="none", label="transfer")
        self._idle = PolyCollection([], facecolor=style.color("idle"), edgecolor="none", label="device idle")
        for coll in (self._xfers, self._layers, self._idle):
            ax.add_collection(coll)
        (self._arrivals,) = ax.plot([], [], "|", color=style.color("arrival"), ms=7, mew=1.2, label="arrival")
        # Short labels: every glyph is rendered on every change. Bars: layers (one colour per
        # job); the legend, below the axes (off the data), names the rest.
        ax.set_xlabel("time (ms)", fontsize=style.FONT_PT)
        ax.set_ylabel("job", fontsize=style.FONT_PT)
        ax.xaxis.set_major_locator(MaxNLocator(5))
        style.legend(ax, handles=[self._xfers, self._idle, self._arrivals], loc="upper center",
                     bbox_to_anchor=(0.5, -0.2), ncol=3, borderaxespad=0.0)
        self._note = ax.text(0.5, 0.5, "", transform=ax.transAxes, ha="center", va="center",
                             color=style.color("article"), fontsize=style.SMALL_PT, wrap=True, visible=False,
                             bbox={"facecolor": "white", "edgecolor": style.color("article"), "alpha": 0.9})

        ax = self._ax_load
        x = np.linspace(0.0, 1.6, 50)
        ax.plot(x, np.minimum(x, 1.0), ":", color=style.color("theory"), lw=1.2, label="min(load, 1)")
        ax.axhline(packing_model.TARGET, color=style.color("article"), ls="--", lw=1, label="C38: 95%")
        self._curves = {p: ax.plot([], [], "-o", ms=3, color=c, label=p)[0] for p, c in _COLORS.items()}
        self._batch = {p: ax.plot([], [], "s", ms=5, color=c)[0] for p, c in _COLORS.items()}
        (self._here,) = ax.plot([], [], "*", ms=15, mfc=style.color("here"), mec=style.color("theory"))
        # What changes in this panel is drawn on a cached background (see _render).
        self._animated = [*self._curves.values(), *self._batch.values(), self._here, ax.title]
        for artist in self._animated:
            artist.set_animated(True)
        ax.set_xlim(0.2, _BATCH_X + 0.15)
        ax.set_ylim(0.2, 1.03)
        ax.set_yticks([0.2, 0.4, 0.6, 0.8, 1.0])
        ax.set_xticks([0.3, 0.6, 0.9, 1.2, 1.5, _BATCH_X], ["0.3", "0.6", "0.9", "1.2", "1.5", "batch"])
        ax.set_xlabel("offered load", fontsize=style.FONT_PT)
        # Bottom right stays empty (utilization is high at high load); squares: the batch;
        # star: this setting.
        style.legend(ax, loc="lower right", handlelength=1.5, borderpad=0.3, labelspacing=0.25)

    def _render(self) -> bytes:
        """Partial blitting: the Gantt chart's ranges change with nearly every setting, so its
        axes are drawn in full each time; the load panel's axes, ticks and legend never change,
        so they are drawn once, cached, and only its curves and title drawn over them. Every
        text costs milliseconds, and the load panel carries a third of them."""
        canvas = self.figure.canvas
        if self._background is None:
            self._ax_gantt.set_visible(False)
            canvas.draw()   # the load panel's fixed parts (its animated artists are left out)
            self._background = canvas.copy_from_bbox(self.figure.bbox)
            self._ax_gantt.set_visible(True)
        canvas.restore_region(self._background)
        self.figure.draw_artist(self._ax_gantt)
        for artist in self._animated:
            if artist.get_visible():
                self.figure.draw_artist(artist)
        return canvas_png(canvas)

    def evaluate(self) -> packing_model.PackingScenario:
        c = self.controls
        load = None if c["load"].value == "batch" else c["load"].value
        return packing_model.evaluate(c["jobs"].value, c["runtime_spread"].value, c["mean_gb"].value,
                                      load, c["device"].value, seed=self.seed,
                                      curve_jobs=self.curve_jobs)

    def readout_html(self, sc: packing_model.PackingScenario) -> str:
        return readout_html(sc)

    def draw(self, sc: packing_model.PackingScenario) -> None:
        policy = self.controls["policy"].value
        res = sc.results[policy]
        ax = self._ax_gantt
        row = res.jobs.layer_job
        t0 = int(res.jobs.arrival_ns.min())
        ms = lambda ns: (np.asarray(ns, float) - t0) / 1e6  # noqa: E731
        self._layers.set_verts(_rects(ms(res.start_ns), ms(res.end_ns), row, 0.8))
        self._layers.set_facecolor(_JOB_COLORS[row % len(_JOB_COLORS)])
        has = res.xfer_start_ns >= 0
        self._xfers.set_verts(_rects(ms(res.xfer_start_ns[has]), ms(res.xfer_end_ns[has]), row[has], 0.35))
        idle = packing_model.idle_intervals(res)
        self._idle.set_verts(_rects(ms(idle[:, 0]), ms(idle[:, 1]), np.full(len(idle), -1.0), 0.8))
        self._arrivals.set_data(ms(res.jobs.arrival_ns), np.arange(sc.jobs))
        end = ms(res.done_ns.max())
        ax.set_xlim(0.0, float(end) * 1.01)
        ax.set_ylim(sc.jobs - 0.4, -1.6)
        step = max(1, -(-sc.jobs // 4))
        ticks = [-1, *range(step if sc.jobs > 12 else 0, sc.jobs, step)]  # keep "idle" clear of row 0
        ax.set_yticks(ticks, ["idle", *map(str, ticks[1:])], fontsize=style.SMALL_PT)
        ax.set_title(f"{policy}: {res.utilization:.1%} busy, makespan {res.makespan_ns / 1e6:.1f} ms",
                     fontsize=style.FONT_PT)
        self._note.set_text(sc.message)
        self._note.set_visible(bool(sc.message))

        curve = sc.curve
        for p in POLICIES:
            self._curves[p].set_data(curve.loads, curve.utilization[p])
            self._batch[p].set_data([_BATCH_X], [curve.batch_utilization[p]])
        x = _BATCH_X if sc.load is None else sc.load
        self._here.set_data([x], [res.utilization])
        self._ax_load.set_title(f"utilization ({sc.memory_fraction:.0%} of memory/job)", fontsize=style.FONT_PT)


def readout_html(sc: packing_model.PackingScenario) -> str:
    """Utilization, makespan and p99 latency of the three policies, and the 95% verdict."""
    load = "batch (all at t = 0)" if sc.load is None else f"{sc.load:g}"
    head = (f"<b>{html.escape(sc.device_name)}</b>: {sc.capacity_bytes / 1e9:g} GB; "
            f"{sc.jobs} graphs, {sc.mean_gb:g} GB each on average ({sc.memory_fraction:.0%}), "
            f"load {load}<br>at most <b>{sc.max_resident}</b> graphs resident at once (packed) "
            f"&nbsp; <i>({html.escape(backend())} backend)</i>")
    rows = "".join(
        f"<tr><td style='color:{_COLORS[p]}'>{p}</td><td>{r.utilization:.1%}</td>"
        f"<td>{r.makespan_ns / 1e6:.2f}</td><td>{np.percentile(r.latency_s, 99) * 1e3:.2f}</td></tr>"
        for p, r in sc.results.items())
    bound = "= " if sc.load is None else "≤ "
    verdict = (f"<b style='color:{style.OKABE_ITO['green']}'>packed reaches 95%</b>" if sc.meets_target
               else f"<b style='color:{style.color('article')}'>packed misses 95%</b>")
    note = f"<br><b style='color:{style.color('article')}'>{html.escape(sc.message)}</b>" if sc.message else ""
    return (f"<div class='magnum-readout'>{head}"
            f"<table cellpadding=3><tr><th>policy</th><th>utilization</th><th>makespan (ms)</th>"
            f"<th>p99 latency (ms)</th></tr>{rows}</table>"
            f"theory, exclusive: compute / (compute + transfers) {bound}{sc.exclusive_theory:.1%}<br>"
            f"{verdict}{note}</div>")


def packing_explorer(seed: int = 0, **initial) -> PackingExplorer:
    """Build the notebook-06 explorer; display ``.widget``.

    Parameters
    ----------
    seed : int
        Seed of the generated graphs and arrivals; the same setting always draws the same chart.
    **initial
        Optional starting values: ``jobs``, ``runtime_spread``, ``mean_gb``, ``load`` (a number
        or ``"batch"``), ``device``, ``policy``, ``curve_jobs`` (graphs per point of the load curve).
    """
    return PackingExplorer(seed=seed, **initial)


# (control, value) changes that benchmarks/bench_widgets.py replays: each moves the model.
BENCH_STEPS = [("mean_gb", 24.0), ("jobs", 20), ("runtime_spread", 1.0), ("device", "h100_sxm"),
               ("load", 0.9), ("policy", "exclusive"), ("mean_gb", 8.0), ("runtime_spread", 0.5),
               ("device", "mtia_v2"), ("load", "batch"), ("jobs", 12), ("policy", "packed")]
