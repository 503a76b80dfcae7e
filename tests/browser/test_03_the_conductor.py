"""Notebook 03 in a real JupyterLab: run all, move the concurrency slider, the Conductor readout answers."""
import pytest

from tests.browser.conftest import run_notebook_and_nudge

pytestmark = pytest.mark.browser


def test_run_all_and_move_the_concurrency_slider(lab):
    before, after = run_notebook_and_nudge(lab, "03_the_conductor.ipynb", "magnum-conductor-explorer", slider=1)
    assert "round conflict rate" in before and "round conflict rate" in after
    assert "C = 10" in before and "C = 11" in after
