"""Issue 22 s2: Ctrl-C in a notebook (a KeyboardInterrupt raised inside the model's run while a
control's callback runs) leaves every explorer usable: it keeps the last finished figure, says
it was interrupted, and the next control change gives a result."""
from __future__ import annotations

import importlib

import ipywidgets as widgets
import pytest

from magnum_lib.widgets._base import INTERRUPTED_HTML

EXPLORERS = [("queue", "QueueExplorer"), ("system", "SystemExplorer"), ("bouncer", "BouncerExplorer"),
             ("conductor", "ConductorExplorer"), ("energy", "EnergyExplorer"), ("oracle", "OracleExplorer"),
             ("packing", "PackingExplorer"), ("catalog", "CatalogExplorer"), ("gossip", "GossipExplorer")]


def _explorer(module):
    mod = importlib.import_module(f"magnum_lib.widgets.{module}_explorer")
    cls = next(v for k, v in vars(mod).items() if k.endswith("Explorer") and k != "Explorer"
               and isinstance(v, type) and v.__module__ == mod.__name__)
    return cls()


def _slider(ex):
    """The explorer's first numeric slider."""
    for c in ex.controls.values():
        if isinstance(c, (widgets.IntSlider, widgets.FloatSlider, widgets.FloatLogSlider)):
            return c
    pytest.skip("no slider")


def _move(c):
    """A value one step away from the slider's current one, within its range."""
    if isinstance(c, widgets.FloatLogSlider):
        up = c.value * c.base ** 0.25
        return up if up <= c.base ** c.max else c.value / c.base ** 0.25
    return c.value + c.step if c.value + c.step <= c.max else c.value - c.step


@pytest.mark.parametrize("module, _name", EXPLORERS)
def test_interrupted_run_leaves_the_explorer_usable(module, _name, monkeypatch):
    ex = _explorer(module)
    c = _slider(ex)
    before = (ex.scenario, ex.image.value, ex.updates)
    real = ex.evaluate
    calls = []

    def interrupted_once():
        calls.append(1)
        if len(calls) == 1:
            raise KeyboardInterrupt  # Jupyter's "interrupt the kernel" during the model's run
        return real()

    monkeypatch.setattr(ex, "evaluate", interrupted_once)
    c.value = _move(c)  # the callback swallows the interrupt: nothing escapes into ipywidgets
    assert len(calls) == 1
    assert (ex.scenario, ex.image.value, ex.updates) == before  # the last finished setting
    assert ex.readout.value.startswith(INTERRUPTED_HTML)
    c.value = _move(c)  # the next change runs again and gives a result
    assert len(calls) == 2 and ex.updates == before[2] + 1 and ex.scenario is not before[0]
    assert not ex.readout.value.startswith(INTERRUPTED_HTML) and ex.image.value


def test_interrupt_inside_the_library_call_and_from_a_cell(monkeypatch):
    """The interrupt raised in the model module's own function (the simulator's run), then the
    explorer's ``update()`` called from a cell: there the interrupt reaches the cell."""
    from magnum_lib.widgets import queue_model
    from magnum_lib.widgets.queue_explorer import QueueExplorer

    ex = QueueExplorer()
    real, hits = queue_model.evaluate, []

    def run(*a, **k):
        hits.append(1)
        if len(hits) == 1:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(queue_model, "evaluate", run)
    old = ex.scenario
    with pytest.raises(KeyboardInterrupt):
        ex.update()
    assert ex.scenario is old
    assert ex.update().result is not None and ex.scenario is not old
