"""Serving explorer (notebook 11): load, token budget, KV pages, P:D split and router.

UI only: every number comes from :func:`magnum_lib.widgets.serving_model.evaluate`.

    explorer = serving_explorer()
    explorer.widget                          # display it
    explorer.controls["load"].value = 4.0    # in a test
    explorer.scenario.summary["ttft_ms"]["p90"]
"""
from __future__ import annotations

import ipywidgets as widgets
import numpy as np

from magnum_lib.serving import ROUTERS
from magnum_lib.widgets import serving_model, style
from magnum_lib.widgets._base import BlittedExplorer, new_figure, slider

_TTFT, _TPOT, _SLO = style.colors(("ttft", "tpot", "sla"))
BUDGETS = (128, 256, 512, 1024, 2048)
KV_BLOCKS = (1_500, 3_000, 6_000, 12_000, 20_000, 40_000, 82_949)   # 82,949: all 8 H100s' memory left


def _cdf(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = np.sort(x[~np.isnan(x)])
    return x, (np.arange(1, x.size + 1) / x.size if x.size else x)


class ServingExplorer(BlittedExplorer):
    """Sliders: load (x the trace's rate), token budget, KV pages per replica, P:D split of
    four replicas, router; two panels: the CDFs of TTFT and of TPOT, with the SLOs."""

    css_class = "magnum-serving-explorer"

    def __init__(self, load: float = 2.0, token_budget: int = 512, kv_blocks: int = 20_000,
                 split: str = "colocated", router: str = "least-outstanding", n: int = 40,
                 slo_ttft_s: float = 2.0, slo_tpot_s: float = 0.1):
        self.n, self.slo = int(n), (float(slo_ttft_s), float(slo_tpot_s))
        controls = {
            "load": slider(widgets.FloatLogSlider, "load (x trace rate)", value=load, base=2, min=-1, max=3,
                           step=0.125, readout_format=".2f"),
            "token_budget": slider(widgets.SelectionSlider, "token budget", options=BUDGETS, value=token_budget),
            "kv_blocks": slider(widgets.SelectionSlider, "KV pages / replica", options=KV_BLOCKS, value=kv_blocks),
            "split": slider(widgets.SelectionSlider, "P:D (4 replicas)", options=tuple(serving_model.SPLITS),
                            value=split),
            "router": widgets.Dropdown(description="router", options=tuple(ROUTERS), value=router,
                                       style={"description_width": "150px"}, layout=widgets.Layout(width="420px")),
        }
        super().__init__(controls, new_figure(9.0, 3.8))
        self.figure.subplots_adjust(left=0.08, right=0.98, bottom=0.17, top=0.86, wspace=0.25)
        a1, a2 = self.figure.subplots(1, 2)
        (self._ttft,) = a1.plot([], [], color=_TTFT, lw=2.5, drawstyle="steps-post", label="TTFT")
        (self._tpot,) = a2.plot([], [], color=_TPOT, lw=2.5, drawstyle="steps-post", label="TPOT")
        a1.axvline(self.slo[0], color=_SLO, lw=2, ls=":", label="SLO")
        a2.axvline(self.slo[1] * 1e3, color=_SLO, lw=2, ls=":", label="SLO")
        a1.set_xscale("log")
        a2.set_xscale("log")
        a1.set_xlim(0.02, 200.0)
        a2.set_xlim(1.0, 3000.0)   # room right of the 100 ms SLO line for the legend
        for ax, what in ((a1, f"time to first token (s, log); SLO {self.slo[0]:g} s"),
                         (a2, f"time per output token (ms, log); SLO {self.slo[1] * 1e3:g}")):
            ax.set_ylim(0.0, 1.02)
            ax.set_xlabel(what, fontsize=style.FONT_PT)
            ax.tick_params(labelsize=style.SMALL_PT)
            style.legend(ax, loc="lower right", framealpha=0.95)
        a1.set_ylabel("fraction of requests", fontsize=style.FONT_PT)
        self._title = self.figure.text(0.5, 0.97, "", ha="center", va="top", fontsize=style.FONT_PT + 1)
        self._axes = [a1, a2]
        self._animated = [self._ttft, self._tpot, self._title]
        for artist in self._animated:
            artist.set_animated(True)
        self.update()

    def evaluate(self) -> serving_model.ServingScenario:
        c = self.controls
        return serving_model.evaluate(c["load"].value, c["token_budget"].value, c["kv_blocks"].value,
                                      c["split"].value, c["router"].value, n=self.n, slo_ttft_s=self.slo[0],
                                      slo_tpot_s=self.slo[1])

    def draw(self, sc: serving_model.ServingScenario) -> None:
        self._ttft.set_data(*_cdf(np.clip(sc.ttft_s, 0.02, 200.0)))
        self._tpot.set_data(*_cdf(np.clip(sc.tpot_s * 1e3, 1.0, 3000.0)))
        s = sc.summary
        self._title.set_text(f"{s['finished']} of {s['requests']} served; SLO met by {s['slo_attainment']:.0%}")

    def readout_html(self, sc: serving_model.ServingScenario) -> str:
        s = sc.summary
        ms = lambda d, p: "-" if d[p] is None else f"{d[p]:,.0f}"  # noqa: E731
        tpot = lambda p: "-" if s["tpot_ms"][p] is None else f"{s['tpot_ms'][p]:.1f}"  # noqa: E731
        pre = s["preemptions"]
        note = f"<br><i>{sc.note}</i>" if sc.note else ""
        return ("<div class='magnum-readout' style='font-size:13px'>"
                f"<b>goodput</b>: {s['goodput_rps_per_gpu']:.3f} req/s per GPU "
                f"(SLO met by {s['slo_attainment']:.0%})<br>"
                f"TTFT p50 / p90: {ms(s['ttft_ms'], 'p50')} / {ms(s['ttft_ms'], 'p90')} ms<br>"
                f"TPOT p50 / p99: {tpot('p50')} / {tpot('p99')} ms<br>"
                f"prefix hit rate: {s['prefix_hit_rate']:.1%}; KV use mean {s['kv_utilization']['mean']:.0%}<br>"
                f"preemptions (swap): {pre['swap']}; refused: {s['refused']}<br>"
                f"first {self.n} Mooncake conversation requests, answers cut to "
                f"{serving_model.OUTPUT_CAP} tokens; Llama 3 70B, 4 x 8 H100{note}</div>")


def serving_explorer(**initial) -> ServingExplorer:
    """Build the notebook-11 explorer; display ``.widget``. Optional starting values: ``load``,
    ``token_budget``, ``kv_blocks``, ``split``, ``router``, ``n`` (requests)."""
    return ServingExplorer(**initial)


# (control, value) changes that benchmarks/bench_widgets.py replays.
BENCH_STEPS = [("load", 4.0), ("router", "prefix-aware"), ("token_budget", 1024), ("kv_blocks", 6_000),
               ("split", "2:2"), ("load", 2.0), ("router", "least-outstanding"), ("token_budget", 512),
               ("kv_blocks", 20_000), ("split", "colocated")]
