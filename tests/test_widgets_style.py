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
* every text inside the figure (nothing cut off);
* no marker a legend names drawn outside its axes (the point left the view, its entry stayed);
* after every slider is moved to its minimum and to its maximum, and under each option of
  the explorer's first menu with every slider at its minimum, then at its maximum, the
  same (a legend clear of the data at the defaults can cover it at an extreme: the
  cheetah preset at low load, where every latency is low).

and its controls must have

* every description on one line (its measured width fits the description width; a
  button's label fits the button);
* sliders fine enough to drag: a track of at least 280 px (a 70 px drag moves at most a
  quarter of the range) and at least 20 steps across a float range (an integer slider's
  step is a unit of its model: GPUs come 4 to a node);
* the same time unit on the plot as in the readout's table headers.
"""
from __future__ import annotations

import importlib
import pkgutil
import re

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


def _legend_labels(ax) -> set[str]:
    legend = ax.get_legend()
    if legend is None or not legend.get_visible():
        return set()
    return {t.get_text() for t in legend.texts}


def _marker_points(artist) -> np.ndarray:
    """Data coordinates of the markers an artist draws (markers-only lines and scatters)."""
    if isinstance(artist, Line2D):
        if artist.get_marker() in (None, "None", "", " ") or not artist.get_visible():
            return np.empty((0, 2))
        return np.asarray(artist.get_xydata(), dtype=float).reshape(-1, 2)
    if isinstance(artist, Collection) and artist.get_visible() and artist.get_offsets() is not None:
        return np.asarray(artist.get_offsets(), dtype=float).reshape(-1, 2)
    return np.empty((0, 2))


def legend_points_outside(fig) -> list[str]:
    """Markers whose artist the legend names but that lie outside the axes' view."""
    bad = []
    for ax in fig.axes:
        named = _legend_labels(ax)
        if not named:
            continue
        (x0, x1), (y0, y1) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
        for artist in [*ax.lines, *ax.collections]:
            if artist.get_label() not in named:
                continue
            xy = _marker_points(artist)
            xy = xy[np.isfinite(xy).all(axis=1)]
            out = (xy[:, 0] < x0) | (xy[:, 0] > x1) | (xy[:, 1] < y0) | (xy[:, 1] > y1)
            if out.any():
                bad.append(f"{artist.get_label()[:30]!r} is in the legend but drawn outside the axes "
                           f"at {xy[out][0].tolist()}")
    return bad


def legends_over_points(fig) -> list[str]:
    """Scatter points (collections) under a legend's box (lines: :func:`legends_over_data`)."""
    renderer = fig.canvas.get_renderer()
    bad = []
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None or not legend.get_visible():
            continue
        box = legend.get_window_extent(renderer)
        for coll in ax.collections:
            xy = _marker_points(coll)
            if len(xy) and coll.get_array() is None:
                hit = _inside(coll.get_offset_transform().transform(xy), box)
                if hit.any():
                    bad.append(f"the legend of {ax.get_title()[:30]!r} covers {int(hit.sum())} of the "
                               f"{len(xy)} points of {coll.get_label()[:30]!r}")
    return bad


def problems(fig) -> list[str]:
    fig.canvas.draw()          # lay out ticks and legends (animated artists keep their properties)
    _mark_ticks(fig)
    return [*small_texts(fig), *foreign_colours(fig), *unlabelled_axes(fig), *legends_over_data(fig),
            *legends_over_points(fig), *legend_points_outside(fig), *cut_off(fig)]


def figure_layout_problems(fig) -> list[str]:
    """The checks that also hold for a notebook's own figures (tests/test_widgets_notebook_figures.py):
    no legend over data, no legend entry for a point off the axes. (Cut-off text is not
    one of them there: the inline backend saves with a tight box, which grows to fit it.)"""
    fig.canvas.draw()
    return [*legends_over_data(fig), *legends_over_points(fig), *legend_points_outside(fig)]


# -- the controls ------------------------------------------------------------------------------

CHAR_PX = 13          # JupyterLab's widget font size (--jp-widgets-font-size)
READOUT_PX = 90       # a slider's readout and margins (ipywidgets 8: 72 px readout + gaps)
BUTTON_PX = 148       # ipywidgets' default button width (--jp-widgets-inline-width-short)
MIN_TRACK_PX = 280    # a 70 px drag moves at most a quarter of the range
MIN_STEPS = 20


def text_px(text: str) -> float:
    """Width of ``text`` in px at the widgets' 13 px font, measured with DejaVu Sans (wider
    than the system fonts browsers use, so a label that fits here fits there)."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    width, _h, _d = TextToPath().get_text_width_height_descent(text, FontProperties(family="DejaVu Sans",
                                                                                     size=CHAR_PX), ismath=False)
    return width


def _px(value, default: float | None = None) -> float | None:
    value = (value or "").strip()
    return float(value[:-2]) if value.endswith("px") else default


def _all_controls(explorer) -> list:
    """The explorer's controls and every other widget in its box (buttons)."""
    import ipywidgets

    seen, stack = [], [explorer.widget]
    while stack:
        w = stack.pop()
        if isinstance(w, ipywidgets.Box):
            stack.extend(w.children)
        elif isinstance(w, ipywidgets.DOMWidget):
            seen.append(w)
    return seen


def _is_slider(w) -> bool:
    import ipywidgets

    return isinstance(w, (ipywidgets.IntSlider, ipywidgets.FloatSlider, ipywidgets.FloatLogSlider,
                          ipywidgets.SelectionSlider))


def cut_descriptions(explorer) -> list[str]:
    """Descriptions and button labels wider than the room they are given (the browser cuts
    them with an ellipsis: "hedge at x expected...")."""
    import ipywidgets

    bad = []
    for w in _all_controls(explorer):
        if isinstance(w, ipywidgets.Button):
            room = _px(w.layout.width, BUTTON_PX) if w.layout.width != "auto" else None
            if room is not None and text_px(w.description) + 16 > room:
                bad.append(f"button {w.description!r} ({text_px(w.description):.0f} px) is cut at {room:.0f} px")
            continue
        description = getattr(w, "description", "")
        if not description:
            continue
        room = _px(getattr(w.style, "description_width", ""), None)
        if room is None:
            continue
        if text_px(description) + 8 > room:
            bad.append(f"{description!r} ({text_px(description):.0f} px) is cut at {room:.0f} px")
        if isinstance(w, ipywidgets.ToggleButtons):
            bw = _px(getattr(w.style, "button_width", ""), None)
            for label in w._options_labels:
                if bw is not None and text_px(label) + 16 > bw:
                    bad.append(f"toggle {label!r} ({text_px(label):.0f} px) is cut at {bw:.0f} px")
    return bad


def coarse_sliders(explorer) -> list[str]:
    import ipywidgets

    bad = []
    for name, w in explorer.controls.items():
        if not _is_slider(w):
            continue
        width = _px(w.layout.width, 300.0)   # ipywidgets' default slider width is 300 px
        track = width - _px(w.style.description_width, 0.0) - READOUT_PX
        if track < MIN_TRACK_PX:
            bad.append(f"{name}: a {track:.0f} px track (70 px drags {70 / track:.0%} of the range)")
        if isinstance(w, (ipywidgets.FloatSlider, ipywidgets.FloatLogSlider)):
            steps = (w.max - w.min) / w.step
            if steps < MIN_STEPS - 1e-9:
                bad.append(f"{name}: {steps:.0f} steps from {w.min:g} to {w.max:g}")
    return bad


_TIME_UNIT = re.compile(r"\((?:[^()]*?,\s*)?(s|ms|µs|us|ns|min|h|d)(?:\s*,[^()]*)?\)")


def mixed_time_units(explorer) -> list[str]:
    """A time on the plot in another unit than the readout's table gives it (the arena
    plotted JCTs in seconds beside a table in hours)."""
    headers = re.findall(r"<th>([^<]*)</th>", explorer.readout.value or "")
    table_units = {m.group(1) for h in headers for m in [_TIME_UNIT.search(h)] if m}
    if not table_units:
        return []
    bad = []
    for ax in explorer.figure.axes:
        for label in (ax.get_xlabel(), ax.get_ylabel()):
            m = _TIME_UNIT.search(label)
            if m and m.group(1) not in table_units:
                bad.append(f"axis {label!r} in {m.group(1)}, the readout's table in {sorted(table_units)}")
    return bad


def _slider_ends(explorer):
    """(control, value, check) moves: each slider to its minimum and maximum (checked), then back."""
    for name, w in explorer.controls.items():
        if not _is_slider(w):
            continue
        start = w.value
        for value in _ends(w):
            yield name, value, True
        yield name, start, False


def _ends(w) -> tuple:
    if isinstance(w, __import__("ipywidgets").SelectionSlider):
        return tuple(o[1] if isinstance(o, tuple) else o for o in (w.options[0], w.options[-1]))
    return (w.min, w.max)


def _extremes(explorer):
    """Each slider to its ends; then, under each other option of the explorer's first menu
    (a preset, a device mix), every slider at its minimum at once, and at its maximum (the
    cheetah preset at load 0.1 has a p50 of 0.02 ms, where a corner legend sat)."""
    import ipywidgets

    yield from _slider_ends(explorer)
    menu = next(((n, w) for n, w in explorer.controls.items() if isinstance(w, ipywidgets.Dropdown)), None)
    if menu is None:
        return
    name, w = menu
    start = w.value
    sliders = [(n, c) for n, c in explorer.controls.items() if _is_slider(c)]
    starts = {n: c.value for n, c in sliders}
    for option in w.options:
        value = option[1] if isinstance(option, tuple) else option
        if value == start:
            continue
        yield name, value, True
        for end in (0, 1):
            for k, (n, c) in enumerate(sliders):
                yield n, _ends(c)[end], k == len(sliders) - 1
    yield name, start, False
    for n, v in starts.items():
        yield n, v, False


def _check_extremes(module) -> bool:
    """The extremes run on the compiled backend; on the pure-Python one only for an explorer
    whose sizes differ there (``pure_python_note()``): elsewhere its numbers, hence its
    figures, are the compiled ones (parity), and its runs are ten times slower."""
    from magnum_lib import backend

    note = getattr(module, "pure_python_note", None)
    return backend() == "compiled" or bool(note and note())


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
    found = {"defaults": problems(explorer.figure) + mixed_time_units(explorer),
             "controls": cut_descriptions(explorer) + coarse_sliders(explorer)}
    moves = [(c, v, True) for c, v in steps] + (list(_extremes(explorer)) if _check_extremes(module) else [])
    state = {}
    for control, value, check in moves:
        explorer.controls[control].value = value
        state[control] = value
        if check:
            where = ", ".join(f"{k}={v!r}" for k, v in state.items())
            found[where] = problems(explorer.figure) + mixed_time_units(explorer)
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
