"""Queue explorer (notebook 01): how long do pods wait for a centralized scheduler?

UI only: every number comes from :func:`magnum_lib.widgets.queue_model.evaluate`.

Usage in a notebook::

    from magnum_lib.widgets import queue_explorer
    explorer = queue_explorer()
    explorer.widget                     # display it

and in a test (no browser)::

    explorer.controls["replicas"].value = 4
    explorer.result.p99                 # seconds, the latest QueueResult
"""
from __future__ import annotations

import html
import math

import ipywidgets as widgets
import numpy as np

from magnum_lib import backend
from magnum_lib.widgets import queue_model, style
from magnum_lib.widgets._base import Explorer, new_figure, slider

_BINS = 60


class QueueExplorer(Explorer):
    """Sliders for arrival rate, decision time and replicas; histogram, p99, SLA.

    Attributes
    ----------
    widget : ipywidgets.VBox
        The top-level box to display.
    controls : dict[str, ipywidgets.ValueWidget]
        ``"arrival_rate"`` (pods/s), ``"decision_ms"`` (ms per decision),
        ``"replicas"`` (scheduler replicas).
    result : QueueResult or None
        The latest simulation; None while the setting is unstable (load >= 1).
    scenario : queue_model.QueueScenario
        The latest evaluated setting with the theory beside the simulation.
    readout : ipywidgets.HTML
        Load, p99, mean, P(wait), SLA verdict, simulated beside Erlang-C theory.
    figure : matplotlib.figure.Figure
        The one figure, redrawn in place (``image`` shows its PNG).
    """

    css_class = "magnum-queue-explorer"

    def __init__(self, jobs: int = 20_000, seed: int = 0, *, arrival_rate: float = 500.0,
                 decision_ms: float = 1.5, replicas: int = 1, sla_ms: float = queue_model.SLA_MS):
        if isinstance(jobs, bool) or not isinstance(jobs, (int, np.integer)) or jobs < 100:
            raise ValueError(f"jobs must be an integer >= 100, got {jobs!r}")
        self.jobs = int(jobs)
        self.seed = int(seed)
        self.sla_ms = float(sla_ms)
        # continuous_update=False (slider()): one simulation + PNG render per release, not
        # per pixel dragged; a change costs tens of ms compiled, far more on pure Python.
        controls = {
            "arrival_rate": slider(widgets.FloatSlider, "arrival rate (pods/s)", value=arrival_rate,
                                   min=50.0, max=5000.0, step=50.0, readout_format=".0f"),
            "decision_ms": slider(widgets.FloatSlider, "decision time (ms)", value=decision_ms,
                                  min=0.1, max=10.0, step=0.1, readout_format=".1f"),
            "replicas": slider(widgets.IntSlider, "scheduler replicas", value=replicas, min=1, max=16),
        }
        super().__init__(controls, new_figure(8.6, 3.6))
        self.figure.subplots_adjust(left=0.1, right=0.7, bottom=0.14, top=0.9)   # the legend sits right of the axes
        self._ax = self.figure.add_subplot()
        self._init_artists()
        self.update()

    @property
    def result(self):
        """The latest QueueResult, or None when the setting is unstable."""
        return None if self.scenario is None else self.scenario.result

    def _init_artists(self) -> None:
        ax = self._ax
        edges = np.linspace(0.0, 1.0, _BINS + 1)
        self._stairs = ax.stairs(np.zeros(_BINS), edges, fill=True, alpha=0.6,
                                   color=style.OKABE_ITO["sky"], label="simulated pods")
        self._sla_line = ax.axvline(self.sla_ms, color=style.color("article"), ls="--", lw=2, label=f"SLA {self.sla_ms:g} ms")
        self._p99_line = ax.axvline(0.0, color=style.OKABE_ITO["blue"], lw=2, label="p99 simulated")
        self._theory_line = ax.axvline(0.0, color=style.color("theory"), ls=":", lw=2, label="p99 theory (M/M/c)")
        self._unstable_text = ax.text(0.5, 0.5, queue_model.UNSTABLE_MESSAGE, transform=ax.transAxes,
                                      ha="center", va="center", color=style.color("article"), fontsize=13, visible=False,
                                      bbox={"facecolor": "white", "edgecolor": style.color("article")})
        ax.set_xlabel("time from arrival to placement (ms)")
        ax.set_ylabel("fraction of pods")
        style.legend(ax, outside=True)   # the p99 lines move across the whole axes: keep it off them

    def evaluate(self) -> queue_model.QueueScenario:
        return queue_model.evaluate(
            self.controls["arrival_rate"].value, self.controls["decision_ms"].value,
            self.controls["replicas"].value, jobs=self.jobs, seed=self.seed, sla_ms=self.sla_ms)

    def readout_html(self, sc: queue_model.QueueScenario) -> str:
        return readout_html(sc)

    def draw(self, sc: queue_model.QueueScenario) -> None:
        ax = self._ax
        stable_artists = (self._stairs, self._p99_line, self._theory_line)
        for artist in stable_artists:
            artist.set_visible(sc.stable)
        self._unstable_text.set_visible(not sc.stable)
        if not sc.stable:
            ax.set_title(f"load {sc.load:.2f} >= 1")
            ax.set_xlim(0.0, 2.0 * self.sla_ms)
            ax.set_ylim(0.0, 1.0)
            return
        lat = sc.latencies_ms()
        # Show the bulk and the tail: up to the 99.9th percentile, never less than 2x SLA.
        xmax = max(2.0 * self.sla_ms, float(np.quantile(lat, 0.999)), 1.2 * sc.theory_p99_ms)
        counts, edges = np.histogram(lat, bins=_BINS, range=(0.0, xmax))
        frac = counts / lat.size
        self._stairs.set_data(frac, edges)
        self._p99_line.set_xdata([sc.p99_ms, sc.p99_ms])
        self._theory_line.set_xdata([sc.theory_p99_ms, sc.theory_p99_ms])
        ax.set_xlim(0.0, xmax)
        ax.set_ylim(0.0, max(float(frac.max()), 1e-3) * 1.1)
        verdict = "meets" if sc.sla_met else "misses"
        ax.set_title(f"load {sc.load:.2f}: p99 {sc.p99_ms:.2f} ms {verdict} the {self.sla_ms:g} ms SLA")


def _fmt(value: float, unit: str = "", digits: int = 2) -> str:
    return "n/a" if not math.isfinite(value) else f"{value:.{digits}f}{unit}"


def readout_html(sc: queue_model.QueueScenario) -> str:
    """The readout as an HTML table (simulated beside theory)."""
    head = f"<b>load</b> ρ = λ / (c·μ) = {sc.load:.3f} &nbsp; <i>({html.escape(backend())} backend)</i>"
    if not sc.stable:
        return (f"<div class='magnum-readout'>{head}<br><b style='color:crimson'>"
                f"{html.escape(queue_model.UNSTABLE_MESSAGE)}</b><br>"
                f"Add replicas, cut the decision time or lower the arrival rate.</div>")
    verdict = ("<b style='color:green'>SLA met</b>" if sc.sla_met
               else "<b style='color:crimson'>SLA missed</b>")
    rows = [
        ("p99 (ms)", _fmt(sc.p99_ms), _fmt(sc.theory_p99_ms)),
        ("mean (ms)", _fmt(sc.mean_ms), _fmt(sc.theory_mean_ms)),
        ("P(wait)", _fmt(sc.p_wait, digits=3), _fmt(sc.theory_p_wait, digits=3)),
    ]
    body = "".join(f"<tr><td>{n}</td><td>{s}</td><td>{t}</td></tr>" for n, s, t in rows)
    wall = getattr(sc.result, "wall_s", float("nan")) * 1e3
    return (f"<div class='magnum-readout'>{head}<br>"
            f"<table cellpadding=3><tr><th></th><th>simulated</th><th>theory (Erlang C)</th></tr>{body}</table>"
            f"p99 vs {sc.sla_ms:g} ms SLA: {verdict} &nbsp; ({sc.result.jobs} pods simulated in "
            f"{_fmt(wall, ' ms', 1)})</div>")


def queue_explorer(jobs: int = 20_000, seed: int = 0, **initial) -> QueueExplorer:
    """Build the notebook-01 explorer; display ``.widget``.

    Parameters
    ----------
    jobs : int
        Pods simulated per slider change (small so a change answers in well under 150 ms).
    seed : int
        RNG seed; the same setting always shows the same histogram.
    **initial
        Optional starting values: ``arrival_rate`` (pods/s), ``decision_ms``, ``replicas``,
        ``sla_ms``.
    """
    return QueueExplorer(jobs=jobs, seed=seed, **initial)


# (control, value) changes that benchmarks/bench_widgets.py replays: each keeps the
# explorer stable and moves the model.
BENCH_STEPS = [("replicas", 2), ("arrival_rate", 800.0), ("decision_ms", 1.0), ("replicas", 1),
               ("arrival_rate", 500.0), ("decision_ms", 1.5)]
