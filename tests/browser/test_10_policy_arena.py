"""Notebook 10 in a real JupyterLab: run all, move the cluster-GPUs slider, the readout answers."""
import pytest

from tests.browser.conftest import run_notebook_and_nudge

pytestmark = [pytest.mark.browser, pytest.mark.needs_traces]   # the notebook replays Philly slices


def test_run_all_and_move_the_gpus_slider(lab):
    before, after = run_notebook_and_nudge(
        lab, "10_policy_arena.ipynb", "magnum-arena-explorer", slider=0)
    assert "avg JCT" in before and "avg JCT" in after
    assert after != before
