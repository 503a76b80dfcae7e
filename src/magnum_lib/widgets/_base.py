"""What every explorer shares: one figure redrawn in place, a readout, sliders wired up.

Why an Image widget and not ``plt.show()`` inside an Output widget: the figure is built
once with the object-oriented API (no pyplot state, so the inline backend never shows a
second copy), its artists are updated in place on each change, and the PNG bytes go to
one ``ipywidgets.Image``. That behaves the same in JupyterLab, under nbval and in
headless tests (which can read ``image.value``), for one Agg render per change.
"""
from __future__ import annotations

import io

import ipywidgets as widgets
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image

from magnum_lib.widgets import style

DPI = 80
#: Put before the readout when a run was interrupted (the figure is the last finished one).
INTERRUPTED_HTML = ("<p><b>Interrupted.</b> The figure and figures below are for the last "
                    "setting that finished; change a control to run again.</p>")
SLIDER_STYLE = {"description_width": "200px"}
SLIDER_LAYOUT = {"width": "580px"}
"""A slider's track is what is left of its width after the description and the readout
(about 90 px): 580 - 200 - 90 = 290 px, so a 70 px drag moves a quarter of the range at
most (tests/test_widgets_style.py); 200 px holds the longest description on one line."""
BUTTON_LAYOUT = {"width": "auto"}
"""Buttons size to their label (ipywidgets' fixed 148 px cut "p95 over 5 more seeds")."""


def pure_python() -> bool:
    """True on the pure-Python backend, where some explorers run smaller (and say so)."""
    from magnum_lib import backend

    return backend() == "python"


def size_note(what: str, python_size: int, compiled_size: int) -> str:
    """The line an explorer shows when the pure-Python backend runs it smaller."""
    return (f"pure-Python backend: {what} {python_size:,} here ({compiled_size:,} with the compiled "
            "backend, so each change answers in under 0.3 s; `faux-magnum doctor` says how to get it)")


def new_figure(width_in: float = 7.0, height_in: float = 3.6) -> Figure:
    """A pyplot-free figure with an Agg canvas attached.

    Fixed margins instead of a layout engine: constrained layout re-measures every tick
    label on every render, which doubles the cost of a slider change. ``layout="none"``
    because a notebook's :func:`style.apply` turns constrained layout on for pyplot figures,
    and a bare ``Figure()`` would take that from the rcParams too.
    """
    fig = Figure(figsize=(width_in, height_in), dpi=DPI, layout="none")
    fig.subplots_adjust(left=0.12, right=0.97, bottom=0.14, top=0.9)
    FigureCanvasAgg(fig)
    return fig


def figure_png(fig: Figure) -> bytes:
    """Render ``fig`` to PNG bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()


def canvas_png(canvas) -> bytes:
    """The Agg canvas' pixels as they are (no redraw) as PNG bytes, compressed fast."""
    width, height = canvas.get_width_height(physical=True)
    image = Image.frombuffer("RGBA", (width, height), canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
    buf = io.BytesIO()
    image.save(buf, format="png", compress_level=1)
    return buf.getvalue()


class Explorer:
    """Base class: subclasses fill ``self.controls`` and implement the three hooks.

    Hooks: ``evaluate()`` returns the model's answer for the current control values,
    ``draw(scenario)`` updates the figure's artists, ``readout_html(scenario)`` the text.
    """

    css_class = "magnum-explorer"

    def __init__(self, controls: dict, figure: Figure):
        self.controls = controls
        self.figure = figure
        self.scenario = None
        self.updates = 0
        # The controls keep their width (a squeezed slider hides its value); the readout
        # takes what is left and wraps.
        self.readout = widgets.HTML(layout=widgets.Layout(min_width="300px", flex="1 1 auto"))
        w, h = figure.get_size_inches()
        self.image = widgets.Image(format="png", layout=widgets.Layout(
            width=f"{int(w * DPI)}px", height=f"{int(h * DPI)}px"))
        controls_box = widgets.VBox(list(controls.values()), layout=widgets.Layout(flex="0 0 auto"))
        self.widget = widgets.VBox([widgets.HBox([controls_box, self.readout]), self.image])
        self.widget.add_class(self.css_class)
        for control in controls.values():
            control.observe(self._observe, names="value")

    def _observe(self, change) -> None:
        """A control changed. Ctrl-C (Jupyter's interrupt) during the run it starts stops that
        run only: the explorer keeps the last finished setting, says so, and the next change
        runs again (the interrupt is not passed on into the widget machinery)."""
        try:
            self._on_change(change)
        except KeyboardInterrupt:
            note = self.readout.value.removeprefix(INTERRUPTED_HTML)
            self.readout.value = INTERRUPTED_HTML + note

    def _on_change(self, _change) -> None:
        self.update()

    def update(self):
        """Re-evaluate with the current control values and redraw in place.

        An interruption (KeyboardInterrupt) leaves the explorer as it was: the image, the
        readout and ``scenario`` stay those of the last finished update."""
        if not self.updates:  # the axes exist by now: give them the house font sizes
            style.finish(self.figure)
        previous = self.scenario
        try:
            scenario = self.evaluate()
            self.scenario = scenario  # (some draw() read it)
            self.draw(scenario)
            readout = self.readout_html(scenario)
            image = self._render()
        except KeyboardInterrupt:
            self.scenario = previous
            raise
        self.readout.value = readout
        self.image.value = image
        self.updates += 1
        return scenario

    def _render(self) -> bytes:
        """The figure as PNG bytes: a full redraw (subclasses may cache what does not change),
        encoded fast (zlib level 1: ``savefig``'s default level costs ~30 ms a frame)."""
        self.figure.canvas.draw()
        return canvas_png(self.figure.canvas)

    def evaluate(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def draw(self, scenario) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def readout_html(self, scenario) -> str:  # pragma: no cover - abstract
        raise NotImplementedError


class BlittedExplorer(Explorer):
    """An explorer whose multi-panel figure is blitted, for speed.

    Subclasses set ``self._axes`` (the axes) and ``self._animated`` (the artists that
    change, created with ``animated=True``) before the first :meth:`update`. The update is
    :meth:`Explorer.update`; only :meth:`_render` differs: the axes, ticks and legends are
    drawn once and cached, and a change redraws only the data artists and titles onto the
    cached background (a full redraw only when an axis range changes). Every text render
    costs milliseconds, and three panels carry many of them.
    """

    _background = None
    _limits = None

    def _render(self) -> bytes:
        canvas = self.figure.canvas
        limits = tuple(ax.get_xlim() + ax.get_ylim() for ax in self._axes)
        if self._background is None or limits != self._limits:
            canvas.draw()  # animated artists are left out of the background
            self._background = canvas.copy_from_bbox(self.figure.bbox)
            self._limits = limits
        else:
            canvas.restore_region(self._background)
        for artist in self._animated:
            if artist.get_visible():
                self.figure.draw_artist(artist)
        return canvas_png(canvas)


def slider(kind, description: str, **kwargs):
    """A slider with the house style; ``continuous_update=False`` (see the explorers)."""
    return kind(description=description, continuous_update=False, style=SLIDER_STYLE,
                layout=widgets.Layout(**SLIDER_LAYOUT), **kwargs)
