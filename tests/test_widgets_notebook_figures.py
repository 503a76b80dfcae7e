"""The notebooks' own figures (not the explorers') follow the layout rules of the style test.

:data:`HOOK` runs in a notebook's kernel (Agg as matplotlib's backend, so every figure
stays open after its cell). The exercise harness (tests/test_exercises_ungameable.py) loads
it in its one run of each notebook: ``test_notebook_figures_keep_legends_off_the_data``
is there. After each cell the hook checks every open pyplot figure with
``tests.test_widgets_style.figure_layout_problems`` (no legend over a line or a point, no
legend entry for a marker outside the axes), then closes it; and it checks the cell's
value: a cell whose last expression is a matplotlib object echoes
``<matplotlib.legend.Legend at 0x...>`` under its figure (notebook 09 did).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.once  # run once (make unit): the figures of the notebooks, drawn the same on both backends

nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")

ROOT = Path(__file__).resolve().parents[1]
NB_DIR = ROOT / "notebooks"

HOOK = f"""
import sys as _sys
_sys.path.insert(0, {str(ROOT)!r})
import matplotlib as _mpl
import matplotlib.pyplot as _plt
from matplotlib.artist import Artist as _Artist
from tests.test_widgets_style import figure_layout_problems as _layout

_FIGURE_PROBLEMS = []
_CELL = [0]


def _is_mpl(value):
    if isinstance(value, (list, tuple)) and value:
        return all(_is_mpl(v) for v in value)
    return isinstance(value, _Artist) or type(value).__module__.startswith("matplotlib.")


def _check_cell(result):
    _CELL[0] += 1
    where = (result.info.raw_cell.strip().splitlines() or [""])[0][:60] if result.info else ""
    if result.result is not None and _is_mpl(result.result):
        _FIGURE_PROBLEMS.append(f"cell {{where!r}} echoes {{type(result.result).__name__}}: end it with ';' "
                                "or an assignment")
    for num in _plt.get_fignums():
        fig = _plt.figure(num)
        for problem in _layout(fig):
            _FIGURE_PROBLEMS.append(f"cell {{where!r}}: {{problem}}")
        _plt.close(fig)


get_ipython().events.register("post_run_cell", _check_cell)
"""


def _run(path: Path) -> list[str]:
    nb = nbformat.read(path, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell(HOOK))
    nb.cells.append(nbformat.v4.new_code_cell("import json; print(json.dumps(_FIGURE_PROBLEMS))"))
    env = dict(os.environ, MPLBACKEND="Agg", MAGNUM_NB_SOLUTIONS="1")
    old = dict(os.environ)
    os.environ.update(env)   # the kernel inherits this process' environment
    try:
        client = nbclient.NotebookClient(nb, timeout=900, kernel_name="python3",
                                         resources={"metadata": {"path": str(NB_DIR)}})
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(old)
    out = "".join(o.get("text", "") for o in nb.cells[-1].outputs if o.get("name") == "stdout")
    return json.loads(out.strip().splitlines()[-1])


def test_the_hook_catches_an_echo_and_a_legend_over_points(tmp_path):
    """A two-cell notebook with both defects of notebook 09 (as it was): both are reported."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "import matplotlib.pyplot as plt\n"
        "fig, ax = plt.subplots(figsize=(6.5, 3.4))\n"
        "ax.plot([0.2, 0.25, 0.3, 0.35], [0.5, 0.45, 0.4, 0.35], 'o-', label='downclock by SLA slack')\n"
        "ax.axhline(0.4, ls='--', label='C46: 40% saved')\n"
        "ax.legend(loc='center left')"),
        nbformat.v4.new_code_cell(
        "fig, ax = plt.subplots()\n"
        "ax.plot([0, 1], [0, 1], label='line')\n"
        "ax.plot([5], [5], 'o', label='your request')\n"
        "ax.set_xlim(0, 1); ax.set_ylim(0, 1)\n"
        "ax.legend(loc='upper left');")]
    path = tmp_path / "99_bad.ipynb"
    nbformat.write(nb, path)
    found = _run(path)
    assert any("echoes Legend" in p for p in found), found
    assert any("covers 'downclock by SLA slack'" in p for p in found), found
    assert any("'your request' is in the legend but drawn outside" in p for p in found), found
