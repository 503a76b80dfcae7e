"""Notebook 09 in a real JupyterLab: run all, move the slack slider, the energy readout answers."""
import pytest

from tests.browser.conftest import run_notebook_and_nudge

pytestmark = pytest.mark.browser


def test_run_all_and_move_the_slack_slider(lab):
    before, after = run_notebook_and_nudge(lab, "09_the_future.ipynb", "magnum-energy-explorer", slider=2,
                                           key="ArrowLeft")
    assert "energy saved" in before and "energy saved" in after
    assert "slowest clock meeting the SLA: 0.50" in before and "0.50" not in after.split("\n")[0]
