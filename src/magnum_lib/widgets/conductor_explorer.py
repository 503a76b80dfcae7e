"""Conductor explorer (notebook 03): speculative leases from a shared, stale view.

UI only: every number comes from :func:`magnum_lib.widgets.conductor_model.evaluate`.

Usage in a notebook::

    from magnum_lib.widgets.conductor_explorer import conductor_explorer
    explorer = conductor_explorer()
    explorer.widget                     # display it

and in a test (no browser)::

    explorer.controls["policy"].value = "least-loaded"
    explorer.scenario.conflict_rate      # the latest ConductorScenario
"""
from __future__ import annotations

import html
import math

import ipywidgets as widgets
import numpy as np
from matplotlib.ticker import FixedLocator, NullLocator

from magnum_lib import backend
from magnum_lib.regional.contention import POLICIES
from magnum_lib.widgets import conductor_model as cm
from magnum_lib.widgets import style
from magnum_lib.widgets._base import SLIDER_LAYOUT, SLIDER_STYLE, BlittedExplorer, new_figure, slider

_FLOOR = 1e-6  # log axes: a rate of 0 is drawn at the floor
_PRE_FLOOR = 0.01  # preemptions per 1,000 leases: 0 is drawn at this floor
_COLORS = {p: style.color(p) for p in ("random", "least-loaded", "two-choices")}
_X = np.arange(len(POLICIES))


def _log_axis(ax, decades) -> None:
    """Log y axis with a few fixed plain-text ticks (mathtext tick labels are slow to render)."""
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(FixedLocator(decades))
    ax.yaxis.set_major_formatter(lambda v, _pos: style.decade_label(v))
    ax.yaxis.set_minor_locator(NullLocator())


class ConductorExplorer(BlittedExplorer):
    """Sliders for staleness, concurrency, load, policy and lease timeout; four panels.

    Panels: round conflict rate of the three policies (birthday bound and the article's
    0.001 % beside them); lease failure rate against utilization over a load sweep;
    preemptions per 1,000 leases; decision latency, speculative against one lock, with the
    lease timeout and the 10 ms budget.

    Attributes
    ----------
    widget, controls, readout, figure, image
        As for every explorer. Controls: ``"staleness_ms"``, ``"concurrent"``, ``"load"``,
        ``"policy"``, ``"timeout_ms"``.
    scenario : conductor_model.ConductorScenario
    result : ContentionResult of the chosen policy
    """

    css_class = "magnum-conductor-explorer"

    def __init__(self, *, nodes: int = cm.DEFAULTS["nodes"], slots: int = cm.DEFAULTS["slots"],
                 trials: int = cm.DEFAULTS["trials"], seed: int = cm.DEFAULTS["seed"],
                 staleness_ms: float = 2.0, concurrent: int = 10, load: float = 0.7, policy: str = "random",
                 timeout_ms: float = 100.0):
        self.sizes = {"nodes": int(nodes), "slots": int(slots), "trials": int(trials), "seed": int(seed)}
        # continuous_update=False (slider()): one evaluation per release, not per pixel dragged.
        controls = {
            "staleness_ms": slider(widgets.FloatSlider, "view staleness (ms)", value=staleness_ms, min=0.0,
                                   max=50.0, step=1.0, readout_format=".0f"),
            "concurrent": slider(widgets.IntSlider, "concurrent schedulers", value=concurrent, min=1, max=32),
            "load": slider(widgets.FloatSlider, "cluster load", value=load, min=0.0, max=0.98, step=0.02,
                           readout_format=".2f"),
            "policy": widgets.Dropdown(options=list(POLICIES), value=policy, description="placement policy",
                                       style=SLIDER_STYLE, layout=widgets.Layout(**SLIDER_LAYOUT)),
            "timeout_ms": slider(widgets.FloatLogSlider, "lease timeout (ms)", value=timeout_ms, base=10,
                                 min=-2, max=3, step=0.25, readout_format=".3g"),
        }
        fig = new_figure(11.0, 7.2)   # room under the top-right panel for its legend
        fig.subplots_adjust(left=0.08, right=0.98, bottom=0.08, top=0.95, wspace=0.26, hspace=0.85)
        super().__init__(controls, fig)
        self._axes = fig.subplots(2, 2).ravel()
        self._init_artists()
        self.update()

    @property
    def result(self):
        """The chosen policy's ContentionResult."""
        return None if self.scenario is None else self.scenario.result

    def _text(self, ax, message: str):
        return ax.text(0.5, 0.5, message, transform=ax.transAxes, ha="center", va="center", color=style.color("article"),
                       fontsize=style.SMALL_PT, visible=False, bbox={"facecolor": "white", "edgecolor": style.color("article")})

    def _init_artists(self) -> None:
        ax_c, ax_u, ax_p, ax_l = self._axes
        labels = [p.replace("-", "-\n") if p == "least-loaded" else p for p in POLICIES]
        colors = [_COLORS[p] for p in POLICIES]

        self._conflict_bars = ax_c.bar(_X, np.full(len(POLICIES), _FLOOR), color=colors, alpha=0.8)
        self._birthday = ax_c.axhline(1.0, color=style.color("theory"), ls=":", lw=1.5, label="birthday bound (N, C)")
        ax_c.set(xticks=_X, xticklabels=labels, ylim=(_FLOOR, 300.0), ylabel="round conflict rate")
        _log_axis(ax_c, [1e-6, 1e-4, 1e-2, 1])
        style.legend(ax_c, loc="upper right")

        (self._sweep_line,) = ax_u.plot([], [], "o-", color=style.color("theory"), label="load sweep (policy colour)")
        (self._here,) = ax_u.plot([], [], "*", color=style.color("theory"), ms=14, label="this setting")
        ax_u.axvline(0.9, color=style.color("article"), ls="--", lw=1.5, label="C17: 90 %")
        ax_u.axhline(cm.ARTICLE_CONTENTION, color=style.color("article"), ls=":", lw=2, label="C26: 0.001 % of leases")
        ax_u.set(xlim=(-0.02, 1.02), ylim=(_FLOOR, 1.5), xlabel="utilization", ylabel="lease failure rate")
        _log_axis(ax_u, [1e-6, 1e-4, 1e-2, 1])
        # Under the axes: the sweep can run anywhere between 0 and 1 at any utilization.
        style.legend(ax_u, below=0.27)

        self._preempt_bars = ax_p.bar(_X, np.full(len(POLICIES), _PRE_FLOOR), color=colors, alpha=0.8)
        ax_p.set(xticks=_X, xticklabels=labels, ylabel="per 1,000 leases", ylim=(_PRE_FLOOR, 2000.0))
        _log_axis(ax_p, [0.01, 0.1, 1, 10, 100, 1000])

        self._lat_bars = ax_l.bar([0, 1, 2], [1, 1, 1], color=[style.color("speculative"), style.color("pessimistic"), style.color("pessimistic")], alpha=0.8)
        self._timeout_line = ax_l.axhline(1.0, color=style.OKABE_ITO["sky"], ls="-.", lw=2, label="lease timeout")
        ax_l.axhline(cm.LEASE_BUDGET_MS * 1e3, color=style.color("article"), ls="--", lw=1.5, label="10 ms budget")
        ax_l.set(xticks=[0, 1, 2], xticklabels=["speculative", "lock: mean", "lock: worst"],
                 ylim=(10, 1e8), ylabel="µs to a placement")
        _log_axis(ax_l, [10, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7])
        style.legend(ax_l, loc="upper left")   # above every bar and the longest timeout (100 ms)

        self._expired_text = self._text(ax_l, cm.EXPIRED_MESSAGE)
        self._full_text = self._text(ax_c, cm.FULL_MESSAGE)
        self._animated = [*self._conflict_bars, self._birthday, self._sweep_line, self._here,
                          *self._preempt_bars, *self._lat_bars, self._timeout_line, self._expired_text,
                          self._full_text, *(ax.title for ax in self._axes)]
        for artist in self._animated:
            artist.set_animated(True)

    def evaluate(self) -> cm.ConductorScenario:
        c = self.controls
        return cm.evaluate(c["staleness_ms"].value, c["concurrent"].value, c["load"].value, c["policy"].value,
                           c["timeout_ms"].value, **self.sizes)

    def readout_html(self, sc: cm.ConductorScenario) -> str:
        return readout_html(sc)

    def draw(self, sc: cm.ConductorScenario) -> None:
        ax_c, ax_u, ax_p, ax_l = self._axes
        for bar, p in zip(self._conflict_bars, POLICIES, strict=True):
            bar.set_height(max(sc.results[p].round_conflict_rate, _FLOOR))
            bar.set_edgecolor("black" if p == sc.policy else "none")
            bar.set_linewidth(2.5 if p == sc.policy else 0)
        self._birthday.set_ydata([max(sc.birthday, _FLOOR)] * 2)
        self._full_text.set_visible(sc.view_full)
        ax_c.set_title(f"conflict rate: C = {sc.concurrent}, {sc.nodes:,} nodes x {sc.slots} slots", fontsize=style.SMALL_PT)

        self._sweep_line.set_data([r.utilization for r in sc.sweep],
                                  [max(r.lease_failure_rate, _FLOOR) for r in sc.sweep])
        self._sweep_line.set_markerfacecolor(_COLORS[sc.policy])
        self._here.set_data([sc.utilization], [max(sc.failure_rate, _FLOOR)])
        ax_u.set_title(f"utilization vs lease failures ({sc.policy}, staleness {sc.staleness_ms:g} ms)",
                       fontsize=style.SMALL_PT)

        per_k = [sc.preemptions_per_1000(p) for p in POLICIES]
        for bar, v in zip(self._preempt_bars, per_k, strict=True):
            bar.set_height(max(v, _PRE_FLOOR))
        ax_p.set_title(f"preemptions, each a {sc.checkpoint_s:.1f} s checkpoint of 80 GB", fontsize=style.SMALL_PT)

        spec = sc.speculative_us if math.isfinite(sc.speculative_us) else 1.5e6
        for bar, v in zip(self._lat_bars, (spec, sc.locking_mean_us, sc.locking_worst_us), strict=True):
            bar.set_height(v)
        self._timeout_line.set_ydata([sc.timeout_ms * 1e3] * 2)
        self._expired_text.set_visible(not sc.lease_alive)
        ax_l.set_title(f"decision latency (step {cm.DECISION_US + cm.RTT_US:g} µs = decision + RTT)", fontsize=style.SMALL_PT)


def _row(name: str, *cells) -> str:
    return f"<tr><td>{name}</td>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def _pct(x: float) -> str:
    return f"{x:.3%}" if x < 0.01 else f"{x:.1%}"


def readout_html(sc: cm.ConductorScenario) -> str:
    """The readout: the chosen policy's rates, the latency model, the lease timeout verdict."""
    head = (f"<b>{html.escape(sc.policy)}</b>, C = {sc.concurrent} schedulers, load {sc.load:.2f}, "
            f"staleness {sc.staleness_ms:g} ms &nbsp; <i>({html.escape(backend())} backend, "
            f"{sc.result.trials:,} trials)</i>")
    verdict = ("<b style='color:#009E73'>below</b>" if sc.meets_article else "<b style='color:#D55E00'>above</b>")
    rows = (_row("round conflict rate", _pct(sc.conflict_rate), "rounds with a refused lease")
            + _row("birthday bound (empty, 1 slot)", _pct(sc.birthday), "")
            + _row("lease failure rate", _pct(sc.failure_rate), f"{verdict} C26's 0.001 % of leases")
            + _row("utilization", f"{sc.utilization:.1%}", "")
            + _row("preemptions / 1,000 leases", f"{sc.preemptions_per_1000():.1f}",
                   f"{sc.checkpoint_s:.1f} s checkpoint each")
            + _row("speculative latency", f"{sc.speculative_us:.0f} µs", "step / (1 - failure rate)")
            + _row("one lock: mean / worst", f"{sc.locking_mean_us:.0f} / {sc.locking_worst_us:.0f} µs",
                   "(C + 1) / 2 and C steps"))
    if sc.lease_alive:
        timeout = (f"lease timeout {sc.timeout_ms:.3g} ms: the lease is alive when validated; "
                   f"a vanished holder idles its devices up to {sc.timeout_ms:.3g} ms")
    else:
        timeout = f"<b style='color:#D55E00'>{html.escape(cm.EXPIRED_MESSAGE)}</b>"
    full = f"<br><b style='color:#D55E00'>{html.escape(cm.FULL_MESSAGE)}</b>" if sc.view_full else ""
    return (f"<div class='magnum-readout'>{head}<table cellpadding=2>{rows}</table>{timeout}{full}</div>")


def conductor_explorer(**kwargs) -> ConductorExplorer:
    """Build the notebook-03 explorer; display ``.widget``.

    Keyword arguments: sizes ``nodes`` (2,000), ``slots`` (8), ``trials`` (1,000) and ``seed``,
    kept small so a change answers in well under 150 ms; starting values ``staleness_ms``,
    ``concurrent``, ``load``, ``policy``, ``timeout_ms``.
    """
    return ConductorExplorer(**kwargs)


# (control, value) changes that benchmarks/bench_widgets.py replays.
BENCH_STEPS = [("concurrent", 20), ("load", 0.9), ("staleness_ms", 10.0), ("policy", "two-choices"),
               ("timeout_ms", 1.0), ("concurrent", 10), ("load", 0.7), ("staleness_ms", 2.0),
               ("policy", "least-loaded"), ("timeout_ms", 0.01), ("policy", "random"), ("timeout_ms", 100.0)]
