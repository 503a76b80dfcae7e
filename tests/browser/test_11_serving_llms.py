"""Notebook 11 in a real JupyterLab: run all, move the load slider, the serving readout answers."""
import pytest

from tests.browser.conftest import run_notebook_and_nudge

pytestmark = pytest.mark.browser


def test_run_all_and_move_the_load_slider(lab):
    before, after = run_notebook_and_nudge(lab, "11_serving_llms.ipynb", "magnum-serving-explorer", slider=0)
    assert "goodput" in before and "goodput" in after
    assert after != before
