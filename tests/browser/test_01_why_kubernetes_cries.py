"""Notebook 01 in a real JupyterLab: run all, move the replicas slider, the readout answers."""
import pytest

from tests.browser.conftest import run_notebook_and_nudge

pytestmark = pytest.mark.browser


def test_run_all_and_move_the_replicas_slider(lab):
    before, after = run_notebook_and_nudge(
        lab, "01_why_kubernetes_cries.ipynb", "magnum-queue-explorer", slider=2)
    assert "p99" in before and "p99" in after
    assert after != before
