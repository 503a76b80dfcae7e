"""Notebook 05 in a real JupyterLab: run all, move the fanout slider, the gossip readout answers."""
import pytest

from tests.browser.conftest import run_notebook_and_nudge

pytestmark = pytest.mark.browser


def test_run_all_and_move_the_fanout_slider(lab):
    before, after = run_notebook_and_nudge(lab, "05_gossip.ipynb", "magnum-gossip-explorer", slider=1)
    assert "rounds to quorum" in before and "rounds to quorum" in after
    assert "fanout 1" in before and "fanout 2" in after
