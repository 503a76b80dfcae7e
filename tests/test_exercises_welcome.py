"""Notebook 00's exercises cannot be gamed: the solution passes, the naive answer and every
number printed in the notebook's outputs above the check fail.

The notebook runs once in a kernel (without solutions); each check cell's code then runs
again in that kernel, once per candidate answer, and reports which candidates pass.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "00_welcome.ipynb"
SOLUTIONS = ROOT / "notebooks" / "solutions"
NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:[eE][+-]?\d+)?")

# exercise -> (answer variable(s), the id of its check cell)
EXERCISES = {"00_ex1": (("ex1_fleet_cores",), "c028"), "00_ex2": (("ex2_ridge",), "c031"),
             "00_ex3": (("ex3_device",), "c034"), "00_ex4": (("ex4_slowdown", "ex4_shapes"), "4d6a4f82")}

TRIAL = """
import contextlib as _cl, io as _io, json as _json
_passes = []
for _answer in _json.loads({cands!r}):
    globals().update(_answer)
    try:
        with _cl.redirect_stdout(_io.StringIO()):
            exec({check!r}, globals())
        _passes.append(True)
    except Exception:
        _passes.append(False)
print("TRIAL " + _json.dumps(_passes))
"""


def _text(outputs) -> str:
    parts = []
    for o in outputs:
        if o.get("output_type") == "stream":
            parts.append(o["text"])
        elif "data" in o:
            parts.append(o["data"].get("text/plain", ""))
    return "".join(parts)


@pytest.fixture(scope="module")
def session():
    saved = {k: os.environ.get(k) for k in ("MAGNUM_NB_SOLUTIONS", "PYTHONPATH")}
    os.environ.pop("MAGNUM_NB_SOLUTIONS", None)   # the student's view: no solution loaded
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), saved["PYTHONPATH"]]))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    try:
        with client.setup_kernel():
            for i, cell in enumerate(nb.cells):
                client.execute_cell(cell, i)
            yield client, nb
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _index(nb, cell_id: str) -> int:
    return next(i for i, c in enumerate(nb.cells) if c.get("id") == cell_id)


def _run(session, code: str) -> str:
    client, nb = session
    cell = nbformat.v4.new_code_cell(code)
    nb.cells.append(cell)   # nbclient looks the cell up by its index
    try:
        client.execute_cell(cell, len(nb.cells) - 1)
    finally:
        nb.cells.pop()
    return _text(cell.outputs)


def _passes(session, name: str, candidates: list[dict]) -> list[bool]:
    """Which of ``candidates`` (dicts of answer variables) pass exercise ``name``'s check."""
    _, nb = session
    check = "".join(nb.cells[_index(nb, EXERCISES[name][1])].source)
    out = _run(session, TRIAL.format(cands=json.dumps(candidates), check=check))
    return json.loads(out.rsplit("TRIAL ", 1)[1])


def _solution(session, name: str) -> dict:
    """The solution's answer(s), computed in the notebook's namespace."""
    names = EXERCISES[name][0]
    code = (SOLUTIONS / f"{name}.py").read_text(encoding="utf-8")
    out = _run(session, f"exec({code!r}, globals())\nimport json as _j\nprint('ANSWER ' + _j.dumps({{k: globals()[k] for k in {list(names)!r}}}))")
    return json.loads(out.rsplit("ANSWER ", 1)[1])


def _printed_numbers(session, name: str) -> list[float]:
    """Every number in the outputs of the cells above the exercise's check."""
    _, nb = session
    text = "".join(_text(c.get("outputs", [])) for c in nb.cells[: _index(nb, EXERCISES[name][1])])
    values = set()
    for m in NUMBER.findall(text):
        try:
            v = float(m.replace(",", ""))
        except ValueError:
            continue
        values.add(int(v) if v.is_integer() else v)
    return sorted(values)


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_the_solution_passes(session, name):
    assert _passes(session, name, [_solution(session, name)]) == [True]


@pytest.mark.parametrize("name", ["00_ex1", "00_ex2", "00_ex4"])
def test_no_number_printed_above_passes(session, name):
    solution = _solution(session, name)
    numbers = _printed_numbers(session, name)
    assert len(numbers) > 20, "the notebook printed too little to test against"
    for var in EXERCISES[name][0]:   # each answer in turn, the others right
        cands = [{**solution, var: v} for v in numbers]
        passing = [c[var] for c, ok in zip(cands, _passes(session, name, cands), strict=True) if ok]
        assert not passing, f"{name}: {var} = {passing[:5]} (printed above) passes the check"


NAIVE = {
    "00_ex1": [{"ex1_fleet_cores": 600_000 * 18_432},          # the full die's cores
               {"ex1_fleet_cores": 200_000 * 16_896}],         # section 1's fleet
    "00_ex2": [{"ex2_ridge": 1307.4e12 / 5.3e12},              # the BF16 ridge
               {"ex2_ridge": 2614.9 / 5300},                   # TFLOPS over GB/s
               {"ex2_ridge": 2 * 2614.9e12 / 5.3e12}],         # the sparse FP8 peak
    "00_ex3": [{"ex3_device": "mi300x"}],                      # the fastest, not the frugal one
    "00_ex4": [{"ex4_slowdown": 1.0, "ex4_shapes": 41},        # the hinted "no slower"
               {"ex4_slowdown": 1.0, "ex4_shapes": 12}],       # the median over all shapes
}


@pytest.mark.parametrize("name", sorted(NAIVE))
def test_the_naive_answers_fail(session, name):
    assert not any(_passes(session, name, NAIVE[name])), f"{name}: a naive answer passes"


def test_ex4_the_mean_over_all_shapes_fails(session):
    solution = _solution(session, "00_ex4")
    out = _run(session, "import json as _j\nprint('ALL ' + _j.dumps([float(np.mean(ratios)), float(np.median(ratios))]))")
    mean_all, median_all = json.loads(out.rsplit("ALL ", 1)[1])
    cands = [{**solution, "ex4_slowdown": v} for v in (mean_all, median_all)]
    assert _passes(session, "00_ex4", cands) == [False, False]
