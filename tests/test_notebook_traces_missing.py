"""Without the public traces, notebook 10 stops in its first code cell with one line (issue 20 §3).

The line names what is missing, where it was looked for and `faux-magnum data fetch`; the
error carries no traceback (`TraceNotFound._render_traceback_`, IPython's hook).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from magnum_lib.workload import traces

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "10_policy_arena.ipynb"
NEEDED = ("philly/philly_jobs.csv", "gavel/simulation_throughputs.json",
          "alibaba/openb_pod_list_default.csv", "alibaba/openb_node_list_gpu_node.csv")


def _first_code_cell_error(shared: Path, tmp_path: Path) -> dict:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    first = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
    nb.cells = nb.cells[: first + 1]
    env_before = dict(os.environ)
    os.environ.update(MAGNUM_SHARED_DATA=str(shared), MPLCONFIGDIR=str(tmp_path / "mpl"),
                      PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])))
    try:
        client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                                         resources={"metadata": {"path": str(NOTEBOOK.parent)}})
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(env_before)
    errors = [o for o in nb.cells[first].outputs if o.output_type == "error"]
    assert len(errors) == 1, nb.cells[first].outputs
    return errors[0]


def test_notebook10_without_traces_says_so_in_one_line(tmp_path):
    error = _first_code_cell_error(Path("/nonexistent"), tmp_path)
    assert error.ename == "TraceNotFound"
    assert len(error.traceback) == 1, error.traceback  # no 30-line traceback
    line = error.traceback[0]
    assert "\n" not in line and len(line) < 600
    assert "4 trace files" in line and all(f in line for f in NEEDED)
    assert "MAGNUM_SHARED_DATA=/nonexistent" in line and "faux-magnum data fetch" in line


def test_notebook10_names_the_one_file_missing(tmp_path):
    shared = traces.shared_data_dir()
    if traces.traces_missing() is not None:
        pytest.skip(traces.traces_missing())
    partial = tmp_path / "data"
    for rel in NEEDED[:-1]:
        (partial / rel).parent.mkdir(parents=True, exist_ok=True)
        (partial / rel).symlink_to(shared / rel)
    error = _first_code_cell_error(partial, tmp_path)
    line = error.traceback[0]
    assert len(error.traceback) == 1
    assert NEEDED[-1] in line and not any(f in line for f in NEEDED[:-1])
    assert "alibaba/clusterdata@" in line and "faux-magnum data fetch" in line


def test_require_traces_passes_when_present_and_is_a_file_not_found_error(tmp_path, monkeypatch):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.csv").write_text("x\n", encoding="utf-8")
    monkeypatch.setenv("MAGNUM_SHARED_DATA", str(tmp_path))
    traces.require_traces("a/x.csv")  # present: no error
    with pytest.raises(FileNotFoundError, match=r"2 trace files \(b/y.csv, c/z.csv\) not found"):
        traces.require_traces("a/x.csv", "b/y.csv", "c/z.csv")
