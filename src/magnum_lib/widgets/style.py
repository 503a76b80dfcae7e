"""One look for every figure of the suite, readable from the back of a room.

* fonts of at least 11 pt at the default size (:data:`FONT_PT`, :data:`SMALL_PT`);
* the Okabe-Ito palette (distinguishable with every common colour-vision deficiency), and
  one colour per policy or concept across all notebooks and explorers (:func:`color`);
* uniform tick formats (:func:`thousands`), legends placed where they cover no data
  (:func:`legend`), layouts that keep every label inside the figure.

Notebooks call :func:`apply` once (their static figures then follow the same rules); the
explorers build their figures with :func:`magnum_lib.widgets._base.new_figure`, which uses
these sizes.
"""
from __future__ import annotations

import matplotlib as mpl
from matplotlib.ticker import FuncFormatter

FONT_PT = 12      # labels and titles
SMALL_PT = 11     # ticks, legends, annotations: never smaller

# Okabe & Ito (2008), "Color Universal Design".
OKABE_ITO = {"black": "#000000", "orange": "#E69F00", "sky": "#56B4E9", "green": "#009E73",
             "yellow": "#F0E442", "blue": "#0072B2", "vermillion": "#D55E00", "purple": "#CC79A7"}
GREY = "#999999"
PALETTE = [OKABE_ITO[k] for k in ("blue", "orange", "green", "vermillion", "purple", "sky", "yellow", "black")]

# The same thing has the same colour everywhere (aliases map to one key).
_COLORS = {
    # the article's figures and rules, wherever they appear
    "article": OKABE_ITO["vermillion"], "claim": OKABE_ITO["vermillion"], "sla": OKABE_ITO["vermillion"],
    "theory": OKABE_ITO["black"], "other": GREY,
    # placement policies (notebooks 03, 04)
    "random": OKABE_ITO["black"], "two-choices": OKABE_ITO["blue"], "least-loaded": OKABE_ITO["orange"],
    "three-choices": OKABE_ITO["green"],
    # regional modes (03)
    "speculative": OKABE_ITO["green"], "pessimistic": OKABE_ITO["purple"], "optimistic": OKABE_ITO["sky"],
    # planners (02)
    "greedy": OKABE_ITO["orange"], "flow": OKABE_ITO["blue"], "assignment": OKABE_ITO["sky"],
    "lp": OKABE_ITO["green"],
    # device choice (04)
    "cheapest_meeting_sla": OKABE_ITO["green"], "fastest_first": OKABE_ITO["purple"],
    # gossip modes and merges (05)
    "push": OKABE_ITO["blue"], "pull": OKABE_ITO["orange"], "pushpull": OKABE_ITO["green"],
    "lww": OKABE_ITO["blue"], "vc": OKABE_ITO["green"],
    # hedging (04)
    "hedged": OKABE_ITO["blue"], "unhedged": OKABE_ITO["black"],
}
_ALIASES = {"power of two": "two-choices", "two_choices": "two-choices", "power-of-two": "two-choices",
            "d=1": "random", "d=2": "two-choices", "d=3": "three-choices", "least_loaded": "least-loaded",
            "least_loaded_stale": "least-loaded", "push-pull": "pushpull", "cheapest": "cheapest_meeting_sla",
            "fastest": "fastest_first", "lock": "pessimistic", "omega": "optimistic"}

RC = {
    "font.size": FONT_PT, "axes.titlesize": FONT_PT, "axes.labelsize": FONT_PT,
    "xtick.labelsize": SMALL_PT, "ytick.labelsize": SMALL_PT, "legend.fontsize": SMALL_PT,
    "legend.framealpha": 0.9, "figure.titlesize": FONT_PT + 1,
    "axes.prop_cycle": mpl.cycler(color=PALETTE), "lines.linewidth": 2.0, "lines.markersize": 7,
    "axes.grid": True, "grid.alpha": 0.3, "axes.spines.top": False, "axes.spines.right": False,
    "figure.constrained_layout.use": True, "savefig.bbox": "tight",
}


def color(name: str) -> str:
    """The suite's colour for a policy, mode or concept ("random", "two-choices", "article", ...)."""
    key = str(name).strip().lower()
    key = _ALIASES.get(key, key)
    if key not in _COLORS:
        raise KeyError(f"no house colour for {str(name)[:40]!r}; known: {', '.join(sorted(_COLORS))}")
    return _COLORS[key]


def apply() -> None:
    """Use the house style for every figure made with pyplot from now on (notebooks)."""
    mpl.rcParams.update(RC)


def legend(ax, outside: bool = False, **kwargs):
    """A legend that covers no data: the best free corner, or beside the axes (``outside``)."""
    kwargs.setdefault("fontsize", SMALL_PT)
    if outside:
        kwargs.setdefault("loc", "upper left")
        kwargs.setdefault("bbox_to_anchor", (1.02, 1.0))
        kwargs.setdefault("borderaxespad", 0.0)
    else:
        kwargs.setdefault("loc", "best")
    return ax.legend(**kwargs)


def _thousands(value, _pos) -> str:
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:g}"


def thousands(axis) -> None:
    """Linear tick labels with thousands separators (1,000 not 1000 or 1e3)."""
    axis.set_major_formatter(FuncFormatter(_thousands))


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def decade_label(value: float) -> str:
    """One rule for log-axis ticks: 0.01 .. 1,000 written out, other decades as 10ᵏ.

    Plain text (no mathtext), so it costs an explorer nothing to render.
    """
    if value <= 0:
        return f"{value:g}"
    if 0.01 <= value <= 1000:
        return f"{value:,.10g}"
    exponent = round(__import__("math").log10(value))
    if abs(value / 10.0**exponent - 1) < 1e-9:
        return "10" + str(exponent).translate(_SUPERSCRIPT)
    return f"{value:.3g}"


def log_axis(ax, decades, axis: str = "y") -> None:
    """A log axis with fixed decade ticks labelled by :func:`decade_label`, no minor ticks."""
    from matplotlib.ticker import FixedLocator, NullLocator

    which = ax.yaxis if axis == "y" else ax.xaxis
    (ax.set_yscale if axis == "y" else ax.set_xscale)("log")
    which.set_major_locator(FixedLocator(decades))
    which.set_major_formatter(FuncFormatter(lambda v, _pos: decade_label(v)))
    which.set_minor_locator(NullLocator())


def finish(fig) -> None:
    """House font sizes on every axes of an explorer figure (built without pyplot, so rcParams
    set later by :func:`apply` do not reach it): ticks at :data:`SMALL_PT`, labels at :data:`FONT_PT`."""
    for ax in fig.axes:
        ax.tick_params(labelsize=SMALL_PT)
        ax.xaxis.label.set_size(FONT_PT)
        ax.yaxis.label.set_size(FONT_PT)
        ax.title.set_size(max(ax.title.get_size(), FONT_PT))
