"""Every explorer's figure follows the shared style (``magnum_lib.widgets.style``).

Explorers are discovered the way ``benchmarks/bench_widgets.py`` finds them (every module
``magnum_lib/widgets/<name>_explorer.py`` with a factory ``<name>_explorer()`` and its
``BENCH_STEPS``), so a new explorer that bypasses the style fails here without being
listed. Each is built with its defaults and driven through its ``BENCH_STEPS``; after every
change its figure must have

* every visible text (ticks, labels, titles, legends, annotations) at >= 11 pt;
* every data colour (lines, markers, bars, filled regions, texts) from the palette
  (``style.ALLOWED``: Okabe-Ito, the neutral grey, white); colour-mapped images are exempt
  (they use viridis, which is colour-blind safe);
* on every axes a legend or direct labels (an annotation, or tick labels that name the bars);
* no legend over data: no point or segment of a visible line inside a legend's box;
* every text inside the figure (nothing cut off).
"""
from __future__ import annotations

import importlib
import pkgutil

import numpy as np
import pytest
from matplotlib.collections import Collection
from matplotlib.colors import to_hex, to_rgba
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.text import Text

import magnum_lib.widgets as widgets_pkg
from magnum_lib.widgets import style

pytestmark = pytest.mark.once  # run once (make unit): the figures' style, drawn the same on both backends

EXPLORERS = sorted(info.name for info in pkgutil.iter_modules(widgets_pkg.__path__) if info.name.endswith("_explorer"))
NEEDS_TRACES = {"arena_explorer"}   # replays a Philly slice of the real trace


# -- the checks, each returning a list of problems (empty: fine) ---------------------------

def _texts(fig):
    """Every text the figure draws: visible, not empty, and (tick labels) inside the view."""
    for t in fig.findobj(Text):
        if t.get_visible() and t.get_text().strip() and getattr(t, "_in_view", True):
            yield t


def small_texts(fig) -> list[str]:
    return [f"{t.get_text()[:30]!r} at {t.get_fontsize():g} pt" for t in _texts(fig)
            if t.get_fontsize() < style.SMALL_PT]


def _colour(c) -> str | None:
    """The colour as #rrggbb, or None when it paints nothing (transparent or 'none')."""
    if c is None or (isinstance(c, str) and c.lower() == "none"):
        return None
    rgba = to_rgba(c)
    return None if rgba[3] == 0 else to_hex(rgba[:3])


def foreign_colours(fig) -> list[str]:
    found = []
    for ax in fig.axes:
        artists = [*ax.lines, *ax.patches, *ax.collections, *ax.texts]
        legend = ax.get_legend()
        if legend is not None:
            artists += list(legend.texts)
        for a in artists:
            if not a.get_visible():
                continue
            if isinstance(a, Line2D):   # what it paints: the line if it has one, the markers if any
                has_line = a.get_linestyle() not in ("None", "", " ")
                has_marker = a.get_marker() not in (None, "None", "", " ")
                colours = ([a.get_color()] if has_line else []) + \
                    ([a.get_markerfacecolor(), a.get_markeredgecolor()] if has_marker else [])
            elif isinstance(a, Patch):
                colours = [a.get_facecolor(), a.get_edgecolor()] if a.get_fill() else [a.get_edgecolor()]
            elif isinstance(a, Collection):
                if a.get_array() is not None:      # colour-mapped (viridis): exempt
                    continue
                colours = [*a.get_facecolor(), *a.get_edgecolor()]
            elif isinstance(a, Text):
                colours = [a.get_color()]
            else:
                continue
            for c in colours:
                h = _colour(c)
                if h is not None and h not in style.ALLOWED:
                    found.append(f"{type(a).__name__} {a.get_label()[:20]!r}: {h}")
    return sorted(set(found))


def _categorical(labels) -> bool:
    words = [t.get_text().strip() for t in labels if t.get_text().strip()]
    return bool(words) and any(any(ch.isalpha() for ch in w) for w in words)


def unlabelled_axes(fig) -> list[str]:
    bad = []
    for k, ax in enumerate(fig.axes):
        if not ax.get_visible() or not ax.has_data():
            continue
        direct = any(t.get_visible() and t.get_text().strip() for t in ax.texts)
        names = _categorical(ax.get_yticklabels()) or _categorical(ax.get_xticklabels())
        if ax.get_legend() is None and not direct and not names and not fig.legends:
            bad.append(f"axes {k} ({ax.get_title()[:30]!r}) has no legend and no direct labels")
    return bad


def _inside(xy: np.ndarray, box, margin: float = 1.0) -> np.ndarray:
    return (xy[:, 0] > box.x0 + margin) & (xy[:, 0] < box.x1 - margin) & \
        (xy[:, 1] > box.y0 + margin) & (xy[:, 1] < box.y1 - margin)


def _segments_hit(xy: np.ndarray, box, clip=None) -> bool:
    """Does the polyline ``xy`` (display coordinates) enter ``box``? Sampled finely; with
    ``clip`` (the axes' box), only the part drawn inside the axes counts."""
    xy = xy[np.isfinite(xy).all(axis=1)]
    if len(xy) == 0:
        return False
    if len(xy) > 1:
        t = np.linspace(0.0, 1.0, 25)[:, None, None]
        xy = (xy[:-1] * (1 - t) + xy[1:] * t).reshape(-1, 2)
    if clip is not None:
        xy = xy[_inside(xy, clip, margin=-1.0)]
    return bool(_inside(xy, box).any())


def legends_over_data(fig) -> list[str]:
    renderer = fig.canvas.get_renderer()
    bad = []
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None or not legend.get_visible():
            continue
        box = legend.get_window_extent(renderer)
        for line in ax.lines:
            if not line.get_visible() or len(line.get_xydata()) == 0:
                continue
            xy = line.get_transform().transform(line.get_xydata())
            clip = ax.bbox if line.get_clip_on() else None      # what the axes clip is never drawn
            if line.get_linestyle() in ("None", "", " "):      # markers only: test the points
                hit = any(_segments_hit(p[None], box, clip) for p in xy)
            else:
                hit = _segments_hit(xy, box, clip)
            if hit:
                bad.append(f"the legend of {ax.get_title()[:30]!r} covers {line.get_label()[:30]!r}")
        for patch in ax.patches:
            if patch.get_visible() and patch.get_window_extent(renderer).overlaps(box) \
                    and patch.get_window_extent(renderer).width > 0:
                bad.append(f"the legend of {ax.get_title()[:30]!r} covers a bar")
    return bad


def cut_off(fig) -> list[str]:
    renderer = fig.canvas.get_renderer()
    fig_box = fig.bbox
    bad = []
    for t in _texts(fig):
        if t.get_wrap():
            continue      # wrapped notes are laid out inside the axes at draw time
        box = t.get_window_extent(renderer)
        if box.x0 < fig_box.x0 - 1 or box.x1 > fig_box.x1 + 1 or box.y0 < fig_box.y0 - 1 or box.y1 > fig_box.y1 + 1:
            bad.append(f"{t.get_text()[:30]!r} is cut off")
    for leg in [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend() is not None)]:
        box = leg.get_window_extent(renderer)
        if box.x0 < -1 or box.x1 > fig_box.x1 + 1 or box.y0 < -1 or box.y1 > fig_box.y1 + 1:
            bad.append("a legend is cut off")
    return bad


def _mark_ticks(fig) -> None:
    """Tag each tick label with whether its tick lies inside the view (drawn) or not."""
    for ax in fig.axes:
        for axis, lim in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
            lo, hi = sorted(lim)
            for tick in [*axis.get_major_ticks(), *axis.get_minor_ticks()]:
                inside = lo - 1e-9 * abs(hi - lo) <= tick.get_loc() <= hi + 1e-9 * abs(hi - lo)
                for label in (tick.label1, tick.label2):
                    label._in_view = inside and tick.get_visible() and label.get_visible()


def problems(fig) -> list[str]:
    fig.canvas.draw()          # lay out ticks and legends (animated artists keep their properties)
    _mark_ticks(fig)
    return [*small_texts(fig), *foreign_colours(fig), *unlabelled_axes(fig), *legends_over_data(fig), *cut_off(fig)]


# -- the explorers ---------------------------------------------------------------------------

def _build(name: str):
    module = importlib.import_module(f"magnum_lib.widgets.{name}")
    factory = getattr(module, name, None)
    assert callable(factory), f"{name} has no factory function {name}() (the benchmark calls it)"
    return module, factory()


def test_explorers_ignore_the_notebooks_rcparams():
    """Notebooks call style.apply() (constrained layout for pyplot figures) before they build
    an explorer: its figure must keep its fixed margins (no layout engine, no warning)."""
    import warnings

    import matplotlib as mpl

    from magnum_lib.widgets._base import new_figure

    with mpl.rc_context(style.RC), warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = new_figure()
        fig.subplots_adjust(left=0.2)
        assert fig.get_layout_engine() is None


def test_every_explorer_is_discovered():
    for name in ("queue_explorer", "packing_explorer", "system_explorer", "energy_explorer", "arena_explorer"):
        assert name in EXPLORERS


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.needs_traces] if n in NEEDS_TRACES else [])
                                  for n in EXPLORERS])
def test_explorer_figure_follows_the_style(name):
    module, explorer = _build(name)
    steps = getattr(module, "BENCH_STEPS", None)
    assert steps, f"{name} has no BENCH_STEPS (benchmarks/bench_widgets.py replays them)"
    assert {c for c, _ in steps} <= set(explorer.controls), f"{name}.BENCH_STEPS names an unknown control"
    found = {"defaults": problems(explorer.figure)}
    for control, value in steps:
        explorer.controls[control].value = value
        found[f"{control}={value!r}"] = problems(explorer.figure)
    found = {k: v for k, v in found.items() if v}
    assert not found, f"{name} bypasses the style: " + "; ".join(f"after {k}: {v[:4]}" for k, v in found.items())


def test_same_policy_same_colour_everywhere():
    """The explorers that draw policies or presets take their colours from style.color."""
    from magnum_lib.widgets import arena_explorer, conductor_explorer, packing_explorer

    for p, c in arena_explorer.COLORS.items():
        assert c == style.color(p)
    for p, c in packing_explorer._COLORS.items():
        assert c == style.color(p)
    for p, c in conductor_explorer._COLORS.items():
        assert c == style.color(p)
    # Within a family the colours differ, so one figure can tell them apart.
    families = [("fifo-strict", "fifo-skip", "sjf", "srtf", "las"), ("packed", "exclusive", "dynamic"),
                ("borg_like", "borg_plus", "cheetah", "magnum_v1", "magnum_v2"),
                ("random", "two-choices", "least-loaded"), ("h100_sxm", "mi300x", "mtia_v2"),
                ("static", "continuous", "chunked"),
                ("round-robin", "least-outstanding", "power-of-two", "prefix-aware"),
                ("round_wait", "scheduling", "rtt", "validation", "retries", "dispatch_wait")]
    for family in families:
        assert len(set(style.colors(family))) == len(family), family
        assert {c.lower() for c in style.colors(family)} <= style.ALLOWED
    with pytest.raises(KeyError):
        style.color("no-such-policy")


# -- the checks must be able to fail: known-bad figures ---------------------------------------

def _bad_figure(kind: str):
    from magnum_lib.widgets._base import new_figure

    fig = new_figure()
    ax = fig.add_subplot()
    x = np.linspace(0, 1, 20)
    if kind == "small font":
        ax.plot(x, x, color=style.color("las"), label="las")
        style.legend(ax, loc="lower right")
        ax.text(0.1, 0.8, "tiny note", fontsize=8)      # finish() does not touch annotations
    elif kind == "tab colour":
        ax.plot(x, x, color="tab:red", label="red")
        style.legend(ax, loc="lower right")
    elif kind == "no legend":
        ax.plot(x, x, color=style.color("las"))
    elif kind == "legend over data":
        ax.plot(x, np.full_like(x, 0.95), color=style.color("las"), label="a line near the top")
        ax.set_ylim(0, 1)
        style.legend(ax, loc="upper right")
    elif kind == "cut off":
        ax.plot(x, x, color=style.color("las"), label="las")
        style.legend(ax, loc="lower right")
        ax.set_ylabel("a label", fontsize=style.FONT_PT)
        fig.subplots_adjust(left=0.0)
    style.finish(fig)
    return fig


@pytest.mark.parametrize("kind,needle", [("small font", "at 8 pt"), ("tab colour", "#d62728"),
                                         ("no legend", "no legend"), ("legend over data", "covers"),
                                         ("cut off", "cut off")])
def test_the_checks_catch_a_bad_figure(kind, needle):
    found = problems(_bad_figure(kind))
    assert any(needle in p for p in found), found


def test_a_good_figure_passes():
    from magnum_lib.widgets._base import new_figure

    fig = new_figure()
    ax = fig.add_subplot()
    x = np.linspace(0, 1, 20)
    ax.plot(x, x ** 2, color=style.color("las"), label="las")
    ax.set_xlabel("x", fontsize=style.FONT_PT)
    style.legend(ax, loc="upper left")
    style.finish(fig)
    assert problems(fig) == []
