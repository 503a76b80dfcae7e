"""Oracle explorer (notebook 02): one planning round, where the jobs land and what the plan costs.

UI only: every number comes from :func:`magnum_lib.widgets.oracle_model.evaluate`.

Usage in a notebook::

    from magnum_lib.widgets.oracle_explorer import oracle_explorer
    explorer = oracle_explorer()
    explorer.widget                     # display it

and in a test (no browser)::

    explorer.controls["algo"].value = "article"
    explorer.result.gap                 # the latest Plan's gap to the LP bound
"""
from __future__ import annotations

import html
import math

import ipywidgets as widgets
import numpy as np
from matplotlib import colormaps
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullLocator

from magnum_lib import backend
from magnum_lib.planner.snapshot import BANDWIDTH_TIERS_GBPS
from magnum_lib.widgets import oracle_model, style
from magnum_lib.widgets._base import SLIDER_STYLE, Explorer, new_figure, slider

_CMAP = colormaps["viridis"].with_extremes(bad="#e8e8e8")
COLORS = {a: style.color(a) for a in ("article", "greedy", "assignment", "flow", "lp")}
HISTORY = 40
"""Runs kept per algorithm on the cost-vs-time plot."""
# Fixed tick positions on the log axes: matplotlib's log locators add minor tick labels
# whose layout doubles the render time of a slider change.
_MS_TICKS = [1, 3, 10, 30, 100, 300, 1000, 3000]
_RATIO_TICKS = [1, 1.5, 2, 3, 5, 8, 13, 20]


class OracleExplorer(Explorer):
    """Sliders for cluster size, pending jobs, bandwidth weight; an algorithm menu; two panels.

    Panels: the racks as a heatmap of the devices the plan places in each (one row per
    uplink bandwidth tier, slowest on top); cost / LP bound against planning time, with
    every algorithm on the initial setting as hollow reference markers (computed once,
    at construction), each later run as a dot and the latest as a star.

    Attributes
    ----------
    widget, controls, readout, figure, image
        As for every explorer. Controls: ``"racks"`` (racks of 32 nodes), ``"jobs"``,
        ``"weight"`` (bandwidth against packing, 0..1), ``"algo"``.
    result : Plan or None
        The latest plan; None when the setting is refused (the readout says why).
    scenario : oracle_model.OracleScenario
    reference : dict
        ``{algo: (planning_ms, cost / bound)}`` on the initial setting.
    history : dict
        ``{algo: [(planning_ms, cost / bound), ...]}``, the runs so far (at most ``HISTORY`` each).
    """

    css_class = "magnum-oracle-explorer"

    def __init__(self, seed: int = 0, *, racks: int = 16, jobs: int = 128, weight: float = 0.5,
                 algo: str = "flow", reference: bool = True):
        self.seed = int(seed)
        lo_r, hi_r = oracle_model.RACKS_RANGE
        lo_j, hi_j = oracle_model.JOBS_RANGE
        # continuous_update=False (slider()): one plan + render per release, not per pixel.
        controls = {
            "racks": slider(widgets.IntSlider, "cluster size (racks)", value=racks, min=lo_r, max=hi_r),
            "jobs": slider(widgets.IntSlider, "pending jobs", value=jobs, min=lo_j, max=hi_j, step=8),
            "weight": slider(widgets.FloatSlider, "weight w (bandwidth)", value=weight, min=0.0, max=1.0,
                             step=0.05, readout_format=".2f"),
            "algo": widgets.Dropdown(description="algorithm", options=list(oracle_model.ALGORITHMS),
                                     value=algo, style=SLIDER_STYLE),
        }
        self.reference = (oracle_model.reference_points(racks, jobs, weight, seed=self.seed)
                          if reference else {})
        self.history = {a: [] for a in oracle_model.ALGORITHMS}
        super().__init__(controls, new_figure(10.5, 3.8))
        self.figure.subplots_adjust(left=0.1, right=0.98, bottom=0.16, top=0.88, wspace=0.3)
        gs = self.figure.add_gridspec(1, 2, width_ratios=[1.25, 1.0])
        self._ax_racks = self.figure.add_subplot(gs[0])
        self._ax_cost = self.figure.add_subplot(gs[1])
        self._init_artists()
        self.update()

    @property
    def result(self):
        """The latest Plan, or None when the setting is refused."""
        return None if self.scenario is None else self.scenario.plan

    def _init_artists(self) -> None:
        ax = self._ax_racks
        self._image = ax.imshow(np.zeros((3, 2)), cmap=_CMAP, vmin=0, vmax=1, aspect="auto",
                                interpolation="nearest")
        ax.set_yticks(range(len(BANDWIDTH_TIERS_GBPS)), [f"{bw:g} GB/s" for bw in BANDWIDTH_TIERS_GBPS])
        ax.set_xlabel("rack (within its bandwidth tier)")
        ax.xaxis.set_major_locator(MaxNLocator(6, integer=True))  # few labels: text is most of a render
        # Titles are plain texts: a real title re-measures the axes' tick labels on every render.
        self._racks_title = ax.text(0.5, 1.03, "", transform=ax.transAxes, ha="center", fontsize=style.SMALL_PT)
        # No colorbar (its ticks cost as much as a plot): the title names the scale.
        self._error_text = ax.text(0.5, 0.5, "", transform=ax.transAxes, ha="center", va="center",
                                   color=style.color("article"), fontsize=style.SMALL_PT, visible=False,
                                   bbox={"facecolor": "white", "edgecolor": style.color("article")})
        ax = self._ax_cost
        self._ref, self._hist = {}, {}
        timed = [self.reference[a][0] for a in COLORS if math.isfinite(self.reference.get(a, (math.nan,))[0])]
        slowest = max(timed, default=math.nan)
        for algo, color in COLORS.items():
            ms, ratio = self.reference.get(algo, (math.nan, math.nan))
            (self._ref[algo],) = ax.plot([ms], [ratio], "o", mfc="none", mec=color, ms=10, mew=1.5)
            (self._hist[algo],) = ax.plot([], [], "o", color=color, ms=5, alpha=0.6)
            if math.isfinite(ratio):  # direct labels instead of a legend (a legend's layout is slow)
                left = ms == slowest  # the right-most point: its label goes left, inside the axes
                ax.annotate(algo, (ms, ratio), xytext=(-7 if left else 7, 5), textcoords="offset points",
                            ha="right" if left else "left", color=color, fontsize=style.SMALL_PT)
        (self._star,) = ax.plot([], [], "*", ms=16, mec="black", mew=0.8)
        ax.axhline(1.0, color=style.GREY, lw=0.8, ls=":")
        ax.set_xscale("log")
        ax.set_yscale("log")
        for axis, ticks in ((ax.xaxis, _MS_TICKS), (ax.yaxis, _RATIO_TICKS)):
            axis.set_major_locator(FixedLocator(ticks))
            axis.set_major_formatter(FuncFormatter(lambda v, _pos: style.decade_label(v)))
            axis.set_minor_locator(NullLocator())
        self._cost_title = ax.text(0.5, 1.03, "", transform=ax.transAxes, ha="center", fontsize=style.SMALL_PT)
        ax.set_xlabel("planning time (ms)")
        ax.set_ylabel("cost / LP lower bound")
        # No legend (laying one out costs ~30 ms a render): direct labels name the algorithms.

    def evaluate(self) -> oracle_model.OracleScenario:
        c = self.controls
        return oracle_model.evaluate(c["racks"].value, c["jobs"].value, c["weight"].value, c["algo"].value,
                                     seed=self.seed)

    def readout_html(self, sc: oracle_model.OracleScenario) -> str:
        return readout_html(sc)

    def draw(self, sc: oracle_model.OracleScenario) -> None:
        ax = self._ax_racks
        self._image.set_visible(sc.ok)
        self._error_text.set_visible(not sc.ok)
        if not sc.ok:
            self._error_text.set_text(_wrap(sc.message))
            self._racks_title.set_text("setting refused: see the readout")
            self._star.set_data([], [])
        else:
            grid = sc.grid
            self._image.set_data(grid)
            self._image.set_extent((-0.5, grid.shape[1] - 0.5, grid.shape[0] - 0.5, -0.5))
            top = float(np.nanmax(grid)) if np.isfinite(grid).any() else 0.0
            self._image.set_clim(0.0, max(top, 1.0))
            ax.set_xlim(-0.5, grid.shape[1] - 0.5)
            ax.set_ylim(grid.shape[0] - 0.5, -0.5)
            self._racks_title.set_text(f"{sc.algo}: devices placed per rack (dark 0, yellow {top:.0f})")
            if math.isfinite(sc.ratio):
                hist = self.history[sc.algo]
                hist.append((sc.planning_ms, sc.ratio))
                del hist[:-HISTORY]
                self._hist[sc.algo].set_data(*zip(*hist, strict=True))
                self._star.set_data([sc.planning_ms], [sc.ratio])
                self._star.set_color(COLORS[sc.algo])
        self._rescale_cost_axes()

    def _rescale_cost_axes(self) -> None:
        pts = [p for h in self.history.values() for p in h] + list(self.reference.values())
        ms = np.array([p[0] for p in pts if math.isfinite(p[0]) and p[0] > 0] or [1.0])
        ratio = np.array([p[1] for p in pts if math.isfinite(p[1])] or [1.0])
        self._ax_cost.set_xlim(ms.min() / 1.6, ms.max() * 1.6)
        self._ax_cost.set_ylim(0.9, max(2.0, float(ratio.max()) * 1.3))
        sc = self.scenario
        title = "cost against planning time" if sc is None or not sc.ok else (
            f"{sc.algo}: {sc.ratio:.3f}x the bound in {sc.planning_ms:.0f} ms")
        self._cost_title.set_text(title)


def _wrap(text: str, width: int = 44) -> str:
    words, lines, line = text.split(), [], ""
    for w in words:
        if line and len(line) + 1 + len(w) > width:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}".strip()
    return "\n".join(lines + [line])


def _fmt(value: float, digits: int = 2, unit: str = "") -> str:
    return "n/a" if not math.isfinite(value) else f"{value:,.{digits}f}{unit}"


def _weight(w) -> str:
    return f"{w:.2f}" if isinstance(w, (int, float)) and not isinstance(w, bool) else repr(w)


def readout_html(sc: oracle_model.OracleScenario) -> str:
    """The readout: setting, cost against the bound, time, where the traffic went, a colour key."""
    key = " ".join(f"<span style='color:{c}'>&#9679; {a}</span>" for a, c in COLORS.items())
    head = (f"<b>{sc.nodes:,} nodes</b> ({sc.racks} racks of {oracle_model.RACK_NODES}), "
            f"<b>{sc.jobs} jobs</b>, w = {html.escape(_weight(sc.weight))}, "
            f"<b>{html.escape(str(sc.algo))}</b> &nbsp;<i>({html.escape(backend())} backend)</i>")
    if not sc.ok:
        return (f"<div class='magnum-readout'>{head}<br><b style='color:crimson'>{html.escape(sc.message)}</b>"
                f"<br>{key}</div>")
    p = sc.plan
    m = p.metrics
    reasons = "; ".join(f"{n} x {html.escape(r)}" for r, n in p.unplaced_reasons().items()) or "none"
    rows = [
        ("cost (corrected model)", _fmt(sc.cost, 1)),
        ("LP lower bound", _fmt(sc.lower_bound, 1)),
        ("gap to the bound", "0 (optimal)" if sc.gap == 0 else _fmt(100 * sc.gap, 1, " %")),
        ("planning time", _fmt(sc.planning_ms, 1, " ms")),
        ("classes (node, job)", f"{p.classes[0]}, {p.classes[1]}"),
        ("placed / unplaced", f"{m.placed} / {m.unplaced} ({reasons})"),
        ("stranded free devices", f"{m.stranded_devices} ({_fmt(100 * m.stranded_share, 0, ' %')})"),
        ("traffic time per step (all jobs)", _fmt(m.comm_time_s * 1e3, 1, " ms")),
        ("traffic on 400 GB/s racks", _fmt(100 * sc.heavy_fast_share, 0, " %")),
    ]
    body = "".join(f"<tr><td>{n}</td><td>{v}</td></tr>" for n, v in rows)
    return (f"<div class='magnum-readout'>{head}<table cellpadding=2>{body}</table>"
            f"{key}<br><small>hollow: every algorithm on the first setting; dots: your runs; star: this one"
            f"</small></div>")


def oracle_explorer(seed: int = 0, **initial) -> OracleExplorer:
    """Build the notebook-02 explorer; display ``.widget``.

    Parameters
    ----------
    seed : int
        Snapshot seed; the same setting always shows the same plan.
    **initial
        Optional starting values: ``racks``, ``jobs``, ``weight``, ``algo``; ``reference=False``
        skips the reference run of every algorithm at construction.
    """
    return OracleExplorer(seed=seed, **initial)


# (control, value) changes that benchmarks/bench_widgets.py replays: all within the caps,
# flow and assignment among them (the 150 ms target is about those).
BENCH_STEPS = [("weight", 0.8), ("algo", "assignment"), ("racks", 24), ("jobs", 192), ("algo", "flow"),
               ("weight", 0.2), ("racks", 32), ("algo", "greedy"), ("jobs", 128), ("algo", "article"),
               ("racks", 16), ("algo", "flow"), ("weight", 0.5)]
