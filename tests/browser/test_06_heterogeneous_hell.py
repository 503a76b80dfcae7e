"""Notebook 06 in a real JupyterLab: run all, move the memory-pressure slider, the readout answers."""
import pytest

from tests.browser.conftest import run_notebook_and_nudge

pytestmark = pytest.mark.browser


def test_run_all_and_move_the_memory_pressure_slider(lab):
    before, after = run_notebook_and_nudge(
        lab, "06_heterogeneous_hell.ipynb", "magnum-packing-explorer", slider=2)
    assert "utilization" in before and "utilization" in after
    assert after != before
