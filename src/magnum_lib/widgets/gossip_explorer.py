"""Gossip explorer (notebook 05): how one update spreads over the cluster, and how stale views get.

UI only: every number comes from :func:`magnum_lib.widgets.gossip_model.evaluate`.

Usage in a notebook::

    from magnum_lib.widgets.gossip_explorer import gossip_explorer
    explorer = gossip_explorer()
    explorer.widget                     # display it

and in a test (no browser)::

    explorer.controls["fanout"].value = 3
    explorer.result.rounds_to_quorum    # the latest DisseminationResult
"""
from __future__ import annotations

import html
import math

import ipywidgets as widgets
import numpy as np
from matplotlib import colormaps
from matplotlib.ticker import MaxNLocator

from magnum_lib import backend
from magnum_lib.widgets import gossip_model, style
from magnum_lib.widgets._base import SLIDER_STYLE, Explorer, new_figure, pure_python, size_note, slider

MAX_NODES = 50_000
PURE_PYTHON_MAX_NODES = 5_000
"""The nodes slider ends here on the pure-Python backend: a spread over 20,000 nodes costs
about 0.5 s of CPU there (30 ms compiled), and each slider change must answer in 0.3 s."""


def pure_python_note() -> str:
    """What the explorer says on screen about its size on the pure-Python backend ('' compiled)."""
    return size_note("the nodes slider ends at", PURE_PYTHON_MAX_NODES, MAX_NODES) if pure_python() else ""


_CMAP = colormaps["viridis"].with_extremes(over=style.color("article"), bad="white")


class GossipExplorer(Explorer):
    """Sliders for nodes, fanout, interval, loss, partition (and a mode menu); three panels.

    Panels: the cluster as a grid of nodes (node 0 top left, row by row) coloured by the
    round each learned the rumor (red: never; a partition splits the top half from the
    bottom half); the coverage curve against time, simulated beside the mean field; the
    distribution of view ages on a small cluster (``gossip_model.STALE_NODES`` nodes).

    Attributes
    ----------
    widget, controls, readout, figure, image
        As for every explorer. Controls: ``"nodes"``, ``"fanout"``, ``"interval_ms"``,
        ``"loss"``, ``"partition"`` (rounds), ``"mode"``.
    result : DisseminationResult or None
        The latest spread; None when the setting is invalid (the readout says why).
    scenario : gossip_model.GossipScenario
    """

    css_class = "magnum-gossip-explorer"

    def __init__(self, seed: int = 0, *, nodes: int = 4096, fanout: int = 1, interval_ms: float = 1.0,
                 loss: float = 0.0, partition: int = 0, mode: str = "push"):
        self.seed = int(seed)
        # continuous_update=False (slider()): one simulation + render per release.
        top = max(PURE_PYTHON_MAX_NODES, int(nodes)) if pure_python() else MAX_NODES
        controls = {
            "nodes": slider(widgets.IntSlider, "nodes", value=nodes, min=100, max=top, step=100),
            "fanout": slider(widgets.IntSlider, "fanout k (peers/round)", value=fanout, min=1, max=16),
            "interval_ms": slider(widgets.FloatSlider, "gossip interval (ms)", value=interval_ms,
                                  min=1.0, max=200.0, step=1.0, readout_format=".0f"),
            "loss": slider(widgets.FloatSlider, "message loss", value=loss, min=0.0, max=0.9, step=0.025,
                           readout_format=".2f"),
            "partition": slider(widgets.IntSlider, "partition (rounds)", value=partition, min=0, max=100),
            "mode": widgets.Dropdown(description="mode", options=["push", "pull", "pushpull"], value=mode,
                                     style=SLIDER_STYLE),
        }
        super().__init__(controls, new_figure(11.0, 3.6))
        self.figure.subplots_adjust(left=0.02, right=0.98, bottom=0.16, top=0.88, wspace=0.3)
        gs = self.figure.add_gridspec(1, 3, width_ratios=[0.75, 1.1, 1.1])
        self._ax_grid = self.figure.add_subplot(gs[0])
        self._ax_cov = self.figure.add_subplot(gs[1])
        self._ax_stale = self.figure.add_subplot(gs[2])
        self._init_artists()
        self.update()

    @property
    def result(self):
        """The latest DisseminationResult, or None when the setting is invalid."""
        return None if self.scenario is None else self.scenario.spread

    def _init_artists(self) -> None:
        ax = self._ax_grid
        self._image = ax.imshow(np.zeros((2, 2)), cmap=_CMAP, vmin=0, vmax=1, interpolation="nearest")
        ax.set_xticks([])
        ax.set_yticks([])
        # No colorbar (its ticks cost as much as a plot): a direct label names the scale.
        ax.text(0.5, -0.03, "dark: informed first, yellow: last", transform=ax.transAxes, ha="center",
                va="top", fontsize=style.SMALL_PT)
        ax = self._ax_cov
        (self._cov_line,) = ax.plot([], [], lw=2, color=style.OKABE_ITO["blue"], label="simulated")
        (self._theory_line,) = ax.plot([], [], ":", color=style.color("theory"), lw=1.5, label="mean field")
        self._quorum_line = ax.axhline(0.5, color=style.color("article"), ls="--", lw=1, label="quorum")
        ax.set_ylim(0.0, 1.02)
        ax.yaxis.set_major_locator(MaxNLocator(3))
        ax.xaxis.set_major_locator(MaxNLocator(4))
        ax.set_xlabel("time (ms)")
        ax.set_ylabel("fraction informed")
        # Upper left stays empty: coverage starts near 0 and is over half only late in the
        # run (the x axis ends when every node knows).
        style.legend(ax, loc="upper left", borderpad=0.3, labelspacing=0.2, handlelength=1.5)
        ax = self._ax_stale
        self._stairs = ax.stairs(np.zeros(1), np.arange(2.0), fill=True, alpha=0.6, color=style.OKABE_ITO["sky"])
        self._p99_line = ax.axvline(0.0, color=style.color("theory"), lw=1.5)
        # A direct label that moves with the p99 line (cheaper than a legend).
        self._p99_label = ax.text(0.0, 0.97, " p99", transform=ax.get_xaxis_transform(), ha="left", va="top",
                                  fontsize=style.SMALL_PT)
        ax.set_xlabel("age of one node's view of another (ms)")
        ax.yaxis.set_major_locator(MaxNLocator(3))
        ax.xaxis.set_major_locator(MaxNLocator(4))
        ax.set_ylabel("fraction of views")
        self._error_text = self._ax_cov.text(0.5, 0.5, "", transform=self._ax_cov.transAxes, ha="center",
                                             va="center", color=style.color("article"), fontsize=style.SMALL_PT, wrap=True,
                                             visible=False, bbox={"facecolor": "white", "edgecolor": style.color("article")})

    def evaluate(self) -> gossip_model.GossipScenario:
        c = self.controls
        return gossip_model.evaluate(c["nodes"].value, c["fanout"].value, c["interval_ms"].value,
                                     c["loss"].value, c["partition"].value, mode=c["mode"].value,
                                     seed=self.seed)

    def readout_html(self, sc: gossip_model.GossipScenario) -> str:
        return readout_html(sc)

    def draw(self, sc: gossip_model.GossipScenario) -> None:
        artists = (self._image, self._cov_line, self._theory_line, self._stairs, self._p99_line, self._p99_label)
        for artist in artists:
            artist.set_visible(sc.ok)
        self._error_text.set_visible(not sc.ok)
        if not sc.ok:
            self._error_text.set_text(_wrap(sc.message))
            self._ax_grid.set_title("invalid setting", fontsize=style.SMALL_PT)
            return
        res = sc.spread
        grid = sc.grid()
        self._image.set_data(grid)
        self._image.set_extent((-0.5, grid.shape[1] - 0.5, grid.shape[0] - 0.5, -0.5))
        self._image.set_clim(0, max(res.rounds, 1))
        self._ax_grid.set_xlim(-0.5, grid.shape[1] - 0.5)
        self._ax_grid.set_ylim(grid.shape[0] - 0.5, -0.5)
        self._ax_grid.set_title(f"{sc.nodes:,} nodes by round informed", fontsize=style.SMALL_PT)

        t = np.arange(res.coverage.size) * sc.interval_ms
        self._cov_line.set_data(t, res.coverage)
        self._theory_line.set_data(np.arange(sc.theory_curve.size) * sc.interval_ms, sc.theory_curve)
        self._theory_line.set_visible(sc.theory_applies)
        self._ax_cov.set_xlim(0.0, max(t[-1], sc.interval_ms))
        quorum = "never" if math.isnan(sc.quorum_ms) else f"{sc.quorum_ms:g} ms"
        self._ax_cov.set_title(f"{sc.mode}, k={sc.fanout}: quorum at {quorum}", fontsize=style.SMALL_PT)

        ax = self._ax_stale
        if sc.stale is None:
            self._stairs.set_visible(False)
            self._p99_line.set_visible(False)
            self._p99_label.set_visible(False)
            ax.set_title("staleness: fanout too large for the small cluster", fontsize=style.SMALL_PT)
            return
        hist = np.asarray(sc.stale.histogram, dtype=float)
        frac = hist / hist.sum()
        edges = (np.arange(hist.size + 1) - 0.5) * sc.interval_ms
        self._stairs.set_data(frac, edges)
        p99 = sc.stale_ms(0.99)
        self._p99_line.set_xdata([p99, p99])
        self._p99_label.set_x(p99)
        ax.set_xlim(0.0, edges[-1])
        ax.set_ylim(0.0, max(float(frac.max()), 1e-3) * 1.1)
        ax.set_title(f"view age, {sc.stale_nodes} nodes: p99 {p99:g} ms", fontsize=style.SMALL_PT)


def _wrap(text: str, width: int = 40) -> str:
    words, lines, line = text.split(), [], ""
    for w in words:
        if len(line) + len(w) + 1 > width and line:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}".strip()
    return "\n".join(lines + [line])


def _fmt(value, unit: str = "", digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    return f"{value:.{digits}f}{unit}"


def readout_html(sc: gossip_model.GossipScenario) -> str:
    """The readout as HTML: rounds and times, simulated beside the mean field; bandwidth; staleness."""
    head = f"<b>{sc.nodes:,} nodes</b>, {sc.mode}, fanout {sc.fanout} &nbsp; <i>({html.escape(backend())} backend)</i>"
    if pure_python_note():
        head += f"<br><small>{html.escape(pure_python_note())}</small>"
    if not sc.ok:
        return (f"<div class='magnum-readout'>{head}<br><b style='color:crimson'>invalid: "
                f"{html.escape(sc.message)}</b></div>")
    res = sc.spread
    th_q = sc.theory_quorum_rounds if sc.theory_applies else None
    th_q_ms = None if th_q is None else th_q * sc.interval_ms
    rows = [
        ("rounds to quorum", _fmt(res.rounds_to_quorum, digits=0) if res.rounds_to_quorum is not None else "never",
         _fmt(th_q, digits=0)),
        ("time to quorum", _fmt(sc.quorum_ms, " ms"), _fmt(th_q_ms, " ms")),
        ("rounds to everyone", _fmt(res.rounds_to_all, digits=0) if res.rounds_to_all is not None else "not reached", ""),
        ("time to everyone", _fmt(sc.all_ms, " ms"), ""),
    ]
    body = "".join(f"<tr><td>{n}</td><td>{s}</td><td>{t}</td></tr>" for n, s, t in rows)
    stale = ("n/a" if sc.stale is None else
             f"p50 {_fmt(sc.stale_ms(0.5), ' ms')}, p99 {_fmt(sc.stale_ms(0.99), ' ms')} "
             f"({sc.stale_nodes} nodes)")
    note = "" if sc.theory_applies else "<br><i>mean field has no partition: theory n/a</i>"
    key = ("<br><small>grid: one square per node, dark = early, yellow = late, red = never; "
           "curve: blue simulated, dotted mean field, red dashed quorum</small>")
    return (f"<div class='magnum-readout'>{head}<br>"
            f"<table cellpadding=3><tr><th></th><th>simulated</th><th>mean field</th></tr>{body}</table>"
            f"bandwidth: {_fmt(sc.mbit_per_node, ' Mbit/s', 3)} per node ({res.message_bytes} B datagrams, "
            f"{sc.interval_ms:g} ms interval)<br>view age: {stale}{note}{key}</div>")


def gossip_explorer(seed: int = 0, **initial) -> GossipExplorer:
    """Build the notebook-05 explorer; display ``.widget``.

    Parameters
    ----------
    seed : int
        Simulation seed; the same setting always shows the same spread.
    **initial
        Optional starting values: ``nodes``, ``fanout``, ``interval_ms``, ``loss``,
        ``partition`` (rounds), ``mode``.
    """
    return GossipExplorer(seed=seed, **initial)


# (control, value) changes that benchmarks/bench_widgets.py replays.
BENCH_STEPS = [("fanout", 3), ("nodes", 20_000), ("loss", 0.2), ("partition", 20), ("interval_ms", 10.0),
               ("mode", "pushpull"), ("fanout", 1), ("nodes", 4096), ("loss", 0.0), ("partition", 0),
               ("interval_ms", 1.0), ("mode", "push")]
