"""The instructor's guide (notebooks/INSTRUCTOR.md) covers every notebook and every Predict.

The guide has one section per notebook, headed ``## NN · Title (`NN_name.ipynb`)``, and in
it a ``### Predict answers`` subsection: a numbered list with at least one item per Predict
question of the notebook, whether a ``### Predict`` section or an inline ``**Predict:**``
paragraph. A question followed by a guess variable (``predict_... = None``) is answered
only if the answers name that variable in backticks, so each answer is tied to its
question, not just counted. These tests read the files only, so they are fast; they fail
when a notebook gains a Predict question, or a new notebook appears, without an answer.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.once  # run once (make unit): the instructor's guide

ROOT = Path(__file__).resolve().parents[1]
NB_DIR = ROOT / "notebooks"
GUIDE = NB_DIR / "INSTRUCTOR.md"
NOTEBOOKS = sorted(NB_DIR.glob("[0-9][0-9]_*.ipynb"))

_NOTEBOOK_HEADING = re.compile(r"^## (\d\d) · ", re.M)
_ANSWERS_HEADING = "### Predict answers"
_NUMBERED_ITEM = re.compile(r"^(\d+)\.\s+\S", re.M)
_INLINE = re.compile(r"\*\*Predict:\*\*\s*(.*)")
_GUESS = re.compile(r"^(predict_\w+)\s*=\s*None\b", re.M)


def _source(cell: dict) -> str:
    return cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])


def predict_questions_and_guesses(notebook: dict) -> list[tuple[str, list[str]]]:
    """Every Predict question of the notebook, in order, with the guess variables
    (``predict_... = None``) of the code cells between it and the next question.

    A question is the first line after a ``### Predict`` heading, or the text after an
    inline ``**Predict:**`` (bold, with the colon: "Predict, then measure" is not one).
    """
    found = []
    for cell in notebook["cells"]:
        src = _source(cell)
        if cell["cell_type"] == "code":
            if found:
                found[-1][1].extend(_GUESS.findall(src))
            continue
        if cell["cell_type"] != "markdown":
            continue
        lines = src.splitlines()
        for i, line in enumerate(lines):
            inline = _INLINE.search(line)
            if re.match(r"^### Predict\b", line):
                rest = [l.strip() for l in lines[i + 1:] if l.strip()]
                found.append(((rest[0] if rest else "(empty)")[:80], []))
            elif inline:
                found.append(((inline.group(1).strip() or "(empty)")[:80], []))
    return found


def predict_questions(notebook: dict) -> list[str]:
    """Every Predict question of the notebook (see :func:`predict_questions_and_guesses`)."""
    return [q for q, _ in predict_questions_and_guesses(notebook)]


def notebook_sections(guide: str) -> dict[str, str]:
    """Map a notebook number ("03") to the text of its ``## 03 · ...`` section."""
    starts = [(m.start(), m.group(1)) for m in _NOTEBOOK_HEADING.finditer(guide)]
    sections = {}
    for k, (pos, number) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else len(guide)
        next_h2 = re.search(r"^## ", guide[pos + 3:end], re.M)       # a non-notebook section ends it too
        if next_h2:
            end = pos + 3 + next_h2.start()
        assert number not in sections, f"INSTRUCTOR.md has two sections for notebook {number}"
        sections[number] = guide[pos:end]
    return sections


def answers_block(section: str) -> str:
    """The text of the section's ``### Predict answers`` subsection ("" if none)."""
    start = section.find(_ANSWERS_HEADING)
    if start < 0:
        return ""
    body = section[start + len(_ANSWERS_HEADING):]
    nxt = re.search(r"^### ", body, re.M)
    return body[:nxt.start()] if nxt else body


def answer_items(section: str) -> list[int]:
    """The numbers of the items of the section's ``### Predict answers`` list."""
    return [int(n) for n in _NUMBERED_ITEM.findall(answers_block(section))]


@pytest.fixture(scope="module")
def guide() -> str:
    assert GUIDE.is_file(), "notebooks/INSTRUCTOR.md is missing"
    return GUIDE.read_text(encoding="utf-8")


def test_there_are_notebooks_to_cover():
    assert len(NOTEBOOKS) >= 2


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_notebook_is_named_and_has_a_section(guide, path):
    assert path.name in guide, f"INSTRUCTOR.md never names {path.name}"
    sections = notebook_sections(guide)
    number = path.name[:2]
    assert number in sections, f"INSTRUCTOR.md has no '## {number} · ...' section for {path.name}"
    assert path.name in sections[number], f"the '## {number}' section does not name {path.name}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_predict_has_an_answer(guide, path):
    found = predict_questions_and_guesses(json.loads(path.read_text(encoding="utf-8")))
    questions = [q for q, _ in found]
    section = notebook_sections(guide).get(path.name[:2], "")
    items = answer_items(section)
    assert items == list(range(1, len(items) + 1)), f"{path.name}: answers must be numbered 1, 2, 3, ..."
    missing = questions[len(items):]
    assert len(items) >= len(questions), (
        f"{path.name} has {len(questions)} Predict questions (headings and inline), INSTRUCTOR.md answers "
        f"{len(items)}; add answers for: {missing}")
    block = answers_block(section)
    unanswered = [(q, g) for q, guesses in found for g in guesses if f"`{g}`" not in block]
    assert not unanswered, (f"{path.name}: INSTRUCTOR.md's Predict answers never name these guess variables "
                            f"(answer each question where it names its variable): {unanswered}")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_predict_has_a_guess_variable(path):
    """Every Predict question, heading or inline, leaves a variable for the learner's guess."""
    found = predict_questions_and_guesses(json.loads(path.read_text(encoding="utf-8")))
    assert all(guesses for _, guesses in found), \
        f"{path.name}: a Predict question without a predict_... = None cell: {[q for q, g in found if not g]}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_notebook_has_prompts_and_pitfalls(guide, path):
    section = notebook_sections(guide).get(path.name[:2], "")
    for heading in ("### Discussion prompts", "### Pitfalls"):
        assert heading in section, f"{path.name}: its section has no '{heading}'"


def test_the_guide_covers_the_day(guide):
    for needle in ("faux-magnum doctor", "make test", "Binder", "environment.yml", "postBuild",
                   "make lab", "make reset", "scripts/reset_notebooks.sh", "## The agenda"):
        assert needle in guide, f"INSTRUCTOR.md does not mention {needle!r}"


def _minutes(hhmm: str) -> int:
    h, m = hhmm.split(":")
    return int(h) * 60 + int(m)


def test_the_agenda_adds_up(guide):
    """Each slot's length matches its times, slots are contiguous, every notebook has a slot,
    a break comes at least every 2 h 30 min, and the stated total is the sum of the Time lines."""
    rows = re.findall(r"^\| (\d\d:\d\d)-(\d\d:\d\d) \| (\d+) min \| ([^|]*)\|", guide, re.M)
    assert rows, "no agenda table"
    end = None
    since_break = 0
    for start, stop, length, what in rows:
        assert _minutes(stop) - _minutes(start) == int(length), (start, stop, length)
        assert end is None or start == end, f"gap or overlap before {start}"
        end = stop
        since_break = 0 if ("break" in what or "lunch" in what) else since_break + int(length)
        assert since_break <= 150, f"no break for {since_break} min before {stop}"
    slotted = set(re.findall(r"\*\*(\d\d)\*\*", " ".join(r[3] for r in rows)))
    assert slotted == {p.stem[:2] for p in NOTEBOOKS}
    times = []
    for path in NOTEBOOKS:
        text = "".join(_source(c) for c in json.loads(path.read_text(encoding="utf-8"))["cells"])
        times.append(int(re.search(r"\*\*Time:\*\* about (\d+) minutes", text).group(1)))
    total = sum(times)
    assert f"{total // 60} h {total % 60} min before breaks" in guide, f"the notebooks add up to {total} min"
    stated = {nb: int(m) for _, _, _, what in rows
              for nb, m in re.findall(r"\*\*(\d\d)\*\*[^|(]*\((?:notebook: )?~(\d+) min", what)}
    assert stated == {p.stem[:2]: t for p, t in zip(NOTEBOOKS, times, strict=True)}, \
        "a slot's '(~N min)' differs from its notebook's Time line"
    teaching = sum(int(length) for _, _, length, what in rows if "break" not in what and "lunch" not in what)
    day = re.search(r"\((\d+) h (\d+) min of teaching between (\d\d:\d\d) and (\d\d:\d\d)", guide)
    assert day, "the guide states no length of the teaching day"
    assert (int(day.group(1)) * 60 + int(day.group(2)), day.group(3), day.group(4)) == \
        (teaching, rows[0][0], rows[-1][1]), f"the slots hold {teaching} min of teaching"
    listed = re.search(r'"Time" line: ([\d, and\s]+) minutes', guide).group(1)
    assert [int(x) for x in re.findall(r"\d+", listed)] == times, "the guide lists other Time lines"


def test_the_notebooks_readme_links_the_guide():
    assert "(INSTRUCTOR.md)" in (NB_DIR / "README.md").read_text(encoding="utf-8")


# The helpers above must be able to fail: check them on small inputs with known answers.

def _md(text: str) -> dict:
    return {"cell_type": "markdown", "source": text}


def _code(text: str) -> dict:
    return {"cell_type": "code", "source": text}


def test_predict_questions_counts_headings_and_inline_not_mentions():
    nb = {"cells": [_md("## 1. A\n\n### Predict\n\nHow many?\n"), _code("### Predict\npredict_a = None  # guess"),
                    _md("**Predict:** inline, how long?\n\n### Predict\nWhich one?"), _md("### Predictions"),
                    _md("**Predict, then measure.** is the method, not a question"), _code("predict_c = None"),
                    _code("x = predict_c  # not a guess cell")]}
    assert predict_questions(nb) == ["How many?", "inline, how long?", "Which one?"]
    assert predict_questions_and_guesses(nb) == [("How many?", ["predict_a"]), ("inline, how long?", []),
                                                 ("Which one?", ["predict_c"])]


def test_sections_and_answers_are_read_per_notebook():
    text = ("# Guide\n\n## 01 · One (`01_one.ipynb`)\n\n### Predict answers\n\n1. **a** x\n2. **b** y\n"
            "   continued 3. not an item\n\n### Pitfalls\n\n1. not an answer\n\n## Agenda\n\n1. nor this\n\n"
            "## 02 · Two (`02_two.ipynb`)\n\n### Discussion prompts\n\n* z\n")
    sections = notebook_sections(text)
    assert set(sections) == {"01", "02"}
    assert "Agenda" not in sections["01"]
    assert answer_items(sections["01"]) == [1, 2]
    assert answer_items(sections["02"]) == []
    assert "1. not an answer" not in answers_block(sections["01"]) and "**b** y" in answers_block(sections["01"])


# The guide quotes what the notebooks print. tests/test_exercises_ungameable.py executes every
# notebook (with its solutions) and calls guide_misquotes() with the section of the notebook and
# the text it printed; the reader is checked on small inputs below.

_FIGURE = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?![\d])")
_NUMBER = re.compile(r"(?<!\w)(?<!\d\.)(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_LABELS = ("p50", "p95", "p99.9", "p99", "mean")
# "p99 3.91 ms", "p99.9 of 57.07 ms", "mean 2.11 ms": a statistic named just before its figure
# (not a ratio: "cuts the p95 10.6x").
_LABELLED = re.compile(r"\b(p50|p95|p99\.9|p99|mean)(?![.\w])(?: (?:of|is|was))? (\d[\d,]*(?:\.\d+)?)(?![\d.x])")
# A figure the default run cannot reproduce (a wall-clock timing, a run at full size) is
# written inside "*(timing: ...)*" or "*(full size: ...)*" and is not checked.
_UNCHECKED = re.compile(r"\*\((?:timing|full size)\b[^)]*\)\*")


def _significant(token: str) -> int:
    return len(token.replace(",", "").replace(".", "").lstrip("0"))


def _decimals(token: str) -> int:
    return len(token.split(".")[1]) if "." in token else 0


def printed_numbers(text: str) -> list[float]:
    """Every number in ``text`` ("1,024" is 1024), each one x 100 (a fraction quoted as a %)
    and a percentage / 100 (a % quoted as a fraction)."""
    out = []
    for m in _NUMBER.finditer(text):
        x = float(m.group(0).replace(",", ""))
        out += [x, x * 100] + ([x / 100] if text[m.end():m.end() + 1] == "%" else [])
    return out


def _renders(value: str, numbers, cache: dict) -> bool:
    d = _decimals(value)
    if d not in cache:
        cache[d] = {f"{x:.{d}f}" for x in numbers}
    return f"{float(value.replace(',', '')):.{d}f}" in cache[d]


def _column_of(line: str, start: int, end: int) -> str:
    """The header cell (columns split by 2+ spaces) above [start, end) of a table row."""
    for m in re.finditer(r"\S+(?: \S+)*", line):
        if m.start() < end and start < m.end():
            return m.group(0)
    return ""


def _label_in(text: str, label: str) -> bool:
    return re.search(rf"\b{re.escape(label)}(?![.\w])", text) is not None


def labelled_in(printed: str, label: str, value: str) -> bool:
    """Whether ``printed`` shows ``value`` as ``label``: after the label on a line ("p95 3.60
    ms"), or in the column of a table whose header names the label (right-aligned columns)."""
    d = _decimals(value)
    want = f"{float(value.replace(',', '')):.{d}f}"
    fits = lambda tok: f"{float(tok.replace(',', '')):.{d}f}" == want   # noqa: E731
    lines = printed.splitlines()
    for i, line in enumerate(lines):
        for m in re.finditer(rf"\b{re.escape(label)}(?![.\w])\D{{0,20}}?({_NUMBER.pattern})", line):
            if fits(m.group(1)):
                return True
        for m in _NUMBER.finditer(line):
            if not fits(m.group(0)):
                continue
            header = next((h for h in reversed(lines[:i]) if any(_label_in(h, lb) for lb in _LABELS)), "")
            if _label_in(_column_of(header, m.start(), m.end()), label):
                return True
    return False


def guide_misquotes(section: str, printed: str, sources: str) -> list[str]:
    """The figures of a notebook's guide section that the notebook does not show: every
    number of 3 or more significant figures must appear (to the guide's decimals) in what the
    notebook printed or in its own text, and a statistic named before its figure ("p99 2,560
    ms") must be printed as that statistic. Figures inside ``*(timing ...)*`` or
    ``*(full size ...)*`` are not checked."""
    text = _UNCHECKED.sub("", section)
    numbers, cache, bad = printed_numbers(printed) + printed_numbers(sources), {}, []
    for m in _FIGURE.finditer(text):
        tok = m.group(1)
        if _significant(tok) >= 3 and not _renders(tok, numbers, cache):
            bad.append(f"{tok} (…{text[max(0, m.start() - 40):m.end() + 10]}…) is printed nowhere")
    for m in _LABELLED.finditer(text):
        label, tok = m.group(1), m.group(2).rstrip(",")
        if _significant(tok) >= 2 and not labelled_in(printed, label, tok):
            bad.append(f"'{m.group(0)}': the notebook never prints {tok} as its {label}")
    return bad


def test_guide_misquotes_finds_a_wrong_figure_and_a_wrong_label():
    printed = ("   preset   mean ms    p95 ms  p99.9 ms\n magnum_v1     5.56      3.60   2560.48\n"
               "classroom: mean 2.75 ms, p95 24.61 ms, 12.5% started\n")
    assert guide_misquotes("p95 3.60 ms, p99.9 2,560 ms, mean 2.75 ms, 12.5 % started", printed, "") == []
    assert guide_misquotes("the p95 is 24.61 ms; 0.125 of them", printed, "") == []
    bad = guide_misquotes("p99 2,560 ms and a mean of 5.56; p95 3.74 ms", printed, "")
    assert any("p99 2,560" in b for b in bad) and any(b.startswith("3.74") for b in bad)
    assert len(bad) == 3          # 3.74 is printed nowhere, and not as the p95 either
    assert guide_misquotes("mean 24.61 ms", printed, "") != []       # printed, but as a p95
    assert guide_misquotes("the article's 3,686,400 cores", printed, "3686400 cores") == []
    assert guide_misquotes("validating took *(timing: 801 µs here)*", printed, "") == []
    assert guide_misquotes("validating took 801 µs", printed, "") != []


def test_the_notebooks_readme_lists_every_notebook():
    """notebooks/README.md's table has one row per notebook (it once stopped at 08)."""
    readme = (NB_DIR / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(\d\d_\w+)` \|", readme, re.M)
    assert rows == [p.stem for p in NOTEBOOKS], f"README rows {rows}"
