"""Notebook 02 in a real JupyterLab: run all, move the weight slider, the Oracle readout answers."""
import pytest

from tests.browser.conftest import run_notebook_and_nudge

pytestmark = pytest.mark.browser


def test_run_all_and_move_the_weight_slider(lab):
    before, after = run_notebook_and_nudge(lab, "02_the_oracle.ipynb", "magnum-oracle-explorer", slider=2)
    assert "LP lower bound" in before and "LP lower bound" in after
    assert "w = 0.50" in before and "w = 0.55" in after
