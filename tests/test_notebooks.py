"""Static checks of the notebooks: committed clean, and following the template of notebooks/README.md.

Running them is nbval's job (``pytest --nbval-lax --nbval-current-env notebooks/`` with
``MAGNUM_NB_SOLUTIONS=1``); these tests read the JSON only, so they are fast.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from magnum_lib.widgets import exercises

pytestmark = pytest.mark.once  # run once (make unit): the committed notebooks' files

ROOT = Path(__file__).resolve().parents[1]
NB_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NB_DIR.glob("[0-9][0-9]_*.ipynb"))
IGNORE_TAG = "nbval-ignore-output"


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _src(cell: dict) -> str:
    src = cell["source"]
    return src if isinstance(src, str) else "".join(src)


def _first(cells: list[dict], pattern: str, kind: str | None = None) -> int:
    """Index of the first cell whose source matches ``pattern`` (regex, multiline)."""
    rx = re.compile(pattern, re.M | re.I)
    for i, cell in enumerate(cells):
        if (kind is None or cell["cell_type"] == kind) and rx.search(_src(cell)):
            return i
    raise AssertionError(f"no {kind or ''} cell matches {pattern!r}")


def test_the_two_first_notebooks_exist():
    names = {p.stem for p in NOTEBOOKS}
    assert {"00_welcome", "01_why_kubernetes_cries"} <= names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_without_outputs_or_widget_state(path):
    nb = _load(path)
    assert "widgets" not in nb["metadata"], "strip metadata.widgets (nbstripout --keep-id)"
    for i, cell in enumerate(nb["cells"]):
        extra = set(cell.get("metadata", {})) - {"tags"}
        assert not extra, f"cell {i} carries run metadata {sorted(extra)}"
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [], f"cell {i} has outputs"
            assert cell["execution_count"] is None, f"cell {i} has an execution count"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_follows_the_template_in_order(path):
    cells = _load(path)["cells"]
    assert cells[0]["cell_type"] == "markdown" and _src(cells[0]).startswith("# "), "title first"
    order = [
        ("objectives", _first(cells, r"^#+ .*learning objectives", "markdown")),
        ("prerequisites", _first(cells, r"\*\*prerequisites", "markdown")),
        ("time", _first(cells, r"\*\*time", "markdown")),
        ("claim quoted", _first(cells, r"^> ", "markdown")),
        ("predict", _first(cells, r"^#+ .*predict", "markdown")),
        ("explain", _first(cells, r"^#+ .*explain", "markdown")),
        ("explorer", _first(cells, r"\.widget\s*$", "code")),
        ("claim check", _first(cells, r"^#+ .*claim check", "markdown")),
        ("exercises", _first(cells, r"^#+ .*exercises", "markdown")),
        ("summary", _first(cells, r"^#+ .*summary", "markdown")),
        ("what's next", _first(cells, r"^#+ .*what's next", "markdown")),
    ]
    positions = [i for _, i in order]
    assert positions[2] >= positions[1] and positions == sorted(positions), order
    objectives = _src(cells[order[0][1]])
    n_items = len(re.findall(r"^\s*(?:\d+\.|[-*]) ", objectives, re.M))
    assert 3 <= n_items <= 5, f"{n_items} learning objectives (want 3-5)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_widget_cells_ignore_output(path):
    for i, cell in enumerate(_load(path)["cells"]):
        if cell["cell_type"] == "code" and re.search(r"\.widget\s*$|display\(", _src(cell), re.M):
            assert IGNORE_TAG in cell.get("metadata", {}).get("tags", []), f"cell {i} shows a widget untagged"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_exercise_has_a_solution_and_an_asserting_check(path):
    cells = _load(path)["cells"]
    start = _first(cells, r"^#+ .*exercises", "markdown")
    found = []
    for i, cell in enumerate(cells[start:], start):
        m = re.search(r'load_solution\("([0-9a-z_]+)", globals\(\)\)', _src(cell))
        if not m:
            continue
        name = m.group(1)
        assert name.startswith(path.stem[:2] + "_ex"), name
        answer = re.search(r"^(\w+) = None\b", _src(cell), re.M)
        assert answer, f"exercise {name}: the answer must start as None"
        check = _src(cells[i + 1])
        assert cells[i + 1]["cell_type"] == "code" and "assert " in check, f"{name}: no check cell after it"
        assert f'pending({answer.group(1)}, "{name}")' in check, f"{name}: the check must guard with pending()"
        sol = NB_DIR / "solutions" / f"{name}.py"
        assert sol.is_file(), f"missing {sol}"
        assert re.search(rf"^{answer.group(1)}\s*[+]?=", sol.read_text(), re.M), f"{sol} never sets {answer.group(1)}"
        compile(sol.read_text(), str(sol), "exec")
        found.append(name)
    assert found, "no exercises"


def test_every_solution_file_belongs_to_a_notebook():
    text = "".join(p.read_text(encoding="utf-8") for p in NOTEBOOKS)
    for sol in (NB_DIR / "solutions").glob("*.py"):
        assert f'load_solution(\\"{sol.stem}\\"' in text, f"{sol.name} is not used by any notebook"


def test_readme_documents_the_solution_convention():
    readme = (NB_DIR / "README.md").read_text(encoding="utf-8")
    assert "MAGNUM_NB_SOLUTIONS" in readme and "%load solutions/" in readme


def test_pending_prints_a_hint_for_students(monkeypatch, capsys):
    monkeypatch.delenv(exercises.ENV, raising=False)
    assert exercises.pending(None, "01_ex1") is True
    assert "not attempted" in capsys.readouterr().out
    assert exercises.pending(3, "01_ex1") is False
    ns = {}
    exercises.load_solution("01_ex1", ns)
    assert ns == {}, "without MAGNUM_NB_SOLUTIONS the student's namespace is left alone"


def test_pending_fails_in_ci_when_the_answer_is_missing(monkeypatch):
    monkeypatch.setenv(exercises.ENV, "1")
    with pytest.raises(AssertionError, match="01_ex1"):
        exercises.pending(None, "01_ex1")


def test_load_solution_runs_in_the_given_namespace(monkeypatch):
    monkeypatch.setenv(exercises.ENV, "1")
    ns = {"np": __import__("numpy")}
    exercises.load_solution("01_ex2", ns)
    # M/M/1: p99 = ln(100) / (mu - lam) = 50 ms at mu = 680/s.
    assert abs(ns["ex2_max_rate"] - (680 - 4.605170185988092 / 0.05)) < 1e-9


@pytest.mark.parametrize("bad", ["../etc/passwd", "01 ex1", ""])
def test_solution_names_are_validated(bad):
    with pytest.raises(ValueError, match="solution name"):
        exercises.solution_path(bad)


def test_unknown_solution_is_a_clear_error():
    with pytest.raises(FileNotFoundError, match="99_ex9"):
        exercises.solution_path("99_ex9")


def _nbstripout_hook() -> list[str]:
    """The nbstripout command of .pre-commit-config.yaml (the one contributors run)."""
    yaml = pytest.importorskip("yaml")
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    hooks = {h["id"]: h for repo in config["repos"] for h in repo["hooks"]}
    return hooks["nbstripout"]["entry"].split()


def test_nbstripout_removes_outputs_and_widget_state_and_keeps_tags_and_ids(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    entry = _nbstripout_hook()
    assert entry[0] == "nbstripout"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")])
    nb.cells[0].id = "c000"
    nb.cells[0].outputs = [nbformat.v4.new_output("execute_result", {"text/plain": "2"}, execution_count=1)]
    nb.cells[0].execution_count = 1
    nb.cells[0].metadata = {"tags": [IGNORE_TAG], "execution": {"x": 1}, "scrolled": True}
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    path = tmp_path / "x.ipynb"
    nbformat.write(nb, path)
    run = subprocess.run([sys.executable, "-m", "nbstripout", *entry[1:], str(path)],
                         capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    clean = _load(path)
    assert "widgets" not in clean["metadata"]
    assert clean["cells"][0]["outputs"] == [] and clean["cells"][0]["execution_count"] is None
    assert clean["cells"][0]["metadata"] == {"tags": [IGNORE_TAG]}
    assert clean["cells"][0]["id"] == "c000"


# -- exercises that teach (issue 13, section 3) ------------------------------------------------
TEACHING = [p for p in NOTEBOOKS if re.fullmatch(r"\d\d_.*", p.stem)]


@pytest.mark.parametrize("path", TEACHING, ids=lambda p: p.stem)
def test_every_prediction_has_a_guess_the_notebook_compares(path):
    cells = _load(path)["cells"]
    text = "\n".join(_src(c) for c in cells if c["cell_type"] == "code")
    guesses = re.findall(r"^(predict_\w+) = None\b", text, re.M)
    assert guesses, "each Predict section needs a predict_... = None cell for the student's guess"
    for name in guesses:
        assert re.search(rf'reveal\("{path.stem[:2]}_p\d+", {name},', text), f"{name} is never compared (reveal)"
    n_predict = sum(len(re.findall(r"^#+ *Predict\s*$", _src(c), re.M)) for c in cells if c["cell_type"] == "markdown")
    assert len(set(re.findall(r'reveal\("(\w+)"', text))) >= n_predict, "a Predict section without a reveal"


@pytest.mark.parametrize("path", TEACHING, ids=lambda p: p.stem)
def test_a_score_cell_ends_the_exercises_and_checks_record_a_pass(path):
    cells = _load(path)["cells"]
    summary = _first(cells, r"^#+ .*summary", "markdown")
    assert f'score("{path.stem[:2]}")' in _src(cells[summary - 1]), "the cell before the summary shows the score"
    for cell in cells:
        m = re.match(r'if not pending\(\w+, "(\w+)"\):', _src(cell))
        if m:
            assert f'passed("{m.group(1)}")' in _src(cell), f"{m.group(1)}: the check must end with passed()"


@pytest.mark.parametrize("path", TEACHING, ids=lambda p: p.stem)
def test_at_least_one_design_exercise(path):
    md = "\n".join(_src(c) for c in _load(path)["cells"] if c["cell_type"] == "markdown")
    assert re.search(r"^### Exercise \d+ \(design\)", md, re.M), "no design exercise (change something, measure it)"


@pytest.mark.parametrize("path", TEACHING, ids=lambda p: p.stem)
def test_check_messages_give_hints_not_the_expected_value(path):
    for cell in _load(path)["cells"]:
        src = _src(cell)
        if cell["cell_type"] == "code" and "if not pending(" in src:
            for msg in re.findall(r"assert .*?,\s*(f?\".*?\"|f?'.*?')\s*$", src, re.M):
                assert not re.search(r"\bexpected\b", msg), f"a check message gives the answer away: {msg}"


def test_reveal_and_score(capsys):
    exercises.reset_score()
    assert exercises.reveal("99_p1", 1000, 1024, "x") is True
    assert exercises.reveal("99_p2", 1.0, 40.0) is False
    assert exercises.reveal("99_p3", None, 3) is None
    assert exercises.reveal("99_p4", "mi300x", "mi300x") is True
    assert exercises.reveal("99_p5", (0, 1), (0, 1, 2)) is False
    assert "no guess written" in capsys.readouterr().out
    assert exercises.pending(5, "99_ex1") is False
    exercises.passed("99_ex1")
    assert exercises.pending(7, "99_ex2") is False
    s = exercises.score("99")
    assert s["attempted"] == ["99_ex1", "99_ex2"] and s["passed"] == ["99_ex1"]
    assert s["guessed"] == ["99_p1", "99_p2", "99_p4", "99_p5"] and s["close"] == ["99_p1", "99_p4"]
    assert "attempted 2, passed 1" in capsys.readouterr().out
    exercises.reset_score()
    assert exercises.score("99")["attempted"] == []


def test_reveal_compares_choice_letters(capsys):
    exercises.reset_score()
    assert exercises.reveal("99_p1", "c, a", "ac", choices="abc") is True
    assert exercises.reveal("99_p2", ("A", "C"), "ca", choices="abc") is True
    assert exercises.reveal("99_p3", "b", "ac", choices="abc") is False
    assert exercises.reveal("99_p4", "abc", "ac", choices="abc") is False
    assert exercises.reveal("99_p5", None, "ac", choices="abc") is None
    out = capsys.readouterr().out
    assert "you guessed 'ac'" in out and "measured 'ac'" in out
    exercises.reset_score()


def test_reset_script_restores_a_notebook(tmp_path):
    import shutil
    import subprocess

    if shutil.which("git") is None:
        pytest.skip("git not installed")
    repo = tmp_path / "repo"
    (repo / "notebooks").mkdir(parents=True)
    (repo / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "reset_notebooks.sh", repo / "scripts")
    nb = repo / "notebooks" / "03_x.ipynb"
    nb.write_text("committed")
    run = lambda *a: subprocess.run(a, cwd=repo, check=True, capture_output=True, text=True)  # noqa: E731
    run("git", "init", "-q")
    run("git", "-c", "user.email=t@t", "-c", "user.name=t", "add", ".")
    run("git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "x")
    nb.write_text("a student's edits")
    (repo / "notebooks" / "mine.ipynb").write_text("new")
    out = run("sh", "scripts/reset_notebooks.sh", "03").stdout
    assert nb.read_text() == "committed" and "restored" in out
    assert (repo / "notebooks" / "mine.ipynb").exists()
    run("sh", "scripts/reset_notebooks.sh", "--clean")
    assert not (repo / "notebooks" / "mine.ipynb").exists()
    bad = subprocess.run(["sh", "scripts/reset_notebooks.sh", "nope"], cwd=repo, capture_output=True, text=True)
    assert bad.returncode == 2 and "unknown argument" in bad.stderr
