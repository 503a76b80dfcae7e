"""Notebook 04 in a real JupyterLab: run all, move the load slider, the readout answers."""
import pytest

from tests.browser.conftest import run_notebook_and_nudge

pytestmark = pytest.mark.browser


def test_run_all_and_move_the_load_slider(lab):
    before, after = run_notebook_and_nudge(
        lab, "04_the_bouncer.ipynb", "magnum-bouncer-explorer", slider=0)
    assert "mean time in system" in before and "mean time in system" in after
    assert after != before
