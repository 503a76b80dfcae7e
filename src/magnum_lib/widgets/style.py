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
    # time-division packing (06); the Gantt chart's transfers and idle device
    "packed": OKABE_ITO["blue"], "exclusive": OKABE_ITO["orange"], "dynamic": OKABE_ITO["green"],
    "transfer": GREY, "idle": OKABE_ITO["vermillion"], "arrival": OKABE_ITO["black"],
    # simulator presets, the evolution (07, 08)
    "borg_like": OKABE_ITO["black"], "borg_plus": OKABE_ITO["purple"], "cheetah": OKABE_ITO["orange"],
    "magnum_v1": OKABE_ITO["sky"], "magnum_v2": OKABE_ITO["blue"],
    # the parts of a decision's latency (07)
    "round_wait": OKABE_ITO["sky"], "scheduling": OKABE_ITO["orange"], "rtt": OKABE_ITO["blue"],
    "validation": OKABE_ITO["green"], "retries": OKABE_ITO["purple"], "dispatch_wait": OKABE_ITO["yellow"],
    # device types (00, 04, 07: utilization per type)
    "h100_sxm": OKABE_ITO["blue"], "mi300x": OKABE_ITO["orange"], "mtia_v2": OKABE_ITO["green"],
    "a100_sxm": OKABE_ITO["sky"], "v100": OKABE_ITO["blue"], "p100": OKABE_ITO["orange"], "k80": OKABE_ITO["green"],
    # replay policies (10): fifo-strict/fifo-skip/sjf/srtf/las are told apart in one figure;
    # the fairness and placement policies reuse the neutral colours
    "fifo-strict": OKABE_ITO["black"], "fifo-skip": OKABE_ITO["orange"], "sjf": OKABE_ITO["sky"],
    "srtf": OKABE_ITO["green"], "las": OKABE_ITO["blue"], "gavel": OKABE_ITO["purple"], "gavel-blind": GREY,
    "ftf": OKABE_ITO["yellow"], "fgd": OKABE_ITO["purple"],
    # energy (09): power, run time, energy against the clock
    "power": OKABE_ITO["blue"], "time": OKABE_ITO["orange"], "energy": OKABE_ITO["green"],
    "sla-clock": OKABE_ITO["purple"], "optimum": OKABE_ITO["black"],
    # serving (11): batching modes and routers (power-of-two is "two-choices", as in 03)
    "static": OKABE_ITO["black"], "continuous": OKABE_ITO["blue"], "chunked": OKABE_ITO["green"],
    "round-robin": GREY, "least-outstanding": OKABE_ITO["orange"], "prefix-aware": OKABE_ITO["purple"],
    "ttft": OKABE_ITO["blue"], "tpot": OKABE_ITO["orange"],
    # one explorer's highlighted setting (a star, a point)
    "here": OKABE_ITO["yellow"],
}
_ALIASES = {"power of two": "two-choices", "two_choices": "two-choices", "power-of-two": "two-choices",
            "d=1": "random", "d=2": "two-choices", "d=3": "three-choices", "least_loaded": "least-loaded",
            "least_loaded_stale": "least-loaded", "push-pull": "pushpull", "cheapest": "cheapest_meeting_sla",
            "fastest": "fastest_first", "lock": "pessimistic", "omega": "optimistic",
            "fifo": "fifo-strict", "fifo_strict": "fifo-strict", "fifo_skip": "fifo-skip", "tiresias": "las",
            "h100": "h100_sxm", "a100": "a100_sxm", "mtia": "mtia_v2", "run time": "time",
            "round wait": "round_wait", "dispatch wait": "dispatch_wait", "dispatch": "dispatch_wait",
            "leases": "speculative", "locks": "pessimistic"}

# Every colour the suite draws data with: the palette, the neutral grey, and white (edges, boxes).
ALLOWED = frozenset(c.lower() for c in (*OKABE_ITO.values(), GREY, "#FFFFFF"))

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


def colors(names) -> list[str]:
    """:func:`color` for each of ``names``, e.g. a figure's policies in order."""
    return [color(n) for n in names]


def categorical(n: int) -> list[str]:
    """``n`` colours for categories with no house colour (jobs of a Gantt chart, steps of a
    journey), cycling the palette without vermillion (the article's, and idle) and black
    (marks); yellow, faint on white, comes last."""
    cycle = [OKABE_ITO[k] for k in ("blue", "orange", "green", "purple", "sky", "yellow")]
    return [cycle[i % len(cycle)] for i in range(n)]


def apply() -> None:
    """Use the house style for every figure made with pyplot from now on (notebooks)."""
    mpl.rcParams.update(RC)


def legend(ax, outside: bool = False, below: float | None = None, **kwargs):
    """A legend that covers no data: the best free corner, beside the axes (``outside``), or
    under the x-axis label (``below``: the gap, in axes heights, from the axes' bottom edge;
    the figure's bottom margin must leave room)."""
    kwargs.setdefault("fontsize", SMALL_PT)
    if below is not None:
        kwargs.setdefault("loc", "upper center")
        kwargs.setdefault("bbox_to_anchor", (0.5, -below))
        kwargs.setdefault("ncol", 2)
        kwargs.setdefault("borderaxespad", 0.0)
        kwargs.setdefault("columnspacing", 1.0)
    elif outside:
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
