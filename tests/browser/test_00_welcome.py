"""Notebook 00 in a real JupyterLab: run all, move the GFLOP slider, the roofline readout answers."""
import pytest

from tests.browser.conftest import run_notebook_and_nudge

pytestmark = pytest.mark.browser


def test_run_all_and_move_the_request_size_slider(lab):
    before, after = run_notebook_and_nudge(
        lab, "00_welcome.ipynb", "magnum-catalog-explorer", slider=0, key="PageUp")
    assert "ms" in after or "s" in after
    assert after != before
