"""Every exercise's check passes with our solution and fails for answers a student could copy.

For each exercise (an answer cell ``exN_x = None`` ending in ``load_solution("NN_exN",
globals())``, then a check cell starting ``if not pending(exN_x, "NN_exN"):``), the notebook is
executed once with ``MAGNUM_NB_SOLUTIONS=1``; at each check cell the harness first runs the
check with the answer replaced by

* every number printed in the notebook above the exercise (cell outputs and markdown, not the
  outputs of the exercise cells themselves; "12%" also counts as 0.12), converted to the
  solution's type, the closest ``MAX_COPIED`` of them to the solution (a number a thousand
  times off cannot be what a check wrongly accepts),
* the naive answers: 0 and 1 for a number, and those listed in :data:`NAIVE` (a literal,
  an :class:`Expr` computed in the kernel, or :class:`Together`: several answer variables
  at once, the others keeping the solution's values),

and requires every one of them to fail (an exception, as a student sees it), then runs it with
the solution and requires it to pass. A candidate equal to the solution is skipped: an answer
that equals a printed figure is reported by :func:`test_no_answer_is_printed_above_it`.

The same run holds notebooks/INSTRUCTOR.md to what each notebook prints
(:func:`test_the_guide_quotes_what_the_notebook_prints`), and checks the notebook's own figures
after every cell (:func:`test_notebook_figures_keep_legends_off_the_data`, the hook of
tests/test_widgets_notebook_figures.py): every notebook runs once for all of these, and
a run is shared by the session's workers (a file per notebook, behind a lock).
"""
from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import nbformat
import pytest

import magnum_lib
from tests.test_instructor import guide_misquotes, notebook_sections

nbclient = pytest.importorskip("nbclient")
from nbclient.exceptions import CellExecutionError  # noqa: E402

# One run is enough: the notebooks' numbers are the same on both backends (parity tests), and
# on the pure-Python backend the notebooks take minutes each.
pytestmark = pytest.mark.skipif(magnum_lib.backend() != "compiled",
                                reason="the exercise harness runs on the compiled backend")

ROOT = Path(__file__).resolve().parents[1]
NB_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NB_DIR.glob("[0-9][0-9]_*.ipynb"))
GUIDE = NB_DIR / "INSTRUCTOR.md"
SOLUTIONS = NB_DIR / "solutions"
MAX_COPIED = 60          # printed numbers tried per exercise, the closest to the solution first
MAX_FACTOR = 1e3         # numbers further than this factor from the solution are not tried



class Expr(str):
    """A naive answer given as Python source, evaluated in the notebook's kernel at the check
    (from the notebook's objects or the solution's intermediate values). It must evaluate
    there: a naive answer that cannot be computed is a harness error, not a failing check."""


class Together(dict):
    """A naive answer setting several answer variables at once ``{variable: literal or Expr}``;
    the exercise's other variables keep the solution's values."""


_MI300X = 'catalog["mi300x"]'
# Answers a student might give without solving the exercise (beyond 0 and 1 for a number). A
# literal or Expr is tried for each answer variable in turn; a Together sets the ones it names.
NAIVE: dict[str, list] = {
    "00_ex1": [Expr('600_000 * catalog["h100_sxm"].facts["cuda_cores_full_die"]'),   # the full die
               Expr('200_000 * catalog["h100_sxm"].facts["cuda_cores"]')],           # section 1's fleet
    "00_ex2": [Expr(f'{_MI300X}.peak("bf16") / {_MI300X}.mem_bandwidth_Bps'),          # BF16's ridge
               Expr(f'({_MI300X}.peak("fp8") / 1e12) / ({_MI300X}.mem_bandwidth_Bps / 1e9)'),  # TFLOPS / GB/s
               Expr(f'2 * {_MI300X}.peak("fp8") / {_MI300X}.mem_bandwidth_Bps')],      # the sparse FP8 peak
    "00_ex3": ["mi300x"],                                  # the fastest, not the frugal one
    "00_ex4": [1.0,                                        # the hinted "no slower"
               Together(ex4_slowdown=1.0, ex4_shapes=41),  # ... over all 41 shapes
               Together(ex4_slowdown=Expr("float(np.mean(ratios))"), ex4_shapes=41),    # over all shapes
               Together(ex4_slowdown=Expr("float(np.median(ratios))"), ex4_shapes=41),
               Together(ex4_slowdown=Expr("float(np.mean(ratios))")),
               Together(ex4_slowdown=Expr("float(np.median(ratios))"))],
    "07_ex1": [1e-3],                                   # the 1 ms bound the exercise states
    "11_ex1": [Expr('make_replica("llama3_70b", "mi300x", tp=4).kv_capacity_tokens // 12_340'),   # no page rounding
               Expr('make_replica("llama3_70b", "mi300x", tp=4).kv_blocks // (12_340 // 16)'),     # pages rounded down
               Expr('int(4 * 192e9 * 0.9 / (SPEC.model.kv_bytes_per_token / 4) // 12_340)'),       # weights forgotten
               Expr("fit[12_000]")],                                                              # section 3's H100 figure
    "11_ex2": [32, Expr("max(x for x in range(2, 33, 2) if summarize(simulate(AZURE.head(600).scaled(x), SPEC, "
                        "replicas=4, batching='chunked', router='least-outstanding'), *TIGHT)['slo_attainment'] >= 0.9)")],
    "11_ex3": [Expr('ROUTERS["prefix-aware"]'), Expr('ROUTERS["least-outstanding"]'), Expr('ROUTERS["round-robin"]')],
    "07_ex3": [{"view": "fresh"}, {"node_queue": 8}],   # knobs that remove the problem
}

NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?(%?)")
ANSWER = re.compile(r'load_solution\("(\d\d_ex\d+)"')
ANSWER_VAR = re.compile(r"^(\w+)\s*=\s*None\b", re.M)


def numbers_in(text: str) -> set[float]:
    out = set()
    for m in NUMBER.finditer(text):
        raw = m.group(0).rstrip("%").replace(",", "")
        try:
            x = float(raw)
        except ValueError:
            continue
        if math.isfinite(x):
            out.add(x)
            if m.group(1):
                out.add(x / 100)
    return out


def exercises(nb) -> list[dict]:
    """The exercises of a notebook: name, answer variables, answer cell and check cell indices."""
    found = []
    for i, cell in enumerate(nb.cells):
        m = ANSWER.search(cell.source) if cell.cell_type == "code" else None
        if not m:
            continue
        check = next(j for j in range(i + 1, len(nb.cells))
                     if nb.cells[j].cell_type == "code" and f'"{m.group(1)}"' in nb.cells[j].source
                     and "pending(" in nb.cells[j].source)
        found.append({"name": m.group(1), "vars": ANSWER_VAR.findall(cell.source), "answer": i, "check": check,
                      "check_source": nb.cells[check].source})
    return found


def _output_text(cell) -> str:
    parts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            parts.append(out.get("text", ""))
        else:
            data = out.get("data", {})
            parts.append(data.get("text/plain", "") + data.get("text/markdown", ""))
    return "".join(parts)


def _run(client, source: str, index: int):
    """Run ``source`` in the notebook's kernel; return (ok, text printed)."""
    cell = nbformat.v4.new_code_cell(source)
    try:
        client.execute_cell(cell, index)
    except CellExecutionError:
        return False, _output_text(cell)
    return True, _output_text(cell)


def _specific(x: float) -> bool:
    """A number specific enough that seeing it printed is evidence, not coincidence: at least
    three significant figures (3,379,200,000 or 0.104; not 4 devices or 76 replicas)."""
    return abs(x) >= 100 or (x != round(x) and len(f"{abs(x):.6g}".replace(".", "").strip("0")) >= 3)


def _source(answer) -> str:
    """Python source for one naive value: an Expr as written, a literal by its repr."""
    return str(answer) if isinstance(answer, Expr) else repr(answer)


def _candidates(solution, seen: set[float], name: str) -> list[str]:
    """Python sources of the answers to try for one variable, converted to the solution's type."""
    naive = [_source(a) for a in NAIVE.get(name, []) if not isinstance(a, Together)]
    kind = solution["type"]
    if kind not in ("int", "float"):
        return naive
    sol = solution["value"]
    pool = set(seen) | {0.0, 1.0}
    if kind == "int":
        pool = {float(round(x)) for x in pool}
    def distance(x):
        if sol == 0 or x == 0:
            return 0.0 if x == 0 else abs(math.log10(abs(x)))
        return abs(math.log10(abs(x) / abs(sol))) + (0.0 if (x > 0) == (sol > 0) else 0.5)
    close = [x for x in pool if x in (0.0, 1.0) or sol == 0 or distance(x) <= math.log10(MAX_FACTOR)]
    close = [x for x in close if not math.isclose(x, sol, rel_tol=1e-9, abs_tol=1e-12)]
    close.sort(key=distance)
    return naive + [repr(int(x)) if kind == "int" else repr(float(x)) for x in close[:MAX_COPIED]]


def _probe(client, ex: dict, answers: list[dict[str, str]], index: int) -> list[dict[str, str]]:
    """The answers (each ``{variable: Python source}``) for which the check cell passes (each
    should fail). Every value is computed first, and must compute (see :class:`Expr`)."""
    check = ex["check_source"]   # (nbclient may store a probe cell in place of the notebook's)
    passing = []
    for answer in answers:
        names = list(answer)
        ok, out = _run(client, f"_harness_new = ({', '.join(answer.values())},)", index)
        assert ok, f"{ex['name']}: the naive answer {answer} does not compute in the notebook:\n{out}"
        ok, _ = _run(client, f"_harness_saved = ({', '.join(names)},)\n"
                             f"({', '.join(names)},) = _harness_new\n{check}", index)
        _run(client, f"({', '.join(names)},) = _harness_saved", index)
        if ok:
            passing.append(answer)
    return passing


def _together(name: str, variables: list[str]) -> list[dict[str, str]]:
    """The exercise's :class:`Together` naive answers, as ``{variable: Python source}``."""
    out = []
    for answer in NAIVE.get(name, []):
        if isinstance(answer, Together):
            unknown = set(answer) - set(variables)
            assert not unknown, f"NAIVE[{name!r}] names {sorted(unknown)}, not answer variables {variables}"
            out.append({k: _source(v) for k, v in answer.items()})
    return out


def _where(literal: str, texts: list[str], cells: list[int]) -> str:
    try:
        x = float(literal)
    except ValueError:
        return "a naive answer"
    hits = [c for t, c in zip(texts, cells, strict=True)
            if any(math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12) or math.isclose(x, round(y)) for y in numbers_in(t))]
    return f"printed in cell(s) {hits[:5]}" if hits else "a naive answer"


def _execute(path: Path):
    """Execute ``path`` cell by cell, probing every exercise; yield one record per exercise."""
    nb = nbformat.read(path, as_version=4)
    exs = {ex["check"]: ex for ex in exercises(nb)}
    exercise_cells = {ex["answer"] for ex in exs.values()} | set(exs)
    client = nbclient.NotebookClient(nb, timeout=900, kernel_name="python3",
                                     resources={"metadata": {"path": str(NB_DIR)}})
    seen_text: list[str] = []
    seen_cells: list[int] = []
    cells = list(nb.cells)   # (nbclient stores a probe cell at its index: each cell is put back as it runs)
    with client.setup_kernel():
        from tests.test_widgets_notebook_figures import HOOK
        ok, out = _run(client, HOOK, 0)
        assert ok, f"the figure hook did not load:\n{out}"
        for i, cell in enumerate(cells):
            if i in exs:
                ex = exs[i]
                record = {"name": ex["name"], "gameable": {}, "printed_answer": {}}
                for var in ex["vars"]:
                    ok, out = _run(client, "import json, numbers\n"
                                   f"_v = {var}\n"
                                   "print(json.dumps({'type': 'int' if isinstance(_v, numbers.Integral) "
                                   "and not isinstance(_v, bool) else 'float' if isinstance(_v, numbers.Real) "
                                   "and not isinstance(_v, bool) else type(_v).__name__, "
                                   "'value': float(_v) if isinstance(_v, numbers.Real) else None}))", i)
                    assert ok, f"{ex['name']}: could not read {var} after the solution ran:\n{out}"
                    sol = json.loads(out.strip().splitlines()[-1])
                    seen = numbers_in("\n".join(seen_text))
                    if sol["value"] is not None and _specific(sol["value"]) and any(
                            math.isclose(x, sol["value"], rel_tol=1e-9, abs_tol=1e-12) for x in seen):
                        record["printed_answer"][var] = sol["value"]
                    passing = _probe(client, ex, [{var: c} for c in _candidates(sol, seen, ex["name"])], i)
                    if passing:   # say where each was printed, so the fix is easy to find
                        record["gameable"][var] = {a[var]: _where(a[var], seen_text, seen_cells) for a in passing}
                passing = _probe(client, ex, _together(ex["name"], ex["vars"]), i)
                if passing:
                    record["gameable"]["together"] = [str(a) for a in passing]
                client.execute_cell(cell, i)   # the check with the solution: must pass
                yield record
                continue
            client.execute_cell(cell, i)
            if cell.cell_type == "markdown" or i not in exercise_cells:
                seen_text.append(cell.source if cell.cell_type == "markdown" else _output_text(cell))
                seen_cells.append(i)
        _PRINTED[path.stem] = "\n".join(_output_text(c) for c in nb.cells if c.cell_type == "code")
        ok, out = _run(client, "import json; print(json.dumps(_FIGURE_PROBLEMS))", len(cells) - 1)
        assert ok, out
        _FIGURES[path.stem] = json.loads(out.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def solutions_env(tmp_path_factory):
    global _SHARED
    base = tmp_path_factory.getbasetemp()
    # Under xdist each worker has its own folder in the session's: share the session's.
    _SHARED = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "notebook-runs"
    _SHARED.mkdir(exist_ok=True)
    old = os.environ.get("MAGNUM_NB_SOLUTIONS")
    os.environ["MAGNUM_NB_SOLUTIONS"] = "1"
    os.environ.setdefault("MPLBACKEND", "Agg")
    yield
    if old is None:
        os.environ.pop("MAGNUM_NB_SOLUTIONS", None)
    else:
        os.environ["MAGNUM_NB_SOLUTIONS"] = old


_RESULTS: dict[str, list[dict]] = {}
_PRINTED: dict[str, str] = {}     # everything a notebook printed in that run, by notebook
_FIGURES: dict[str, list[str]] = {}   # the figure hook's findings in that run, by notebook
_SHARED = Path()   # the session's folder of notebook runs (set by solutions_env)


TRACE_NOTEBOOKS = ("10",)   # as in the Makefile: they read the public traces
#: One parameter per notebook (its tests share one run of it: :func:`_one_run`).
ONE_RUN_EACH = [pytest.param(p, id=p.stem[:2]) for p in NOTEBOOKS]


def _records(path: Path) -> list[dict]:
    if path.stem[:2] in TRACE_NOTEBOOKS:
        from magnum_lib.workload.traces import traces_missing
        cwd = os.getcwd()
        os.chdir(NB_DIR)   # the loaders look relative to the folder the kernel starts in
        try:
            missing = traces_missing()
        finally:
            os.chdir(cwd)
        if missing is not None:
            pytest.skip(missing)
    if path.stem not in _RESULTS:
        _RESULTS[path.stem], _PRINTED[path.stem], _FIGURES[path.stem] = _one_run(path)
    return _RESULTS[path.stem]


def _one_run(path: Path):
    """The notebook's one run in this test session, whichever worker asks first: the others
    wait on the lock and read what it wrote (records, printed text, figure findings)."""
    import filelock

    out = _SHARED / f"{path.stem}.json"
    with filelock.FileLock(f"{out}.lock"):
        if not out.exists():
            records = list(_execute(path))
            out.write_text(json.dumps({"records": records, "printed": _PRINTED[path.stem],
                                       "figures": _FIGURES[path.stem]}), encoding="utf-8")
        run = json.loads(out.read_text(encoding="utf-8"))
    return run["records"], run["printed"], run["figures"]


@pytest.mark.parametrize("path", ONE_RUN_EACH)
def test_no_check_passes_a_copied_or_naive_answer(path, solutions_env):
    bad = {r["name"]: r["gameable"] for r in _records(path) if r["gameable"]}
    assert not bad, f"these answers pass checks they should fail: {bad}"


@pytest.mark.parametrize("path", ONE_RUN_EACH)
def test_no_answer_is_printed_above_it(path, solutions_env):
    printed = {r["name"]: r["printed_answer"] for r in _records(path) if r["printed_answer"]}
    assert not printed, f"the solution's value is printed above the exercise: {printed}"


@pytest.mark.parametrize("path", ONE_RUN_EACH)
def test_the_guide_quotes_what_the_notebook_prints(path, solutions_env):
    """INSTRUCTOR.md's figures for a notebook are the ones the notebook prints (or states in its
    own text or solutions), each statistic under its own name (tests/test_instructor.py,
    guide_misquotes)."""
    _records(path)
    section = notebook_sections(GUIDE.read_text(encoding="utf-8")).get(path.stem[:2], "")
    sources = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells)
    sources += "".join(f.read_text(encoding="utf-8") for f in sorted(SOLUTIONS.glob(f"{path.stem[:2]}_ex*.py")))
    bad = guide_misquotes(section, _PRINTED[path.stem], sources)
    assert not bad, f"INSTRUCTOR.md's section for {path.name} quotes figures the notebook does not print:\n" + \
        "\n".join(bad)


def test_the_number_reader():
    assert numbers_in("off by 1,024x; 12.5% of 3e3 s, C21") == {1024.0, 12.5, 0.125, 3000.0}
    assert numbers_in("p95 -4.5 ms (C24)") == {-4.5}


def test_every_naive_answer_belongs_to_an_exercise():
    """A NAIVE entry for a renamed exercise or variable would be silently never tried."""
    found = {}
    for path in NOTEBOOKS:
        for ex in exercises(nbformat.read(path, as_version=4)):
            found[ex["name"]] = ex["vars"]
    for name, answers in NAIVE.items():
        assert name in found, f"NAIVE names {name!r}, which no notebook has"
        for answer in answers:
            if isinstance(answer, Together):
                assert set(answer) <= set(found[name]), f"NAIVE[{name!r}]: {sorted(answer)} not in {found[name]}"


# Issue 19 §1: a comparison reports the same statistics at every step, and always the mean
# and the p99.9 beside the p95. A table is a printed line whose column headers include "p95"
# (after two or more spaces, as pandas and the notebooks' f-strings lay them out).
_P95_COLUMN = re.compile(r"(?:^|\s{2,})p95(?: ms| µs)?(?=\s{2,}|\s*$|\s+p99)")
COMPARISON_NOTEBOOKS = ("07", "08", "09")   # the evolution, the whole system, the future


def tables_missing_statistics(printed: str) -> list[str]:
    """Header lines of ``printed`` that show a p95 column without a mean and a p99.9 column."""
    return [line.strip() for line in printed.splitlines()
            if _P95_COLUMN.search(line) and not ("mean" in line and "p99.9" in line)]


def test_the_table_rule_catches_a_table_without_its_mean_or_tail():
    assert tables_missing_statistics("  preset   p95 ms  started\nborg  3.1  99%") == ["preset   p95 ms  started"]
    assert tables_missing_statistics("round    mean    p95\n") == ["round    mean    p95"]
    ok = "  preset   mean ms   p95 ms p99.9 ms\n  p95 drop per step: 1.0x\nmean 2.1, p95 3.7, p99.9 6.5 ms"
    assert tables_missing_statistics(ok) == []


@pytest.mark.parametrize("path", [p for p in ONE_RUN_EACH if p.id in COMPARISON_NOTEBOOKS],
                         ids=lambda p: p.stem[:2])
def test_every_p95_table_shows_the_mean_and_the_p999(path, solutions_env):
    _records(path)
    bad = tables_missing_statistics(_PRINTED[path.stem])
    assert not bad, f"{path.name}: tables with a p95 but no mean or p99.9 beside it: {bad}"


@pytest.mark.parametrize("path", ONE_RUN_EACH)
def test_notebook_figures_keep_legends_off_the_data(path, solutions_env):
    _records(path)
    found = _FIGURES[path.stem]
    assert not found, f"{path.name}: " + "; ".join(found[:6])
