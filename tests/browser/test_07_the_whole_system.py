"""Notebook 07 in a real JupyterLab: run all, move the load slider, the system readout answers."""
import pytest

from tests.browser.conftest import run_notebook_and_nudge

pytestmark = pytest.mark.browser


def test_run_all_and_move_the_load_slider(lab):
    before, after = run_notebook_and_nudge(lab, "07_the_whole_system.ipynb", "magnum-system-explorer", slider=0)
    assert "decision latency" in before and "decision latency" in after
    assert "load 0.80" in before and "load 0.85" in after
