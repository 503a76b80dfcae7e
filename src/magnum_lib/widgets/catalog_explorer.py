"""Catalog explorer (notebook 00): one accelerator's public figures beside the article's,
and a roofline showing where a chosen request lands on it.

UI only: the numbers come from :mod:`magnum_lib.widgets.catalog_model` and
:mod:`magnum_lib.hardware`.
"""
from __future__ import annotations

import html
import math

import ipywidgets as widgets
import numpy as np

from magnum_lib import hardware
from magnum_lib.widgets import catalog_model, style
from magnum_lib.widgets._base import SLIDER_LAYOUT, SLIDER_STYLE, Explorer, new_figure, slider

_X_DECADES = (-2, 4)    # the roofline's usual x view, 10^-2 .. 10^4 FLOP/byte
_Y_DECADES = (10, 16)   # and y view, 10^10 .. 10^16 FLOP/s


def _view(value: float, usual: tuple[int, int]) -> tuple[int, int]:
    """The decades an axis shows: the usual ones, widened by whole decades to hold ``value``
    with room to spare (a request far off the usual range stays on the plot, not past its edge)."""
    k = math.log10(value) if value > 0 and math.isfinite(value) else usual[0]
    return min(usual[0], math.floor(k - 0.3)), max(usual[1], math.ceil(k + 0.3))   # never on the edge


def _decades(lo: int, hi: int) -> list[float]:
    """Tick decades of the view, at most 8 labels (every other decade on a wide view)."""
    step = 1 if hi - lo <= 7 else 2
    return [10.0 ** k for k in range(lo, hi + 1, step)]
_PRECISIONS = ("bf16", "fp16", "fp8", "int8", "fp32")


class CatalogExplorer(Explorer):
    """Device and precision dropdowns, request size sliders; claims table and roofline.

    Attributes
    ----------
    widget, controls, readout, figure, image
        As for every explorer. Controls: ``"device"`` (catalog key), ``"precision"``,
        ``"gflop"`` (request size, GFLOP), ``"gbytes"`` (bytes moved, GB = 1e9 bytes).
    result : magnum_lib.hardware.Cost or None
        Roofline time/energy of the request on the device; None when the device lacks
        the precision (the readout says so).
    scenario : catalog_model.RequestScenario
    """

    css_class = "magnum-catalog-explorer"

    def __init__(self, catalog: hardware.Catalog | None = None, *, device: str = "h100_sxm",
                 precision: str = "bf16", gflop: float = 1000.0, gbytes: float = 10.0):
        self.catalog = catalog if catalog is not None else hardware.load_catalog()
        device = self.catalog.resolve(device)
        controls = {
            "device": widgets.Dropdown(options=[(a.name, k) for k, a in self.catalog.items()], value=device,
                                       description="device", style=SLIDER_STYLE,
                                       layout=widgets.Layout(**SLIDER_LAYOUT)),
            "precision": widgets.Dropdown(options=list(_PRECISIONS), value=precision, description="precision",
                                          style=SLIDER_STYLE),
            "gflop": slider(widgets.FloatLogSlider, "request (GFLOP)", value=gflop, base=10, min=-1, max=6,
                            step=0.1, readout_format=".3g"),
            "gbytes": slider(widgets.FloatLogSlider, "bytes moved (GB)", value=gbytes, base=10, min=-3, max=3,
                             step=0.1, readout_format=".3g"),
        }
        super().__init__(controls, new_figure(7.0, 4.4))
        self.figure.subplots_adjust(bottom=0.3)   # room for the legend under the axes
        self._ax = self.figure.add_subplot()
        self._init_artists()
        self.update()

    @property
    def result(self) -> hardware.Cost | None:
        """The latest roofline Cost, or None when the device lacks the precision."""
        return None if self.scenario is None else self.scenario.cost

    def _init_artists(self) -> None:
        ax = self._ax
        self._others = {}
        for key in self.catalog:
            (self._others[key],) = ax.plot([], [], lw=1, color=style.color("other"))
        (self._roof,) = ax.plot([], [], lw=3, color=style.OKABE_ITO["blue"], label="this device's roofline")
        (self._point,) = ax.plot([], [], "o", ms=10, color=style.OKABE_ITO["orange"], label="your request")
        self._ridge = ax.axvline(1.0, color=style.OKABE_ITO["blue"], ls=":", lw=1.5, label="ridge point")
        self._missing = ax.text(0.5, 0.5, "", transform=ax.transAxes, ha="center", va="center",
                                color=style.color("article"), fontsize=style.SMALL_PT, visible=False, wrap=True,
                                bbox={"facecolor": "white", "edgecolor": style.color("article")})
        ax.set(xscale="log", yscale="log", xlabel="arithmetic intensity (FLOP per byte moved)",
               ylabel="attainable FLOP/s")
        self._set_view(_X_DECADES, _Y_DECADES)
        # Under the axes: the view widens to keep the request on it, and then a roofline
        # can pass through any corner.
        style.legend(ax, below=0.25, ncol=3)

    def _set_view(self, xdec: tuple[int, int], ydec: tuple[int, int]) -> None:
        """Axis limits and plain-text decade ticks (fast, uniform) for the given decades."""
        ax = self._ax
        self._intensity = np.logspace(*xdec, 200)
        ax.set(xlim=(10.0 ** xdec[0], 10.0 ** xdec[1]), ylim=(10.0 ** ydec[0], 10.0 ** ydec[1]))
        style.log_axis(ax, _decades(*xdec), axis="x")
        style.log_axis(ax, _decades(*ydec))

    def evaluate(self) -> catalog_model.RequestScenario:
        c = self.controls
        return catalog_model.evaluate(self.catalog, c["device"].value, c["gflop"].value * 1e9,
                                      c["gbytes"].value * 1e9, c["precision"].value)

    def draw(self, sc: catalog_model.RequestScenario) -> None:
        p = sc.precision
        if sc.cost is not None:   # the request's point stays inside the axes
            self._set_view(_view(sc.intensity, _X_DECADES), _view(sc.achieved_flops, _Y_DECADES))
        x = self._intensity
        for key, line in self._others.items():
            acc = self.catalog[key]
            if p in acc.peak_flops and key != sc.device:
                line.set_data(x, catalog_model.roofline(acc, p, x))
            else:
                line.set_data([], [])
        ok = sc.cost is not None
        for artist in (self._roof, self._point, self._ridge):
            artist.set_visible(ok)
        self._missing.set_visible(not ok)
        name = self.catalog[sc.device].name
        short = sc.device   # the catalog key in the title (full names run off a 7-inch figure)
        if not ok:
            self._missing.set_text(f"{name} has no {p.upper()} peak")
            self._ax.set_title(f"{short}: no {p.upper()}", fontsize=style.FONT_PT)
            return
        acc = self.catalog[sc.device]
        self._roof.set_data(x, catalog_model.roofline(acc, p, x))
        self._point.set_data([sc.intensity], [sc.achieved_flops])
        self._ridge.set_xdata([sc.ridge, sc.ridge])
        self._ax.set_title(f"{short}, {p.upper()}: {sc.cost.bound}-bound request "
                           f"({sc.cost.time_s * 1e3:.3g} ms)", fontsize=style.FONT_PT)

    def readout_html(self, sc: catalog_model.RequestScenario) -> str:
        acc = self.catalog[sc.device]
        specs = "".join(f"<tr><td>{html.escape(k)}</td><td>{html.escape(v)}</td></tr>"
                        for k, v in catalog_model.spec_rows(acc))
        claims = catalog_model.claim_rows(self.catalog, sc.device)
        claim_html = "".join(
            f"<tr><td>{html.escape(r['claim'])}</td><td>{_num(r['article'])}</td><td>{_num(r['public'])}</td>"
            f"<td>{html.escape(r['unit'])}</td></tr>" for r in claims
        ) or "<tr><td colspan=4><i>the article gives no figures for this device</i></td></tr>"
        if sc.cost is None:
            req = f"<b style='color:crimson'>{html.escape(sc.error)}</b>"
        else:
            fastest = min(sc.others, key=sc.others.get)
            req = (f"request: <b>{sc.cost.time_s * 1e3:.3g} ms</b>, {sc.cost.energy_j:.3g} J at TDP, "
                   f"<b>{sc.cost.bound}-bound</b> (intensity {sc.intensity:.3g} vs ridge {sc.ridge:.3g} "
                   f"FLOP/B); fastest type for it: {html.escape(self.catalog[fastest].name)}")
        return (f"<div class='magnum-readout'><b>{html.escape(acc.name)}</b>"
                f"<table><tr><th>public figure</th><th></th></tr>{specs}</table>"
                f"<table><tr><th>article claim</th><th>article</th><th>public</th><th></th></tr>{claim_html}</table>"
                f"{req}</div>")


def _num(value) -> str:
    if isinstance(value, str):
        return html.escape(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "n/a"
    return f"{value:,.3g}" if isinstance(value, float) and abs(value) < 100 else f"{value:,.0f}"


def catalog_explorer(catalog: hardware.Catalog | None = None, **initial) -> CatalogExplorer:
    """Build the notebook-00 explorer; display ``.widget``.

    Parameters
    ----------
    catalog : Catalog, optional
        Default: ``hardware.load_catalog()`` (data/hardware.yaml).
    **initial
        Starting values: ``device`` (key or alias), ``precision``, ``gflop``, ``gbytes``.
    """
    return CatalogExplorer(catalog, **initial)


# (control, value) changes that benchmarks/bench_widgets.py replays.
BENCH_STEPS = [("device", "mi300x"), ("gflop", 1e5), ("device", "a100_sxm"), ("gbytes", 1.0),
               ("device", "h100_sxm"), ("gflop", 1000.0), ("gbytes", 10.0)]
