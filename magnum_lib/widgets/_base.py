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

DPI = 80
SLIDER_STYLE = {"description_width": "150px"}
SLIDER_LAYOUT = {"width": "420px"}


def new_figure(width_in: float = 7.0, height_in: float = 3.6) -> Figure:
    """A pyplot-free figure with an Agg canvas attached.

    Fixed margins instead of a layout engine: constrained layout re-measures every tick
    label on every render, which doubles the cost of a slider change.
    """
    fig = Figure(figsize=(width_in, height_in), dpi=DPI)
    fig.subplots_adjust(left=0.12, right=0.97, bottom=0.14, top=0.9)
    FigureCanvasAgg(fig)
    return fig


def figure_png(fig: Figure) -> bytes:
    """Render ``fig`` to PNG bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
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
        self.readout = widgets.HTML(layout=widgets.Layout(min_width="360px"))
        w, h = figure.get_size_inches()
        self.image = widgets.Image(format="png", layout=widgets.Layout(
            width=f"{int(w * DPI)}px", height=f"{int(h * DPI)}px"))
        self.widget = widgets.VBox(
            [widgets.HBox([widgets.VBox(list(controls.values())), self.readout]), self.image])
        self.widget.add_class(self.css_class)
        for control in controls.values():
            control.observe(self._on_change, names="value")

    def _on_change(self, _change) -> None:
        self.update()

    def update(self):
        """Re-evaluate with the current control values and redraw in place."""
        scenario = self.evaluate()
        self.scenario = scenario
        self.draw(scenario)
        self.readout.value = self.readout_html(scenario)
        self.image.value = figure_png(self.figure)
        self.updates += 1
        return scenario

    def evaluate(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def draw(self, scenario) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def readout_html(self, scenario) -> str:  # pragma: no cover - abstract
        raise NotImplementedError


def slider(kind, description: str, **kwargs):
    """A slider with the house style; ``continuous_update=False`` (see the explorers)."""
    return kind(description=description, continuous_update=False, style=SLIDER_STYLE,
                layout=widgets.Layout(**SLIDER_LAYOUT), **kwargs)
